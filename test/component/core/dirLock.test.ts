import * as assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as lockfile from 'proper-lockfile';
import { DIR_LOCK_STALE_MS, withDirLock } from '../../../src/core/store/dirLock';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

/**
 * Child modes of this file (run as `node dirLock.test.js` with RALPH_DIRLOCK_CHILD=`<mode>\n<target>`; mocha is
 * not loaded then):
 *  - `pl-try`: one proper-lockfile attempt (no retries), prints `locked` or the error code, releases.
 *  - `hold`: takes {@link withDirLock}, prints `held`, then blocks until killed.
 *  - `exit`: takes {@link withDirLock} and calls `process.exit(3)` inside the locked section.
 */
const CHILD = process.env.RALPH_DIRLOCK_CHILD;

async function child(mode: string, target: string): Promise<void> {
  if (mode === 'pl-try') {
    try {
      const release = await lockfile.lock(target, { realpath: false, stale: DIR_LOCK_STALE_MS, retries: 0 });
      process.stdout.write('locked\n');
      await release();
    } catch (err) {
      process.stdout.write(`${(err as NodeJS.ErrnoException).code}\n`);
    }
    return;
  }
  await withDirLock(target, () => {
    if (mode === 'exit') process.exit(3);
    fs.writeSync(1, 'held\n');
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60_000);
  });
}

const childEnv = (mode: string, target: string) => ({ ...process.env, RALPH_DIRLOCK_CHILD: `${mode}\n${target}` });

function runChild(mode: string, target: string): { status: number | null; out: string } {
  const r = spawnSync(process.execPath, [__filename], {
    env: childEnv(mode, target),
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: r.status, out: r.stdout.trim() };
}

const errCode = (code: string) => (err: unknown) => (err as NodeJS.ErrnoException).code === code;
const isDir = (p: string) => fs.existsSync(p) && fs.statSync(p).isDirectory();
const setMtimeAgo = (p: string, ms: number) => {
  const at = new Date(Date.now() - ms);
  fs.utimesSync(p, at, at);
};

if (CHILD) {
  const [mode, target] = CHILD.split('\n');
  void child(mode!, target!);
} else {
  /**
   * Issue 18: the RALPH-LOG.md lock of `waves check` (src/core/store/dirLock.ts) against proper-lockfile in another
   * process, and its exit paths in a process of its own (the in-process cases: test/unit/store/dirLock.test.ts).
   */
  describe('store: dirLock across processes (proper-lockfile protocol)', function () {
    this.timeout(120_000);
    let t: TempFolder;
    let target: string;
    beforeEach(() => {
      t = makeTempFolder('ralph-dirlock-');
      target = t.file('.planning/p/RALPH-LOG.md');
      fs.mkdirSync(path.dirname(target), { recursive: true });
    });
    afterEach(() => t.dispose());

    it('is released when the locked section calls process.exit()', () => {
      const r = runChild('exit', target);
      assert.equal(r.status, 3);
      assert.ok(!fs.existsSync(`${target}.lock`), 'the exit listener removed the lock');
    });

    it('excludes a proper-lockfile holder in another process while held, and lets it in after', async () => {
      const during = await withDirLock(target, () => runChild('pl-try', target).out);
      assert.equal(during, 'ELOCKED');
      assert.equal(runChild('pl-try', target).out, 'locked');
      assert.ok(!fs.existsSync(`${target}.lock`));
    });

    it('a holder killed outright leaves a lock that blocks until stale, then both kinds of lock take it over', async () => {
      const holder = spawn(process.execPath, [__filename], {
        env: childEnv('hold', target),
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const gone = new Promise((r) => holder.once('exit', r));
      await new Promise<void>((resolve, reject) => {
        holder.stdout.on('data', (d) => {
          if (String(d).includes('held')) resolve();
        });
        holder.once('exit', () => reject(new Error('the holder exited early')));
      });
      holder.kill('SIGKILL');
      await gone;
      assert.ok(isDir(`${target}.lock`), 'SIGKILL leaves the lock');
      assert.equal(runChild('pl-try', target).out, 'ELOCKED', 'fresh: proper-lockfile does not take it');
      await assert.rejects(
        withDirLock(target, () => 1, { waitMs: 50 }),
        errCode('ELOCKED'),
      );
      setMtimeAgo(`${target}.lock`, DIR_LOCK_STALE_MS + 1_000); // as if the stale time had passed
      assert.equal(runChild('pl-try', target).out, 'locked', 'proper-lockfile takes over the stale lock');
      fs.mkdirSync(`${target}.lock`);
      setMtimeAgo(`${target}.lock`, DIR_LOCK_STALE_MS + 1_000);
      assert.equal(await withDirLock(target, () => 'mine'), 'mine');
      assert.ok(!fs.existsSync(`${target}.lock`));
    });
  });
}
