import { chmodSync, renameSync, statSync, unlinkSync } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { readTextSync } from './readJsonFile';
import { needsSync } from './durability';
import { afterEarlier, writeTempBesideAsync } from './writePlan';

/** The last write started of each file (resolved path): the next one waits for it, so the last call wins. */
const lastWrite = new Map<string, Promise<unknown>>();

/**
 * Writes `text` to `file` atomically with the store's writer (store/writePlan.ts): a temporary file beside it
 * (`.<name>.<pid>.<hex>.tmp`, created new), fsynced off the main thread (not under a folder marked scratch,
 * store/durability.ts, nor with `durable: false`: a file written again by the next run and trusted by nothing after a
 * crash), then renamed over `file`, so a reader (or a crash at any point, SIGKILL included) sees the old file or the
 * new one, never a mix. Keeps the mode of the file it replaces, or sets `mode` (e.g. 0o600 for a file only the user
 * may read, from its first byte). A link at `file` is replaced, never written through: a link an agent planted cannot
 * aim the write elsewhere. Writes of one file in this process are renamed in call order. Rejects with the file
 * system's error; the temporary file is then removed.
 */
export function writeTextAtomic(
  file: string,
  text: string,
  opts: { mode?: number; durable?: boolean } = {},
): Promise<void> {
  return afterEarlier(lastWrite, file, () =>
    replaceFile(file, Buffer.from(text, 'utf8'), opts.mode, opts.durable !== false && needsSync(file)),
  );
}

async function replaceFile(file: string, bytes: Buffer, mode: number | undefined, sync: boolean): Promise<void> {
  let keep = mode;
  if (keep === undefined)
    try {
      keep = statSync(file).mode & 0o7777;
    } catch {
      // A new file: the process's umask decides.
    }
  const tmp = await writeTempBesideAsync(file, bytes, keep ?? 0o666, sync);
  try {
    // The umask applied at creation: the mode kept is set exactly.
    if (keep !== undefined) chmodSync(tmp, keep);
    renameSync(tmp, file);
  } catch (err) {
    try {
      unlinkSync(tmp);
    } catch {
      // already gone
    }
    throw err;
  }
}

/**
 * The file's text, or `undefined` when it does not exist. Bounded like every store read (store/readJsonFile.ts
 * `readTextSync`: regular files only, a size limit per format, no NUL byte); refusals and other read errors are thrown.
 */
export async function readTextIfExists(file: string): Promise<string | undefined> {
  return Promise.resolve(readTextSync(file));
}

/** Removes a file; absent is fine. Returns whether it existed. */
export async function removeIfExists(file: string): Promise<boolean> {
  try {
    await unlink(file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}
