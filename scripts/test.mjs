#!/usr/bin/env node
// Runs the test tiers: `node scripts/test.mjs [unit] [component] [stress] [integration] [e2e] [corpus]`; with none
// named, every tier of `npm test` (all but corpus, which needs material from outside the repository: `npm run test:corpus`).
// unit: pure tests (no child processes, no network, no real CLI); component: the real Claude CLI, CLI processes, git;
// stress: write-safety and kill-storm suites; integration: a real VS Code extension host; e2e: Chromium over the web
// workbench; corpus: real files of the seed systems and side-by-side tests, found through RALPH_SHARED_DIR
// (test/support/corpus.ts). See docs/testing.md.
// Before the tiers: the idempotent set-up (scripts/setup-test-env.sh) and one build (esbuild.mjs).
// Each tier writes test-results/<tier>.json ({passed, failed}); this script prints `<tier>: N passed, N failed`
// for each, then the total `N passed, N failed` as the last line. A tier that fails to start, leaves no result
// file or runs 0 tests counts as failed; any failure exits 1. No tier is skipped silently.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
process.chdir(root);
const all = ['unit', 'component', 'stress', 'integration', 'e2e', 'corpus'];
const byDefault = ['unit', 'component', 'stress', 'integration', 'e2e'];
const tiers = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const selected = tiers.length ? tiers : byDefault;
for (const t of selected)
  if (!all.includes(t)) {
    console.error(`unknown tier '${t}' (expected ${all.join(', ')})`);
    process.exit(2);
  }

function run(cmd, args, env = {}) {
  const r = spawnSync(cmd, args, { stdio: 'inherit', env: { ...process.env, ...env } });
  return r.status ?? 1;
}

if (!process.env.RALPH_SKIP_SETUP) {
  // unit needs nothing; the plain-Node tiers need the Claude Code CLI; integration and e2e also the VS Code server and Chromium.
  const needsServer = selected.some((t) => t === 'integration' || t === 'e2e');
  const needsClaude = selected.some((t) => t !== 'unit');
  const setupArgs = needsServer ? ['scripts/setup-test-env.sh'] : ['scripts/setup-test-env.sh', '--agents-only'];
  if (needsClaude && run('bash', setupArgs) !== 0) {
    console.error('set-up failed: see the messages above');
    process.exit(1);
  }
}
if (run(process.execPath, ['esbuild.mjs']) !== 0) {
  console.error('build failed');
  process.exit(1);
}

// The component tier runs its files in parallel (.mocharc.component.json: 4 mocha workers, each with its own
// XDG_STATE_HOME, test/support/isolatedState.cjs); RALPH_TEST_JOBS=<n> sets the number of workers (1: one at a time).
const jobs = process.env.RALPH_TEST_JOBS;
if (jobs !== undefined && !/^[1-9]\d*$/.test(jobs)) {
  console.error(`RALPH_TEST_JOBS must be a whole number ≥ 1, not '${jobs}'`);
  process.exit(2);
}
const commands = {
  ...Object.fromEntries(
    ['unit', 'component', 'stress', 'corpus'].map((t) => [
      t,
      [
        path.join('node_modules', 'mocha', 'bin', 'mocha.js'),
        '--config',
        `.mocharc.${t}.json`,
        ...(t === 'component' && jobs ? (jobs === '1' ? ['--no-parallel'] : ['--jobs', jobs]) : []),
      ],
    ]),
  ),
  integration: ['dist/test/runners/integration.js'],
  e2e: ['dist/test/runners/e2e.js'],
};

// Tests never write into the user's ~/.local/state/ralph (trust, claim baselines, guard state): every tier and
// every process it starts share one private XDG_STATE_HOME, removed at the end (test/support/isolatedState.cjs
// does the same for a mocha run started by hand).
const stateHome = fs.mkdtempSync(path.join(os.tmpdir(), 'ralph-test-state-'));
process.env.XDG_STATE_HOME = stateHome;
process.env.RALPH_TEST_STATE_HOME = stateHome;
process.on('exit', () => fs.rmSync(stateHome, { recursive: true, force: true }));

fs.mkdirSync('test-results', { recursive: true });
const lines = [];
let passed = 0,
  failed = 0;
const started = Date.now();
for (const tier of selected) {
  const tierStart = Date.now();
  const resultFile = path.join(root, 'test-results', `${tier}.json`);
  fs.rmSync(resultFile, { force: true });
  console.log(`\n=== ${tier} tier ===`);
  const code = run(process.execPath, commands[tier], { RALPH_RESULT_FILE: resultFile, RALPH_TIER: tier });
  let r = { passed: 0, failed: 0 };
  let note = '';
  try {
    r = JSON.parse(fs.readFileSync(resultFile, 'utf8'));
  } catch {
    note = ' (no result file: the tier did not finish)';
    r.failed += 1;
  }
  if (!note && r.passed + r.failed === 0) {
    note = ' (ran 0 tests)';
    r.failed = 1;
  }
  if (!note && code !== 0 && r.failed === 0) {
    note = ` (runner exited ${code})`;
    r.failed = 1;
  }
  passed += r.passed;
  failed += r.failed;
  lines.push(
    `${tier}: ${r.passed} passed, ${r.failed} failed${note} (${Math.round((Date.now() - tierStart) / 1000)} s)`,
  );
}
console.log('');
for (const l of lines) console.log(l);
console.log(`${passed} passed, ${failed} failed (${Math.round((Date.now() - started) / 1000)} s)`);
process.exit(failed > 0 ? 1 : 0);
