import * as path from 'node:path';
import type * as Jsonc from 'jsonc-parser';
import type { ParseError } from 'jsonc-parser';
import type { FileProblem } from '../model/fileProblem';

/** A problem found in a file on disk, positioned for a person: 1-based line and column (defined in model). */
export type { FileProblem } from '../model/fileProblem';

/** Thrown when a file cannot be used; carries its position so the CLI and the UI can name file:line:column. */
export class FileProblemError extends Error {
  constructor(readonly problem: FileProblem) {
    super(formatProblem(problem));
    this.name = 'FileProblemError';
  }
}

/**
 * How messages name a file: relative to the workspace folder with forward slashes (`quantum.json`,
 * `.flow/tasks/fn-1.1.json`), the same in every command; a file outside the folder keeps its absolute path.
 */
export function workspacePath(folder: string, file: string): string {
  const rel = path.relative(folder, file);
  return !rel || rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel)
    ? file
    : rel.split(path.sep).join('/');
}

/** `file:line:column: message`, the form editors and terminals link. */
export function formatProblem(p: FileProblem): string {
  return p.line > 0 ? `${p.file}:${p.line}:${p.column}: ${p.message}` : `${p.file}: ${p.message}`;
}

/** Converts a 0-based character offset in `text` to a 1-based line and column. */
export function positionAt(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  const end = Math.min(offset, text.length);
  for (let i = 0; i < end; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: end - lineStart + 1 };
}

export type JsonParseResult = { ok: true; value: unknown } | { ok: false; problem: FileProblem };

/**
 * Parses strict JSON (no comments, no trailing commas), returning the first syntax error as a
 * positioned problem instead of throwing. `JSON.parse` decides validity; jsonc-parser supplies the position.
 * A leading byte order mark is its own problem (writers never touch such a file).
 */
export function parseJsonText(file: string, text: string): JsonParseResult {
  // JSON.parse and the owning tools (Python's json.load) reject a BOM; say so instead of "invalid symbol" at 1:1.
  if (text.charCodeAt(0) === 0xfeff)
    return {
      ok: false,
      problem: {
        file,
        line: 1,
        column: 1,
        message: 'the file starts with a byte order mark (BOM): save it as UTF-8 without a BOM',
      },
    };
  // Level max + 1 needs max + 1 opening brackets: a shorter text cannot be too deep (most task files: no scan).
  const deep = text.length > MAX_NESTING ? tooDeepAt(text, MAX_NESTING) : -1;
  if (deep >= 0)
    return {
      ok: false,
      problem: {
        file,
        ...positionAt(text, deep),
        message: `refused: arrays and objects nested more than ${MAX_NESTING} deep`,
      },
    };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (err) {
    const errors: ParseError[] = [];
    // Loaded on a syntax error only: initialising jsonc-parser at start cost every CLI call a few ms (bench/waves.bench.ts).
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { parse, printParseErrorCode } = require('jsonc-parser') as typeof Jsonc;
    parse(text, errors, { allowTrailingComma: false, disallowComments: true, allowEmptyContent: false });
    const first = errors[0];
    if (first) {
      const { line, column } = positionAt(text, first.offset);
      return {
        ok: false,
        problem: { file, line, column, message: `invalid JSON: ${words(printParseErrorCode(first.error))}` },
      };
    }
    const { line, column } = positionAt(text, jsonErrorOffset(err, text));
    return { ok: false, problem: { file, line, column, message: `invalid JSON: ${(err as Error).message}` } };
  }
}

/** Deepest nesting of arrays and objects the JSON readers accept (200,000 levels overflowed the parsers' stacks). */
export const MAX_NESTING = 512;

/**
 * Offset of the first `[` or `{` that opens level `max + 1`, or -1. One pass without recursion; brackets inside
 * strings do not count.
 */
export function tooDeepAt(text: string, max: number): number {
  let depth = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 34 /* " */) {
      // A string: jump to its closing quote (one not escaped by an odd run of backslashes) with indexOf, which is
      // several times faster than a step per character over a quantum.json that is mostly strings.
      for (;;) {
        const q = text.indexOf('"', i + 1);
        if (q < 0) return -1; // unterminated: no bracket after it counts
        let b = q - 1;
        while (text.charCodeAt(b) === 92 /* \\ */) b--;
        i = q;
        if (((q - 1 - b) & 1) === 0) break;
      }
    } else if (c === 91 || c === 123) {
      if (++depth > max) return i;
    } else if (c === 93 || c === 125) depth--;
  }
  return -1;
}

/** `PropertyNameExpected` → `property name expected`. */
function words(code: string): string {
  return code.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
}

function jsonErrorOffset(err: unknown, text: string): number {
  const m = /position (\d+)/.exec(String((err as Error)?.message ?? ''));
  return m ? Number(m[1]) : text.length;
}
