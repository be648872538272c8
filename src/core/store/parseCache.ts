import { mkdirSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync, type Stats } from 'node:fs';
import * as path from 'node:path';
import type { z } from 'zod';
import { parseJsonFileText, readListedTextSync, readTextSync } from './readJsonFile';
import { cacheDir } from './cacheDir';
import { fnv1a } from './fnv';
import { FileProblemError, type FileProblem } from './parseError';
import type { KnownStat } from './snapshotCache';

/**
 * A cache of parsed and validated files for the read-only commands (`ralph status`, `ralph next`): a file's parse
 * result is reused while its path, size, mtime and inode are unchanged, so a bot polling `status --json` on a
 * large plan pays a `stat` per file instead of a read, a `JSON.parse` and a schema check.
 *
 * Rules:
 * - It lives outside the workspace, in `$XDG_CACHE_HOME/ralph/` (default `~/.cache/ralph/`), one file per
 *   workspace folder and kind, so a read-only command writes nothing into the repository and no watcher sees it.
 * - git's "racy clean" rule: an entry is served only when its file's mtime is older than the cache file's own
 *   mtime by more than {@link RACY_TICK_MS}; a file modified within the same timestamp tick as the cache write is
 *   read again (and the cache rewritten).
 * - Written atomically (a temporary file beside it, then rename); a cache that does not parse, has another format
 *   or version, belongs to another folder or another build of ralph is ignored and rebuilt.
 * - Writers never use it: every change re-reads its files inside the source's lock.
 * - `RALPH_CACHE=0` (or `off`) disables it: nothing is read or written.
 */

/** How much older than the cache write a file's mtime must be to be served from the cache (ms). FAT has 2 s. */
export const RACY_TICK_MS = 2000;

const FORMAT = 'ralph-parse-cache';
const VERSION = 1;

/** A stored entry: the file's identity when it was parsed, and the parse result. */
type Entry = [size: number, mtimeMs: number, ino: number, value: unknown];

interface CacheFile {
  format: typeof FORMAT;
  version: number;
  folder: string;
  kind: string;
  build: string;
  entries: Record<string, Entry>;
}

/** How many fresh parses a run may make without rewriting the cache file (re-parsing a few files costs less). */
export const PARSE_CACHE_FEW = 16;

let knownStats: ReadonlyMap<string, KnownStat> | undefined;
let onKnownUse: ((file: string) => void) | undefined;

/**
 * Hands the read-only commands the identity (size, mtime, inode) of files the snapshot lookup just examined and
 * found unchanged (store/snapshotCache.ts `readSnapshot`), so {@link ParseCache.read} serves them without a second
 * `stat`; `onUse` is told each file served that way (the snapshot recording counts it as read). `undefined` clears.
 * Process-wide: set by the CLI's read entry only (src/cli/readEntry.ts).
 */
export function useKnownStats(known: ReadonlyMap<string, KnownStat> | undefined, onUse?: (file: string) => void): void {
  knownStats = known;
  onKnownUse = known ? onUse : undefined;
}

/** Identifies the running build of ralph: a cache written by another build (other schemas) is not trusted. */
function buildId(): string {
  const script = process.argv[1];
  try {
    const st = script ? statSync(script) : undefined;
    return st ? `${script}:${st.size}:${st.mtimeMs}` : 'unknown';
  } catch {
    return 'unknown';
  }
}

/**
 * The parse cache of one workspace folder and one kind of files (e.g. `flow`, `quantum`). Use {@link openParseCache};
 * call {@link ParseCache.read} per file and {@link ParseCache.save} once at the end.
 */
export class ParseCache {
  private readonly next = new Map<string, Entry>();
  private fresh = 0;

  /** @internal */
  constructor(
    readonly file: string,
    private readonly folder: string,
    private readonly kind: string,
    private readonly build: string,
    private readonly old: Record<string, Entry>,
    /** mtime of the loaded cache file (ms), or -Infinity when there was none. */
    private readonly writtenAtMs: number,
  ) {}

