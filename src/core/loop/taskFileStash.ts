import { lstatSync, mkdirSync, renameSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { checklistCandidates } from '../sources/checklist/checklist';
import { quantumPath } from '../sources/quantum/readQuantum';
import { refuseDuplicateKeys } from '../store/jsonEdit';
import { FileProblemError, parseJsonText } from '../store/parseError';
import { listDirSync, readBoundedSync, readTextSync } from '../store/readJsonFile';
import { writeTempBeside } from '../store/writePlan';

/**
 * The task files of a folder the engine keeps a copy of at each agent start: the files
 * every source and `ralph status` read items from: `quantum.json`, `.flow/meta.json`, `.flow/{tasks,specs,epics}/*.json`,
 * and the checklist files (`RALPH_TASK.md`, `PROMPT.md`, `specs/<name>/tasks.md`). Absolute paths of those present.
 */
export function taskFiles(folder: string): string[] {
  const out = [quantumPath(folder), path.join(folder, '.flow', 'meta.json')];
  for (const sub of ['tasks', 'specs', 'epics']) {
    const dir = path.join(folder, '.flow', sub);
    for (const e of listDirSync(dir)) if (!e.isDir && e.name.endsWith('.json')) out.push(path.join(dir, e.name));
  }
  for (const rel of checklistCandidates(folder)) out.push(path.join(folder, ...rel.split('/')));
  return out.filter((f) => {
    try {
      lstatSync(f);
      return true;
    } catch {
      return false;
    }
  });
}

/**
 * Why `file` cannot be read as a task file, or null: read bounded (a directory, a device, a file over its read
 * limit, a NUL byte in text are refused), and a `.json` file must parse with no key repeated in an object (a
 * repeated `status` shows `JSON.parse` readers the last value, while the store's writer refuses to edit it).
 * Text that is not UTF-8 is no problem here: the put-back edits its bytes (byteSplice.ts).
 */
export function taskFileProblem(file: string): string | null {
  try {
    if (!file.toLowerCase().endsWith('.json')) {
      readTextSync(file);
      return null;
    }
    const buf = readBoundedSync(file);
    if (buf === undefined) return null;
    const text = buf.toString('utf8');
    const parsed = parseJsonText(file, text);
    if (!parsed.ok) return `${parsed.problem.line}:${parsed.problem.column}: ${parsed.problem.message}`;
    refuseDuplicateKeys(file, text);
    return null;
  } catch (err) {
    if (err instanceof FileProblemError)
      return `${err.problem.line ? `${err.problem.line}:${err.problem.column}: ` : ''}${err.problem.message}`;
    return `cannot read: ${(err as Error).message}`;
  }
}

/**
 * Whether a task file is restored after an agent process (pure). Only a file that was readable when the agent
 * started, that changed since, and that cannot be read now: a file already broken at the start was not the agent's
 * doing in this iteration (the run's readers report it), and an unchanged one needs nothing.
 */
export function shouldRestore(f: { readableAtStart: boolean; changed: boolean; problemNow: string | null }): boolean {
  return f.readableAtStart && f.changed && f.problemNow !== null;
}

/** A task file set aside and restored: workspace-relative paths, and why it could not be read. */
export interface RestoredFile {
  file: string;
  aside: string;
  problem: string;
}

interface Entry {
  ident: string;
  bytes: Buffer | null;
  mode: number;
  readable: boolean;
}

const identOf = (file: string): string | null => {
  try {
    const st = lstatSync(file);
    const t = st.isSymbolicLink() ? statSync(file) : st;
    return `${st.isSymbolicLink() ? 'l' : 'f'}:${t.dev}:${t.ino}:${t.size}:${t.mtimeMs}:${st.ctimeMs}`;
  } catch {
    return null;
  }
};

/**
 * The content of the folder's task files at an agent's start, kept by the engine (in memory: a file unchanged since
 * the last capture is not read again), and the restore of one that the agent left unreadable (a
 * duplicate key, any JSON error, a checklist that cannot be read). Restoring moves the agent's file (its bytes, or
 * the link or folder it put there) aside, under the run folder, and writes the captured content in its place
 * (temporary file + rename, the captured mode): nothing is lost, and nothing the agent claimed in it stays done.
 * A crash between the two leaves the unreadable file, which every ralph reader refuses (never counted done).
 */
export class TaskFileStash {
  private readonly entries = new Map<string, Entry>();
  constructor(private readonly folder: string) {}

  /** Takes the task files' content now (at an agent's start). */
  capture(): void {
    const seen = new Set<string>();
    for (const file of taskFiles(this.folder)) {
      seen.add(file);
      const ident = identOf(file);
      if (ident === null) continue;
      if (this.entries.get(file)?.ident === ident) continue;
      const readable = taskFileProblem(file) === null;
      let bytes: Buffer | null = null;
      let mode = 0o644;
      try {
        bytes = readable ? (readBoundedSync(file) ?? null) : null;
        mode = statSync(file).mode & 0o7777;
      } catch {
        bytes = null;
      }
      this.entries.set(file, { ident, bytes, mode, readable: readable && bytes !== null });
    }
    for (const f of [...this.entries.keys()]) if (!seen.has(f)) this.entries.delete(f);
  }

  /**
   * After an agent process: every task file that {@link shouldRestore} is moved to `asideDir/<relative path>` and
   * its captured content written back. Returns what was restored (the caller reports each with an event).
   */
  restoreUnreadable(asideDir: string): RestoredFile[] {
    const out: RestoredFile[] = [];
    for (const [file, e] of this.entries) {
      const ident = identOf(file);
      if (ident === null || ident === e.ident) continue;
      const problem = taskFileProblem(file);
      if (!shouldRestore({ readableAtStart: e.readable, changed: true, problemNow: problem }) || !e.bytes) continue;
      const rel = path.relative(this.folder, file);
      const aside = path.join(asideDir, rel);
      mkdirSync(path.dirname(aside), { recursive: true });
      renameSync(file, aside);
      writeNew(file, e.bytes, e.mode);
      this.entries.set(file, { ...e, ident: identOf(file) ?? e.ident });
      out.push({ file: rel, aside: path.relative(this.folder, aside), problem: problem! });
    }
    return out;
  }
}

/** Writes `bytes` to a new file at `file` (temporary file in its folder, fsync, rename). */
function writeNew(file: string, bytes: Buffer, mode: number): void {
  renameSync(writeTempBeside(file, bytes, mode), file);
}
