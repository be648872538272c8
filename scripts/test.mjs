#!/usr/bin/env node
// Runs the test tiers: `node scripts/test.mjs [unit] [component] [stress] [integration] [e2e] [corpus]`; with none
// named, every tier of `npm test` (all but corpus, which needs material from outside the repository: `npm run test:corpus`);
// `--corpus` adds the corpus tier to those (CI: `npm test -- --corpus`).
// unit: pure tests (no child processes, no network, no real CLI); component: the real Claude CLI, CLI processes, git;
// stress: write-safety and kill-storm suites; integration: a real VS Code extension host; e2e: Chromium over the web
// workbench; corpus: real files of the seed systems and side-by-side tests, found through RALPH_SHARED_DIR
// (test/support/corpus.ts). See docs/testing.md.
// Before the tiers: the idempotent set-up (scripts/setup-test-env.sh) and one build (esbuild.mjs).
// Each tier writes test-results/<tier>.json ({passed, failed}); this script prints `<tier>: N passed, N failed`
// for each, then the total `N passed, N failed` as the last line; above those lines, the title and the first lines of
// the error of each failed test (at most 10). A tier that fails to start, leaves no result
// file or runs 0 tests counts as failed; any failure exits 1. No tier is skipped silently.
// Tiers that leave the processor idle much of the time run side by side (SIDE_BY_SIDE below): all of them at once. The first tier of a group prints as it goes; the others write test-results/<tier>.log, printed when the
// group ends. RALPH_TEST_SERIAL=1 runs one at a time.
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
process.chdir(root);
const all = ['unit', 'component', 'stress', 'integration', 'e2e', 'corpus'];
const byDefault = ['unit', 'component', 'stress', 'integration', 'e2e'];
const tiers = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const selected = tiers.length ? tiers : byDefault;
if (process.argv.includes('--corpus') && !selected.includes('corpus')) selected.push('corpus');
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
// The e2e tier installs the packaged .vsix. Packaging runs the production build into dist/, so it happens once, here,
// before the development build and before any tier runs: never while another tier runs dist/cli.js beside it.
fs.mkdirSync('test-results', { recursive: true });
if (selected.includes('e2e')) {
  const vsix = path.join(root, 'test-results', 'ralph-loop.vsix');
  fs.rmSync(vsix, { force: true });
  const packaged = spawnSync(process.execPath, ['scripts/package.mjs', '--out', vsix], { encoding: 'utf8' });
  if (packaged.status !== 0) {
    process.stdout.write(packaged.stdout ?? '');
    process.stderr.write(packaged.stderr ?? '');
    console.error('packaging the .vsix for the e2e tier failed');
    process.exit(1);
  }
  console.log(`packaged ${path.relative(root, vsix)} for the e2e tier`);
  process.env.RALPH_TIER_VSIX = vsix;
}
if (run(process.execPath, ['esbuild.mjs']) !== 0) {
  console.error('build failed');
  process.exit(1);
}

// The component tier runs its files in parallel (.mocharc.component.cjs: 4 mocha workers, each with its own
// XDG_STATE_HOME, test/support/isolatedState.cjs, the slowest files first); RALPH_TEST_JOBS=<n> sets the number of
// workers (1: one at a time).
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
        t === 'component' ? '.mocharc.component.cjs' : `.mocharc.${t}.json`,
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

/**
 * Groups of tiers run side by side, in this order; a selected tier in no group runs alone. The machine this runs on
 * has 2 cores, and no tier keeps both busy by itself: each waits much of the time on child processes (agent CLIs
 * answering the scripted model server, `ralph run`, git, the VS Code server, the browser). Measured alone (6 Dec,
 * user + system CPU of each tier's whole process tree): component 441 s of CPU in 409 s, e2e 134 s in 197 s,
 * integration 61 s in 106 s, stress 43 s in 155 s, corpus 20 s in 113 s, unit 10 s in 12 s. So they all run at once:
 * the tiers' CPU together (about 700 s) is what bounds the wall time, not the sum of their waits. The component tier
 * prints as it goes, the others when it ends. Tiers never share files: each has its own result file, every temp
 * folder comes from mkdtemp, every server takes a free port, and the e2e tier's .vsix was packaged before (above).
 * RALPH_TEST_SERIAL=1 runs the tiers one after another.
 */
