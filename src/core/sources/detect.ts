import { readdir, readFile, stat } from 'node:fs/promises';
import * as path from 'node:path';
import type { FileProblem } from '../store/parseError';
import { countCheckboxes } from './checklist/checklist';
import { readQuantum } from './quantum/readQuantum';
import { RALPH_DIR, ralphDir, ralphFile } from '../model/ralphPaths';

/** The kinds of Ralph artifacts a workspace folder can hold (seed-systems.md §2–§6). */
export type SourceKind = 'flow-next' | 'quantum' | 'checklist' | 'waves' | 'ralph';

/** One detected artifact: a root of the Ralph tree and a line of `ralph doctor`. */
export interface DetectedSource {
  kind: SourceKind;
  /** Path relative to the workspace folder, with forward slashes (e.g. `specs/auth/tasks.md`). */
  path: string;
  /** What a person reads in the tree, e.g. "quantum.json — my-feature". */
  label: string;
  /** Cheap counts: items (tasks, stories, boxes, waves) and how many are done, when known. */
  count?: { total: number; done?: number; unit: string };
}

export interface DetectionReport {
  folder: string;
  sources: DetectedSource[];
  problems: FileProblem[];
}

const CHECKLIST_FILES = ['RALPH_TASK.md', 'PROMPT.md'];

/**
 * Detects the Ralph artifacts of a workspace folder: flow-next `.flow/`, quantum-loop `quantum.json`,
 * IJFW `.ijfw/wave-*`, our `.ralph/`, and checkbox task files (`RALPH_TASK.md`, `PROMPT.md`,
 * `specs/<name>/tasks.md`). Reads only what the counts need; a file that does not parse is reported under
 * `problems` with its line and column and still listed as a source. Never throws for bad content.
 */
export async function detectSources(folder: string): Promise<DetectionReport> {
  const sources: DetectedSource[] = [];
  const problems: FileProblem[] = [];
  const rel = (p: string) => path.relative(folder, p).split(path.sep).join('/');

  if (await isDir(path.join(folder, '.flow'))) {
    const tasks = await listFiles(path.join(folder, '.flow', 'tasks'), '.json');
    const epics = [
      ...(await listFiles(path.join(folder, '.flow', 'epics'), '.json')),
      ...(await listFiles(path.join(folder, '.flow', 'specs'), '.json')),
    ];
    sources.push({
      kind: 'flow-next',
      path: '.flow',
      label: `flow-next (${epics.length} epic${epics.length === 1 ? '' : 's'})`,
      count: { total: tasks.length, unit: 'tasks' },
    });
  }

  // One reader of quantum.json (readQuantum: JSON, schema, file:line:column problems).
  const quantum = readQuantum(folder);
  if (quantum?.doc) {
    const q = quantum.doc.data;
    const name = typeof q.feature === 'string' ? q.feature : typeof q.project === 'string' ? q.project : '';
    sources.push({
      kind: 'quantum',
      path: 'quantum.json',
      label: name ? `quantum.json — ${name}` : 'quantum.json',
      count: { total: q.stories.length, done: q.stories.filter((s) => s.status === 'passed').length, unit: 'stories' },
    });
  } else if (quantum?.problem) {
    problems.push(quantum.problem);
    sources.push({ kind: 'quantum', path: 'quantum.json', label: 'quantum.json (does not parse)' });
  }

  const checklistFiles = CHECKLIST_FILES.map((f) => path.join(folder, f));
  for (const spec of await listDirs(path.join(folder, 'specs')))
    checklistFiles.push(path.join(folder, 'specs', spec, 'tasks.md'));
  for (const file of checklistFiles) {
    if (!(await isFile(file))) continue;
    // One grammar and one count everywhere (seed-systems.md §3.15-5): the plan graph's checkbox reader.
    const { done, total } = countCheckboxes(await readFile(file, 'utf8'));
    sources.push({ kind: 'checklist', path: rel(file), label: rel(file), count: { total, done, unit: 'tasks' } });
  }

  const waves = (await listDirs(path.join(folder, '.ijfw'))).filter((d) => d.startsWith('wave-'));
  if (waves.length)
    sources.push({ kind: 'waves', path: '.ijfw', label: `IJFW waves`, count: { total: waves.length, unit: 'waves' } });

  if (await isDir(ralphDir(folder))) {
    const runs = await listDirs(ralphFile(folder, 'runs'));
    sources.push({ kind: 'ralph', path: RALPH_DIR, label: 'Ralph runs', count: { total: runs.length, unit: 'runs' } });
  }
  return { folder, sources, problems };
}

/** `3 tasks`, `1 task`, `2/5 stories`: a count as the tree and doctor show it. */
export function formatCount(c: NonNullable<DetectedSource['count']>): string {
  const n = c.done !== undefined ? `${c.done}/${c.total}` : String(c.total);
  const unit = c.total === 1 && c.done === undefined ? c.unit.replace(/ies$/, 'y').replace(/s$/, '') : c.unit;
  return `${n} ${unit}`;
}

async function isDir(p: string): Promise<boolean> {
  return stat(p).then(
    (s) => s.isDirectory(),
    () => false,
  );
}
async function isFile(p: string): Promise<boolean> {
  return stat(p).then(
    (s) => s.isFile(),
    () => false,
  );
}
async function listDirs(p: string): Promise<string[]> {
  const entries = await readdir(p, { withFileTypes: true }).catch(() => []);
  return entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
}
async function listFiles(p: string, ext: string): Promise<string[]> {
  const entries = await readdir(p, { withFileTypes: true }).catch(() => []);
  return entries
    .filter((e) => e.isFile() && e.name.endsWith(ext))
    .map((e) => e.name)
    .sort();
}
