import { createHash } from 'node:crypto';
import { unlinkSync } from 'node:fs';
import { chmod, chown as chownFile, type FileHandle, open, realpath, rename, stat, unlink } from 'node:fs/promises';
import * as path from 'node:path';
import { threadId } from 'node:worker_threads';
import { readTextSync } from './readJsonFile';
import type WriteFileAtomic from 'write-file-atomic';

/** write-file-atomic, loaded on the first write (a read-only command never loads it). */
export function writeFileAtomicModule(): typeof WriteFileAtomic {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('write-file-atomic') as typeof WriteFileAtomic;
}

/** Writes in flight per absolute path: a write to the same file waits for the one before it. */
const inFlight = new Map<string, Promise<void>>();
/** Temporary files being written, removed if the process exits meanwhile. */
const pendingTemps = new Set<string>();
let exitHookInstalled = false;
let invocations = 0;

/**
 * The temporary file beside `truename`: `<truename>.<uint32>`, the uint32 from this process, thread and write, as
 * write-file-atomic names it (so a leftover looks the same as before).
 */
function tempName(truename: string): string {
  const h = createHash('sha1')
    .update(__filename)
    .update(String(process.pid))
    .update(String(threadId))
    .update(String(++invocations))
    .digest();
  return `${truename}.${h.readUInt32BE(0)}`;
}

/** graceful-fs's rule, as write-file-atomic applies it: a chown or chmod refused to a non-root user is fine. */
function chownErrorOk(err: NodeJS.ErrnoException): boolean {
  if (err.code === 'ENOSYS') return true;
  const nonRoot = !process.getuid || process.getuid() !== 0;
  return nonRoot && (err.code === 'EINVAL' || err.code === 'EPERM');
}

/**
 * Writes `text` to `file` atomically: a temporary file beside it, fsync, then rename, so a reader (or a crash at
 * any point, SIGKILL included) sees the old file or the new one, never a mix. Keeps the file's mode and owner, and
 * writes through a symbolic link to its target. Two writes of one file run one after the other.
 *
 * The steps and their order are write-file-atomic's (`realpath`, `stat`, open `w` with the old mode, write, fsync,
 * close, chown and chmod as the old file, rename; the temporary file removed on failure), at a quarter of its CPU
 * (the engine writes about twenty files per iteration): the real path in one call instead of an `lstat` per path
 * component, no signal handlers installed and removed around each write, no removal of the already-renamed
 * temporary file. A temporary file left by an exit during a write is removed on the process's `exit`.
 */
export async function writeTextAtomic(file: string, text: string): Promise<void> {
  const absolute = path.resolve(file);
  const before = inFlight.get(absolute);
  const mine = (before ?? Promise.resolve()).then(() => writeNow(file, text));
  const settled = mine.catch(() => undefined);
  inFlight.set(absolute, settled);
  try {
    await mine;
  } finally {
    if (inFlight.get(absolute) === settled) inFlight.delete(absolute);
  }
}

async function writeNow(file: string, text: string): Promise<void> {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on('exit', () => {
      for (const t of pendingTemps)
        try {
          unlinkSync(t);
        } catch {
          // gone already
        }
    });
  }
  const truename = await realpath(file).catch(() => file);
  const tmp = tempName(truename);
  const stats = await stat(truename).catch(() => undefined);
  const mode = stats?.mode;
  const chown = stats && process.getuid ? { uid: stats.uid, gid: stats.gid } : undefined;
  pendingTemps.add(tmp);
  let fh: FileHandle | undefined;
  let renamed = false;
  try {
    fh = await open(tmp, 'w', mode);
    await fh.write(text, 0, 'utf8');
    await fh.sync();
    await fh.close();
    fh = undefined;
    if (chown) await chownOrOk(tmp, chown.uid, chown.gid);
    if (mode)
      await chmod(tmp, mode).catch((err: NodeJS.ErrnoException) => {
        if (!chownErrorOk(err)) throw err;
      });
    await rename(tmp, truename);
    renamed = true;
  } finally {
    if (fh) await fh.close().catch(() => undefined);
    if (!renamed) await unlink(tmp).catch(() => undefined);
    pendingTemps.delete(tmp);
  }
}

async function chownOrOk(file: string, uid: number, gid: number): Promise<void> {
  await chownFile(file, uid, gid).catch((err: NodeJS.ErrnoException) => {
    if (!chownErrorOk(err)) throw err;
  });
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
