import { isUtf8 } from 'node:buffer';
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  fstatSync,
  fsync,
  fsyncSync,
  lstatSync,
  openSync,
  readFileSync,
  realpathSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import * as path from 'node:path';
import { needsSync } from './durability';
import { withFileLock } from './fileLock';
import { FileProblemError } from './parseError';
import { spliceChangedLines } from './byteSplice';

/** One file a planner decided to write, with the text it read (for the no-op check) and the text to write. */
export interface FileWrite {
  file: string;
  /** Text read inside the lock; `undefined` for a new file. */
  before: string | undefined;
  after: string;
}

/** The result of a committed plan: which files were actually rewritten (unchanged ones are skipped). */
export interface CommitResult<T> {
  result: T;
  written: string[];
}

/** How many times a plan is redone when another writer (an editor) changed a file between its read and its write. */
export const MAX_PLAN_ATTEMPTS = 5;

/**
 * Fault injection for tests (races are reproduced with a hook, not by repetition): `betweenReadAndWrite`
 * runs after a plan read its files and decided, before the compare-and-rename of each file. Never set in production.
 */
export const writeFaults: {
  betweenReadAndWrite?: (files: readonly string[], attempt: number) => void | Promise<void>;
} = {};

/**
 * Options of {@link commitPlan}. `putBack`: the write undoes claims no gate verified (attacks: a read-only
 * file, bytes that are not UTF-8, a link out of the workspace): a file the agent made hard to edit is still written, by the rules of {@link decideWrite}, and `note`
 * receives one line per file written that way (`<file>: <how>`), for the put-back's event and activity line.
 * `processOnly`: the caller holds a lock that keeps every other process's writer of this file out (a run's record,
 * written only under the folder's engine lock): the writes of this process are ordered by an in-process queue, with no
 * lock folder per write (a folder made and removed, two inodes, on each of the dozen writes an iteration makes). The
 * compare before the rename stays: an editor or an agent is still no writer that takes a lock.
 */
export interface CommitOptions {
  putBack?: { note(text: string): void };
  processOnly?: boolean;
}

/** The last commit queued on each lock target in this process ({@link CommitOptions} `processOnly`). */
const processQueue = new Map<string, Promise<unknown>>();

/** Runs `fn` after every earlier `processOnly` commit of `target` in this process has settled. */
function inProcessOrder<T>(target: string, fn: () => Promise<T>): Promise<T> {
  return afterEarlier(processQueue, target, fn);
}

/**
 * Runs `fn` once the work queued before it on `file` (a path, resolved) in `queue` has settled, either way, and
 * resolves or rejects with `fn`'s own outcome: the per-file order of this process's writes. An entry leaves `queue`
 * when the last work queued on it settles.
 */
export function afterEarlier<T>(queue: Map<string, Promise<unknown>>, file: string, fn: () => Promise<T>): Promise<T> {
  const key = path.resolve(file);
  const run = (queue.get(key) ?? Promise.resolve()).then(fn);
  const settled = run.then(
    () => undefined,
    () => undefined,
  );
  queue.set(key, settled);
  void settled.then(() => {
    if (queue.get(key) === settled) queue.delete(key);
  });
  return run;
}

/**
 * The one careful write of the store: takes the lock of `lockTarget`, lets `plan` read the current files and
 * decide (pure, returning the writes and a result value), then writes every changed file atomically. Files whose
 * new text equals the old one are not touched (a no-op leaves them byte-identical, mtime included). A planner
 * that finds a file it cannot parse throws before anything is written.
 *
 * No lost update: right before each rename the file is compared with what the plan read; when another
 * writer that does not take our lock (an editor) changed it, the plan is redone on the new content (at most
 * {@link MAX_PLAN_ATTEMPTS} times, then a {@link FileProblemError}). Refused, naming the file, before anything is
 * written ({@link decideWrite}): a file that is not UTF-8 text, a read-only file (mode without write bits; tests
 * run as root, where the OS would not stop us), a symbolic link whose target leaves the workspace; with
 * `opts.putBack` those are written instead (see {@link CommitOptions}).
 */
export async function commitPlan<T>(
  lockTarget: string,
  plan: () => Promise<{ writes: FileWrite[]; result: T }>,
  opts: CommitOptions = {},
): Promise<CommitResult<T>> {
  return (opts.processOnly ? inProcessOrder : withFileLock)(lockTarget, async () => {
    for (let attempt = 1; ; attempt++) {
      const { writes, result } = await plan();
      const changed = writes.filter((w) => w.before !== w.after);
      const targets = changed.map((w) => resolveWrite(w.file, !!opts.putBack));
      await writeFaults.betweenReadAndWrite?.(
        changed.map((w) => w.file),
        attempt,
      );
      const written: string[] = [];
      let stale: string | undefined;
      for (let i = 0; i < changed.length; i++) {
        const w = changed[i]!;
        const t = targets[i]!;
        if (!(await replaceIfUnchanged(t, w))) {
          stale = w.file;
          break;
        }
        written.push(w.file);
        for (const n of t.notes) opts.putBack?.note(`${w.file}: ${n}`);
      }
      if (stale === undefined) return { result, written };
      if (attempt >= MAX_PLAN_ATTEMPTS)
        throw new FileProblemError({
          file: stale,
          line: 0,
          column: 0,
          message: `changed by another writer while being edited, ${attempt} times: not written`,
        });
    }
  });
}

