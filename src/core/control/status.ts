import type { PlanItem } from '../model/plan';
import { flowItemProblems } from '../sources/flowNext/readFlow';
import { parseIsoTime } from '../model/time';
import { pastStaleThreshold, QUANTUM_DEFAULT_STALE_MINUTES } from '../model/quantumStale';
import { buildPlan, loadSources, type SourceSet } from '../sources/plan';
import { openBaselines, parsePersonMarks, personMarksFor } from '../model/claimBaseline';
import { unverifiedClaimsOf, type UnverifiedClaim } from './unverifiedClaims';
import { listBaselineMirrors } from '../loop/baselineMirror';
import { readTextSync } from '../store/readJsonFile';
import { ralphFile } from '../model/ralphPaths';
import { listRuns, type RunInfo, type RunProbe } from './runs';
import { loadWaveViews, waveJson } from '../waves/summary';
import { readRunViewNow } from './runFollower';
import type { StatusLane, StatusRun, StatusSnapshot } from './statusSnapshot';
import { withSentinels, type RunView } from './runView';
import { aggregateFlow, basisRestOf, composeStatus, type StatusBasis, type StatusCompletion } from './statusCompose';

/** The lanes of a parallel run's view in short ({@link StatusLane}). Pure. */
export function statusLanesOf(v: RunView): StatusLane[] {
  return v.lanes.map((l) => ({
    lane: l.lane,
    story: l.item?.id ?? null,
    title: l.item?.title ?? null,
    iteration: l.iteration,
    attempt: l.attempt?.text ?? null,
    state: l.activity,
    worker: l.worker,
  }));
}

function count<K extends string>(keys: readonly K[], values: Iterable<string>): Record<K, number> {
  const out = Object.fromEntries(keys.map((k) => [k, 0])) as Record<K, number>;
  for (const v of values) if ((keys as readonly string[]).includes(v)) out[v as K]++;
  return out;
}

/**
 * Builds the status snapshot of a folder: task sources, the plan graph's highlights, and every run. The load
 * ({@link loadStatusBasis}) then the pure composition (control/statusCompose.ts `composeStatus`).
 */
export function buildStatus(
  folder: string,
  opts: { env?: NodeJS.ProcessEnv; probe?: RunProbe; nowMs?: number } = {},
): StatusSnapshot {
  return composeStatus(loadStatusBasis(folder, opts).basis);
}

/**
 * The load step of {@link buildStatus}: what the composition needs (control/statusCompose.ts), and how many claim
 * baselines are open (`openBaselines`: a mirror or a run record's).
 */
export function loadStatusBasis(
  folder: string,
  /** `nowMs`: the time the stale rule is judged at (ms since epoch; default now). */
  opts: { env?: NodeJS.ProcessEnv; probe?: RunProbe; nowMs?: number } = {},
): { basis: StatusBasis; openBaselines: number } {
  const src = loadSources(folder, opts.env);
  const plan = buildPlan(src);
  const { runs, problems: runProblems } = listRuns(folder, opts.probe);
  const waves = loadWaveViews(folder);
  const epicCounts = count(
    ['open', 'done'] as const,
    (src.flow?.epics ?? []).map((e) => e.epic.status),
  );
  const items = plan.items;
  const { claims: unverified, openBaselines } = unverifiedOfRuns(folder, src, runs);
  const claimed = new Set(unverified.map((u) => `${u.source}:${u.id}`));

  // The quantum side's newest completion: a passed story's `updatedAt` (set by `ralph task done`) or quantum-loop's
  // `story_passed` entry; the first of the latest wins (composeStatus weighs it against the flow-next tasks).
  let qLast: StatusCompletion | null = null;
  const consider = (i: PlanItem, at: string | undefined) => {
    const ms = parseIsoTime(at);
    if (at && ms !== undefined && (qLast === null || ms > qLast.ms))
      qLast = { source: i.source, id: i.id, title: i.title, at, ms };
  };
  if (src.quantum) {
    const byId = new Map(items.filter((i) => i.source === 'quantum').map((i) => [i.id, i]));
    for (const s of src.quantum.data.stories) {
      const i = byId.get(s.id);
      const at = (s as { updatedAt?: unknown }).updatedAt;
      if (i && i.status === 'done' && typeof at === 'string') consider(i, at);
    }
    for (const p of src.quantum.data.progress ?? []) {
      const i = p.storyId ? byId.get(p.storyId) : undefined;
      if (i && i.status === 'done' && (p.action ?? 'story_passed') === 'story_passed') consider(i, p.timestamp);
    }
  }

  const basis: StatusBasis = {
    head: {
      success: true,
      flow_exists: src.flow !== undefined,
      flow_dialect: src.flow?.dialect ?? null,
      epics: epicCounts,
      specs: { ...epicCounts },
      quantum_exists: src.quantum !== undefined,
      stories: count(
        ['pending', 'in_progress', 'passed', 'failed', 'blocked'] as const,
        (src.quantum?.data.stories ?? []).map((s) => s.status),
      ),
      checklists: src.checklists.map((c) => ({
        path: c.path,
        done: c.items.filter((b) => b.done).length,
        total: c.items.length,
      })),
      unverified_claims: unverified,
      unreadable_items: src.flow ? flowItemProblems(src.flow).length : 0,
      runs: runs.filter((r) => r.active).map((r) => statusRun(folder, r, opts.probe)),
      recent_runs: newestFirst(runs.filter((r) => !r.active)).map((r) => statusRun(folder, r, opts.probe)),
      waves: waves.map((w) => waveJson(w, folder)),
      problems: [...plan.problems, ...runProblems, ...waves.flatMap((w) => w.problems)],
    },
    flow: aggregateFlow(items, claimed, parseIsoTime),
    rest: basisRestOf(
      items.filter((i) => i.source !== 'flow-next'),
      claimed,
      staleRule(src, runs, opts.nowMs ?? Date.now()),
    ),
    quantumLast: qLast,
  };
  return { basis, openBaselines };
}

