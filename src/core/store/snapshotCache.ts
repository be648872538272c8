import * as fs from 'node:fs';
import * as path from 'node:path';
import { cacheDir } from './cacheDir';
import { fnv1a } from './fnv';
import { listDirSync } from './readJsonFile';

/**
 * The whole-answer cache of the read-only commands bots poll (`ralph status`, `ralph next`): the printed answer of a
 * command is reused while every input the command named is unchanged, so a warm call costs a `stat` per input and a
 * write of the stored answer, without loading the readers, the schemas or the plan graph (the small entry
 * dist/cli.js answers it; src/cli/entry.ts).
 *
 * How the inputs are known: the command names the files and folders its answer depends on ({@link AnswerInput}, e.g.
 * sources/answerInputs.ts); a folder stands for its own mtime (entries added, removed or renamed change it) and, to
 * the depth named, for its entries. A named path that does not exist is an input too: its creation must miss. A test
 * checks the names against every path the readers ask the file system about (test/unit/store/answerInputs.test.ts).
 *
 * Rules:
 * - Outside the workspace, in `$XDG_CACHE_HOME/ralph/` (`<fnv(folder)>-<command>.snapshot.json`).
 * - Each named input keyed by size, mtime, ctime and inode. Racy clean (git's rule): an entry is served only when
 *   every input's mtime and ctime are older than the entry file's own mtime by more than {@link SNAPSHOT_RACY_TICK_MS};
 *   an answer with a named input changed since the computation began (less that tick) is not even written.
 * - The entries of a named folder (thousands of task files) are stored by name only, not stat'ed when the answer is
 *   stored: such an entry is served only while it exists and its mtime and ctime are older than the start of the
 *   computation less the tick. Any write to a file sets its ctime to the time of the write (POSIX; no call sets it
 *   back), so a file that passes was not changed after the computation read it; an entry added, removed or renamed
 *   changes the folder's own mtime, a named input. This spares the first call (the cold one a bot makes after every
 *   agent process) a second pass of `stat`s over files it has just read; the next call pays that pass anyway, to
 *   check.
 * - Keyed by the folder, the build of ralph (size and mtime of its bundle files), and the environment variables that
 *   can change an answer ({@link snapshotEnvKey}); an entry that does not parse or does not match is ignored and
 *   replaced by the next store. Written atomically (a temporary file, then a rename); failures are ignored.
 * - Only answers that are a function of files alone are stored: the caller decides (status stores none while there
 *   are runs or waves, whose state depends on live processes and the clock).
 * - The engine removes a folder's entries after every agent process ({@link removeFolderCaches}).
 * - `RALPH_CACHE=0` (or `off`) disables it.
 */

/** How much older than the entry's write an input's mtime / ctime must be for the entry to be served (ms). */
export const SNAPSHOT_RACY_TICK_MS = 2000;

const FORMAT = 'ralph-snapshot-cache';
/** 4: an input stored by name is its name alone; 3: with four placeholder numbers; 2: by folder; 1: one array each. */
const VERSION = 4;

/**
 * Inputs as an entry stores them: runs of consecutive inputs in one folder, each run `[folder, input, input, …]`,
 * in {@link expandInputs}'s order. A named input is its name and four numbers (size, mtimeMs, ctimeMs, inode; size -1
 * and zeros when it did not exist); an entry of a named folder, stored by name (checked by age,
 * {@link SnapshotFile.spanMs}), is its name alone. About a third of the JSON of an array per input, and none to build:
 * a cold `status` on 5,000 tasks stores 6,350 inputs, a warm one parses them.
 */
export type SnapshotInputRun = (string | number)[];

/** A stored run: a folder, then each input's name, followed by four numbers unless it is stored by name. */
function isRun(run: unknown): run is SnapshotInputRun {
  if (!Array.isArray(run) || typeof run[0] !== 'string') return false;
  for (let j = 1; j < run.length; j += typeof run[j + 1] === 'number' ? 5 : 1) {
    if (typeof run[j] !== 'string') return false;
    if (
      typeof run[j + 1] === 'number' &&
      (typeof run[j + 2] !== 'number' || typeof run[j + 3] !== 'number' || typeof run[j + 4] !== 'number')
    )
      return false;
  }
  return true;
}

