import type * as Lockfile from 'proper-lockfile';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { isPidAlive } from '../process/processGroup';

/**
 * proper-lockfile, loaded on the first lock: loading it loads graceful-fs, which patches the process's
 * `fs.close` / `fs.closeSync` (a queue reset on every close) — a read-only `ralph status` closing thousands of files
 * should not pay for that.
 */
function lockfile(): typeof Lockfile {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('proper-lockfile') as typeof Lockfile;
}

/**
 * How long a lock may go without its holder refreshing it before another process takes it over, in ms.
 * proper-lockfile refreshes every `stale / 2`; a holder killed with SIGKILL blocks others for at most this long.
 */
export const LOCK_STALE_MS = 5_000;

/**
 * Runs `fn` while holding the cross-process lock of `target` (a file or directory, which need not exist): a
 * `<target>.lock` directory made by proper-lockfile, so the CLI, the extension and a second terminal never
 * interleave their read-modify-write cycles. Waits (with jittered retries, up to ~2×{@link LOCK_STALE_MS}) while
 * another process holds it. Throws when the lock cannot be taken or is compromised.
 */
export async function withFileLock<T>(target: string, fn: () => Promise<T>): Promise<T> {
  await mkdir(path.dirname(target), { recursive: true });
  let compromised: Error | undefined;
  const release = await lockfile().lock(target, {
    realpath: false,
    stale: LOCK_STALE_MS,
    retries: { retries: 400, factor: 1.3, minTimeout: 2, maxTimeout: 40, randomize: true },
    onCompromised: (err) => {
      compromised = err;
    },
  });
  try {
    const result = await fn();
    if (compromised) throw compromised;
    return result;
  } finally {
    await release().catch(() => undefined);
  }
}

/**
 * Takes the lock of `target` for as long as the caller wants it (e.g. a whole run), without waiting on a live
 * holder: resolves with the release function, or null when another live process holds it. The holder's pid is kept
 * in `<target>.pid`, so a lock left by a process that died (SIGKILL) on this host is taken over at once instead of
 * after {@link LOCK_STALE_MS}. proper-lockfile refreshes the lock every `stale / 2`; `onLost` is called if it is
 * taken away while held (the event loop was blocked longer than the stale time).
 */
export async function tryHoldLock(target: string, onLost: (err: Error) => void): Promise<(() => Promise<void>) | null> {
  await mkdir(path.dirname(target), { recursive: true });
  // Taking the lock and naming its holder are one step under a short lock: otherwise a second process
  // could read the dead holder's pid after a first one took the lock but before it wrote its own pid, remove the
  // fresh lock and run too (two `ralph run` after a SIGKILL, 1 in 40).
  return withFileLock(`${target}.takeover`, () => holdLock(target, onLost));
}

/** Fault injection for tests: runs after the lock is taken and before the holder's pid is written. */
export const lockFaults: { afterTake?: () => Promise<void> } = {};

async function holdLock(target: string, onLost: (err: Error) => void): Promise<(() => Promise<void>) | null> {
  const pidFile = `${target}.pid`;
  const take = () =>
    lockfile().lock(target, { realpath: false, stale: LOCK_STALE_MS, retries: 0, onCompromised: onLost });
  let release: () => Promise<void>;
  try {
    release = await take();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ELOCKED') throw err;
    const holder = Number((await readFile(pidFile, 'utf8').catch(() => '')).trim());
    if (!holder || isPidAlive(holder)) return null;
    // proper-lockfile's unlock only releases our own locks; the dead holder's lock directory is removed by hand.
    await rm(`${target}.lock`, { recursive: true, force: true });
    try {
      release = await take();
    } catch (again) {
      if ((again as NodeJS.ErrnoException).code === 'ELOCKED') return null;
      throw again;
    }
  }
  await lockFaults.afterTake?.();
  await writeFile(pidFile, `${process.pid}\n`);
  return async () => {
    await rm(pidFile, { force: true });
    await release();
  };
}
