import type { PlanItem, SourceId } from '../model/plan';
import { flowItemProblems } from '../sources/flowNext/readFlow';
import { parseIsoTime } from '../model/time';
import type { FileProblem } from '../store/parseError';
import { buildPlan, loadSources, type SourceSet } from '../sources/plan';
import { openBaselines, parsePersonMarks, personMarksFor } from '../model/claimBaseline';
import { unverifiedClaimsOf, type UnverifiedClaim } from './unverifiedClaims';
import { listBaselineMirrors } from '../loop/baselineMirror';
import { readTextSync } from '../store/readJsonFile';
import { ralphFile } from '../model/ralphPaths';
import { listRuns, type RunInfo, type RunProbe, type RunState } from './runs';
import { formatAge, formatWaveLine, loadWaveViews, waveJson, type WaveJson } from '../waves/summary';
import { readRunViewNow } from './runFollower';
import type { RunView } from './runView';

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
  /**
   * What the run's log says (the same {@link RunView} `ralph watch` and the extension show): state, lanes with
   * item, attempt and context gauge, cost, gates, open questions, the last activity lines.
   */
  view: RunView;
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
  /** "X/Y": done items over all items of every source, items claimed done but not verified left out of X (issue 11 C1/C4). */
  progress: string;
  /**
   * Items claimed done that no gate verified (issue 11 C1/C4): done now but not in the claim baseline (run.json
   * `claimBaseline`) of a run that is going on or ended leaving its claims open, a person's own marks left out.
   */
  unverified_claims: UnverifiedClaim[];
  /** Item files that cannot be read (flow-next task / epic files that do not parse): the source is not complete (issue 11). */
  unreadable_items: number;
  in_progress: { source: SourceId; id: string; title: string; since: string | null; assignee?: string }[];
  /** The newest completion over flow-next tasks (`completed_at`, else `updated_at`) and passed stories (`updatedAt`, `story_passed` progress entries). */
  last_completed: { source: SourceId; id: string; title: string; at: string } | null;
  blocked: { source: SourceId; id: string; title: string; reason: string | null }[];
  /** Active runs only, as flowctl lists them (running, paused, stopping), sorted by id. */
  runs: StatusRun[];
  /** IJFW waves, newest first, with every subagent's disposition (core/waves; seed-systems.md §1.10-1). */
  waves: WaveJson[];
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
  const waves = loadWaveViews(folder);
  const epicCounts = count(['open', 'done'] as const, (src.flow?.epics ?? []).map((e) => e.epic.status));
  const items = plan.items;
  const unverified = unverifiedOfRuns(folder, src, runs);
  const claimed = new Set(unverified.map((u) => `${u.source}:${u.id}`));
  const done = items.filter((i) => i.status === 'done' && !claimed.has(`${i.source}:${i.id}`)).length;

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
    unverified_claims: unverified,
    unreadable_items: src.flow ? flowItemProblems(src.flow).length : 0,
    in_progress: items.filter((i) => i.status === 'in_progress').map((i) => ({ source: i.source, id: i.id, title: i.title, since: i.startedAt ?? null, ...(i.assignee ? { assignee: i.assignee } : {}) })),
    last_completed: last,
    blocked: items.filter((i) => i.status === 'blocked').map((i) => ({ source: i.source, id: i.id, title: i.title, reason: i.reason ?? null })),
    runs: runs.filter((r) => r.active).map((r) => statusRun(folder, r, opts.probe)),
    recent_runs: newestFirst(runs.filter((r) => !r.active)).map((r) => statusRun(folder, r, opts.probe)),
    waves: waves.map((w) => waveJson(w, folder)),
    problems: [...plan.problems, ...runProblems, ...waves.flatMap((w) => w.problems)],
  };
}

/**
 * The unverified claims against every open baseline (issue 11 C1/C4: a mirror in the state folder, else a run
 * record's `claimBaseline`; model/claimBaseline.ts `openBaselines`), each item once. The
 * person marks are read here (`.ralph/person-done.json`; unreadable: none, which only reports more).
 */
function unverifiedOfRuns(folder: string, src: SourceSet, runs: readonly RunInfo[]): UnverifiedClaim[] {
  // The engine's mirror outside the workspace wins over run.json, which the agent can edit (K2/K3), and counts when
  // no record matches it (the record deleted, its runId changed: breaker-s5 07/34).
  const withBaseline = openBaselines(listBaselineMirrors(folder), runs.filter((r) => r.kind === 'ralph').map((r) => ({ runId: r.id, claimBaseline: r.claimBaseline })));
  if (!withBaseline.length) return [];
  let text: string | undefined;
  try {
    text = readTextSync(ralphFile(folder, 'personDone'));
  } catch {
    text = undefined; // refused (too large, binary): no marks, which only reports more claims
  }
  const marks = parsePersonMarks(text);
  const seen = new Set<string>();
  const out: UnverifiedClaim[] = [];
  for (const { runId, baseline: b } of withBaseline) {
    for (const u of unverifiedClaimsOf(src, b, runId, personMarksFor(marks, b))) {
      const k = `${u.source}:${u.id}`;
      if (!seen.has(k)) { seen.add(k); out.push(u); }
    }
  }
  return out;
}