interface SnapshotFile {
  format: typeof FORMAT;
  version: number;
  folder: string;
  command: string;
  build: string;
  env: string;
  inputsByFolder: SnapshotInputRun[];
  /**
   * ms from the start of the computation to the entry's write (process clock): an input stored by name must be older
   * than the entry file's mtime less this and {@link SNAPSHOT_RACY_TICK_MS}.
   */
  spanMs: number;
  /** The answer: what was printed for each output mode (e.g. `json`, `text`), and the exit code. */
  outputs: Record<string, string>;
  exitCode: number;
}

/** `RALPH_CACHE` is not `0` / `off`. */
export function snapshotsEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.RALPH_CACHE !== '0' && env.RALPH_CACHE !== 'off';
}

/**
 * The environment variables an answer may depend on, as one string: every `RALPH_*`, `FLOW_*`, `XDG_*` and `GIT_*`
 * variable, `HOME` and `USER`, sorted. Anything else in the environment does not reach the readers.
 */
export function snapshotEnvKey(env: NodeJS.ProcessEnv = process.env): string {
  return Object.keys(env)
    .filter((k) => /^(RALPH_|FLOW_|XDG_|GIT_)/.test(k) || k === 'HOME' || k === 'USER')
    .sort()
    .map((k) => `${k}=${env[k]}`)
    .join('\0');
}

/** Identifies a build of ralph from its bundle files (path, size, mtime of each); `unknown` parts when absent. */
export function buildKey(files: readonly string[]): string {
  return files
    .map((f) => {
      const st = fs.statSync(f, { throwIfNoEntry: false });
      return st ? `${f}:${st.size}:${st.mtimeMs}` : `${f}:unknown`;
    })
    .join('|');
}

/** The entry file of `command` for `folder` (absolute). */
export function snapshotFile(folder: string, command: string, env: NodeJS.ProcessEnv = process.env): string {
  return path.join(cacheDir(env), `${fnv1a(folder)}-${command}.snapshot.json`);
}

/** The key of an entry: which folder, command, build and environment it answers for. */
export interface SnapshotKey {
  folder: string;
  command: string;
  build: string;
  env: string;
}

/** A stored answer. */
export interface SnapshotAnswer {
  outputs: Record<string, string>;
  exitCode: number;
}

/** Whether the input at `p` is as stored (`size` -1: it did not exist, and still does not). */
function sameInput(p: string, size: number, mtimeMs: number, ctimeMs: number, ino: number): boolean {
  const st = fs.statSync(p, { throwIfNoEntry: false });
  if (size === -1) return st === undefined;
  return st !== undefined && st.size === size && st.mtimeMs === mtimeMs && st.ctimeMs === ctimeMs && st.ino === ino;
}

/** Whether `p` exists and its mtime and ctime are older than `limitMs`. */
function olderThan(p: string, limitMs: number): boolean {
  const st = fs.statSync(p, { throwIfNoEntry: false });
  return st !== undefined && st.mtimeMs < limitMs && st.ctimeMs < limitMs;
}

/** What {@link readSnapshot} found: the stored answer, or why not (`changed`: the first input found changed or racy). */
export interface SnapshotLookup {
  answer?: SnapshotAnswer;
  changed?: string;
}

/**
 * The stored answer for `key` when the entry exists, matches the key, is not racy, and every input is unchanged;
 * else no answer, with the first changed (or racy) input when that was the reason. Never throws for a missing,
 * unreadable or corrupt entry.
 */
