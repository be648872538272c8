#!/usr/bin/env node
// Runs the test tiers: `node scripts/test.mjs [unit] [integration] [e2e]` (all three when none is named).
// Before the tiers: the idempotent set-up (scripts/setup-test-env.sh) and one build (esbuild.mjs).
// Each tier writes test-results/<tier>.json ({passed, failed}); this script prints `<tier>: N passed, N failed`
// for each, then the total `N passed, N failed` as the last line. A tier that fails to start, leaves no result
// file or runs 0 tests counts as failed; any failure exits 1. No tier is skipped silently.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
process.chdir(root);
const all = ['unit', 'integration', 'e2e'];
const tiers = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const selected = tiers.length ? tiers : all;
for (const t of selected) if (!all.includes(t)) { console.error(`unknown tier '${t}' (expected ${all.join(', ')})`); process.exit(2); }

function run(cmd, args, env = {}) {
  const r = spawnSync(cmd, args, { stdio: 'inherit', env: { ...process.env, ...env } });
  return r.status ?? 1;
}

if (!process.env.RALPH_SKIP_SETUP) {
  // The unit tier needs only the Claude Code CLI; the other tiers need the VS Code server and Chromium too.
  const setupArgs = selected.every((t) => t === 'unit') ? ['scripts/setup-test-env.sh', '--claude-only'] : ['scripts/setup-test-env.sh'];
  if (run('bash', setupArgs) !== 0) { console.error('set-up failed: see the messages above'); process.exit(1); }
}
if (run(process.execPath, ['esbuild.mjs']) !== 0) { console.error('build failed'); process.exit(1); }

const commands = {
  unit: [path.join('node_modules', 'mocha', 'bin', 'mocha.js'), '--config', '.mocharc.unit.json'],
  integration: ['dist/test/runners/integration.js'],
  e2e: ['dist/test/runners/e2e.js'],
};

fs.mkdirSync('test-results', { recursive: true });
const lines = [];
let passed = 0, failed = 0;
for (const tier of selected) {
  const resultFile = path.join(root, 'test-results', `${tier}.json`);
  fs.rmSync(resultFile, { force: true });
  console.log(`\n=== ${tier} tier ===`);
  const code = run(process.execPath, commands[tier], { RALPH_RESULT_FILE: resultFile, RALPH_TIER: tier });
  let r = { passed: 0, failed: 0 };
  let note = '';
  try { r = JSON.parse(fs.readFileSync(resultFile, 'utf8')); } catch { note = ' (no result file: the tier did not finish)'; r.failed += 1; }
  if (!note && r.passed + r.failed === 0) { note = ' (ran 0 tests)'; r.failed = 1; }
  if (!note && code !== 0 && r.failed === 0) { note = ` (runner exited ${code})`; r.failed = 1; }
  passed += r.passed; failed += r.failed;
  lines.push(`${tier}: ${r.passed} passed, ${r.failed} failed${note}`);
}
console.log('');
for (const l of lines) console.log(l);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
