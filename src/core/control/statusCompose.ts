import type { ItemStatus, PlanItem, SourceId } from '../model/plan';
import type { StatusSnapshot } from './status';

/**
 * `ralph status` in two steps (issue 10): the load (core/control/status.ts `loadStatusBasis`: files, plan graph,
 * runs, waves) gives a {@link StatusBasis}, a plain JSON value; {@link composeStatus} (pure) turns it into the
 * snapshot. The split lets the CLI keep the basis beside a stored answer and, when one task file changed, patch the
 * basis and compose again instead of reading every file (src/cli/statusPatch.ts). `buildStatus` is the two steps, so
 * the patched and the uncached answers come from the same composition.
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

/** The basis item of a flow-next task's plan item; `parseMs` gives the completion's time. Pure. */
export function basisItemOf(i: PlanItem, parseMs: (iso: string | undefined) => number | undefined): StatusBasisItem {
  const out: StatusBasisItem = { id: i.id, title: i.title, status: i.status, raw: i.rawStatus };
  if (i.startedAt !== undefined) out.since = i.startedAt;
  if (i.assignee) out.assignee = i.assignee;
  const at = i.completedAt ?? i.updatedAt;
  if (at !== undefined) {
    out.at = at;
    const ms = parseMs(at);
    if (ms !== undefined) out.ms = ms;
  }
  if (i.reason !== undefined) out.reason = i.reason;
  return out;
}

/** The {@link StatusBasisRest} of the items of the other sources; `claimed`: `source:id` keys left out of `done`. Pure. */
export function basisRestOf(items: readonly PlanItem[], claimed: ReadonlySet<string>): StatusBasisRest {
  const rest: StatusBasisRest = { count: items.length, done: 0, in_progress: [], blocked: [] };
  for (const i of items) {
    if (i.status === 'done' && !claimed.has(`${i.source}:${i.id}`)) rest.done++;
    if (i.status === 'in_progress') rest.in_progress.push({ source: i.source, id: i.id, title: i.title, since: i.startedAt ?? null, ...(i.assignee ? { assignee: i.assignee } : {}) });
    else if (i.status === 'blocked') rest.blocked.push({ source: i.source, id: i.id, title: i.title, reason: i.reason ?? null });
  }
  return rest;
}

const TASK_KEYS = ['todo', 'in_progress', 'blocked', 'done'] as const;

/**
 * The status snapshot of a basis. Pure. Rules: `tasks` counts flow-next tasks by merged raw status (unknown
 * statuses not counted); `progress` is done items (claimed-but-unverified ones left out) over all items;
 * `last_completed` is the newest completion, flow-next tasks first in plan order, then the quantum side, a later
 * candidate winning only when strictly newer (ISO times compared as time, `parseMs`).
 */
export function composeStatus(b: StatusBasis): StatusSnapshot {
  const h = b.head;
  const claimed = new Set(h.unverified_claims.map((u) => `${u.source}:${u.id}`));
  const tasks = { todo: 0, in_progress: 0, blocked: 0, done: 0 };
  let done = 0;
  let last: StatusSnapshot['last_completed'] = null;
  let lastMs = -Infinity;
  const inProgress: StatusSnapshot['in_progress'] = [];
  const blocked: StatusSnapshot['blocked'] = [];
  const source = 'flow-next' as const;
  for (const i of b.items) {
    if (i.status === 'done' && (!claimed.size || !claimed.has(`${source}:${i.id}`))) done++;
    if ((TASK_KEYS as readonly string[]).includes(i.raw)) tasks[i.raw as (typeof TASK_KEYS)[number]]++;
    if (i.status === 'done' && i.at && i.ms !== undefined && i.ms > lastMs) { lastMs = i.ms; last = { source, id: i.id, title: i.title, at: i.at }; }
    if (i.status === 'in_progress') inProgress.push({ source, id: i.id, title: i.title, since: i.since ?? null, ...(i.assignee ? { assignee: i.assignee } : {}) });
    else if (i.status === 'blocked') blocked.push({ source, id: i.id, title: i.title, reason: i.reason ?? null });
  }
  done += b.rest.done;
  inProgress.push(...b.rest.in_progress);
  blocked.push(...b.rest.blocked);
  const q = b.quantumLast;
  if (q && q.ms > lastMs) last = { source: q.source, id: q.id, title: q.title, at: q.at };
  return {
    success: true,
    flow_exists: h.flow_exists,
    flow_dialect: h.flow_dialect,
    epics: { ...h.epics },
    specs: { ...h.specs },
    tasks,
    quantum_exists: h.quantum_exists,
    stories: h.stories,
    checklists: h.checklists,
    progress: `${done}/${b.items.length + b.rest.count}`,
    unverified_claims: h.unverified_claims,
    unreadable_items: h.unreadable_items,
    in_progress: inProgress,
    last_completed: last,
    blocked,
    runs: h.runs,
    recent_runs: h.recent_runs,
    waves: h.waves,
    problems: h.problems,
  };
}
