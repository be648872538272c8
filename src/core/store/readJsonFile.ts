import { findNodeAtLocation, parseTree, type Node } from 'jsonc-parser';
import { readdirSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { z } from 'zod';
import { FileProblemError, parseJsonText, positionAt, type FileProblem } from './parseError';

/**
 * The store's file readers: every format reader (sources, control, loop, configuration) reads through these, so a
 * file is parsed and validated one way and a bad one is reported one way (file:line:column, never a stack trace).
 * The synchronous readers serve the source readers: `ralph status` reads tens of thousands of small files, and
 * synchronous reads avoid a promise and a thread-pool hop per file (see bench/sources.bench.ts).
 */

/** Text of a file, or `undefined` when it does not exist. */
export function readTextSync(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return undefined;
    throw err;
  }
}

/** Names in a folder (files and folders), sorted; empty when the folder is absent. */
export function listDirSync(dir: string): { name: string; isDir: boolean }[] {
  try {
    return readdirSync(dir, { withFileTypes: true }).map((e) => ({ name: e.name, isDir: e.isDirectory() })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  } catch {
    return [];
  }
}

export type Parsed<T> = { ok: true; value: T; text: string } | { ok: false; problem: FileProblem };

/** Parses and validates JSON text; a syntax or schema error becomes a positioned problem (file:line:column). */
export function parseJsonFileText<S extends z.ZodType>(file: string, text: string, schema: S): Parsed<z.infer<S>> {
  const parsed = parseJsonText(file, text);
  if (!parsed.ok) return { ok: false, problem: parsed.problem };
  const result = schema.safeParse(parsed.value);
  if (!result.success) return { ok: false, problem: schemaProblem(file, text, result.error) };
  return { ok: true, value: result.data, text };
}

/**
 * Reads and validates a JSON file. Throws {@link FileProblemError} naming the file, line and column on a
 * syntax error, and the path of the offending value on a schema error. Never writes.
 */
export async function readJsonFile<S extends z.ZodType>(file: string, schema: S): Promise<z.infer<S>> {
  const text = await readFile(file, 'utf8');
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
  const tree = parseTree(text);
  let node: Node | undefined;
  for (let n = segments.length; tree && !node && n >= 0; n--) node = findNodeAtLocation(tree, segments.slice(0, n));
  const at = node?.parent?.type === 'property' ? node.parent : node;
  const pos = at ? positionAt(text, at.offset) : { line: 1, column: 1 };
  return { file, ...pos, message: `${where}: ${issue?.message ?? 'invalid'}` };
}
