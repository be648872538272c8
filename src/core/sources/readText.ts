import { readdirSync, readFileSync } from 'node:fs';
import type { z } from 'zod';
import { FileProblemError, parseJsonText, type FileProblem } from '../store/parseError';
import { schemaProblem } from '../store/readJsonFile';

/**
 * Synchronous small-file readers for the source readers. `ralph status` reads tens of thousands of small files;
 * synchronous reads avoid a promise and a thread-pool hop per file and keep a 20k-task status fast (see
 * bench/sources.bench.ts).
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

/** As {@link parseJsonFileText} but throws {@link FileProblemError}: for writers, which never touch a bad file. */
export function parseJsonOrThrow<S extends z.ZodType>(file: string, text: string, schema: S): z.infer<S> {
  const r = parseJsonFileText(file, text, schema);
  if (!r.ok) throw new FileProblemError(r.problem);
  return r.value;
}
