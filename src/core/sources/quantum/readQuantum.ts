import * as path from 'node:path';
import { quantumFileSchema, type QuantumFile } from '../../model/quantum';
import type { FileProblem } from '../../store/parseError';
import { readJsonParsed, type ParseCache } from '../../store/parseCache';
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
 * line and column when it does not parse or validate. With a `cache` (read-only commands), a parse of the same
 * file (size, mtime, inode) is reused and `doc.text` is read only when asked for.
 */
export function readQuantum(folder: string, relName = 'quantum.json', cache?: ParseCache): { doc?: QuantumDoc; problem?: FileProblem } | undefined {
  const file = quantumPath(folder);
  if (!cache) {
    const text = readTextSync(file);
    if (text === undefined) return undefined;
    const r = parseJsonFileText(relName, text, quantumFileSchema);
    return r.ok ? { doc: { file, text, data: r.value } } : { problem: r.problem };
  }
  const r = readJsonParsed(cache, file, relName, quantumFileSchema);
  cache.save();
  if (!r) return undefined;
  if (!r.ok) return { problem: r.problem };
  let text: string | undefined;
  return { doc: { file, data: r.value, get text() { return (text ??= readTextSync(file) ?? ''); } } };
}
