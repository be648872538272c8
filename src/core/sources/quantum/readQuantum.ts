import * as path from 'node:path';
import { quantumFileFast, quantumFileSchema, type QuantumFile } from '../../model/quantum';
import { fastLoose } from '../../model/fastLoose';
import type { z } from 'zod';
import type { FileProblem } from '../../store/parseError';
import { parseJsonFileText, readTextOrProblem, schemaProblem } from '../../store/readJsonFile';

/** `quantum.json` as read: its validated content and its exact text (writers edit that text in place). */
export interface QuantumDoc {
  /** Absolute path. */
  file: string;
  text: string;
  data: QuantumFile;
}

/** The fast path of the schema (model/fastLoose.ts): zod's value for a plain file, else `undefined` (ask zod). */
const quantumFast = (v: unknown) => fastLoose(quantumFileFast, v) as QuantumFile | undefined;

/** The path of a folder's `quantum.json`. */
export function quantumPath(folder: string): string {
  return path.join(folder, 'quantum.json');
}

/**
 * The second story that repeats an earlier story's id, positioned at it: ids name stories in dependencies, attempts
 * and the run log, so two stories with one id would be confused later. `undefined` when ids are unique.
 */
export function duplicateStoryId(
  text: string,
  data: QuantumFile,
): { line: number; column: number; message: string } | undefined {
  const seen = new Set<string>();
  for (let i = 0; i < data.stories.length; i++) {
    const id = data.stories[i]!.id;
    if (!seen.has(id)) {
      seen.add(id);
      continue;
    }
    const problem = schemaProblem('', text, {
      issues: [{ path: ['stories', i, 'id'], message: '' }],
    } as unknown as z.ZodError);
    return {
      line: problem.line,
      column: problem.column,
      message: `stories.${i}.id: duplicate story id "${id}" (another story already has it)`,
    };
  }
  return undefined;
}

/**
 * Reads and validates `quantum.json` (seed-systems.md §4.1). `undefined` when absent; `{problem}` naming file,
 * line and column when it does not parse or validate.
 */
export function readQuantum(
  folder: string,
  relName = 'quantum.json',
): { doc?: QuantumDoc; problem?: FileProblem } | undefined {
  const file = quantumPath(folder);
  const { text, problem } = readTextOrProblem(file, relName);
  if (problem) return { problem };
  if (text === undefined) return undefined;
  const r = parseJsonFileText(relName, text, quantumFileSchema, quantumFast);
  if (!r.ok) return { problem: r.problem };
  const dup = duplicateStoryId(text, r.value);
  return dup ? { problem: { file: relName, ...dup } } : { doc: { file, text, data: r.value } };
}
