// Mocha reporter used by every tier: prints the spec reporter's output and writes a result file
// {tier, passed, failed, pending, failures:[{title, error}]} to RALPH_RESULT_FILE (or reporterOptions.resultFile),
// so the outer runner can print `tier: N passed, N failed` and fail a tier that ran nothing.
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
    runner.on('fail', (test, err) =>
      failures.push({ title: test.fullTitle(), error: String((err && err.stack) || err).slice(0, 4000) }),
    );
    runner.once('end', () => {
      if (!file) return;
      const s = runner.stats || {};
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(
        file,
        JSON.stringify(
          {
            tier: opts.tier || process.env.RALPH_TIER || 'unknown',
            passed: s.passes || 0,
            failed: s.failures || 0,
            pending: s.pending || 0,
            failures,
          },
          null,
          2,
        ),
      );
    });
  }
}
module.exports = ResultReporter;
