// Mocha reporter used by every tier: prints the spec reporter's output and writes a result file
// {tier, passed, failed, pending, failures:[{title, error}], files:{<file>: ms}, slowest:[{file, title, ms}]} to
// RALPH_RESULT_FILE (or reporterOptions.resultFile), so the outer runner can print `tier: N passed, N failed` and fail
// a tier that ran nothing. `files` (the summed durations of each file's tests, slowest first) and `slowest` (the 20
// slowest tests) show where a tier's time goes; in a parallel tier a file runs in one worker, so the slowest file is
// the least the tier can take.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const Mocha = require('mocha');

class ResultReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const opts = (options && options.reporterOptions) || {};
    const file = opts.resultFile || process.env.RALPH_RESULT_FILE;
    const failures = [];
    const timed = [];
    runner.on('fail', (test, err) =>
      failures.push({ title: test.fullTitle(), error: String((err && err.stack) || err).slice(0, 4000) }),
    );
    runner.on('test end', (test) => {
      if (typeof test.duration === 'number')
        timed.push({
          file: path.relative(process.cwd(), test.file || '?'),
          title: test.fullTitle(),
          ms: test.duration,
        });
    });
    runner.once('end', () => {
      if (!file) return;
      const s = runner.stats || {};
      fs.mkdirSync(path.dirname(file), { recursive: true });
      // Written beside and renamed over: the outer runner reads the file as soon as it exists (never half of it).
      const tmp = `${file}.${process.pid}.tmp`;
      fs.writeFileSync(
        tmp,
        JSON.stringify(
          {
            tier: opts.tier || process.env.RALPH_TIER || 'unknown',
            passed: s.passes || 0,
            failed: s.failures || 0,
            pending: s.pending || 0,
            failures,
            files: Object.fromEntries(
              Object.entries(timed.reduce((acc, x) => ((acc[x.file] = (acc[x.file] || 0) + x.ms), acc), {})).sort(
                (a, b) => b[1] - a[1],
              ),
            ),
            slowest: [...timed].sort((a, b) => b.ms - a.ms).slice(0, 20),
          },
          null,
          2,
        ),
      );
      fs.renameSync(tmp, file);
    });
  }
}
module.exports = ResultReporter;