const SIDE_BY_SIDE = [['component', 'e2e', 'integration', 'stress', 'corpus', 'unit']];
const serial = process.env.RALPH_TEST_SERIAL === '1';
const groups = [];
for (const tier of selected) {
  const side = serial ? undefined : SIDE_BY_SIDE.find((g) => g.includes(tier));
  if (!side) groups.push([tier]);
  else if (side.find((t) => selected.includes(t)) === tier) groups.push(side.filter((t) => selected.includes(t)));
  // else: it runs beside its group's first tier, when that comes
}

/** Runs one tier; `log`: its output goes to that file instead of this terminal. Resolves with its line's figures. */
function runTier(tier, log) {
  const tierStart = Date.now();
  const resultFile = path.join(root, 'test-results', `${tier}.json`);
  fs.rmSync(resultFile, { force: true });
  if (!log) console.log(`\n=== ${tier} tier ===`);
  const out = log ? fs.openSync(log, 'w') : 'inherit';
  const child = spawn(process.execPath, commands[tier], {
    stdio: ['ignore', out, out],
    env: { ...process.env, RALPH_RESULT_FILE: resultFile, RALPH_TIER: tier },
  });
  return new Promise((resolve) => {
    child.on('error', () => resolve(finish(1)));
    child.on('exit', (code) => resolve(finish(code ?? 1)));
  });
  function finish(code) {
    if (typeof out === 'number') fs.closeSync(out);
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
    const s = Math.round((Date.now() - tierStart) / 1000);
    return {
      tier,
      passed: r.passed,
      failed: r.failed,
      line: `${tier}: ${r.passed} passed, ${r.failed} failed${note} (${s} s)`,
    };
  }
}

const lines = [];
let passed = 0,
  failed = 0;
const started = Date.now();
for (const group of groups) {
  const [lead, ...beside] = group;
  const logs = Object.fromEntries(beside.map((t) => [t, path.join(root, 'test-results', `${t}.log`)]));
  if (beside.length)
    console.log(
      `\n(${beside.join(', ')} beside ${lead}: output in ${Object.values(logs)
        .map((l) => path.relative(root, l))
        .join(', ')}, printed after)`,
    );
  const results = await Promise.all([runTier(lead), ...beside.map((t) => runTier(t, logs[t]))]);
  for (const t of beside) {
    console.log(`\n=== ${t} tier (beside ${lead}) ===`);
    process.stdout.write(fs.readFileSync(logs[t], 'utf8'));
  }
  for (const r of results) {
    passed += r.passed;
    failed += r.failed;
  }
  // Lines in the order the tiers were named.
  for (const r of results) lines[selected.indexOf(r.tier)] = r.line;
}
// The failures again, just above the totals: CI keeps only the end of a long output, and a failure printed once in
// the middle of a tier's spec output would be cut from it.
const failures = groups
  .flat()
  .flatMap((t) => {
    try {
      return JSON.parse(fs.readFileSync(path.join(root, 'test-results', `${t}.json`), 'utf8')).failures ?? [];
    } catch {
      return [];
    }
  })
  .slice(0, 10);
if (failures.length) {
  console.log(`\n=== failures (${failures.length === 10 ? 'the first 10' : failures.length}) ===`);
  for (const f of failures) {
    console.log(`\n✗ ${f.title}`);
    console.log(
      String(f.error)
        .split('\n')
        .slice(0, 12)
        .map((l) => `    ${l}`)
        .join('\n'),
    );
  }
}
console.log('');
for (const l of lines) console.log(l);
console.log(`${passed} passed, ${failed} failed (${Math.round((Date.now() - started) / 1000)} s)`);
process.exit(failed > 0 ? 1 : 0);
