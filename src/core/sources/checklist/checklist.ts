import * as path from 'node:path';
import { FileProblemError, type FileProblem } from '../../store/parseError';
import { listDirSync, readTextSync } from '../../store/readJsonFile';

/**
 * Checkbox task files (seed-systems.md §3.7, §3.13): `RALPH_TASK.md`, `PROMPT.md` and Spec Kit
 * `specs/<name>/tasks.md`. One grammar and one count everywhere (fixes §3.15-5, where ralph-wiggum's counters
 * disagreed on `[X]`): a box is a line matching `^\s*([-*]|\d+\.)\s+\[( |x|X)\]`; `[x]` and `[X]` are both done.
 * A `[risky]` mark on the line flags a task that needs the full gate (§3.13).
 */
export const CHECKBOX_LINE = /^\s*(?:[-*]|\d+\.)\s+\[( |x|X)\]\s?(.*)$/;

/** One checkbox line. */
export interface CheckboxItem {
  /** 1-based line number. */
  line: number;
  done: boolean;
  /** The raw mark: ` `, `x` or `X`. */
  mark: string;
  /** Text after the box, with `[risky]` removed and whitespace collapsed. */
  text: string;
  risky: boolean;
}

/** A checkbox file as read. */
export interface ChecklistFile {
  /** Workspace-relative path with forward slashes. */
  path: string;
  /** Absolute path. */
  file: string;
  /** First `# ` heading, if any. */
  title?: string;
  items: CheckboxItem[];
}

/** The checkbox lines of markdown text, by the §3.7 grammar. Pure. */
export function parseCheckboxes(text: string): { title?: string; items: CheckboxItem[] } {
  const items: CheckboxItem[] = [];
  let title: string | undefined;
  // CR-only line ends (classic Mac) are line ends too: read as one line they hid every box.
  const lines = text.split(/\r\n|\r|\n/);
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!;
    if (title === undefined) {
      const h = /^#\s+(.+?)\s*$/.exec(l);
      if (h) title = h[1];
    }
    const m = CHECKBOX_LINE.exec(l);
    if (!m) continue;
    const rest = m[2] ?? '';
    const risky = /\[risky\]/i.test(rest);
    items.push({
      line: i + 1,
      done: m[1] !== ' ',
      mark: m[1]!,
      text: rest
        .replace(/\[risky\]/gi, '')
        .replace(/\s+/g, ' ')
        .trim(),
      risky,
    });
  }
  return { title, items };
}

/** `{done, total}` of markdown text: the one count every face shows. */
export function countCheckboxes(text: string): { done: number; total: number } {
  const { items } = parseCheckboxes(text);
  return { done: items.filter((b) => b.done).length, total: items.length };
}

/** Relative paths of the checkbox files a folder may hold: `RALPH_TASK.md`, `PROMPT.md`, `specs/<name>/tasks.md`. */
export function checklistCandidates(folder: string): string[] {
  const out = ['RALPH_TASK.md', 'PROMPT.md'];
  for (const e of listDirSync(path.join(folder, 'specs'))) if (e.isDir) out.push(`specs/${e.name}/tasks.md`);
  return out;
}

/**
 * Reads every checkbox file of a folder that exists. A file the store refuses (not a regular file, over its size
 * limit, a NUL byte) is left out and, when `problems` is given, listed there (named relative to the folder);
 * without `problems` the refusal is thrown ({@link FileProblemError}), so a run never takes a refused file for an
 * empty, complete list.
 */
export function readChecklists(folder: string, problems?: FileProblem[]): ChecklistFile[] {
  const out: ChecklistFile[] = [];
  for (const rel of checklistCandidates(folder)) {
    const file = path.join(folder, ...rel.split('/'));
    let text: string | undefined;
    try {
      text = readTextSync(file);
    } catch (err) {
      if (!problems || !(err instanceof FileProblemError)) throw err;
      problems.push({ ...err.problem, file: rel });
      continue;
    }
    if (text === undefined) continue;
    out.push({ path: rel, file, ...parseCheckboxes(text) });
  }
  return out;
}

/** The next box to work on: the first unchecked one (§3.7 "read the next task"), or `undefined` when all are done. */
export function checklistNext(list: ChecklistFile): CheckboxItem | undefined {
  return list.items.find((b) => !b.done);
}