/** What {@link decideWrite} looks at: the file as `lstat` and its (link's) target show it. */
export interface FileFacts {
  /** `none`: not a link; `inside` / `outside`: a link whose real target is inside / outside the workspace; `dangling`: a link to nothing. */
  link: 'none' | 'inside' | 'outside' | 'dangling';
  /** The real path a link leads to (for messages). */
  linkTo?: string;
  /** The file (a link's target) is a regular file. */
  regular: boolean;
  /** Permission bits of the file (a link's target), e.g. 0o444. */
  mode: number;
  /** Its bytes are UTF-8 text. */
  utf8: boolean;
}

/**
 * How a file is written, or why not (pure). `through`: write the link's target instead of the link;
 * `replaceLink`: rename a regular file over the link itself (the target is never written); `bytes`: place only the
 * changed lines into the file's bytes (byteSplice.ts); `notes`: how it was written, for the put-back's event.
 */
export type WriteRule =
  | { write: false; message: string }
  | { write: true; through: boolean; replaceLink: boolean; bytes: boolean; notes: string[] };

/**
 * The write rule of the store and of a put-back. An ordinary edit
 * refuses a link out of the workspace (or to nothing), anything but a regular file, a read-only file and a file that
 * is not UTF-8. A put-back refuses only a link to nothing and what is not a regular file:
 * - a read-only file is replaced the atomic way every write uses (a temporary file renamed over it, which needs only
 *   the folder's write permission), its mode kept: the agent's `chmod a-w` does not keep its claim in the file;
 * - a file that is not UTF-8 gets only the bytes of the changed lines rewritten, every other byte kept;
 * - a link out of the workspace is the agent's change: the link itself is replaced by a regular file holding the
 *   link target's content (read bounded, as every reader reads it) with the claims put back; the outside file is
 *   neither written nor removed.
 */
export function decideWrite(f: FileFacts, putBack: boolean): WriteRule {
  const mode = (f.mode & 0o777).toString(8).padStart(4, '0');
  if (f.link === 'dangling') return { write: false, message: 'refused: a symbolic link whose target does not exist' };
  if (f.link === 'outside' && !putBack)
    return {
      write: false,
      message: `refused: a symbolic link to ${f.linkTo}, outside the workspace: not written through`,
    };
  if (!f.regular) return { write: false, message: 'refused: not a regular file' };
  const replaceLink = f.link === 'outside';
  const notes: string[] = [];
  if (replaceLink)
    notes.push(
      `was a symbolic link to ${f.linkTo}, outside the workspace: the link was replaced by a regular file (its target's content with the claims put back; ${f.linkTo} left untouched)`,
    );
  if ((f.mode & 0o222) === 0 && !replaceLink) {
    if (!putBack) return { write: false, message: `refused: the file is read-only (mode ${mode}): not written` };
    notes.push(
      `read-only (mode ${mode}): replaced by a new file (temporary file + rename in its folder), mode ${mode} kept`,
    );
  }
  if (!f.utf8) {
    if (!putBack)
      return {
        write: false,
        message: 'refused: the file is not UTF-8 text (editing it would replace its other bytes): not edited',
      };
    notes.push('not UTF-8 text: only the bytes of the changed lines were rewritten, every other byte kept');
  }
  return { write: true, through: f.link === 'inside', replaceLink, bytes: !f.utf8, notes };
}

/** Where and how one file of a plan is written (see {@link decideWrite}). */
interface WriteTarget {
  /** The path renamed over: the file, or a link's target inside the workspace. */
  path: string;
  /** Mode of the new file: the old file's (a replaced link: the default for a new file). */
  mode: number;
  bytes: boolean;
  notes: string[];
}

/**
 * The path to write for `file` (its own path, or a link's real target inside the workspace), after the refusals of
 * {@link commitPlan}. The workspace of a file is its nearest folder holding `.ralph` or `.git` (else its own folder).
 */
export function checkEditable(file: string): string {
  return resolveWrite(file, false).path;
}

function resolveWrite(file: string, putBack: boolean): WriteTarget {
  const fresh = 0o666 & ~process.umask();
  let st;
  try {
    st = lstatSync(file);
  } catch {
    return { path: file, mode: fresh, bytes: false, notes: [] }; // new file
  }
  let link: FileFacts['link'] = 'none';
  let real = file;
  if (st.isSymbolicLink()) {
    try {
      real = realpathSync(file);
      const root = realpathSync(workspaceOf(path.dirname(path.resolve(file))));
      const rel = path.relative(root, real);
      link = rel.startsWith('..') || path.isAbsolute(rel) ? 'outside' : 'inside';
      st = statSync(real);
    } catch {
      link = 'dangling';
    }
  }
  const regular = link !== 'dangling' && st.isFile();
  const rule = decideWrite(
    { link, linkTo: real, regular, mode: st.mode, utf8: regular ? isUtf8(readFileSync(real)) : true },
    putBack,
  );
  if (!rule.write) throw new FileProblemError({ file, line: 0, column: 0, message: rule.message });
  return {
    path: rule.through ? real : file,
    mode: rule.replaceLink ? fresh : st.mode & 0o7777,
    bytes: rule.bytes,
    notes: rule.notes,
  };
}

