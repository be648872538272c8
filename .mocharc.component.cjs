// The component tier's mocha configuration. It runs its files in parallel (4 workers; test/support/isolatedState.cjs
// keeps their state apart) and hands a worker a whole file at a time, in the order of `spec`: the slowest files
// first, so that no long file starts last and runs alone while the other workers sit idle (longest-first keeps the
// tier's wall time near its summed time divided by the workers). SLOWEST_FIRST lists the slow files by their summed
// test time in `test-results/component.json` (`files`); a file not listed runs after them, in name order. Refresh the
// list when a file becomes slow (docs/testing.md, "The component tier runs its files in parallel").
'use strict';
const fs = require('node:fs');
const path = require('node:path');

/**
 * Component test files (under test/component/, without `.test.ts`), slowest first: 6 Dec 18:23–18:45 UTC, 4 workers,
 * load 12–16 (the tier beside three helpers' work: 1,302 s, 4,899 s summed). ownServer.real, copilot.real and
 * crashMirror.cli had been missing from the list, and so started after every listed file.
 */
const SLOWEST_FIRST = [
  'agents/ownServer.real', // 370 s
  'remote/remoteLanes', // 367 s
  'agents/opencode.real', // 329 s
  'loop/engineControl.real', // 291 s
  'loop/parallel.stub', // 260 s
  'agents/qwen.real', // 227 s
  'loop/engine.real', // 192 s
  'demo/demo', // 176 s
  'loop/truth.real', // 168 s
  'gates/guardCli', // 146 s
  'cli/snapshotCache.cli', // 145 s
  'agents/copilot.real', // 142 s
  'loop/crashMirror.cli', // 112 s
  'cli/botParity', // 112 s
  'cli/snapshotCacheChanges.cli', // 108 s
  'cli/snapshotCacheFixtures.cli', // 105 s
  'trust/trust.cli', // 92 s
  'agents/gemini.real', // 91 s
  'agents/codex.real', // 85 s
  'loop/putBackRefused.cli', // 72 s
  'loop/parallel.real', // 71 s
  'loop/parallelMerge.real', // 70 s
  'process/markedProcesses', // 70 s
  'cli/snapshotCacheTaskChanges.cli', // 69 s
  'question.real', // 62 s
  'agents/failover.real', // 61 s
  'remote/remoteLane.real', // 60 s
  'agents/claude.real', // 58 s
];

const root = path.join(__dirname, 'dist', 'test', 'component');

/** Every built component test file, relative to `root`, without `.test.js`. */
function builtTests(dir = root, rel = '') {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((e) =>
      e.isDirectory()
        ? builtTests(path.join(dir, e.name), rel ? `${rel}/${e.name}` : e.name)
        : e.name.endsWith('.test.js')
          ? [(rel ? `${rel}/` : '') + e.name.slice(0, -'.test.js'.length)]
          : [],
    )
    .sort();
}

const built = builtTests();
const ordered = [...SLOWEST_FIRST.filter((f) => built.includes(f)), ...built.filter((f) => !SLOWEST_FIRST.includes(f))];

module.exports = {
  // Before the first build there is nothing to order: the glob then finds the files (or reports that none exist).
  spec: ordered.length ? ordered.map((f) => `dist/test/component/${f}.test.js`) : ['dist/test/component/**/*.test.js'],
  reporter: './test/support/resultReporter.cjs',
  require: ['./test/support/isolatedState.cjs'],
  timeout: 120000,
  'enable-source-maps': true,
  'forbid-only': true,
  'forbid-pending': true,
  exit: true,
  parallel: true,
  jobs: 4,
};
