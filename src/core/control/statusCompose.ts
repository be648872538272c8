import type { PlanItem, SourceId } from '../model/plan';
import type { StatusSnapshot } from './statusSnapshot';

/**
 * `ralph status` in two steps: the load (core/control/status.ts `loadStatusBasis`: files, plan graph,
 * runs, waves) gives a {@link StatusBasis}, a plain JSON value; {@link composeStatus} (pure) turns it into the
 * snapshot, so the composition rules are table-tested without files. `buildStatus` is the two steps.
 */

/** The items of the other sources (quantum stories, checkboxes), summed up. */
export interface StatusBasisRest {
  /** How many items. */
  count: number;
  /** How many are done (claimed-but-unverified ones left out). */
  done: number;
  in_progress: StatusSnapshot['in_progress'];
  blocked: StatusSnapshot['blocked'];
}

/** A newest completion: the item, its time as written (`at`) and that time in ms since the epoch. */
export interface StatusCompletion {
  source: SourceId;
  id: string;
  title: string;
  at: string;
  ms: number;
}

/** The flow-next tasks summed up ({@link aggregateFlow}): all {@link composeStatus} needs of them. */
export interface FlowAggregate {
  /** How many flow-next tasks. */
  count: number;
  /** By merged raw status (unknown statuses not counted). */
  tasks: StatusSnapshot['tasks'];
  /** Done tasks, claimed-but-unverified ones left out. */
  done: number;
  /** The `in_progress` and `blocked` entries, in plan order. */
  inProgress: StatusSnapshot['in_progress'];
  blocked: StatusSnapshot['blocked'];
  /**
   * The newest completion: a done task whose `completedAt` (else `updatedAt`) parses, newest first, the earlier
   * task on equal times; `null` when there is none.
   */
  latest: StatusCompletion | null;
}

/**
 * The load's result: the snapshot's parts that do not depend on single items (`head`), the flow-next tasks and the
 * other items summed up, and the quantum side's newest completion (first of the latest, in quantum-loop's order:
 * stories, then progress entries). A plain JSON value.
 */
export interface StatusBasis {
  head: Omit<StatusSnapshot, 'tasks' | 'progress' | 'in_progress' | 'last_completed' | 'blocked'>;
  flow: FlowAggregate;
  rest: StatusBasisRest;
  quantumLast: StatusCompletion | null;
}

const FLOW: SourceId = 'flow-next';

/**
 * The {@link FlowAggregate} of a plan's flow-next items (plan order; items of other sources are skipped), in one
 * pass: a status reads every task of a 5,000-task plan once. `claimed`: `source:id` keys of unverified claims, left
 * out of `done`; `parseMs` gives an ISO time in ms (model/time.ts `parseIsoTime`), asked only of done tasks. Pure.
 */
export function aggregateFlow(
  items: readonly PlanItem[],
  claimed: ReadonlySet<string>,
  parseMs: (iso: string) => number | undefined,
): FlowAggregate {
  const tasks = { todo: 0, in_progress: 0, blocked: 0, done: 0 };
  const agg: FlowAggregate = { count: 0, tasks, done: 0, inProgress: [], blocked: [], latest: null };
  for (const i of items) {
    if (i.source !== FLOW) continue;
    agg.count++;
    const raw = i.rawStatus;
    if (raw === 'todo' || raw === 'in_progress' || raw === 'blocked' || raw === 'done') tasks[raw]++;
    if (i.status === 'done') {
      if (!claimed.size || !claimed.has(`${FLOW}:${i.id}`)) agg.done++;
      const at = i.completedAt ?? i.updatedAt;
      const ms = at ? parseMs(at) : undefined;
      // A later task wins only when strictly newer.
      if (at && ms !== undefined && (agg.latest === null || ms > agg.latest.ms))
        agg.latest = { source: FLOW, id: i.id, title: i.title, at, ms };
    } else if (i.status === 'in_progress') agg.inProgress.push(inProgressEntry(i));
    else if (i.status === 'blocked') agg.blocked.push(blockedEntry(i));
  }
  return agg;
}

/** An `in_progress` entry of the snapshot; `stale`: the stale threshold (minutes) the item is past, if any. */
function inProgressEntry(i: PlanItem, stale?: number): StatusSnapshot['in_progress'][number] {
  return {
    source: i.source,
    id: i.id,
    title: i.title,
    since: i.startedAt ?? null,
    ...(i.assignee ? { assignee: i.assignee } : {}),
    ...(stale !== undefined ? { stale_after_minutes: stale } : {}),
  };
}

function blockedEntry(i: PlanItem): StatusSnapshot['blocked'][number] {
  return { source: i.source, id: i.id, title: i.title, reason: i.reason ?? null };
}

/**
 * The {@link StatusBasisRest} of the items of the other sources; `claimed`: `source:id` keys left out of `done`.
 * `staleMinutes(i)`: the stale threshold (minutes) an `in_progress` item is past, or undefined (the caller's rule:
 * a quantum story past `staleThresholdMinutes` with no run of the folder active, as the Plan tree shows it). Pure.
 */
export function basisRestOf(
  items: readonly PlanItem[],
  claimed: ReadonlySet<string>,
  staleMinutes: (i: PlanItem) => number | undefined = () => undefined,
): StatusBasisRest {
  const rest: StatusBasisRest = { count: items.length, done: 0, in_progress: [], blocked: [] };
  for (const i of items) {
    if (i.status === 'done' && !claimed.has(`${i.source}:${i.id}`)) rest.done++;
    if (i.status === 'in_progress') rest.in_progress.push(inProgressEntry(i, staleMinutes(i)));
    else if (i.status === 'blocked') rest.blocked.push(blockedEntry(i));
  }
  return rest;
}

/**
 * The status snapshot of a basis. Pure. Rules: `tasks` counts flow-next tasks by merged raw status (unknown
 * statuses not counted); `progress` is done items (claimed-but-unverified ones left out) over all items;
 * `last_completed` is the newest completion, flow-next tasks first in plan order, then the quantum side, a later
 * candidate winning only when strictly newer (ISO times compared as time).
 */
export function composeStatus(b: StatusBasis): StatusSnapshot {
  const h = b.head;
  const flow = b.flow;
  const f = flow.latest;
  const q = b.quantumLast;
  const newest = q && q.ms > (f ? f.ms : -Infinity) ? q : f;
  return {
    success: true,
    flow_exists: h.flow_exists,
    flow_dialect: h.flow_dialect,
    epics: { ...h.epics },
    specs: { ...h.specs },
    tasks: { ...flow.tasks },
    quantum_exists: h.quantum_exists,
    stories: h.stories,
    checklists: h.checklists,
    progress: `${flow.done + b.rest.done}/${flow.count + b.rest.count}`,
    unverified_claims: h.unverified_claims,
    unreadable_items: h.unreadable_items,
    in_progress: [...flow.inProgress, ...b.rest.in_progress],
    last_completed: newest ? { source: newest.source, id: newest.id, title: newest.title, at: newest.at } : null,
    blocked: [...flow.blocked, ...b.rest.blocked],
    runs: h.runs,
    recent_runs: h.recent_runs,
    waves: h.waves,
    problems: h.problems,
  };
}
