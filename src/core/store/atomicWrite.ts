import { unlink } from 'node:fs/promises';
import { needsSync } from './durability';
import { readTextSync } from './readJsonFile';
import type WriteFileAtomic from 'write-file-atomic';

/** write-file-atomic, loaded on the first write (a read-only command never loads it). */
export function writeFileAtomicModule(): typeof WriteFileAtomic {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('write-file-atomic') as typeof WriteFileAtomic;
}

/**
 * Writes `text` to `file` atomically: a temporary file beside it, fsync, then rename, so a reader (or a crash at
 * any point, SIGKILL included) sees the old file or the new one, never a mix. Keeps the file's mode.
 */
export async function writeTextAtomic(file: string, text: string): Promise<void> {
  // A scratch file (store/durability.ts) is renamed into place without an fsync.
  await writeFileAtomicModule()(file, text, { encoding: 'utf8', fsync: needsSync(file) });
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