  /**
   * The parse result of `file` (absolute path): from the cache when the file's size, mtime and inode match the
   * entry and the entry is not racy, else `parse(text)` of a fresh read, remembered for {@link save}.
   * `undefined` when the file does not exist. Only results that are plain JSON values may be cached.
   */
  read<T>(file: string, parse: (text: string) => T): T | undefined {
    const known = knownStats?.get(file);
    if (known) {
      const e = this.old[file];
      if (
        e &&
        e[0] === known[0] &&
        e[1] === known[1] &&
        e[2] === known[2] &&
        known[1] + RACY_TICK_MS < this.writtenAtMs
      ) {
        onKnownUse?.(file);
        this.next.set(file, e);
        return e[3] as T;
      }
    }
    let st: Stats | undefined;
    try {
      st = statSync(file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR')
        return undefined;
      throw err;
    }
    const e = this.old[file];
    if (
      e &&
      st.isFile() &&
      e[0] === st.size &&
      e[1] === st.mtimeMs &&
      e[2] === st.ino &&
      st.mtimeMs + RACY_TICK_MS < this.writtenAtMs
    ) {
      this.next.set(file, e);
      return e[3] as T;
    }
    // The one bounded reader (regular files only, size limits, no NUL bytes): it throws FileProblemError on refusal.
    const text = readTextSync(file);
    if (text === undefined) return undefined;
    const value = parse(text);
    this.next.set(file, [st.size, st.mtimeMs, st.ino, value]);
    this.fresh++;
    return value;
  }

  /**
   * Writes the entries used in this run (others are dropped) when an entry was dropped or more than
   * {@link PARSE_CACHE_FEW} files were parsed afresh (any, for a new cache): a
   * temporary file, then a rename. Failures (a read-only home, a full disk) are ignored: the cache is an optimisation.
   */
  save(): void {
    const oldKeys = Object.keys(this.old);
    const dropped = oldKeys.some((k) => !this.next.has(k));
    // Nothing new, or only a few files parsed afresh (a bot polling while one task file changes): the next run
    // re-parses those few rather than rewriting every entry now.
    if (!dropped && this.fresh <= (oldKeys.length ? PARSE_CACHE_FEW : 0)) return;
    const body: CacheFile = {
      format: FORMAT,
      version: VERSION,
      folder: this.folder,
      kind: this.kind,
      build: this.build,
      entries: Object.fromEntries(this.next),
    };
    const tmp = `${this.file}.${process.pid}.tmp`;
    try {
      mkdirSync(path.dirname(this.file), { recursive: true });
      writeFileSync(tmp, JSON.stringify(body));
      renameSync(tmp, this.file);
    } catch {
      try {
        unlinkSync(tmp);
      } catch {
        /* never written */
      }
    }
  }
}

/**
 * Opens the cache of `kind` files of `folder` (an absolute path). `undefined` when `RALPH_CACHE` is `0` or `off`.
 * A missing, unreadable, corrupt or foreign cache file opens as an empty cache (rebuilt by the next save).
 */
export function openParseCache(
  folder: string,
  kind: string,
  env: NodeJS.ProcessEnv = process.env,
): ParseCache | undefined {
  if (env.RALPH_CACHE === '0' || env.RALPH_CACHE === 'off') return undefined;
  const file = path.join(cacheDir(env), `${fnv1a(folder)}-${kind}.json`);
  const build = buildId();
  let entries: Record<string, Entry> = {};
  let writtenAtMs = -Infinity;
  try {
    const st = statSync(file);
    const c = JSON.parse(readFileSync(file, 'utf8')) as Partial<CacheFile>;
    if (
      c &&
      c.format === FORMAT &&
      c.version === VERSION &&
      c.folder === folder &&
      c.kind === kind &&
      c.build === build &&
      c.entries &&
      typeof c.entries === 'object'
    ) {
      entries = c.entries;
      writtenAtMs = st.mtimeMs;
    }
  } catch {
    // absent or corrupt: start empty
  }
  return new ParseCache(file, folder, kind, build, entries, writtenAtMs);
}

/** A JSON file's parse result as the cache keeps it: the validated value, or the positioned problem (no text). */
export type CachedParse<T> = { ok: true; value: T } | { ok: false; problem: FileProblem };

/**
 * The one JSON reader of the source readers, through the cache when one is given: reads `file` (absolute), parses
 * and validates it with `schema` (problems named `shown`; `fast`: a fast path giving zod's value, or `undefined` to
 * ask the schema, see model/fastLoose.ts), and returns the value or the problem; `undefined` when the file does not exist.
 * `listed`: a directory listing just showed `file` as a regular file, so without a cache it is read with
 * `readListedTextSync` (same answer, cheaper).
 */
export function readJsonParsed<S extends z.ZodType>(
  cache: ParseCache | undefined,
  file: string,
  shown: string,
  schema: S,
  fast?: (v: unknown) => z.infer<S> | undefined,
  listed = false,
): CachedParse<z.infer<S>> | undefined {
  const parse = (text: string): CachedParse<z.infer<S>> => {
    const r = parseJsonFileText(shown, text, schema, fast);
    return r.ok ? { ok: true, value: r.value } : { ok: false, problem: r.problem };
  };
  try {
    if (cache) return cache.read(file, parse);
    const text = listed ? readListedTextSync(file) : readTextSync(file);
    return text === undefined ? undefined : parse(text);
  } catch (err) {
    // A file the bounded reader refuses (not a regular file, too large, a NUL byte) is a problem naming it.
    if (err instanceof FileProblemError) return { ok: false, problem: { ...err.problem, file: shown } };
    throw err;
  }
}
