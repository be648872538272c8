import type { PlanItem, SourceId } from '../model/plan';
import { parseIsoTime } from '../model/time';
import type { FileProblem } from '../store/parseError';
import { buildPlan, loadSources } from '../sources/plan';
import { listRuns, type RunInfo, type RunProbe, type RunState } from './runs';

/** A run as `status --json` prints it: flowctl's keys (§2.6, both `current_epic` and `current_spec`) plus ours. */
export interface StatusRun {
  id: string;
  kind: RunInfo['kind'];
  state: RunState;
  active: boolean;
  reason: string | null;
  iteration: number | null;
  current_epic: string | null;
  current_spec: string | null;
  current_task: string | null;
  current_item: RunInfo['currentItem'];
  paused: boolean;
  stopped: boolean;
  started_at: string | null;
}

/**
 * The `ralph status --json` snapshot. flow-next keys are flowctl's (seed-systems.md §2.6), under both the v0.8
 * names (`epics`) and HEAD's (`specs`) so bots written for either work; `tasks` counts flow-next tasks only, with
 * statuses from the flow-state overlay when present (§2.4); unknown statuses are not counted.
 */
export interface StatusSnapshot {
  success: true;
  flow_exists: boolean;
  /** `epics` for v0.x folders, `specs` for v1+ (meta `schema_version` 3); null without `.flow/`. */
  flow_dialect: 'epics' | 'specs' | null;
  epics: { open: number; done: number };
  specs: { open: number; done: number };
  tasks: { todo: number; in_progress: number; blocked: number; done: number };
  quantum_exists: boolean;
  /** quantum-loop stories by raw status (§4.1). */
  stories: { pending: number; in_progress: number; passed: number; failed: number; blocked: number };
  checklists: { path: string; done: number; total: number }[];
  /** "X/Y": done items over all items of every source. */
  progress: string;
  in_progress: { source: SourceId; id: string; title: string; since: string | null; assignee?: string }[];
  /** The newest completion over flow-next tasks (`completed_at`, else `updated_at`) and passed stories (`updatedAt`, `story_passed` progress entries). */
  last_completed: { source: SourceId; id: string; title: string; at: string } | null;
  blocked: { source: SourceId; id: string; title: string; reason: string | null }[];
  /** Active runs only, as flowctl lists them (running, paused, stopping), sorted by id. */
  runs: StatusRun[];
  /** Finished runs (completed, failed, stopped, crashed), newest first (`started_at`, else id). */
  recent_runs: StatusRun[];
  problems: FileProblem[];
}

function count<K extends string>(keys: readonly K[], values: Iterable<string>): Record<K, number> {
  const out = Object.fromEntries(keys.map((k) => [k, 0])) as Record<K, number>;
  for (const v of values) if ((keys as readonly string[]).includes(v)) out[v as K]++;
  return out;
}

/**
 * Builds the status snapshot of a folder: task sources, the plan graph's highlights, and every run. `cached`: read
 * the sources through the parse cache (store/parseCache.ts); the snapshot is the same either way.
 */
export function buildStatus(folder: string, opts: { env?: NodeJS.ProcessEnv; probe?: RunProbe; cached?: boolean } = {}): StatusSnapshot {
  const src = loadSources(folder, opts.env, { cached: opts.cached });
  const plan = buildPlan(src);
  const { runs, problems: runProblems } = listRuns(folder, opts.probe);
  const epicCounts = count(['open', 'done'] as const, (src.flow?.epics ?? []).map((e) => e.epic.status));
  const items = plan.items;
  const done = items.filter((i) => i.status === 'done').length;

  let last: StatusSnapshot['last_completed'] = null;
  let lastMs = -Infinity;
  const consider = (i: PlanItem, at: string | undefined) => {
    const ms = parseIsoTime(at);
    if (at && ms !== undefined && ms > lastMs) { lastMs = ms; last = { source: i.source, id: i.id, title: i.title, at }; }
  };
  const byId = new Map(items.map((i) => [`${i.source}:${i.id}`, i]));
  for (const i of items) if (i.source === 'flow-next' && i.status === 'done') consider(i, i.completedAt ?? i.updatedAt);
  // A passed story's completion: its `updatedAt` (set by `ralph task done`) or quantum-loop's `story_passed` entry.
  for (const s of src.quantum?.data.stories ?? []) {
    const i = byId.get(`quantum:${s.id}`);
    const at = (s as { updatedAt?: unknown }).updatedAt;
    if (i && i.status === 'done' && typeof at === 'string') consider(i, at);
  }
  for (const p of src.quantum?.data.progress ?? []) {
    const i = p.storyId ? byId.get(`quantum:${p.storyId}`) : undefined;
    if (i && i.status === 'done' && (p.action ?? 'story_passed') === 'story_passed') consider(i, p.timestamp);
  }

  return {
    success: true,
    flow_exists: src.flow !== undefined,
    flow_dialect: src.flow?.dialect ?? null,
    epics: epicCounts,
    specs: { ...epicCounts },
    tasks: count(['todo', 'in_progress', 'blocked', 'done'] as const, (src.flow?.tasks ?? []).map((t) => t.merged.status)),
    quantum_exists: src.quantum !== undefined,
    stories: count(['pending', 'in_progress', 'passed', 'failed', 'blocked'] as const, (src.quantum?.data.stories ?? []).map((s) => s.status)),
    checklists: src.checklists.map((c) => ({ path: c.path, done: c.items.filter((b) => b.done).length, total: c.items.length })),
    progress: `${done}/${items.length}`,
    in_progress: items.filter((i) => i.status === 'in_progress').map((i) => ({ source: i.source, id: i.id, title: i.title, since: i.startedAt ?? null, ...(i.assignee ? { assignee: i.assignee } : {}) })),
    last_completed: last,
    blocked: items.filter((i) => i.status === 'blocked').map((i) => ({ source: i.source, id: i.id, title: i.title, reason: i.reason ?? null })),
    runs: runs.filter((r) => r.active).map(statusRun),
    recent_runs: newestFirst(runs.filter((r) => !r.active)).map(statusRun),
    problems: [...plan.problems, ...runProblems],
  };
}