/**
 * The Plan tree's stale rule for `ralph status`: a quantum story `in_progress` past the file's
 * `staleThresholdMinutes` (else 20; model/quantumStale.ts) while no run of the folder is active gives that threshold.
 */
function staleRule(src: SourceSet, runs: readonly RunInfo[], nowMs: number): (i: PlanItem) => number | undefined {
  if (!src.quantum || runs.some((r) => r.active)) return () => undefined;
  const minutes = src.quantum.data.staleThresholdMinutes ?? QUANTUM_DEFAULT_STALE_MINUTES;
  return (i) => (i.source === 'quantum' && pastStaleThreshold(i, nowMs, minutes) ? minutes : undefined);
}

/**
 * The unverified claims against every open baseline (a mirror in the state folder, else a run
 * record's `claimBaseline`; model/claimBaseline.ts `openBaselines`), each item once, and how many baselines are
 * open. The person marks are read here (`.ralph/person-done.json`; unreadable: none, which only reports more).
 */
function unverifiedOfRuns(
  folder: string,
  src: SourceSet,
  runs: readonly RunInfo[],
): { claims: UnverifiedClaim[]; openBaselines: number } {
  // The engine's mirror outside the workspace wins over run.json, which the agent can edit, and counts when
  // no record matches it (the attack: the record deleted, or its runId changed).
  const withBaseline = openBaselines(
    listBaselineMirrors(folder),
    runs.filter((r) => r.kind === 'ralph').map((r) => ({ runId: r.id, claimBaseline: r.claimBaseline })),
  );
  if (!withBaseline.length) return { claims: [], openBaselines: 0 };
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
      if (!seen.has(k)) {
        seen.add(k);
        out.push(u);
      }
    }
  }
  return { claims: out, openBaselines: withBaseline.length };
}

/** Finished runs newest first: by `startedAt` (ISO, compared as time), then by id, descending. */
function newestFirst(runs: RunInfo[]): RunInfo[] {
  const at = (r: RunInfo) => parseIsoTime(r.startedAt) ?? -Infinity;
  return [...runs].sort((a, b) => at(b) - at(a) || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
}

function statusRun(folder: string, r: RunInfo, probe: RunProbe = {}): StatusRun {
  const read = readRunViewNow(folder, r.id, {
    kind: r.kind,
    ...(probe.isAlive ? { isAlive: probe.isAlive } : {}),
    ...(probe.hostNames ? { hostNames: probe.hostNames } : {}),
  });
  // The listing's sentinels (PAUSE, STOP) and start time and the view's agree: one object, one answer.
  const withFiles = withSentinels(read, { paused: r.paused, stopped: r.stopped });
  const view =
    r.kind === 'flow-next' && r.startedAt && withFiles.startedAt !== r.startedAt
      ? { ...withFiles, startedAt: r.startedAt }
      : withFiles;
  return {
    id: r.id,
    kind: r.kind,
    state: r.state,
    active: r.active,
    reason: r.reason ?? null,
    iteration: r.iteration,
    current_epic: r.currentEpic,
    current_spec: r.currentEpic,
    current_task: r.currentTask,
    current_item: r.currentItem,
    paused: r.paused,
    stopped: r.stopped,
    started_at: r.startedAt ?? null,
    view,
    ...(r.parallel ? { lanes: statusLanesOf(view) } : {}),
  };
}

export { formatRunViewLines, formatStatusText } from './statusText';
export type { StatusLane, StatusRun, StatusSnapshot } from './statusSnapshot';
