import type * as Jsonc from 'jsonc-parser';
import type { Node } from 'jsonc-parser';
import { closeSync, constants as fsConstants, fstatSync, openSync, readdirSync, readSync, type Stats } from 'node:fs';
import type { z } from 'zod';
import { FileProblemError, parseJsonText, positionAt, type FileProblem } from './parseError';

/**
 * The store's file readers: every format reader (sources, control, loop, configuration) reads through these, so a
 * file is parsed and validated one way and a bad one is reported one way (file:line:column, never a stack trace).
 * The synchronous readers serve the source readers: `ralph status` reads tens of thousands of small files, and
 * synchronous reads avoid a promise and a thread-pool hop per file (see bench/sources.bench.ts).
 */

/**
 * Largest file each format's reader reads, in bytes. Generous enough for a 20,000-item plan (a quantum.json of
 * 20,000 stories is about 20 MB); a file above its limit is refused, not read (a task source linked to
 * `/dev/zero` read until memory ran out). `.ralph/config.json` `readLimits` (`jsonMb`, `textMb`) changes them.
 */
export interface ReadLimits {
  /** `.json` files (plans, flow-next tasks, run records, configuration), bytes. Default 64 MiB. */
  jsonBytes: number;
  /** Every other text file (task markdown, checklists, progress.txt, logs read whole), bytes. Default 16 MiB. */
  textBytes: number;
}

/** The defaults of {@link ReadLimits}. */
export const DEFAULT_READ_LIMITS: Readonly<ReadLimits> = Object.freeze({
  jsonBytes: 64 * 1024 * 1024,
  textBytes: 16 * 1024 * 1024,
});

let readLimits: ReadLimits = { ...DEFAULT_READ_LIMITS };

/** Sets the process's read limits (from configuration); omitted fields go back to their defaults. */
export function setReadLimits(limits: Partial<ReadLimits> = {}): void {
  readLimits = {
    ...DEFAULT_READ_LIMITS,
    ...Object.fromEntries(Object.entries(limits).filter(([, v]) => typeof v === 'number' && v > 0)),
  };
}

/** The limit that applies to `file`, bytes (by its extension). */
export function readLimitFor(file: string): number {
  return /\.json$/i.test(file) ? readLimits.jsonBytes : readLimits.textBytes;
}

function refuse(file: string, message: string): never {
  throw new FileProblemError({ file, line: 0, column: 0, message });
}

function kindOf(st: Stats): string {
  return st.isDirectory()
    ? 'a directory'
    : st.isCharacterDevice()
      ? 'a character device'
      : st.isBlockDevice()
        ? 'a block device'
        : st.isFIFO()
          ? 'a named pipe'
          : st.isSocket()
            ? 'a socket'
            : 'not a regular file';
}

/**
 * Reads a regular file whole, bounded: anything else (a directory, a device such as `/dev/zero` behind a link, a
 * pipe) and a file larger than its format's limit ({@link readLimitFor}) are refused with a
 * {@link FileProblemError} naming the file and why, before a byte is read. The file is opened without blocking
 * (a pipe cannot hang the reader) and read only up to the limit, so a file that grows while read is refused too.
 * `undefined` when it does not exist.
 */
export function readBoundedSync(file: string, limit = readLimitFor(file)): Buffer | undefined {
  let fd: number;
  try {
    fd = openSync(file, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    if (code === 'ELOOP') refuse(file, 'cannot read: a symbolic link loop');
    throw err;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) refuse(file, `refused: ${kindOf(st)}, not a regular file`);
    if (st.size > limit)
      refuse(
        file,
        `refused: ${formatBytes(st.size)} is more than the ${formatBytes(limit)} limit for this kind of file (readLimits in .ralph/config.json)`,
      );
    // Sized to the file (+1 to see its end): small files come from Buffer's shared pool. A file that grows while
    // read gets a larger buffer, up to the limit.
    let buf = Buffer.allocUnsafe(Math.min(limit + 1, st.size + 1));
    let used = 0;
    for (;;) {
      if (used === buf.length) {
        if (used > limit) refuse(file, `refused: it grew past the ${formatBytes(limit)} limit while read`);
        const bigger = Buffer.allocUnsafe(Math.min(limit + 1, Math.max(buf.length * 2, 64 * 1024)));
        buf.copy(bigger, 0, 0, used);
        buf = bigger;
      }
      const n = readSync(fd, buf, used, buf.length - used, null);
      if (n === 0) break;
      used += n;
    }
    if (used > limit) refuse(file, `refused: it grew past the ${formatBytes(limit)} limit while read`);
    return buf.subarray(0, used);
  } finally {
    closeSync(fd);
  }
}

