import { mkdirSync, rmdirSync, statSync, utimesSync } from 'node:fs';
import * as path from 'node:path';

/**
 * A cross-process lock without proper-lockfile, for hot paths that must not load it (proper-lockfile's
 * graceful-fs → legacy streams → node:stream and signal-exit were about half of dist/cli-waves.js's load time).
 *
 * The protocol is proper-lockfile 4's (node_modules/proper-lockfile/lib/lockfile.js, `realpath: false`), so a
 * proper-lockfile holder elsewhere (an older build, the extension, {@link withFileLock}) and this lock exclude each
 * other (test/unit/store/dirLock.test.ts):
 *  - the lock is the directory `<path.resolve(target)>.lock`, taken by `mkdir` (atomic);
 *  - a lock whose mtime is older than the stale time ({@link DIR_LOCK_STALE_MS}, the same 5 s as
 *    `LOCK_STALE_MS`) is stale: it is removed with `rmdir` and `mkdir` is tried once more, without a second stale
 *    check; a lock that vanished between `mkdir` and `stat` is retried the same way;
 *  - the holder touches the directory's mtime every half stale time (2.5 s) and, before touching, checks the mtime
 *    is still the one it set (else another process took the lock over: `ECOMPROMISED`);
 *  - release is `rmdir`.
 *
 * The locked section is synchronous, or awaits only its own file operations (check.ts's new briefs), so no refresh
 * timer is needed; the lock is released on every way out of it: a return, a throw (finally) and `process.exit()` called inside it
 * (an `exit` listener, registered only while held). A process killed outright (SIGKILL, a crash of the runtime)
 * leaves the directory, which is stale, and taken over, {@link DIR_LOCK_STALE_MS} later. The refresh is explicit:
 * a long section calls {@link HeldDirLock.keepFresh} in its loops.
 */

/** Stale time in ms: a lock not touched for this long is taken over (proper-lockfile's `stale`; `LOCK_STALE_MS`). */
export const DIR_LOCK_STALE_MS = 5_000;
/** The holder touches the lock after this many ms (proper-lockfile's `update`: `stale / 2`). */
export const DIR_LOCK_REFRESH_MS = DIR_LOCK_STALE_MS / 2;
/** How long an acquisition waits for a live holder before failing with `ELOCKED`, in ms (as `withFileLock`). */
export const DIR_LOCK_WAIT_MS = 2 * DIR_LOCK_STALE_MS;

/** What the locked section gets: a way to keep the lock fresh through a long synchronous loop. */
export interface HeldDirLock {
  /**
   * Touches the lock when {@link DIR_LOCK_REFRESH_MS} have passed since the last touch (cheap otherwise: one clock
   * read). Throws an `ECOMPROMISED` error when the lock was taken over meanwhile (its mtime is not ours) or removed.
   */
  keepFresh(): void;
}

/** What to do about a lock directory that already exists (pure: proper-lockfile's `isLockStale`). */
export type ExistingLockAction = 'wait' | 'take-over' | 'retry-now';

/**
 * The decision on an existing lock: `retry-now` when it vanished (`mtimeMs` undefined: `stat` said ENOENT),
 * `take-over` when its mtime is older than `staleMs` before `now` (strictly, as proper-lockfile's `isLockStale`),
 * `wait` otherwise. The caller tries `mkdir` once more after `retry-now` or a take-over, without a second stale check
 * (proper-lockfile retries with `stale: 0`), so two processes never remove each other's fresh lock in a row.
 */
export function decideExistingLock(o: {
  mtimeMs: number | undefined;
  now: number;
  staleMs: number;
}): ExistingLockAction {
  if (o.mtimeMs === undefined) return 'retry-now';
  if (o.mtimeMs < o.now - o.staleMs) return 'take-over';
  return 'wait';
}

/**
 * The pause before retry `attempt` (0-based) while a live process holds the lock, in ms: `withFileLock`'s
 * proper-lockfile retry options (factor 1.3, from 2 ms, at most 40 ms, randomized ×1–2); `rand` in [0, 1).
 */
export function lockRetryDelayMs(attempt: number, rand: number): number {
  return Math.round(Math.min(40, 2 * 1.3 ** attempt) * (1 + rand));
}

