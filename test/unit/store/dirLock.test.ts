import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as lockfile from 'proper-lockfile';
import {
  decideExistingLock,
  DIR_LOCK_REFRESH_MS,
  DIR_LOCK_STALE_MS,
  lockRetryDelayMs,
  withDirLock,
  type ExistingLockAction,
} from '../../../src/core/store/dirLock';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

const errCode = (code: string) => (err: unknown) => (err as NodeJS.ErrnoException).code === code;
const isDir = (p: string) => fs.existsSync(p) && fs.statSync(p).isDirectory();
const setMtimeAgo = (p: string, ms: number) => {
  const at = new Date(Date.now() - ms);
  fs.utimesSync(p, at, at);
};

/** Issue 18: the RALPH-LOG.md lock of `waves check`, proper-lockfile's protocol without the library (in-process
 * cases; the cross-process ones are test/component/core/dirLock.test.ts). */
describe('store: dirLock (proper-lockfile protocol without proper-lockfile)', function () {
  this.timeout(60_000);
  let t: TempFolder;
  let target: string;
  beforeEach(() => {
    t = makeTempFolder('ralph-dirlock-');
    target = t.file('.planning/p/RALPH-LOG.md');
  });
  afterEach(() => t.dispose());

  it('decides on an existing lock as proper-lockfile does (stale strictly older than the stale time)', () => {
    const now = 1_000_000;
    const rows: { name: string; mtimeMs: number | undefined; want: ExistingLockAction }[] = [
      { name: 'vanished between mkdir and stat', mtimeMs: undefined, want: 'retry-now' },
      { name: 'fresh', mtimeMs: now - 10, want: 'wait' },
      { name: 'exactly the stale time old', mtimeMs: now - DIR_LOCK_STALE_MS, want: 'wait' },
      { name: 'one ms past the stale time', mtimeMs: now - DIR_LOCK_STALE_MS - 1, want: 'take-over' },
      { name: 'from the future (clock skew)', mtimeMs: now + 60_000, want: 'wait' },
    ];
    for (const r of rows)
      assert.equal(decideExistingLock({ mtimeMs: r.mtimeMs, now, staleMs: DIR_LOCK_STALE_MS }), r.want, r.name);
    assert.equal(DIR_LOCK_REFRESH_MS, DIR_LOCK_STALE_MS / 2, 'refreshed every half stale time, as proper-lockfile');
  });

  it('retries after growing, bounded, randomized pauses', () => {
    const rows: [attempt: number, rand: number, want: number][] = [
      [0, 0, 2],
      [0, 0.999, 4],
      [1, 0, 3],
      [5, 0, 7],
      [12, 0, 40],
      [50, 0, 40],
      [50, 0.5, 60],
    ];
    for (const [attempt, rand, want] of rows)
      assert.equal(lockRetryDelayMs(attempt, rand), want, `attempt ${attempt} rand ${rand}`);
  });

  it('holds <target>.lock while the section runs, then removes it; passes on the result', async () => {
    let inside = false;
    const r = await withDirLock(target, () => {
      inside = isDir(`${target}.lock`);
      return 42;
    });
    assert.equal(r, 42);
    assert.ok(inside, 'the lock directory exists while held');
    assert.ok(!fs.existsSync(`${target}.lock`), 'removed on release');
  });

  it('is released when the section throws, and the error is passed on', async () => {
    await assert.rejects(
      withDirLock(target, () => {
        throw new Error('boom');
      }),
      /boom/,
    );
    assert.ok(!fs.existsSync(`${target}.lock`));
  });

  it('leaves no exit listener behind', async () => {
    const before = process.listenerCount('exit');
    await withDirLock(target, () => assert.equal(process.listenerCount('exit'), before + 1));
    assert.equal(process.listenerCount('exit'), before);
  });

  it('waits for a live proper-lockfile holder, and takes the lock once it is released', async () => {
    fs.mkdirSync(path.dirname(target), { recursive: true });
    const release = await lockfile.lock(target, { realpath: false, stale: DIR_LOCK_STALE_MS });
    let ran = false;
    await assert.rejects(
      withDirLock(
        target,
        () => {
          ran = true;
        },
        { waitMs: 150 },
      ),
      errCode('ELOCKED'),
    );
    assert.ok(!ran, 'the section never ran while proper-lockfile held the lock');
    assert.ok(isDir(`${target}.lock`), "the holder's lock is left alone");
    const waiting = withDirLock(target, () => {
      ran = true;
    });
    await new Promise((r) => setTimeout(r, 100));
    assert.ok(!ran);
    await release();
    await waiting;
    assert.ok(ran, 'taken after the holder released it');
    assert.ok(!fs.existsSync(`${target}.lock`));
  });

  it('does not take over a fresh lock left by someone else, takes over a stale one at once', async () => {
    fs.mkdirSync(`${target}.lock`, { recursive: true });
    setMtimeAgo(`${target}.lock`, DIR_LOCK_STALE_MS - 1_000);
    await assert.rejects(
      withDirLock(target, () => 1, { waitMs: 100 }),
      errCode('ELOCKED'),
    );
    setMtimeAgo(`${target}.lock`, DIR_LOCK_STALE_MS + 1_000);
    assert.equal(await withDirLock(target, () => 2, { waitMs: 0 }), 2);
    assert.ok(!fs.existsSync(`${target}.lock`));
  });

  it('keepFresh touches the lock every half stale time and refuses a lock taken over meanwhile', async () => {
    let now = Date.now();
    const lockDir = `${target}.lock`;
    await withDirLock(
      target,
      (lock) => {
        const first = Math.trunc(fs.statSync(lockDir).mtimeMs);
        now += DIR_LOCK_REFRESH_MS - 1;
        setMtimeAgo(lockDir, 0); // not from us: a touch below the refresh time would not notice, nor touch
        const notOurs = fs.statSync(lockDir).mtimeMs;
        lock.keepFresh();
        assert.equal(fs.statSync(lockDir).mtimeMs, notOurs, 'not touched before the refresh time');
        fs.utimesSync(lockDir, (first + 0.5) / 1000, (first + 0.5) / 1000); // mid-ms: float seconds never round below it
        now += 2;
        lock.keepFresh();
        assert.ok(
          Math.abs(fs.statSync(lockDir).mtimeMs - now) <= 1,
          "touched to the clock's time (utimes takes float seconds)",
        );
        now += DIR_LOCK_REFRESH_MS;
        lock.keepFresh(); // the mtime it set (as stored) is its own: no false ECOMPROMISED
      },
      { clock: () => now },
    );
    assert.ok(!fs.existsSync(lockDir));

    // Taken over while held (e.g. the section blocked past the stale time): ECOMPROMISED, and the new holder's
    // lock is not removed on the way out.
    await assert.rejects(
      withDirLock(
        target,
        (lock) => {
          fs.rmdirSync(lockDir);
          fs.mkdirSync(lockDir); // another process's lock now
          setMtimeAgo(lockDir, -5_000);
          now += DIR_LOCK_REFRESH_MS;
          lock.keepFresh();
        },
        { clock: () => now },
      ),
      errCode('ECOMPROMISED'),
    );
    assert.ok(isDir(lockDir), "the other holder's lock is left alone");
  });
});
