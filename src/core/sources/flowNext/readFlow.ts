import * as path from 'node:path';
import type { FileProblem } from '../../store/parseError';
import {
  epicNumber,
  epicOfTaskId,
  flowEpicFast,
  flowEpicSchema,
  flowMetaFast,
  flowMetaSchema,
  flowRuntimeFast,
  flowRuntimeSchema,
  flowTaskFileFast,
  flowTaskSchema,
  taskNumber,
  type FlowEpic,
  type FlowMeta,
  type FlowRuntime,
  type FlowTask,
} from '../../model/flowNext';
import { fastLoose } from '../../model/fastLoose';
import { listDirSync, readJsonParsed, type ParsedFile } from '../../store/readJsonFile';
import { relativeTo } from '../../store/relativePath';
import { resolveFlowStateDir, type FlowStateLocation } from './stateDir';

/** One epic / spec as read from `.flow/epics/*.json` (v0.x) or `.flow/specs/*.json` (v1+). */
export interface FlowEpicRecord {
  id: string;
  /** Absolute path of the JSON file. */
  file: string;
  epic: FlowEpic;
}

/** One task: the committed JSON, its state file when present, and the merged view flowctl uses. */
export interface FlowTaskRecord {
  id: string;
  epicId: string;
  /** Absolute path of `.flow/tasks/<id>.json`. */
  file: string;
  /** Absolute path of `.flow/tasks/<id>.md` (may not exist). */
  mdFile: string;
  committed: FlowTask;
  /** The state file's path and content when one exists (§2.4). */
  stateFile?: string;
  state?: FlowRuntime;
  /** `committed` with the state file's keys merged over it. */
  merged: FlowTask;
  /** Where `merged.status` came from: later flowctl's `status_source`. */
  statusSource: 'flow-state' | 'committed';
}

/** Everything under `.flow/` that the plan graph and the operations need. */
export interface FlowWorkspace {
  folder: string;
  flowDir: string;
  meta?: FlowMeta;
  /** `epics` (v0.x keys) or `specs` (v1+), from meta's `schema_version` or the folders present. */
  dialect: 'epics' | 'specs';
  /** In numeric epic order (§2.5). */
  epics: FlowEpicRecord[];
  /** In (epic number, task number) order. */
  tasks: FlowTaskRecord[];
  state: FlowStateLocation;
  problems: FileProblem[];
}

/** How {@link readFlowWorkspace} reads. */
export interface FlowReadOptions {
  /** Read only the task files of this epic / spec (`<epic>.<n>.json`): what `task reset` needs. */
  epic?: string;
}

/** A task file before the `id` check of §2.3 (built once: zod compiles each schema on first use). */
const taskFileSchema = flowTaskSchema.partial({ id: true });

// Fast paths of the four schemas (zod's value without zod; anything unusual goes to zod).
const metaFast = (v: unknown) => fastLoose(flowMetaFast, v) as FlowMeta | undefined;
const epicFast = (v: unknown) => fastLoose(flowEpicFast, v) as FlowEpic | undefined;
const taskFast = (v: unknown) => fastLoose(flowTaskFileFast, v) as ReturnType<typeof taskFileSchema.parse> | undefined;
const runtimeFast = (v: unknown) => fastLoose(flowRuntimeFast, v) as FlowRuntime | undefined;

/** Whether the folder has a `.flow/` directory. */
export function hasFlow(folder: string): boolean {
  return listDirSync(folder).some((e) => e.isDir && e.name === '.flow');
}

/**
 * Reads `.flow/` (seed-systems.md §2.2–§2.4): meta, epics from `epics/` and `specs/` (JSON files only), tasks from
 * `tasks/` (a file is a task only when its stem has a `.` and it carries an `id`, §2.3), and each task's runtime
 * state file merged over it (fixing §2.11-7: a reader of committed JSON alone sees stale statuses). Files that do
 * not parse or validate are skipped and reported in `problems` with file, line and column; never throws for
 * content. Returns `undefined` when there is no `.flow/`.
 */
