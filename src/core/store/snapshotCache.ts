import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheDir } from './cacheDir';
import { fnv1a } from './fnv';

/**
 * The whole-answer cache of the read-only commands bots poll (`ralph status`): the printed answer of a
 * command is reused while every file-system path the command looked at while computing it is unchanged, so a warm
 * call costs a `stat` per input and a write of the stored answer, without loading the readers, the schemas or the
 * plan graph (the small entry dist/cli.js answers it; src/cli/entry.ts).
 *
 * How the inputs are known: while the answer is computed, {@link recordFsReads} wraps the synchronous readers of
 * the `fs` module (read, open, stat, lstat, exists, readdir, access, realpath, opendir, readlink) and notes every
 * path asked about, whether it exists or not (a path that did not exist is an input too: its creation must miss).
 * A directory that was listed is an input through its own mtime (entries added, removed or renamed change it). An
 * asynchronous `fs` call or a child process started while recording taints the recording: nothing is stored.
 *
 * Rules (the parse cache's, store/parseCache.ts):
 * - Outside the workspace, in `$XDG_CACHE_HOME/ralph/` (`<fnv(folder)>-<command>.snapshot.json`); paths under that
 *   folder are never inputs (the parse cache rewrites its own files).
 * - Racy clean: an entry is served only when every input's mtime and ctime are older than the entry file's own mtime
 *   by more than {@link SNAPSHOT_RACY_TICK_MS}; an answer whose inputs changed within that tick is not even written.
 * - Keyed by the folder, the build of ralph (size and mtime of its bundle files), and the environment variables that
 *   can change an answer ({@link snapshotEnvKey}); an entry that does not parse or does not match is ignored and
 *   replaced by the next store. Written atomically (a temporary file, then a rename); failures are ignored.
 * - Only answers that are a function of files alone are stored: the caller decides (status stores none while there
 *   are runs or waves, whose state depends on live processes and the clock).
 * - `RALPH_CACHE=0` (or `off`) disables it, like the parse cache.
 */

/** How much older than the entry's write an input's mtime / ctime must be for the entry to be served (ms). */
export const SNAPSHOT_RACY_TICK_MS = 2000;

const FORMAT = 'ralph-snapshot-cache';
/** 2: inputs stored by folder ({@link packSnapshotInputs}); 1 stored one array per input. */
const VERSION = 2;

/** One input: `[path]` when it did not exist, else `[path, size, mtimeMs, ctimeMs, ino]`. */
export type SnapshotInput = [string] | [string, number, number, number, number];

/**
 * Inputs as an entry stores them: runs of consecutive inputs in one folder, each run
 * `[folder, name, size, mtimeMs, ctimeMs, ino, name, size, …]` (five slots per input; an input that did not exist
 * has size -1 and zeros). Same inputs, same order as the {@link SnapshotInput} list, in about half the JSON and
 * without an array per input: a warm `status` on 10,000 items parses 6,400 inputs.
 */
export type SnapshotInputRun = (string | number)[];

/** {@link SnapshotInputRun}s of `inputs` (absolute paths), in order. Pure. */
export function packSnapshotInputs(inputs: readonly SnapshotInput[]): SnapshotInputRun[] {
  const runs: SnapshotInputRun[] = [];
  let run: SnapshotInputRun | undefined;
  for (const i of inputs) {
    const cut = i[0].lastIndexOf(path.sep);
    const dir = i[0].slice(0, cut);
    const name = i[0].slice(cut + 1);
    if (run === undefined || run[0] !== dir) runs.push((run = [dir]));
    if (i.length === 1) run.push(name, -1, 0, 0, 0);
    else run.push(name, i[1], i[2], i[3], i[4]);
  }
  return runs;
}

/**
 * `paths` (absolute) grouped by folder, stable: folders in the order first seen, each folder's paths in their order.
 * The readers interleave folders (a task file, its state file, the next task file…): grouped, the bench's 6,400
 * inputs are 14 runs instead of 2,500, and the entry parses in less than half the time. Pure.
 */
export function byFolder(paths: Iterable<string>): string[] {
  const groups = new Map<string, string[]>();
  for (const p of paths) {
    const dir = p.slice(0, p.lastIndexOf(path.sep));
    const group = groups.get(dir);
    if (group) group.push(p);
    else groups.set(dir, [p]);
  }
  const out: string[] = [];
  for (const group of groups.values()) for (const p of group) out.push(p);
  return out;
}

