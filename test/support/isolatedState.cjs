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
// Each test file is its own bundle with its own copy of src/, so every file that spawns installs its own once-per-process
// exit hook (core/process/processGroup.ts); a worker that runs 18 files holds 18 where ralph holds one. Node's
// warning at the 11th would land in the stderr of whichever in-process CLI call was running then.
process.setMaxListeners(200);
if (process.env.MOCHA_WORKER_ID !== undefined) {
  const dir = fs.mkdtempSync(path.join(process.env.RALPH_TEST_STATE_HOME, `worker-${process.env.MOCHA_WORKER_ID}-`));
  process.env.XDG_STATE_HOME = dir;
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
}

// With RALPH_CPU_LOG=<file>, each test file's CPU time is appended to that file as a JSON line: this process's user
// and system time and that of the children it reaped (agent CLIs, git, servers), from /proc/self/stat, in ms. The
// component tier is CPU-bound on a small machine, so its cost is read from these figures, not from wall time.
if (process.env.RALPH_CPU_LOG && fs.existsSync('/proc/self/stat')) {
  const ticks = () => {
    const f = fs.readFileSync('/proc/self/stat', 'utf8');
    const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
    // utime, stime, cutime, cstime: fields 14–17, at 11–14 after the command name; clock ticks of 10 ms.
    return { self: (Number(rest[11]) + Number(rest[12])) * 10, children: (Number(rest[13]) + Number(rest[14])) * 10 };
  };
  let start;
  exports.mochaHooks = {
    beforeAll() {
      start = ticks();
    },
    afterAll() {
      const end = ticks();
      const files = this.test.parent.suites.map((s) => s.file).filter(Boolean);
      fs.appendFileSync(
        process.env.RALPH_CPU_LOG,
        `${JSON.stringify({ file: files[0] ?? '?', selfMs: end.self - start.self, childrenMs: end.children - start.children })}\n`,
      );
    },
  };
}