/** Seams for tests: the clock and the pause between attempts. */
export interface DirLockOptions {
  /** ms since epoch; default `Date.now`. */
  clock?: () => number;
  /** Default a timer. */
  sleep?: (ms: number) => Promise<void>;
  /** Default {@link DIR_LOCK_WAIT_MS}. */
  waitMs?: number;
}

function code(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

function lockError(message: string, errCode: string, file: string): Error {
  return Object.assign(new Error(message), { code: errCode, file });
}

/** The directory's mtime in whole ms (as proper-lockfile's `stat.mtime.getTime()`), undefined when it is gone. */
function mtimeOf(dir: string): number | undefined {
  try {
    return Math.trunc(statSync(dir).mtimeMs);
  } catch (err) {
    if (code(err) === 'ENOENT') return undefined;
    throw err;
  }
}

/**
 * One try at taking `dir` (proper-lockfile's `acquireLock`): the lock's mtime when taken, `undefined` when a live
 * holder has it. Throws on other errors (a missing parent folder, no permission).
 */
function tryTake(dir: string, now: number, mayTakeOver = true): number | undefined {
  try {
    mkdirSync(dir);
    return mtimeOf(dir);
  } catch (err) {
    if (code(err) !== 'EEXIST') throw err;
  }
  if (!mayTakeOver) return undefined;
  const action = decideExistingLock({ mtimeMs: mtimeOf(dir), now, staleMs: DIR_LOCK_STALE_MS });
  if (action === 'wait') return undefined;
  if (action === 'take-over') {
    try {
      rmdirSync(dir);
    } catch (err) {
      if (code(err) !== 'ENOENT') throw err;
    }
  }
  return tryTake(dir, now, false);
}

/**
 * Runs `fn` while holding the lock of `target` (a file that need not exist; its folder is made). `fn` should be
 * synchronous but for awaiting its own file operations (check.ts: briefs written on libuv's threads): it is held
 * until `fn`'s promise settles, with no timer refreshing it, so `fn` calls {@link HeldDirLock.keepFresh} itself.
 * The lock is the `<target>.lock` directory of proper-lockfile's protocol (see the module's comment). Waits, retrying, up to
 * {@link DIR_LOCK_WAIT_MS} while a live process holds it, then fails with an `ELOCKED` error. `fn`'s result or
 * error is passed on; the lock is released in every case.
 */
export async function withDirLock<T>(
  target: string,
  fn: (lock: HeldDirLock) => T | Promise<T>,
  o: DirLockOptions = {},
): Promise<T> {
  const clock = o.clock ?? Date.now;
  const sleep = o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const dir = `${path.resolve(target)}.lock`;
  mkdirSync(path.dirname(dir), { recursive: true });
  const start = clock();
  let mtime: number | undefined;
  for (let attempt = 0; ; attempt++) {
    mtime = tryTake(dir, clock());
    if (mtime !== undefined) break;
    if (clock() - start >= (o.waitMs ?? DIR_LOCK_WAIT_MS))
      throw lockError('Lock file is already being held', 'ELOCKED', target);
    await sleep(lockRetryDelayMs(attempt, Math.random()));
  }
  let ours: number | undefined = mtime;
  let lastTouch = clock();
  let compromised = false;
  const onExit = () => {
    if (compromised) return; // Another process holds it now (proper-lockfile does not remove a compromised lock either).
    try {
      rmdirSync(dir);
    } catch {
      // Already gone.
    }
  };
  process.on('exit', onExit);
  const held: HeldDirLock = {
    keepFresh() {
      const now = clock();
      if (now - lastTouch < DIR_LOCK_REFRESH_MS) return;
      const seen = mtimeOf(dir);
      if (seen !== ours) {
        compromised = true;
        throw lockError('Unable to update lock within the stale threshold', 'ECOMPROMISED', target);
      }
      const at = new Date(now);
      utimesSync(dir, at, at);
      ours = mtimeOf(dir);
      lastTouch = now;
    },
  };
  try {
    return await fn(held);
  } finally {
    process.removeListener('exit', onExit);
    onExit();
  }
}
