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

/** Positions the first schema issue at the key it names when that key can be found in the text. */
export function schemaProblem(file: string, text: string, error: z.ZodError): FileProblem {
  const issue = error.issues[0];
  const where = issue?.path.length ? issue.path.join('.') : '(root)';
  const lastKey = issue?.path.filter((p) => typeof p === 'string').at(-1);
  let pos = { line: 1, column: 1 };
  if (typeof lastKey === 'string') {
    const idx = text.indexOf(JSON.stringify(lastKey));
    if (idx >= 0) pos = positionAt(text, idx);
  }
  return { file, ...pos, message: `${where}: ${issue?.message ?? 'invalid'}` };
}