/** `12.0 MiB`, `640 B`. */
export function formatBytes(n: number): string {
  return n >= 1024 * 1024
    ? `${(n / (1024 * 1024)).toFixed(1)} MiB`
    : n >= 1024
      ? `${(n / 1024).toFixed(1)} KiB`
      : `${n} B`;
}

/**
 * Text of a file (UTF-8), or `undefined` when it does not exist. Bounded as {@link readBoundedSync}; a file with a
 * NUL byte is refused (no format of ours holds one; it would end the agent's prompt argument), positioned at it.
 */
export function readTextSync(file: string): string | undefined {
  const buf = readBoundedSync(file);
  if (buf === undefined) return undefined;
  const text = buf.toString('utf8');
  const nul = text.indexOf('\0');
  if (nul >= 0)
    throw new FileProblemError({
      file,
      ...positionAt(text, nul),
      message: 'refused: the file contains a NUL byte (is it binary?)',
    });
  return text;
}

/** Size of the one buffer {@link readListedTextSync} reads into, bytes (task files are a few hundred bytes). */
const LISTED_BUFFER_BYTES = 64 * 1024;
let listedBuffer: Buffer | undefined;

/**
 * {@link readTextSync} for a file that a directory listing has just shown as a regular file (a `Dirent` whose
 * `isFile()` is true: not a link, not a device, not a pipe): the same text or error, cheaper. It skips the `fstat`
 * (and its `Stats` object) and the per-file buffer: the file is opened without following a link and without blocking,
 * read once into one shared 64 KiB buffer (bounded by that, and by the file's limit) and decoded. Whatever is not
 * plainly a small file — open fails, the read fails, reads nothing (an empty file, or a pipe put there since the
 * listing) or fills the buffer — goes to {@link readTextSync}, which checks the kind and size first and gives the
 * exact answer or refusal. A read of a regular file returns less than asked only at its end (POSIX), so one read
 * that does not fill the buffer is the whole file. The ~6,300 files of `status` on a 10,000-item plan cost about a
 * third less CPU this way.
 */
export function readListedTextSync(file: string): string | undefined {
  const want = Math.min(LISTED_BUFFER_BYTES, readLimitFor(file) + 1);
  let fd: number;
  try {
    fd = openSync(file, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK | fsConstants.O_NOFOLLOW);
  } catch {
    return readTextSync(file);
  }
  let n = 0;
  const buf = (listedBuffer ??= Buffer.allocUnsafe(LISTED_BUFFER_BYTES));
  try {
    n = readSync(fd, buf, 0, want, null);
  } catch {
    n = 0;
  } finally {
    closeSync(fd);
  }
  if (n <= 0 || n >= want) return readTextSync(file);
  const text = buf.toString('utf8', 0, n);
  const nul = text.indexOf('\0');
  if (nul >= 0)
    throw new FileProblemError({
      file,
      ...positionAt(text, nul),
      message: 'refused: the file contains a NUL byte (is it binary?)',
    });
  return text;
}

/** As {@link readTextSync}, but a refused or unreadable file is a problem instead of an exception. */
export function readTextOrProblem(file: string, name = file): { text?: string; problem?: FileProblem } {
  try {
    return { text: readTextSync(file) };
  } catch (err) {
    if (err instanceof FileProblemError) return { problem: { ...err.problem, file: name } };
    return { problem: { file: name, line: 0, column: 0, message: `cannot read: ${(err as Error).message}` } };
  }
}

/**
 * Names in a folder (files and folders), sorted; empty when the folder is absent. `isFile`: the listing says a
 * regular file (not a link: see {@link readListedTextSync}); false when the file system does not say.
 */
export function listDirSync(dir: string): readonly DirEntry[] {
  let list = listings?.get(dir);
  if (list) return list;
  try {
    list = readdirSync(dir, { withFileTypes: true })
      .map((e) => ({ name: e.name, isDir: e.isDirectory(), isFile: e.isFile() }))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  } catch {
    list = [];
  }
  listings?.set(dir, list);
  return list;
}

/** One entry of {@link listDirSync}. */
export interface DirEntry {
  name: string;
  isDir: boolean;
  isFile: boolean;
}

let listings: Map<string, readonly DirEntry[]> | undefined;

/**
 * Runs `f` with {@link listDirSync} remembering each folder's listing, so a folder that one computation lists twice
 * (a reader, then the answer cache naming its entries) is read once. For one command's computation only: an entry
 * added or removed after the listing changes the folder's mtime, which the answer cache checks.
 */
