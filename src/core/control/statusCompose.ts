import type { ItemStatus, PlanItem, SourceId } from '../model/plan';
import type { StatusSnapshot } from './statusSnapshot';

/**
 * `ralph status` in two steps: the load (core/control/status.ts `loadStatusBasis`: files, plan graph,
 * runs, waves) gives a {@link StatusBasis}, a plain JSON value; {@link composeStatus} (pure) turns it into the
 * snapshot, so the composition rules are table-tested without files. `buildStatus` is the two steps.
 */

/** What the composition needs of one flow-next task (in plan order). */
export interface StatusBasisItem {
  id: string;
  title: string;
  status: ItemStatus;
  /** The merged raw status (the `tasks` counts). */
  raw: string;
  /** `startedAt` (in_progress `since`). */
  since?: string;
  assignee?: string;
  /** `completedAt`, else `updatedAt` (a done task's completion for `last_completed`), and that time in ms when it parses. */
  at?: string;
  ms?: number;
  reason?: string;
}

/** The items of the other sources (quantum stories, checkboxes), summed up: a flow-next patch never changes them. */
export interface StatusBasisRest {
  /** How many items. */
  count: number;
  /** How many are done (claimed-but-unverified ones left out). */
  done: number;
  in_progress: StatusSnapshot['in_progress'];
  blocked: StatusSnapshot['blocked'];
}

/** The newest quantum completion (a passed story's `updatedAt` or `story_passed` entry), with its time in ms. */
export interface StatusCompletion {
  source: SourceId;
  id: string;
  title: string;
  at: string;
  ms: number;
}

/**
 * The load's result: the snapshot's parts that do not depend on single items (`head`), every item, and the
 * quantum side's newest completion (first of the latest, in quantum-loop's order: stories, then progress entries).
 */
export interface StatusBasis {
  head: Omit<StatusSnapshot, 'tasks' | 'progress' | 'in_progress' | 'last_completed' | 'blocked'>;
  /** flow-next tasks, in plan order (they come first in the plan). */
  items: StatusBasisItem[];
  /** Every other item, after them. */
  rest: StatusBasisRest;
  quantumLast: StatusCompletion | null;
}

/** The basis item of a flow-next task's plan item; `parseMs` gives a done item's completion time. Pure. */
export function basisItemOf(i: PlanItem, parseMs: (iso: string | undefined) => number | undefined): StatusBasisItem {
  const out: StatusBasisItem = { id: i.id, title: i.title, status: i.status, raw: i.rawStatus };
  if (i.startedAt !== undefined) out.since = i.startedAt;
  if (i.assignee) out.assignee = i.assignee;
  const at = i.completedAt ?? i.updatedAt;
  if (at !== undefined) {
    out.at = at;
    // Only a done item's time is ever compared (a completion candidate): parse no other.
    const ms = i.status === 'done' ? parseMs(at) : undefined;
    if (ms !== undefined) out.ms = ms;
  }
  if (i.reason !== undefined) out.reason = i.reason;
  return out;
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
    if (i.status === 'in_progress') {
      const stale = staleMinutes(i);
      rest.in_progress.push({
        source: i.source,
        id: i.id,
        title: i.title,
        since: i.startedAt ?? null,
        ...(i.assignee ? { assignee: i.assignee } : {}),
        ...(stale !== undefined ? { stale_after_minutes: stale } : {}),
      });
    } else if (i.status === 'blocked')
      rest.blocked.push({ source: i.source, id: i.id, title: i.title, reason: i.reason ?? null });
  }
  return rest;
}

const TASK_KEYS = ['todo', 'in_progress', 'blocked', 'done'] as const;

type InProgressEntry = StatusSnapshot['in_progress'][number];
type BlockedEntry = StatusSnapshot['blocked'][number];

/** A flow-next completion candidate: the item's index in plan order, its completion time (ms), id, title and `at`. */
export type FlowCompletion = [k: number, ms: number, id: string, title: string, at: string];

/**
 * The flow-next tasks summed up, all {@link composeStatus} needs of them. A plain JSON value.
 */
export interface FlowAggregate {
  /** How many flow-next tasks. */
  count: number;
  /** By merged raw status (unknown statuses not counted). */
  tasks: StatusSnapshot['tasks'];
  /** Done tasks, claimed-but-unverified ones left out. */
  done: number;
  /** The `in_progress` / `blocked` entries of flow-next tasks with their item index, in plan order. */
  inProgress: [k: number, entry: InProgressEntry][];
  blocked: [k: number, entry: BlockedEntry][];
  /**
   * The best completion candidates (done, with an `at` whose time parses), best first: newer first, the earlier item
   * on equal times (composeStatus's rule: a later item wins only when strictly newer). A prefix of the ranking of
   * every candidate, at most the `keep` asked for; `latest[0]` is the flow-next side of `last_completed`.
   */
  latest: FlowCompletion[];
  /** How many candidates there are in all (≥ `latest.length`). */
  candidates: number;
}

