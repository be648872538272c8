// Loaded by every mocha tier (.mocharc.*.json "require"): ralph keeps per-user state under $XDG_STATE_HOME/ralph
// (trust, claim baselines and their second copy, guard state; src/core/store/userStateDir.ts). Tests must never write
// into the user's own ~/.local/state, so unless scripts/test.mjs already gave the run a private one
// (RALPH_TEST_STATE_HOME), this process gets a temp XDG_STATE_HOME, inherited by every child it starts and removed
// when it exits. A worker of a parallel tier (mocha --parallel sets MOCHA_WORKER_ID) gets a folder of its own inside
// the run's, so test files running at the same time never see each other's baselines, guard state or trust records.
// A test that sets its own XDG_STATE_HOME for a child keeps it.
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

if (!process.env.RALPH_TEST_STATE_HOME) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ralph-test-state-'));
  process.env.XDG_STATE_HOME = dir;
  process.env.RALPH_TEST_STATE_HOME = dir;
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
}
if (process.env.MOCHA_WORKER_ID !== undefined) {
  const dir = fs.mkdtempSync(path.join(process.env.RALPH_TEST_STATE_HOME, `worker-${process.env.MOCHA_WORKER_ID}-`));
  process.env.XDG_STATE_HOME = dir;
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
}