/** Finished runs newest first: by `startedAt` (ISO, compared as time), then by id, descending. */
function newestFirst(runs: RunInfo[]): RunInfo[] {
  const at = (r: RunInfo) => parseIsoTime(r.startedAt) ?? -Infinity;
  return [...runs].sort((a, b) => at(b) - at(a) || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
}

function statusRun(r: RunInfo): StatusRun {
  return {
    id: r.id, kind: r.kind, state: r.state, active: r.active, reason: r.reason ?? null, iteration: r.iteration,
    current_epic: r.currentEpic, current_spec: r.currentEpic, current_task: r.currentTask, current_item: r.currentItem,
    paused: r.paused, stopped: r.stopped, started_at: r.startedAt ?? null,
  };
}

/**
 * Text form, starting with flowctl's lines (§2.6): `Epics: N open, N done` (`Specs:` for v1+ folders),
 * `Tasks: N todo, N in_progress, N done, N blocked`, then ours, then `Active runs:` with
 * `  <id> (iteration N, working on <task>) [PAUSED, STOPPED]` or `No active runs`.
 */
export function formatStatusText(s: StatusSnapshot): string {
  const dialect = s.flow_dialect ?? 'epics';
  const out: string[] = [];
  if (s.flow_exists) {
    out.push(`${dialect === 'specs' ? 'Specs' : 'Epics'}: ${s.epics.open} open, ${s.epics.done} done`);
    out.push(`Tasks: ${s.tasks.todo} todo, ${s.tasks.in_progress} in_progress, ${s.tasks.done} done, ${s.tasks.blocked} blocked`);
  }
  if (s.quantum_exists) {
    const q = s.stories;
    out.push(`Stories: ${q.pending} pending, ${q.in_progress} in_progress, ${q.passed} passed, ${q.failed} failed, ${q.blocked} blocked`);
  }
  for (const c of s.checklists) out.push(`Checklist ${c.path}: ${c.done}/${c.total} done`);
  if (!s.flow_exists && !s.quantum_exists && !s.checklists.length) out.push('No task sources (.flow/, quantum.json, RALPH_TASK.md, PROMPT.md, specs/*/tasks.md)');
  else out.push(`Progress: ${s.progress}`);
  for (const i of s.in_progress) out.push(`In progress: ${i.id} ${i.title}${i.since ? ` (since ${i.since})` : ''}`);
  if (s.last_completed) out.push(`Last completed: ${s.last_completed.id} ${s.last_completed.title} (${s.last_completed.at})`);
  for (const b of s.blocked) out.push(`Blocked: ${b.id} ${b.title}${b.reason ? ` — ${firstLine(b.reason)}` : ''}`);
  out.push('');
  const active = s.runs;
  if (active.length) {
    out.push('Active runs:');
    for (const r of active) {
      const flags = [r.paused ? 'PAUSED' : '', r.stopped ? 'STOPPED' : ''].filter(Boolean);
      const working = r.current_task ? `, working on ${r.current_task}` : '';
      out.push(`  ${r.id} (iteration ${r.iteration ?? '?'}${working})${flags.length ? ` [${flags.join(', ')}]` : ''}`);
    }
  } else {
    out.push('No active runs');
  }
  const finished = s.recent_runs;
  if (finished.length) {
    out.push('Finished runs:');
    for (const r of finished) out.push(`  ${r.id} ${r.state}${r.reason ? ` (${r.reason})` : ''}`);
  }
  for (const p of s.problems) out.push(`Problem: ${p.line > 0 ? `${p.file}:${p.line}:${p.column}` : p.file}: ${p.message}`);
  return out.join('\n') + '\n';
}

function firstLine(s: string): string {
  return s.split('\n')[0]!;
}
