import * as lockfile from 'proper-lockfile';
import { mkdir } from 'node:fs/promises';
import * as path from 'node:path';

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
  const release = await lockfile.lock(target, {
    realpath: false,
    stale: LOCK_STALE_MS,
    retries: { retries: 400, factor: 1.3, minTimeout: 2, maxTimeout: 40, randomize: true },
    onCompromised: (err) => { compromised = err; },
  });
  try {
    const result = await fn();
    if (compromised) throw compromised;
    return result;
  } finally {
    await release().catch(() => undefined);
  }
}