/** The `source:id` keys of a basis's unverified claims (left out of `done`). Pure. */
export function claimedOf(head: StatusBasis['head']): Set<string> {
  return new Set(head.unverified_claims.map((u) => `${u.source}:${u.id}`));
}

const FLOW: SourceId = 'flow-next';

function isDoneItem(i: StatusBasisItem, claimed: ReadonlySet<string>): boolean {
  return i.status === 'done' && (!claimed.size || !claimed.has(`${FLOW}:${i.id}`));
}

/** A completion candidate: done, with an `at` and its time (composeStatus's `ms > lastMs` against -Infinity). */
function isCandidate(i: StatusBasisItem): i is StatusBasisItem & { at: string; ms: number } {
  return i.status === 'done' && !!i.at && i.ms !== undefined && i.ms > -Infinity;
}

function inProgressEntry(i: StatusBasisItem): InProgressEntry {
  return {
    source: FLOW,
    id: i.id,
    title: i.title,
    since: i.since ?? null,
    ...(i.assignee ? { assignee: i.assignee } : {}),
  };
}

function blockedEntry(i: StatusBasisItem): BlockedEntry {
  return { source: FLOW, id: i.id, title: i.title, reason: i.reason ?? null };
}

/** Whether completion `a` ranks before `b`: newer, or as new and earlier in plan order. */
function ranksBefore(a: readonly [number, number, ...unknown[]], b: readonly [number, number, ...unknown[]]): boolean {
  return a[1] > b[1] || (a[1] === b[1] && a[0] < b[0]);
}

/** Inserts `c` into the ranked `list` in place, keeping at most `keep` entries. */
function insertRanked(list: FlowCompletion[], c: FlowCompletion, keep: number): void {
  let at = list.length;
  while (at > 0 && ranksBefore(c, list[at - 1]!)) at--;
  if (at >= keep) return;
  list.splice(at, 0, c);
  if (list.length > keep) list.length = keep;
}

/**
 * The {@link FlowAggregate} of the flow-next items (plan order), keeping the `keep` (≥ 1) best completion
 * candidates; `claimed`: {@link claimedOf}. Pure.
 */
export function aggregateFlow(
  items: readonly StatusBasisItem[],
  claimed: ReadonlySet<string>,
  keep = 1,
): FlowAggregate {
  const tasks = { todo: 0, in_progress: 0, blocked: 0, done: 0 };
  const agg: FlowAggregate = {
    count: items.length,
    tasks,
    done: 0,
    inProgress: [],
    blocked: [],
    latest: [],
    candidates: 0,
  };
  const latest = agg.latest;
  for (let k = 0; k < items.length; k++) {
    const i = items[k]!;
    if (isDoneItem(i, claimed)) agg.done++;
    if ((TASK_KEYS as readonly string[]).includes(i.raw)) tasks[i.raw as (typeof TASK_KEYS)[number]]++;
    if (isCandidate(i)) {
      agg.candidates++;
      // Items come in plan order: a candidate ranks before the last kept one only when strictly newer.
      if (latest.length < keep || i.ms > latest[latest.length - 1]![1])
        insertRanked(latest, [k, i.ms, i.id, i.title, i.at], keep);
    }
    if (i.status === 'in_progress') agg.inProgress.push([k, inProgressEntry(i)]);
    else if (i.status === 'blocked') agg.blocked.push([k, blockedEntry(i)]);
  }
  return agg;
}

/**
 * The status snapshot of a basis. Pure. Rules: `tasks` counts flow-next tasks by merged raw status (unknown
 * statuses not counted); `progress` is done items (claimed-but-unverified ones left out) over all items;
 * `last_completed` is the newest completion, flow-next tasks first in plan order, then the quantum side, a later
 * candidate winning only when strictly newer (ISO times compared as time, `parseMs`).
 */
export function composeStatus(b: StatusBasis): StatusSnapshot {
  return composeFromAggregate(b, aggregateFlow(b.items, claimedOf(b.head)));
}

/** {@link composeStatus} of a basis whose flow-next items are summed up in `flow` ({@link aggregateFlow}). Pure. */
export function composeFromAggregate(b: Omit<StatusBasis, 'items'>, flow: FlowAggregate): StatusSnapshot {
  const h = b.head;
  const first = flow.latest[0];
  let last: StatusSnapshot['last_completed'] = first
    ? { source: FLOW, id: first[2], title: first[3], at: first[4] }
    : null;
  const q = b.quantumLast;
  if (q && q.ms > (first ? first[1] : -Infinity)) last = { source: q.source, id: q.id, title: q.title, at: q.at };
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
    in_progress: [...flow.inProgress.map((e) => e[1]), ...b.rest.in_progress],
    last_completed: last,
    blocked: [...flow.blocked.map((e) => e[1]), ...b.rest.blocked],
    runs: h.runs,
    recent_runs: h.recent_runs,
    waves: h.waves,
    problems: h.problems,
  };
}