export function withListings<T>(f: () => T): T {
  listings = new Map();
  try {
    return f();
  } finally {
    listings = undefined;
  }
}

export type Parsed<T> = { ok: true; value: T; text: string } | { ok: false; problem: FileProblem };

/**
 * Parses and validates JSON text; a syntax or schema error becomes a positioned problem (file:line:column).
 * `fast`: a fast path giving the value zod would (model/fastLoose.ts), or `undefined` to ask the schema.
 */
export function parseJsonFileText<S extends z.ZodType>(
  file: string,
  text: string,
  schema: S,
  fast?: (v: unknown) => z.infer<S> | undefined,
): Parsed<z.infer<S>> {
  const parsed = parseJsonText(file, text);
  if (!parsed.ok) return { ok: false, problem: parsed.problem };
  const quick = fast?.(parsed.value);
  if (quick !== undefined) return { ok: true, value: quick, text };
  const result = schema.safeParse(parsed.value);
  if (!result.success) return { ok: false, problem: schemaProblem(file, text, result.error) };
  return { ok: true, value: result.data, text };
}

/**
 * Reads and validates a JSON file. Throws {@link FileProblemError} naming the file, line and column on a
 * syntax error, and the path of the offending value on a schema error. Never writes.
 */
export async function readJsonFile<S extends z.ZodType>(file: string, schema: S): Promise<z.infer<S>> {
  const text = readTextSync(file);
  if (text === undefined) refuse(file, 'cannot read: it does not exist');
  return parseJsonWithSchema(file, text, schema);
}

/** As {@link readJsonFile} for text already read; as {@link parseJsonFileText} but throwing (for writers, which never touch a bad file). */
export function parseJsonWithSchema<S extends z.ZodType>(file: string, text: string, schema: S): z.infer<S> {
  const r = parseJsonFileText(file, text, schema);
  if (!r.ok) throw new FileProblemError(r.problem);
  return r.value;
}

/**
 * Positions the first schema issue at the entry its path names (`stories[3].priority`, not the first `"priority"`
 * anywhere in the file): an object member at its key, an array element at its value. A missing key is positioned
 * at the nearest object or array on its path that exists.
 */
export function schemaProblem(file: string, text: string, error: z.ZodError): FileProblem {
  const issue = error.issues[0];
  const segments = (issue?.path ?? []).map((p) => (typeof p === 'number' ? p : String(p)));
  const where = segments.length ? segments.join('.') : '(root)';
  // Loaded on a schema problem only (see parseError.ts).
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { findNodeAtLocation, parseTree } = require('jsonc-parser') as typeof Jsonc;
  const tree = parseTree(text);
  let node: Node | undefined;
  for (let n = segments.length; tree && !node && n >= 0; n--) node = findNodeAtLocation(tree, segments.slice(0, n));
  const at = node?.parent?.type === 'property' ? node.parent : node;
  const pos = at ? positionAt(text, at.offset) : { line: 1, column: 1 };
  return { file, ...pos, message: `${where}: ${issue?.message ?? 'invalid'}` };
}

/** A JSON file's parse: the validated value, or the positioned problem. */
export type ParsedFile<T> = { ok: true; value: T } | { ok: false; problem: FileProblem };

/**
 * The one JSON reader of the source readers: reads `file` (absolute), parses and validates it with `schema`
 * (problems named `shown`; `fast`: a fast path giving zod's value, or `undefined` to ask the schema, see
 * model/fastLoose.ts), and returns the value or the problem; `undefined` when the file does not exist. `listed`: a
 * directory listing just showed `file` as a regular file, so it is read with {@link readListedTextSync} (same answer,
 * cheaper).
 */
export function readJsonParsed<S extends z.ZodType>(
  file: string,
  shown: string,
  schema: S,
  fast?: (v: unknown) => z.infer<S> | undefined,
  listed = false,
): ParsedFile<z.infer<S>> | undefined {
  try {
    const text = listed ? readListedTextSync(file) : readTextSync(file);
    if (text === undefined) return undefined;
    const r = parseJsonFileText(shown, text, schema, fast);
    return r.ok ? { ok: true, value: r.value } : { ok: false, problem: r.problem };
  } catch (err) {
    // A file the bounded reader refuses (not a regular file, too large, a NUL byte) is a problem naming it.
    if (err instanceof FileProblemError) return { ok: false, problem: { ...err.problem, file: shown } };
    throw err;
  }
}
