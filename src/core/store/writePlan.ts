import { isUtf8 } from 'node:buffer';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, fstatSync, fsyncSync, lstatSync, openSync, readFileSync, realpathSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import * as path from 'node:path';
import { withFileLock } from './fileLock';
import { FileProblemError } from './parseError';

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
 * Fault injection for tests (issue 12: races are reproduced with a hook, not by repetition): `betweenReadAndWrite`
 * runs after a plan read its files and decided, before the compare-and-rename of each file. Never set in production.
 */
export const writeFaults: { betweenReadAndWrite?: (files: readonly string[], attempt: number) => void | Promise<void> } = {};

/**
 * The one careful write of the store: takes the lock of `lockTarget`, lets `plan` read the current files and
 * decide (pure, returning the writes and a result value), then writes every changed file atomically. Files whose
 * new text equals the old one are not touched (a no-op leaves them byte-identical, mtime included). A planner
 * that finds a file it cannot parse throws before anything is written.
 *
 * No lost update (issue 12): right before each rename the file is compared with what the plan read; when another
 * writer that does not take our lock (an editor) changed it, the plan is redone on the new content (at most
 * {@link MAX_PLAN_ATTEMPTS} times, then a {@link FileProblemError}). Refused, naming the file, before anything is
 * written ({@link checkEditable}): a file that is not UTF-8 text, a read-only file (mode without write bits; tests
 * run as root, where the OS would not stop us), a symbolic link whose target leaves the workspace.
 */
export async function commitPlan<T>(lockTarget: string, plan: () => Promise<{ writes: FileWrite[]; result: T }>): Promise<CommitResult<T>> {
  return withFileLock(lockTarget, async () => {
    for (let attempt = 1; ; attempt++) {
      const { writes, result } = await plan();
      const changed = writes.filter((w) => w.before !== w.after);
      const targets = changed.map((w) => checkEditable(w.file));
      await writeFaults.betweenReadAndWrite?.(changed.map((w) => w.file), attempt);
      const written: string[] = [];
      let stale: string | undefined;
      for (let i = 0; i < changed.length; i++) {
        const w = changed[i]!;
        if (!replaceIfUnchanged(targets[i]!, w.before, w.after)) { stale = w.file; break; }
        written.push(w.file);
      }
      if (stale === undefined) return { result, written };
      if (attempt >= MAX_PLAN_ATTEMPTS) throw new FileProblemError({ file: stale, line: 0, column: 0, message: `changed by another writer while being edited, ${attempt} times: not written` });
    }
  });
}

/**
 * The path to write for `file` (its own path, or a link's real target inside the workspace), after the refusals of
 * {@link commitPlan}. The workspace of a file is its nearest folder holding `.ralph` or `.git` (else its own folder).
 */
export function checkEditable(file: string): string {
  let target = file;
  let st;
  try {
    st = lstatSync(file);
  } catch {
    return file; // new file
  }
  if (st.isSymbolicLink()) {
    let real: string;
    try {
      real = realpathSync(file);
    } catch {
      throw new FileProblemError({ file, line: 0, column: 0, message: 'refused: a symbolic link whose target does not exist' });
    }
    const root = realpathSync(workspaceOf(path.dirname(path.resolve(file))));
    const rel = path.relative(root, real);
    if (rel.startsWith('..') || path.isAbsolute(rel)) throw new FileProblemError({ file, line: 0, column: 0, message: `refused: a symbolic link to ${real}, outside the workspace: not written through` });
    target = real;
    st = statSync(real);
  }
  if (!st.isFile()) throw new FileProblemError({ file, line: 0, column: 0, message: 'refused: not a regular file' });
  if ((st.mode & 0o222) === 0) throw new FileProblemError({ file, line: 0, column: 0, message: `refused: the file is read-only (mode ${(st.mode & 0o777).toString(8).padStart(4, '0')}): not written` });
  if (!isUtf8(readFileSync(target))) throw new FileProblemError({ file, line: 0, column: 0, message: 'refused: the file is not UTF-8 text (editing it would replace its other bytes): not edited' });
  return target;
}

function workspaceOf(dir: string): string {
  for (let d = dir; ; d = path.dirname(d)) {
    if (existsSync(path.join(d, '.ralph')) || existsSync(path.join(d, '.git'))) return d;
    if (path.dirname(d) === d) return dir;
  }
}

/**
 * Writes `after` to a temporary file beside `file` (fsync, the old file's mode), then renames it over `file` only
 * when `file` still holds `before` (absent when `before` is undefined). Returns false, leaving `file` untouched, when
 * it changed.
 */
function replaceIfUnchanged(file: string, before: string | undefined, after: string): boolean {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  let mode = 0o666 & ~process.umask();
  try {
    mode = statSync(file).mode & 0o7777;
  } catch {
    // new file
  }
  const fd = openSync(tmp, 'wx', mode);
  try {
    const buf = Buffer.from(after, 'utf8');
    let off = 0;
    while (off < buf.length) off += writeSync(fd, buf, off, buf.length - off);
    fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    unlinkSync(tmp);
    throw err;
  }
  closeSync(fd);
  if (!stillHolds(file, before)) {
    unlinkSync(tmp);
    return false;
  }
  renameSync(tmp, file);
  try {
    const dfd = openSync(path.dirname(file), 'r');
    try { fsyncSync(dfd); } finally { closeSync(dfd); }
  } catch {
    // a directory that cannot be fsynced (some filesystems): the rename still happened
  }
  return true;
}

function stillHolds(file: string, before: string | undefined): boolean {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' && before === undefined;
  }
  try {
    if (before === undefined) return false;
    const expected = Buffer.from(before, 'utf8');
    if (fstatSync(fd).size !== expected.length) return false;
    return readFileSync(fd).equals(expected);
  } finally {
    closeSync(fd);
  }
}