export function readFlowWorkspace(
  folder: string,
  env: NodeJS.ProcessEnv = process.env,
  opts: FlowReadOptions = {},
): FlowWorkspace | undefined {
  const flowDir = path.join(folder, '.flow');
  if (!hasFlow(folder)) return undefined;
  const problems: FileProblem[] = [];
  const rel = relativeTo(folder);

  let meta: FlowMeta | undefined;
  const metaFile = path.join(flowDir, 'meta.json');
  const mr = readJsonParsed(metaFile, rel(metaFile), flowMetaSchema, metaFast);
  if (mr) {
    const r = mr;
    if (r.ok) meta = r.value;
    else problems.push(r.problem);
  }

  const epics: FlowEpicRecord[] = [];
  const seenEpics = new Set<string>();
  for (const sub of ['specs', 'epics']) {
    const dir = path.join(flowDir, sub);
    for (const e of listDirSync(dir)) {
      if (e.isDir || !e.name.endsWith('.json')) continue;
      const file = path.join(dir, e.name);
      const r = readJsonParsed(file, rel(file), flowEpicSchema, epicFast, e.isFile);
      if (!r) continue;
      if (!r.ok) {
        problems.push(r.problem);
        continue;
      }
      if (seenEpics.has(r.value.id)) continue;
      seenEpics.add(r.value.id);
      epics.push({ id: r.value.id, file, epic: r.value });
    }
  }
  epics.sort((a, b) => epicNumber(a.id) - epicNumber(b.id) || (a.id < b.id ? -1 : 1));

  const state = resolveFlowStateDir(folder, env);
  // Names of the state folder: true when the listing says a regular file (read the cheap way, readListedTextSync).
  const stateTasksDir = path.join(state.dir, 'tasks');
  const stateNames = new Map(
    listDirSync(stateTasksDir)
      .filter((e) => !e.isDir)
      .map((e) => [e.name, e.isFile]),
  );

  const tasks: FlowTaskRecord[] = [];
  const tasksDir = path.join(flowDir, 'tasks');
  for (const e of listDirSync(tasksDir)) {
    if (e.isDir || !e.name.endsWith('.json')) continue;
    const stem = e.name.slice(0, -'.json'.length);
    if (!stem.includes('.')) continue;
    if (opts.epic !== undefined && !stem.startsWith(`${opts.epic}.`)) continue;
    const file = tasksDir + path.sep + e.name; // path.join's answer: a listed name has no separator, no `.`/`..`
    const r = readFlowTaskFile(file, rel(file), e.isFile);
    if (!r) continue;
    if (!r.ok) {
      problems.push(r.problem);
      continue;
    }
    if (typeof r.value.id !== 'string') continue;
    const committed = r.value as FlowTask;
    const record = flowTaskRecord(committed, file);
    const stateName = `${committed.id}.state.json`;
    if (stateNames.has(stateName)) {
      const stateFile = stateTasksDir + path.sep + stateName; // taskStateFile's answer: a listed name, as above
      const sr = readFlowTaskState(stateFile, stateNames.get(stateName));
      if (sr?.ok) withFlowTaskState(record, stateFile, sr.value);
      else if (sr) problems.push(sr.problem);
    }
    tasks.push(record);
  }
  // Keys computed once per task: the comparator runs n·log n times (this sort was a tenth of `status` at 5,000 tasks).
  const keyed = tasks.map((t) => ({ t, epic: epicNumber(t.epicId), num: taskNumber(t.id) }));
  keyed.sort(
    (a, b) => a.epic - b.epic || (a.t.epicId < b.t.epicId ? -1 : a.t.epicId > b.t.epicId ? 1 : 0) || a.num - b.num,
  );
  for (let k = 0; k < keyed.length; k++) tasks[k] = keyed[k]!.t;

  const dialect =
    (meta?.schema_version ?? 0) >= 3 ||
    meta?.next_spec !== undefined ||
    (!listDirSync(path.join(flowDir, 'epics')).length &&
      listDirSync(path.join(flowDir, 'specs')).some((e) => e.name.endsWith('.json')))
      ? 'specs'
      : 'epics';
  return { folder, flowDir, meta, dialect, epics, tasks, state, problems };
}

/**
 * A task file's parse as {@link readFlowWorkspace} does it (absolute path; `undefined` when absent): the fast path, else
 * zod. `listed`: a listing just showed it as a regular file (read cheaper, same answer).
 */
export function readFlowTaskFile(
  file: string,
  shown: string,
  listed = false,
): ParsedFile<Partial<FlowTask>> | undefined {
  return readJsonParsed(file, shown, taskFileSchema, taskFast, listed);
}

/** A task state file's parse as {@link readFlowWorkspace} does it (problems name the absolute path; `listed` as above). */
export function readFlowTaskState(stateFile: string, listed = false): ParsedFile<FlowRuntime> | undefined {
  return readJsonParsed(stateFile, stateFile, flowRuntimeSchema, runtimeFast, listed);
}

/** The record of a committed task file (`file`: absolute `.flow/tasks/<stem>.json`), before any state overlay. */
export function flowTaskRecord(committed: FlowTask, file: string): FlowTaskRecord {
  return {
    id: committed.id,
    epicId: committed.epic ?? committed.spec ?? epicOfTaskId(committed.id),
    file,
    mdFile: `${file.slice(0, -'.json'.length)}.md`,
    committed,
    merged: committed,
    statusSource: 'committed',
  };
}

/** Merges a task's state file over its record (§2.4): `merged` gets the state's defined keys; `status` there wins. */
export function withFlowTaskState(record: FlowTaskRecord, stateFile: string, state: FlowRuntime): FlowTaskRecord {
  record.stateFile = stateFile;
  record.state = state;
  record.merged = { ...record.committed, ...stripUndefined(state) } as FlowTask;
  if (typeof state.status === 'string') record.statusSource = 'flow-state';
  return record;
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(o)) {
    const v = (o as Record<string, unknown>)[k];
    if (v !== undefined) out[k] = v;
  }
  return out as Partial<T>;
}

/**
 * The problems of a `.flow/` workspace that hide an item: a task, epic or spec file (or meta.json) that does not parse
 * or validate (readFlow skips such files). The flow-state overlay's problems are not items.
 */
export function flowItemProblems(ws: FlowWorkspace): FileProblem[] {
  return ws.problems.filter((p) =>
    /(^|[\\/])\.flow[\\/](tasks|epics|specs)[\\/]|(^|[\\/])\.flow[\\/]meta\.json$/.test(p.file),
  );
}
