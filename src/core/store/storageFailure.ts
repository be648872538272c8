import { accessSync, constants as fsConstants, statSync } from 'node:fs';
import { open, rm } from 'node:fs/promises';
import path from 'node:path';
import { ralphDir, ralphFile } from '../model/ralphPaths';

/**
 * When the disk cannot take the run's records: `.ralph/` read-only, a full disk. A run refuses to start on
 * a `.ralph/` it may not write (mode bits checked by us, since root ignores them), and a run that hits a storage
 * error mid-way ends failed with the cause recorded and its item given back, using the space of a reserve file made
 * at its start. The CLI exits {@link STORAGE_EXIT} in both cases.
 */

/** Exit code of `ralph run` when `.ralph/` cannot be written (read-only, disk full): sysexits EX_IOERR. */
export const STORAGE_EXIT = 74;

/** Error codes that mean "the file system refused the write", not a bug: disk or quota full, read-only, no permission, I/O. */
const STORAGE_CODES = new Set(['ENOSPC', 'EDQUOT', 'EROFS', 'EACCES', 'EPERM', 'EIO', 'EFBIG']);

/** Whether `err` is a storage refusal (see {@link STORAGE_CODES}) rather than a programming error. */
export function isStorageError(err: unknown): err is NodeJS.ErrnoException {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return typeof code === 'string' && STORAGE_CODES.has(code);
}

/** How a run names a storage refusal (`could not write (ENOSPC): …`): run results' `storageFailure`, the CLI's exit-74 line. */
export function storageFailureText(err: NodeJS.ErrnoException): string {
  return `could not write (${err.code}): ${err.message}`;
}

/**
 * Whether a file-system entry with `mode` may be written by us, from the mode bits alone: as root (who ignores them)
 * any write bit counts, otherwise the owner's, group's or others' bit as they apply. Pure.
 */
export function modeAllowsWrite(
  mode: number,
  o: { uid: number; gid: number; ownerUid: number; ownerGid: number },
): boolean {
  if (o.uid === 0) return (mode & 0o222) !== 0;
  if (o.uid === o.ownerUid) return (mode & 0o200) !== 0;
  if (o.gid === o.ownerGid) return (mode & 0o020) !== 0;
  return (mode & 0o002) !== 0;
}

/**
 * Why a run cannot record in `folder`'s `.ralph/` (and `.ralph/runs/` when present), or undefined when it can: a
 * folder whose mode has no write bit for us (checked from the bits, so it holds for root too), or one the system
 * refuses (a read-only mount: EROFS). The message names the folder and the fix.
 */
export function ralphWritableProblem(folder: string): string | undefined {
  for (const dir of [ralphDir(folder), ralphFile(folder, 'runs')]) {
    let st;
    try {
      st = statSync(dir);
    } catch {
      continue; // absent: created when needed (the parent's check covers it)
    }
    const rel = path.relative(folder, dir) + '/';
    const uid = process.getuid?.() ?? -1;
    if (!modeAllowsWrite(st.mode, { uid, gid: process.getgid?.() ?? -1, ownerUid: st.uid, ownerGid: st.gid })) {
      return `${rel} is read-only (mode ${(st.mode & 0o777).toString(8).padStart(4, '0')}): a run records its state there. Make it writable (chmod u+w ${rel}) and run again.`;
    }
    try {
      accessSync(dir, fsConstants.W_OK);
    } catch (err) {
      return `${rel} cannot be written (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): a run records its state there.`;
    }
  }
  return undefined;
}

/** Bytes a run sets aside at its start so that it can still record its end on a full disk. */
export const SPACE_RESERVE_BYTES = 1024 * 1024;

/** A reserve file: `release` removes it (idempotent, never throws) and says whether it freed anything. */
export interface SpaceReserve {
  readonly file: string;
  release(): Promise<boolean>;
}

/**
 * Writes `bytes` of zeros to `<dir>/.space-reserve` (real blocks, not a sparse file) and returns its handle. On a
 * full disk the run releases it before recording its end (run.json, the item given back, the run log). Throws when
 * the reserve itself cannot be written (the caller warns and goes on without one).
 */
export async function makeSpaceReserve(dir: string, bytes: number = SPACE_RESERVE_BYTES): Promise<SpaceReserve> {
  const file = path.join(dir, '.space-reserve');
  const h = await open(file, 'w');
  try {
    const chunk = Buffer.alloc(Math.min(bytes, 64 * 1024));
    for (let done = 0; done < bytes; done += chunk.length)
      await h.write(chunk, 0, Math.min(chunk.length, bytes - done));
    await h.sync();
  } catch (err) {
    await h.close().catch(() => undefined);
    await rm(file, { force: true }).catch(() => undefined);
    throw err;
  }
  await h.close();
  let released = false;
  return {
    file,
    async release() {
      if (released) return false;
      released = true;
      return rm(file, { force: true }).then(
        () => true,
        () => false,
      );
    },
  };
}