export function readSnapshot(key: SnapshotKey, env: NodeJS.ProcessEnv = process.env): SnapshotLookup {
  const file = snapshotFile(key.folder, key.command, env);
  let c: Partial<SnapshotFile>;
  let writtenAtMs: number;
  try {
    const st = fs.statSync(file, { throwIfNoEntry: false });
    if (!st || !st.isFile()) return {};
    writtenAtMs = st.mtimeMs;
    c = JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<SnapshotFile>;
  } catch {
    return {};
  }
  if (
    !c ||
    c.format !== FORMAT ||
    c.version !== VERSION ||
    c.folder !== key.folder ||
    c.command !== key.command ||
    c.build !== key.build ||
    c.env !== key.env
  )
    return {};
  if (
    !Array.isArray(c.inputsByFolder) ||
    !c.outputs ||
    typeof c.outputs !== 'object' ||
    typeof c.exitCode !== 'number' ||
    typeof c.spanMs !== 'number' ||
    !(c.spanMs >= 0)
  )
    return {};
  const limit = writtenAtMs - SNAPSHOT_RACY_TICK_MS;
  const listedLimit = limit - c.spanMs;
  const runs = c.inputsByFolder;
  for (let r = 0; r < runs.length; r++) {
    const run = runs[r];
    if (!isRun(run)) return {};
    const prefix = run[0] + path.sep;
    for (let j = 1, step = 1; j < run.length; j += step) {
      const p = prefix + (run[j] as string);
      step = typeof run[j + 1] === 'number' ? 5 : 1; // a name alone: stored by name, checked by age
      let same: boolean;
      try {
        if (step === 1) same = olderThan(p, listedLimit);
        else {
          // Read in place: a warm call checks thousands of inputs, and an array per input is garbage per input.
          const size = run[j + 1] as number;
          const mtimeMs = run[j + 2] as number;
          const ctimeMs = run[j + 3] as number;
          same =
            (size === -1 || Math.max(mtimeMs, ctimeMs) < limit) &&
            sameInput(p, size, mtimeMs, ctimeMs, run[j + 4] as number);
        }
      } catch {
        same = false;
      }
      if (!same) return { changed: p };
    }
  }
  return { answer: { outputs: c.outputs, exitCode: c.exitCode } };
}

/** The canonical start of every cache file ralph writes. */
const CACHE_HEAD = /^\{"format":"ralph-[a-z-]+","version":\d+,"folder":("(?:[^"\\]|\\.)*")/;

/** The real path of `p` (symlinks resolved), or `p` when it cannot be resolved (gone, unreadable). */
function realOr(p: string): string {
  try {
    return fs.realpathSync.native(p);
  } catch {
    return p;
  }
}

/**
 * Removes every file of `folder` in the user's cache folder (answer-cache entries of all commands, and any other
 * `<fnv>-….json`, such as the parse caches of earlier builds), under every spelling of
 * the folder (`-C link` and the real path are two keys), so the next read-only command re-derives
 * its answer from the files. Returns how many files were removed. Never throws.
 *
 * Why: the cache folder is writable by the agent (it runs as the user), so any entry could be a forgery whose answer
 * says `2/2` or whose parsed values say `passed` / `done` with the file's size, mtime and inode
 * kept; no check stored beside an entry can stop the same user, removal can. The engine calls it
 * after every agent process ends and when a run ends (the parallel coordinator after each lane and at the end); no
 * agent process outlives its iteration, so an entry written after that is the CLI's own.
 *
 * Which files: a name `<8 hex>-….json` whose hash is that of `folder` or of its real path; or whose first bytes name
 * (in the order ralph writes them: format, version, folder) a folder whose real path is `folder`'s; or whose first
 * bytes are not in that order (ralph never wrote it: a forgery for some spelling, or junk; removing it costs one re-parse).
 */
export function removeFolderCaches(folder: string, env: NodeJS.ProcessEnv = process.env): number {
  const dir = cacheDir(env);
  const real = realOr(folder);
  const prefixes = [`${fnv1a(folder)}-`, `${fnv1a(real)}-`];
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return 0;
  }
  let removed = 0;
  const head = Buffer.alloc(8192);
  // Several entries name one folder (its status, next and plan answers): its real path is looked up once.
  const reals = new Map<string, string>();
  const realOfNamed = (named: string): string => {
    let r = reals.get(named);
    if (r === undefined) reals.set(named, (r = realOr(named)));
    return r;
  };
  for (const name of names) {
    if (!/^[0-9a-f]{8}-.+\.json$/.test(name)) continue;
    const file = path.join(dir, name);
    let mine = prefixes.some((p) => name.startsWith(p));
    if (!mine) {
      let fd: number | undefined;
      try {
        fd = fs.openSync(file, 'r');
        const m = CACHE_HEAD.exec(head.toString('utf8', 0, fs.readSync(fd, head, 0, head.length, 0)));
        const named = m ? (JSON.parse(m[1]!) as string) : undefined;
        mine = named === undefined || named === folder || realOfNamed(named) === real;
      } catch {
        mine = false; // unreadable (or gone): not served either
      } finally {
        if (fd !== undefined)
          try {
            fs.closeSync(fd);
          } catch {
            /* closed */
          }
      }
    }
    if (!mine) continue;
    try {
      fs.rmSync(file, { force: true });
      removed++;
    } catch {
      // A file we may not remove: the readers' structural checks still apply.
    }
  }
  return removed;
}