function workspaceOf(dir: string): string {
  for (let d = dir; ; d = path.dirname(d)) {
    if (existsSync(path.join(d, '.ralph')) || existsSync(path.join(d, '.git'))) return d;
    if (path.dirname(d) === d) return dir;
  }
}

/**
 * Writes the new content to a temporary file beside `t.path` (fsync, `t.mode`), then renames it over `t.path` only
 * when the file still holds what the plan read (`before`; absent when undefined). `t.bytes`: the file is not UTF-8, so
 * its bytes are read again here and only the changed lines are placed into them (byteSplice.ts); a change that cannot
 * be placed exactly is refused. Returns false, leaving the file untouched, when it changed.
 */
async function replaceIfUnchanged(t: WriteTarget, w: FileWrite): Promise<boolean> {
  const file = t.path;
  const { before, after } = w;
  let expected: Buffer | undefined = before === undefined ? undefined : Buffer.from(before, 'utf8');
  let buf: Buffer = Buffer.from(after, 'utf8');
  if (t.bytes && before !== undefined) {
    const raw = readFileSync(file);
    if (raw.toString('utf8') !== before) return false;
    const spliced = spliceChangedLines(raw, before, after);
    if (!spliced)
      throw new FileProblemError({
        file: w.file,
        line: 0,
        column: 0,
        message:
          'refused: the file is not UTF-8 text and the change could not be placed into its bytes exactly: not edited',
      });
    expected = raw;
    buf = spliced;
  }
  // The fsyncs run on libuv's threads (fsyncSync here was 2 s of a 4-lane run's main thread); the
  // check and the rename stay one synchronous step, with nothing of this process in between.
  const sync = needsSync(file);
  const tmp = await writeTempBesideAsync(file, buf, t.mode, sync);
  if (!stillHolds(file, expected)) {
    unlinkSync(tmp);
    return false;
  }
  renameSync(tmp, file);
  if (sync)
    try {
      const dfd = openSync(path.dirname(file), 'r');
      try {
        await fsyncOff(dfd);
      } finally {
        closeSync(dfd);
      }
    } catch {
      // a directory that cannot be fsynced (some filesystems): the rename still happened
    }
  return true;
}

/**
 * fsync of `fd` on libuv's threads, in the callback form with the synchronous open and close around it.
 */
function fsyncOff(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fsync(fd, (err) => (err ? reject(err) : resolve())));
}

/**
 * {@link writeTempBeside} with the fsync off this thread ({@link fsyncOff}); none for a scratch file (`sync` false,
 * by default when `file` is under a folder marked scratch, store/durability.ts).
 */
export async function writeTempBesideAsync(
  file: string,
  bytes: Buffer,
  mode: number,
  sync: boolean = needsSync(file),
): Promise<string> {
  const { tmp, fd } = startTemp(file, bytes, mode);
  try {
    if (sync) await fsyncOff(fd);
  } catch (err) {
    dropTemp(tmp, fd);
    throw err;
  }
  closeSync(fd);
  return tmp;
}

/**
 * Writes `bytes` (mode `mode`) to a new temporary file in `file`'s folder, fsynced, and returns its path: the first
 * half of an atomic replace (the caller renames it over `file`, or removes it). Nothing is left behind on an error.
 */
export function writeTempBeside(file: string, bytes: Buffer, mode: number): string {
  const { tmp, fd } = startTemp(file, bytes, mode);
  try {
    if (needsSync(file)) fsyncSync(fd);
  } catch (err) {
    dropTemp(tmp, fd);
    throw err;
  }
  closeSync(fd);
  return tmp;
}

/**
 * The part {@link writeTempBeside} and {@link writeTempBesideAsync} share: creates `.<name>.<pid>.<hex>.tmp` beside
 * `file` (never an existing file: `wx`) and writes `bytes` into it; returns it still open, for the caller's fsync.
 * Nothing is left behind on an error.
 */
function startTemp(file: string, bytes: Buffer, mode: number): { tmp: string; fd: number } {
  const tmp = path.join(
    path.dirname(file),
    `.${path.basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`,
  );
  const fd = openSync(tmp, 'wx', mode);
  try {
    let off = 0;
    while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
  } catch (err) {
    dropTemp(tmp, fd);
    throw err;
  }
  return { tmp, fd };
}

/** Closes and removes a temporary file of {@link startTemp} after an error. */
function dropTemp(tmp: string, fd: number): void {
  closeSync(fd);
  unlinkSync(tmp);
}

function stillHolds(file: string, expected: Buffer | undefined): boolean {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' && expected === undefined;
  }
  try {
    if (expected === undefined) return false;
    if (fstatSync(fd).size !== expected.length) return false;
    return readFileSync(fd).equals(expected);
  } finally {
    closeSync(fd);
  }
}
