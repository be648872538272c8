import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { repoRoot } from '../../support/repoRoot';
import { makeTempDir } from '../../support/tempFolder';

/** `npm run demo`'s bundle (built by `node esbuild.mjs`, or `--only=demo`). */
const demoJs = path.join(repoRoot, 'dist', 'demo.js');

describe('npm run demo without VS Code server', () => {
  let tmp: string;
  before(() => {
    assert.ok(fs.existsSync(demoJs), `${demoJs} is missing: run node esbuild.mjs`);
    tmp = makeTempDir('ralph-demo-missing-');
  });
  after(() => fs.rmSync(tmp, { recursive: true, force: true }));

  it('explains what to do (set-up with apt, or --cli) instead of a stack trace, and starts nothing', () => {
    const r = spawnSync(process.execPath, [demoJs, '--no-open'], { encoding: 'utf8', env: { ...process.env, RALPH_VSCODE_SERVER: path.join(tmp, 'nowhere'), TMPDIR: tmp }, timeout: 60_000 });
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, /VS Code's server cannot start here: the test VS Code server is not installed \(no .*nowhere\/out\/server-main\.js\)/);
    assert.match(r.stderr, /bash scripts\/setup-test-env\.sh/);
    assert.match(r.stderr, /apt \(so as root or with sudo the first time\)/);
    assert.match(r.stderr, /npm run demo -- --cli/);
    assert.doesNotMatch(r.stderr, /^\s+at /m, 'no stack trace');
    assert.deepEqual(fs.readdirSync(tmp), [], 'no sample project was made');
  });
});
