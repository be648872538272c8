import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { cliPath } from '../../support/cli';
import { LANE_STUB } from '../../support/remoteLanes';
import { makeTempFolder, testCacheHome, type TempFolder } from '../../support/tempFolder';
import { git, gitInit, quantumJson } from '../../support/workspace';

/**
 * bullmq and ioredis (dist/remote-libs.js, esbuild.mjs) are loaded only by what uses remote lanes: a sequential run,
 * a parallel run on worktrees and `ralph status` never read them; `ralph worker` does.
 */
describe('cli: bullmq and ioredis load only for remote lanes', function () {
  this.timeout(120_000);
  let t: TempFolder;
  afterEach(() => t?.dispose());

  /** Runs the CLI in `t` with a preloaded hook and returns its exit code, output and the dist/ files it loaded. */
  const run = (args: string[], env: NodeJS.ProcessEnv = {}) => {
    const loaded = path.join(t.dir, '..', `${path.basename(t.dir)}-loaded.json`);
    const hook = t.write(
      '.ralph/hook.js',
      `process.on('exit', () => require('fs').writeFileSync(${JSON.stringify(loaded)}, JSON.stringify(Object.keys(require.cache).map((f) => require('path').relative(${JSON.stringify(path.dirname(cliPath))}, f)).filter((f) => !f.startsWith('..')).sort())));`,
    );
    const r = spawnSync(process.execPath, ['-r', hook, cliPath, '-C', t.dir, ...args], {
      encoding: 'utf8',
      env: { ...process.env, XDG_CACHE_HOME: testCacheHome(), ...env },
    });
    const files = JSON.parse(fs.readFileSync(loaded, 'utf8')) as string[];
    fs.rmSync(loaded);
    return { code: r.status, out: r.stdout + r.stderr, loaded: files };
  };

  it('a sequential run to passed, a parallel run on worktrees and status --json load neither; ralph worker does', () => {
    t = makeTempFolder('ralph-remote-libs-');
    const side = makeTempFolder('ralph-remote-libs-side-');
    try {
      t.write('quantum.json', quantumJson([{ id: 'S1' }]));
      t.write('.gitignore', '.ralph/\n');
      t.write(
        '.ralph/config.json',
        JSON.stringify({ claudePath: LANE_STUB, gates: { basic: 'true' }, timing: { betweenIterationsMs: 20 } }),
      );
      gitInit(t, { commit: true });
      const plan = side.write(
        'plan.json',
        JSON.stringify({ S1: { write: { 'S1.txt': 'S1\n' } }, S2: { write: { 'S2.txt': 'S2\n' } }, S3: {} }),
      );
      const env = { LANE_STUB_PLAN: plan, LANE_STUB_LOG: side.file('log.txt') };
      const seq = run(['run', '--trust', '--max-iterations', '2'], env);
      assert.equal(seq.code, 0, seq.out);
      assert.ok(t.exists('S1.txt'), seq.out);
      assert.ok(seq.loaded.includes('cli-main.js'), `control: ${seq.loaded.join(', ')}`);
      assert.ok(!seq.loaded.includes('remote-libs.js'), `a sequential run loaded ${seq.loaded.join(', ')}`);
      // Two more stories for the parallel run (S1 stays passed).
      t.write('quantum.json', quantumJson([{ id: 'S1', status: 'passed' }, { id: 'S2' }, { id: 'S3' }]));
      git(t.dir, 'commit', '-qam', 'two more stories');
      const par = run(['run', '--trust', '--parallel', '--max-iterations', '4'], env);
      assert.equal(par.code, 0, par.out);
      assert.ok(t.exists('S2.txt'), par.out);
      assert.ok(!par.loaded.includes('remote-libs.js'), `a parallel run on worktrees loaded ${par.loaded.join(', ')}`);
      const status = run(['status', '--json']);
      assert.equal(status.code, 0, status.out);
      assert.ok(!status.loaded.includes('remote-libs.js'), `status loaded ${status.loaded.join(', ')}`);
      // Control: the worker loads them (and refuses a Redis address without a password before connecting).
      const worker = run(['worker', '--redis', 'redis://127.0.0.1:1', '--repo', t.dir]);
      assert.equal(worker.code, 1, worker.out);
      assert.match(worker.out, /without a password/);
      assert.ok(worker.loaded.includes('remote-libs.js'), `ralph worker loaded ${worker.loaded.join(', ')}`);
    } finally {
      side.dispose();
    }
  });
});