/** Finished runs newest first: by `startedAt` (ISO, compared as time), then by id, descending. */
function newestFirst(runs: RunInfo[]): RunInfo[] {
  const at = (r: RunInfo) => parseIsoTime(r.startedAt) ?? -Infinity;
  return [...runs].sort((a, b) => at(b) - at(a) || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
}

function statusRun(folder: string, r: RunInfo, probe: RunProbe = {}): StatusRun {
  return {
    id: r.id, kind: r.kind, state: r.state, active: r.active, reason: r.reason ?? null, iteration: r.iteration,
    current_epic: r.currentEpic, current_spec: r.currentEpic, current_task: r.currentTask, current_item: r.currentItem,
    paused: r.paused, stopped: r.stopped, started_at: r.startedAt ?? null,
    view: readRunViewNow(folder, r.id, { kind: r.kind, ...(probe.isAlive ? { isAlive: probe.isAlive } : {}), ...(probe.hostNames ? { hostNames: probe.hostNames } : {}) }),
  };
}

/**
 * The lines `ralph status` prints under an active run, from its view: state, per lane the iteration, item,
 * attempt, context gauge and cost, the run's cost, the last gate results, and each open question with how to
 * answer it. Pure.
 */
export function formatRunViewLines(v: RunView, indent = '    '): string[] {
  const out: string[] = [];
  const cost = `$${v.cost.runUsd.toFixed(4)}${v.maxCostUsd ? ` of $${v.maxCostUsd}` : ''}`;
  out.push(`${indent}state: ${v.stateText} · iteration ${v.iteration}${v.maxIterations ? ` of ${v.maxIterations}` : ''} · cost ${cost}${v.progress ? ` · ${v.progress.done}/${v.progress.total} done` : ''}`);
  for (const l of v.lanes) {
    const parts = [`lane ${l.lane}: ${l.activity}`];
    if (l.item) parts.push(`${l.item.id}${l.item.title && l.item.title !== l.item.id ? ` ${l.item.title}` : ''}`);
    else if (l.purpose && l.purpose !== 'work') parts.push(l.purpose);
    if (l.attempt) parts.push(`attempt ${l.attempt.text}`);
    if (l.context) parts.push(`context ${l.context.tokens}/${l.context.window} tokens (${l.context.percent}%; warn ${l.context.warnPercent}%, rotate ${l.context.rotatePercent}%)`);
    parts.push(`iteration cost $${l.iterationCostUsd.toFixed(4)}`);
    out.push(`${indent}${parts.join(' · ')}`);
  }
  for (const g of v.gates) out.push(`${indent}gate ${g.tier}: ${g.running ? 'running' : g.passed ? 'passed' : `failed (exit ${g.exitCode})`}${g.command ? ` — ${g.command}` : ''}`);
  for (const q of v.questions) {
    out.push(`${indent}question${q.item ? ` (${q.item.id})` : ''}: ${q.text.split('\n')[0]}`);
    out.push(`${indent}  answer: ralph answer --run ${v.runId}${q.item ? ` --item ${q.item.id}` : ''} "<text>", or write ${q.answerFile}`);
  }
  return out;
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
  else out.push(`Progress: ${s.progress}${s.unverified_claims.length ? ` (+${s.unverified_claims.length} claimed done, not verified: ${s.unverified_claims.map((u) => u.id).join(', ')})` : ''}${s.unreadable_items ? ` (+${s.unreadable_items} unreadable item file${s.unreadable_items > 1 ? 's' : ''}: not complete, see Problem below)` : ''}`);
  for (const i of s.in_progress) out.push(`In progress: ${i.id} ${i.title}${i.since ? ` (since ${i.since})` : ''}`);
  if (s.last_completed) out.push(`Last completed: ${s.last_completed.id} ${s.last_completed.title} (${s.last_completed.at})`);
  for (const b of s.blocked) out.push(`Blocked: ${b.id} ${b.title}${b.reason ? ` — ${firstLine(b.reason)}` : ''}`);
  out.push(...formatWavesText(s.waves));
  out.push('');
  const active = s.runs;
  if (active.length) {
    out.push('Active runs:');
    for (const r of active) {
      const flags = [r.paused ? 'PAUSED' : '', r.stopped ? 'STOPPED' : ''].filter(Boolean);
      const working = r.current_task ? `, working on ${r.current_task}` : '';
      out.push(`  ${r.id} (iteration ${r.iteration ?? '?'}${working})${flags.length ? ` [${flags.join(', ')}]` : ''}`);
      out.push(...formatRunViewLines(r.view));
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

/** `Wave <id> [status]: …` and a line per subagent that is not done (orphans first, at most 20), for the text status. */
function formatWavesText(waves: readonly WaveJson[]): string[] {
  const out: string[] = [];
  const order = ['STALE', 'RESUMED', 'ACTIVE', 'PENDING'];
  for (const w of waves) {
    out.push(`Wave ${formatWaveLine(w)}`);
    const open = w.subagents.filter((s) => s.disposition !== 'RESOLVED').sort((a, b) => order.indexOf(a.disposition) - order.indexOf(b.disposition));
    for (const s of open.slice(0, 20)) {
      const tail = s.disposition === 'ACTIVE' ? `, orphan in ${formatAge(s.orphan_in_ms ?? 0)} without activity` : s.next_step !== undefined ? ` — next_step ${JSON.stringify(s.next_step)}` : '';
      out.push(`  ${s.sub_id} ${s.disposition}${s.checkpoint_age_ms !== null ? ` (checkpoint ${formatAge(s.checkpoint_age_ms)} old)` : ''}${tail}`);
    }
    if (open.length > 20) out.push(`  … and ${open.length - 20} more (ralph status --json lists them all)`);
  }
  return out;
}
