import { findNodeAtLocation, parseTree, type Node } from 'jsonc-parser';
import { readFile } from 'node:fs/promises';
import type { z } from 'zod';
import { FileProblemError, parseJsonText, positionAt, type FileProblem } from './parseError';

/**
 * Reads and validates a JSON file. Throws {@link FileProblemError} naming the file, line and column on a
 * syntax error, and the path of the offending value on a schema error. Never writes.
 */
export async function readJsonFile<S extends z.ZodType>(file: string, schema: S): Promise<z.infer<S>> {
  const text = await readFile(file, 'utf8');
  return parseJsonWithSchema(file, text, schema);
}

/** As {@link readJsonFile} for text already read. */
export function parseJsonWithSchema<S extends z.ZodType>(file: string, text: string, schema: S): z.infer<S> {
  const parsed = parseJsonText(file, text);
  if (!parsed.ok) throw new FileProblemError(parsed.problem);
  const result = schema.safeParse(parsed.value);
  if (!result.success) throw new FileProblemError(schemaProblem(file, text, result.error));
  return result.data;
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
