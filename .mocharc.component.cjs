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
 * Component test files (under test/component/, without `.test.ts`), slowest first: 6 Dec, 4 workers, load 14–22.
 * wavesCli, fileProblems.cli and taskAndControl.cli left the list once they called the CLI in-process (15 s, 6 s and
 * 10 s alone at a load of 9–12).
 */
const SLOWEST_FIRST = [
  'remote/remoteLanes', // 595 s
  'loop/engineControl.real', // 481 s
  'loop/truth.real', // 429 s
  'trust/trust.cli', // 428 s
  'loop/parallel.stub', // 315 s
  'loop/engine.real', // 313 s
  'agents/opencode.real', // 307 s
  'cli/snapshotCache.cli', // 293 s
  'cli/botParity', // 273 s
  'cli/snapshotCacheChanges.cli', // 241 s
  'cli/snapshotCacheFixtures.cli', // 238 s
  'agents/qwen.real', // 203 s
  'cli/snapshotCacheTaskChanges.cli', // 178 s
  'question.real', // 169 s
  'loop/truthCarried.real', // 167 s
  'gates/guardCli', // 163 s
  'loop/parallelMerge.real', // 132 s
  'loop/truthChildren.real', // 118 s
  'loop/parallel.real', // 111 s
  'watch.cli', // 108 s
  'demo/demo', // 105 s
  'loop/putBackRefused.cli', // 104 s
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