/**
 * A path an answer depends on, as the command names it: a file or a folder (by its own size, mtime and inode), present
 * or not, and for a folder its entries `depth` levels down (1: the files and folders in it; 2: also theirs).
 */
export interface AnswerInput {
  path: string;
  depth?: number;
}

/** The absolute paths `inputs` stand for, folder by folder: each named path, then its entries to the depth named. */
export function expandInputs(inputs: readonly AnswerInput[]): string[] {
  const out: string[] = [];
  forEachInput(inputs, (dir, name) => out.push(dir + path.sep + name));
  return out;
}

/**
 * Calls `visit` with the folder and name of each path `inputs` stand for, in {@link expandInputs}'s order (the
 * folder and name of a named path are its `dirname` and `basename`).
 */
function forEachInput(inputs: readonly AnswerInput[], visit: (dir: string, name: string, listed: boolean) => void) {
  const walk = (p: string, depth: number, listed: boolean) => {
    const cut = p.lastIndexOf(path.sep);
    visit(p.slice(0, cut), p.slice(cut + 1), listed);
    if (depth <= 0) return;
    const dirs: string[] = [];
    // Absent, or not a folder: no entries, the path itself is the input.
    for (const e of listDirSync(p)) {
      if (e.isDir) dirs.push(e.name);
      else visit(p, e.name, true);
    }
    for (const d of dirs) walk(p + path.sep + d, depth - 1, true);
  };
  for (const i of inputs) walk(i.path, i.depth ?? 0, false);
}

/**
 * Stores `answer` for `key` with the current signatures of the `inputs` the command named ({@link expandInputs}).
 * Nothing is written when a named input changed since `sinceMs` (when the computation began) less
 * {@link SNAPSHOT_RACY_TICK_MS}: the answer may not show that change, and it could not be served anyway. The entries
 * of named folders are stored by name (see the rules above: checked by age when read). Atomic; failures (a read-only
 * home, a full disk) are ignored. Returns whether the entry was written.
 */
export function writeSnapshot(
  key: SnapshotKey,
  inputs: readonly AnswerInput[],
  answer: SnapshotAnswer,
  sinceMs: number,
  env: NodeJS.ProcessEnv = process.env,
): boolean {
  const file = snapshotFile(key.folder, key.command, env);
  const racyFrom = Math.min(sinceMs, Date.now()) - SNAPSHOT_RACY_TICK_MS;
  // Built as the inputs come (thousands of task files: no path and array per input).
  const runs: SnapshotInputRun[] = [];
  let run: SnapshotInputRun | undefined;
  let racy = false;
  try {
    forEachInput(inputs, (dir, name, listed) => {
      if (run === undefined || run[0] !== dir) runs.push((run = [dir]));
      if (listed) return void run.push(name);
      const st = fs.statSync(dir + path.sep + name, { throwIfNoEntry: false });
      if (!st) run.push(name, -1, 0, 0, 0);
      else if (Math.max(st.mtimeMs, st.ctimeMs) < racyFrom) run.push(name, st.size, st.mtimeMs, st.ctimeMs, st.ino);
      else racy = true;
    });
  } catch {
    return false;
  }
  if (racy) return false;
  return writeEntry(file, key, runs, Math.max(0, Date.now() - sinceMs), answer);
}

/** Writes an entry file atomically; failures are ignored (returns false). */
function writeEntry(
  file: string,
  key: SnapshotKey,
  inputsByFolder: SnapshotInputRun[],
  spanMs: number,
  answer: SnapshotAnswer,
): boolean {
  const body: SnapshotFile = {
    format: FORMAT,
    version: VERSION,
    ...key,
    inputsByFolder,
    spanMs,
    outputs: answer.outputs,
    exitCode: answer.exitCode,
  };
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(tmp, JSON.stringify(body));
    fs.renameSync(tmp, file);
    return true;
  } catch {
    try {
      fs.unlinkSync(tmp);
    } catch {
      /* never written */
    }
    return false;
  }
}
