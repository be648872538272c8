import * as path from 'node:path';
import { quantumFileSchema, type QuantumFile } from '../../model/quantum';
import type { FileProblem } from '../../store/parseError';
import { parseJsonFileText, readTextSync } from '../../store/readJsonFile';

/** `quantum.json` as read: its validated content and its exact text (writers edit that text in place). */
export interface QuantumDoc {
  /** Absolute path. */
  file: string;
  text: string;
  data: QuantumFile;
}

/** The path of a folder's `quantum.json`. */
export function quantumPath(folder: string): string {
  return path.join(folder, 'quantum.json');
}

/**
 * Reads and validates `quantum.json` (seed-systems.md §4.1). `undefined` when absent; `{problem}` naming file,
 * line and column when it does not parse or validate.
 */
export function readQuantum(folder: string, relName = 'quantum.json'): { doc?: QuantumDoc; problem?: FileProblem } | undefined {
  const file = quantumPath(folder);
  const text = readTextSync(file);
  if (text === undefined) return undefined;
  const r = parseJsonFileText(relName, text, quantumFileSchema);
  return r.ok ? { doc: { file, text, data: r.value } } : { problem: r.problem };
}