/** The {@link SnapshotInput} list of stored runs, or `undefined` when they are not well formed. Pure. */
export function unpackSnapshotInputs(runs: unknown): SnapshotInput[] | undefined {
  if (!Array.isArray(runs)) return undefined;
  const out: SnapshotInput[] = [];
  for (const run of runs as unknown[]) {
    if (!isRun(run)) return undefined;
    const prefix = run[0] + path.sep;
    for (let j = 1; j < run.length; j += 5) {
      const p = prefix + (run[j] as string);
      out.push(
        run[j + 1] === -1
          ? [p]
          : [p, run[j + 1] as number, run[j + 2] as number, run[j + 3] as number, run[j + 4] as number],
      );
    }
  }
  return out;
}

/** A stored run: a folder, then five slots per input (a name and four numbers). */
function isRun(run: unknown): run is SnapshotInputRun {
  if (!Array.isArray(run) || typeof run[0] !== 'string' || (run.length - 1) % 5 !== 0) return false;
  for (let j = 1; j < run.length; j += 5) {
    if (
      typeof run[j] !== 'string' ||
      typeof run[j + 1] !== 'number' ||
      typeof run[j + 2] !== 'number' ||
      typeof run[j + 3] !== 'number' ||
      typeof run[j + 4] !== 'number'
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

/** A file's identity as an entry recorded it and a lookup found it unchanged: size, mtime (ms), inode. */
export type KnownStat = readonly [size: number, mtimeMs: number, ino: number];

/** After a miss, how many changed inputs a lookup looks for before it gives up on {@link SnapshotLookup.unchanged}. */
export const SNAPSHOT_MAX_CHANGED = 32;

/** What {@link readSnapshot} found: the stored answer, or why not (`changed`: the first input found changed or racy). */
export interface SnapshotLookup {
  answer?: SnapshotAnswer;
  changed?: string;
  /**
   * On a miss where at most {@link SNAPSHOT_MAX_CHANGED} inputs changed: the existing inputs examined and found
   * unchanged (and not racy), by absolute path, with the size, mtime and inode just seen, so the recomputation
   * re-reads only the changed files without a second `stat` of the others (store/parseCache.ts `useKnownStats`).
   */
  unchanged?: Map<string, KnownStat>;
}

/** `target[name]` computed by `get` on first read, then kept (a plain data property from then on). */
function lazy<T extends object, K extends PropertyKey, V>(
  target: T,
  name: K,
  get: () => V,
): T & { readonly [P in K]: V } {
  return Object.defineProperty(target, name, {
    configurable: true,
    enumerable: true,
    get() {
      const value = get();
      Object.defineProperty(target, name, { value, enumerable: true, writable: true, configurable: true });
      return value;
    },
  }) as T & { readonly [P in K]: V };
}

/**
 * The stored answer for `key` when the entry exists, matches the key, is not racy, and every input is unchanged;
 * else no answer, with the first changed (or racy) input when that was the reason, and then the unchanged inputs
 * (see {@link SnapshotLookup.unchanged}). Never throws for a missing, unreadable or corrupt entry. On a miss,
 * `unchanged` is built when first read.
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
  if (!Array.isArray(c.inputsByFolder) || !c.outputs || typeof c.outputs !== 'object' || typeof c.exitCode !== 'number')
    return {};
  const limit = writtenAtMs - SNAPSHOT_RACY_TICK_MS;
  let changed: string | undefined;
  let count = 0;
  const changedAll: string[] = [];
  const runs = c.inputsByFolder;
  for (let r = 0; r < runs.length; r++) {
    const run = runs[r];
    if (!isRun(run)) return changed !== undefined ? { changed } : {};
    const prefix = run[0] + path.sep;
    for (let j = 1; j < run.length; j += 5) {
      const p = prefix + (run[j] as string);
      const size = run[j + 1] as number;
      const mtimeMs = run[j + 2] as number;
      const ctimeMs = run[j + 3] as number;
      let same: boolean;
      try {
        same =
          (size === -1 || Math.max(mtimeMs, ctimeMs) < limit) &&
          sameInput(p, size, mtimeMs, ctimeMs, run[j + 4] as number);
      } catch {
        same = false;
      }
      if (same) continue;
      changed ??= p;
      changedAll.push(p);
      if (++count > SNAPSHOT_MAX_CHANGED) return { changed };
    }
  }
  if (changed === undefined) return { answer: { outputs: c.outputs, exitCode: c.exitCode } };
  // A miss: the inputs not found changed are unchanged, with the identity just confirmed (built only when asked for:
  // a hit allocates nothing per input).
  return lazy({ changed }, 'unchanged', () => {
    const changedSet = new Set(changedAll);
    const unchanged = new Map<string, KnownStat>();
    for (const i of unpackSnapshotInputs(runs)!)
      if (i.length !== 1 && !changedSet.has(i[0])) unchanged.set(i[0], [i[1], i[2], i[4]]);
    return unchanged;
  });
}

/** The canonical start of every cache file ralph writes (answer cache, parse cache). */
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
 * Removes every file of `folder` in the user's cache folder: answer-cache entries (all commands) and the parse caches (`<fnv>-<kind>.json`, store/parseCache.ts), under every spelling of
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
        mine = named === undefined || named === folder || realOr(named) === real;
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
 * Stores `answer` for `key` with the current signatures of `inputs` (absolute paths, stored {@link byFolder}). Nothing is written when an
 * input changed within {@link SNAPSHOT_RACY_TICK_MS} of now (it could not be served) or cannot be examined;
 * `checkFirst` (the input a lookup found changed) is examined first.
 * Atomic; failures (a read-only home, a full disk) are ignored. Returns whether the entry was written.
 */
export function writeSnapshot(
  key: SnapshotKey,
  inputs: Iterable<string>,
  answer: SnapshotAnswer,
  opts: { env?: NodeJS.ProcessEnv; checkFirst?: string } = {},
): boolean {
  const file = snapshotFile(key.folder, key.command, opts.env ?? process.env);
  const racyFrom = Date.now() - SNAPSHOT_RACY_TICK_MS;
  const sigs: SnapshotInput[] = [];
  try {
    // The input that made the lookup miss was likely just written: when it is racy, nothing else needs a stat.
    const first = opts.checkFirst !== undefined ? fs.statSync(opts.checkFirst, { throwIfNoEntry: false }) : undefined;
    if (first && Math.max(first.mtimeMs, first.ctimeMs) >= racyFrom) return false;
    for (const p of byFolder(inputs)) {
      const st = fs.statSync(p, { throwIfNoEntry: false });
      if (!st) {
        sigs.push([p]);
        continue;
      }
      if (Math.max(st.mtimeMs, st.ctimeMs) >= racyFrom) return false;
      sigs.push([p, st.size, st.mtimeMs, st.ctimeMs, st.ino]);
    }
  } catch {
    return false;
  }
  return writeEntry(file, key, packSnapshotInputs(sigs), answer);
}

/** Writes an entry file atomically; failures are ignored (returns false). */
function writeEntry(
  file: string,
  key: SnapshotKey,
  inputsByFolder: SnapshotInputRun[],
  answer: SnapshotAnswer,
): boolean {
  const body: SnapshotFile = {
    format: FORMAT,
    version: VERSION,
    ...key,
    inputsByFolder,
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

/** What {@link recordFsReads} saw. */
export interface FsRecording {
  /** Absolute paths asked about, in first-seen order (paths under the ignored folders left out). */
  readonly paths: Set<string>;
  /** Why the recording cannot be trusted (an asynchronous `fs` call, a child process), or `undefined`. */
  readonly tainted: string | undefined;
  /** Puts the original functions back. */
  stop(): void;
}

const SYNC_READERS = [
  'readFileSync',
  'openSync',
  'statSync',
  'lstatSync',
  'existsSync',
  'readdirSync',
  'accessSync',
  'realpathSync',
  'opendirSync',
  'readlinkSync',
] as const;
const ASYNC_READERS = [
  'readFile',
  'open',
  'stat',
  'lstat',
  'exists',
  'readdir',
  'access',
  'realpath',
  'opendir',
  'readlink',
  'createReadStream',
  'watch',
  'watchFile',
] as const;
const PROMISE_READERS = [
  'readFile',
  'open',
  'stat',
  'lstat',
  'readdir',
  'access',
  'realpath',
  'opendir',
  'readlink',
] as const;
/** A child process reads what no recording sees (git reads its config files): any of these taints the recording. */
const CHILD_STARTERS = ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork'] as const;

/** An absolute path that `path.resolve` would return unchanged (no `.`/`..` segment, no doubled or trailing slash). */
function isNormalAbsolute(p: string): boolean {
  return (
    path.sep === '/' &&
    p.charCodeAt(0) === 47 &&
    p.length > 1 &&
    !p.includes('//') &&
    !p.endsWith('/') &&
    !/\/\.\.?(\/|$)/.test(p)
  );
}

function pathOf(arg: unknown): string | undefined {
  if (typeof arg === 'string') return isNormalAbsolute(arg) ? arg : path.resolve(arg);
  if (Buffer.isBuffer(arg)) return path.resolve(arg.toString());
  if (arg instanceof URL) return arg.protocol === 'file:' ? path.resolve(fileURLToPath(arg)) : undefined;
  return undefined; // a file descriptor: its path was recorded when it was opened
}

/**
 * Starts recording the paths the synchronous `fs` readers are asked about (process-wide, until `stop()`), leaving
 * out paths at or under `ignore` (e.g. the cache folder). Calls go through to the real functions unchanged. Call it
 * before the code under record is loaded, so that libraries copying `fs` at load time copy the wrappers.
 */
export function recordFsReads(ignore: readonly string[] = []): FsRecording {
  // The module object itself (a namespace import is a read-only view of it); bundled code reads it at each call.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const real = require('node:fs') as typeof fs;
  const mod = real as unknown as Record<string, unknown>;
  const promises = real.promises as unknown as Record<string, unknown>;
  const paths = new Set<string>();
  let tainted: string | undefined;
  const saved: [Record<string, unknown>, string, unknown][] = [];
  const ignored = (p: string) => ignore.some((d) => p === d || p.startsWith(d.endsWith(path.sep) ? d : d + path.sep));
  const wrap = (
    target: Record<string, unknown>,
    name: string,
    make: (orig: (...a: unknown[]) => unknown) => (...a: unknown[]) => unknown,
  ) => {
    const orig = target[name];
    if (typeof orig !== 'function') return;
    const w = make(orig as (...a: unknown[]) => unknown);
    // Own properties too (`realpathSync.native`, `exists[util.promisify.custom]`).
    for (const k of Reflect.ownKeys(orig))
      if (!(k in w) || typeof k === 'symbol' || k === 'native')
        (w as unknown as Record<string | symbol, unknown>)[k] = (orig as unknown as Record<string | symbol, unknown>)[
          k
        ];
    saved.push([target, name, orig]);
    target[name] = w;
  };
  for (const name of SYNC_READERS) {
    wrap(
      mod,
      name,
      (orig) =>
        function (this: unknown, ...a: unknown[]) {
          const p = pathOf(a[0]);
          if (p !== undefined && !ignored(p)) paths.add(p);
          return orig.apply(this, a);
        },
    );
  }
  // realpathSync.native is a separate function.
  const rp = mod.realpathSync as { native?: (...a: unknown[]) => unknown };
  if (rp.native) {
    const nat = rp.native;
    rp.native = function (this: unknown, ...a: unknown[]) {
      const p = pathOf(a[0]);
      if (p !== undefined && !ignored(p)) paths.add(p);
      return nat.apply(this, a);
    };
  }
  for (const name of ASYNC_READERS)
    wrap(
      mod,
      name,
      (orig) =>
        function (this: unknown, ...a: unknown[]) {
          tainted ??= `fs.${name}`;
          return orig.apply(this, a);
        },
    );
  for (const name of PROMISE_READERS)
    wrap(
      promises,
      name,
      (orig) =>
        function (this: unknown, ...a: unknown[]) {
          tainted ??= `fs.promises.${name}`;
          return orig.apply(this, a);
        },
    );
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const cp = require('node:child_process') as Record<string, unknown>;
  for (const name of CHILD_STARTERS)
    wrap(
      cp,
      name,
      (orig) =>
        function (this: unknown, ...a: unknown[]) {
          tainted ??= `child_process.${name}`;
          return orig.apply(this, a);
        },
    );
  return {
    paths,
    get tainted() {
      return tainted;
    },
    stop() {
      for (const [target, name, orig] of saved.reverse()) target[name] = orig;
      saved.length = 0;
    },
  };
}
