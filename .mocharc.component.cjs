// The component tier's mocha configuration. It runs its files in parallel (6 workers; test/support/isolatedState.cjs
// keeps their state apart) and hands a worker a whole file at a time, in the order of `spec`: the slowest files
// first, so that no long file starts last and runs alone while the other workers sit idle (longest-first keeps the
// tier's wall time near its summed time divided by the workers). SLOWEST_FIRST lists the slow files by their summed
// test time in `test-results/component.json` (`files`); a file not listed runs after them, in name order. Refresh the
// list when a file becomes slow (docs/testing.md, "The component tier runs its files in parallel").
'use strict';
const fs = require('node:fs');
const path = require('node:path');

/**
 * Component test files (under test/component/, without `.test.ts`), slowest first: the summed test time of each in a
 * clean-clone CI of 6 Dec 20:49–20:56 UTC, 4 workers, load average 8–11 (the tier 409 s, 1,556 s summed).
 */
const SLOWEST_FIRST = [
  'agents/opencode.real', // 186 s
  'agents/ownServer.real', // 158 s
  'agents/qwen.real', // 106 s
  'remote/remoteLanes', // 98 s
  'loop/engineControl.real', // 88 s
  'loop/parallel.stub', // 84 s
  'agents/copilot.real', // 76 s
  'demo/demo', // 55 s
  'loop/truth.real', // 52 s
  'loop/engine.real', // 51 s
  'cli/snapshotCache.cli', // 48 s
  'gates/guardCli', // 35 s
  'agents/gemini.real', // 32 s
  'cli/snapshotCacheChanges.cli', // 30 s
  'loop/parallel.real', // 29 s
  'question.real', // 22 s
  'gates/gateCall', // 21 s
  'agents/codex.real', // 21 s
  'cli/snapshotCacheFixtures.cli', // 21 s
  'loop/truthCarried.real', // 20 s
  'loop/parallelMerge.real', // 17 s
  'loop/truthChildren.real', // 17 s
  'trust/trust.cli', // 17 s
  'loop/crashMirror.cli', // 16 s
  'cli/botParity', // 16 s
  'agents/cursorAgent.stub', // 14 s
  'watch.cli', // 13 s
  'loop/putBackRefused.cli', // 12 s
  'gates/gateRunner', // 12 s
  'core/doctor', // 11 s
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
  // A worker waits on child processes most of the time: with 4 the tier alone kept the 2 cores about 55% busy (441 s
  // of CPU in 409 s, 6 Dec, load average 8–11 from other work); with 6 it took 363 s (461 s of CPU) at 13–15.
  jobs: 6,
};
