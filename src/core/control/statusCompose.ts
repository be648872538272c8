import type { ItemStatus, PlanItem, SourceId } from '../model/plan';
import type { StatusSnapshot } from './status';

/**
 * `ralph status` in two steps (issue 10): the load (core/control/status.ts `loadStatusBasis`: files, plan graph,
 * runs, waves) gives a {@link StatusBasis}, a plain JSON value; {@link composeStatus} (pure) turns it into the
 * snapshot. The split lets the CLI keep the basis beside a stored answer and, when one task file changed, patch the
 * basis and compose again instead of reading every file (src/cli/statusPatch.ts). `buildStatus` is the two steps, so
 * the patched and the uncached answers come from the same composition.
 */

/** What the composition needs of one plan item (every source, in plan order). */
export interface StatusBasisItem {
  source: SourceId;
  id: string;
  title: string;
  status: ItemStatus;
  /** flow-next tasks: the merged raw status (the `tasks` counts). */
  raw?: string;
  /** `startedAt` (in_progress `since`). */
  since?: string;
  assignee?: string;
  /** flow-next tasks: `completedAt`, else `updatedAt` (a done task's completion for `last_completed`). */
  at?: string;
  reason?: string;
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
  items: StatusBasisItem[];
  quantumLast: StatusCompletion | null;
}

/** The basis item of a plan item (`raw` and `at` for flow-next tasks only). Pure. */
export function basisItemOf(i: PlanItem): StatusBasisItem {
  const out: StatusBasisItem = { source: i.source, id: i.id, title: i.title, status: i.status };
  if (i.source === 'flow-next') {
    out.raw = i.rawStatus;
    const at = i.completedAt ?? i.updatedAt;
    if (at !== undefined) out.at = at;
  }
  if (i.startedAt !== undefined) out.since = i.startedAt;
  if (i.assignee) out.assignee = i.assignee;
  if (i.reason !== undefined) out.reason = i.reason;
  return out;
}

const TASK_KEYS = ['todo', 'in_progress', 'blocked', 'done'] as const;

/**
 * The status snapshot of a basis. Pure. Rules: `tasks` counts flow-next tasks by merged raw status (unknown
 * statuses not counted); `progress` is done items (claimed-but-unverified ones left out) over all items;
 * `last_completed` is the newest completion, flow-next tasks first in plan order, then the quantum side, a later
 * candidate winning only when strictly newer (ISO times compared as time, `parseMs`).
 */
export function composeStatus(b: StatusBasis, parseMs: (iso: string | undefined) => number | undefined): StatusSnapshot {
  const h = b.head;
  const claimed = new Set(h.unverified_claims.map((u) => `${u.source}:${u.id}`));
  const tasks = { todo: 0, in_progress: 0, blocked: 0, done: 0 };
  let done = 0;
  let last: StatusSnapshot['last_completed'] = null;
  let lastMs = -Infinity;
  const inProgress: StatusSnapshot['in_progress'] = [];
  const blocked: StatusSnapshot['blocked'] = [];
  for (const i of b.items) {
    if (i.status === 'done' && (!claimed.size || !claimed.has(`${i.source}:${i.id}`))) done++;
    if (i.source === 'flow-next') {
      if (i.raw !== undefined && (TASK_KEYS as readonly string[]).includes(i.raw)) tasks[i.raw as (typeof TASK_KEYS)[number]]++;
      if (i.status === 'done' && i.at) {
        const ms = parseMs(i.at);
        if (ms !== undefined && ms > lastMs) { lastMs = ms; last = { source: i.source, id: i.id, title: i.title, at: i.at }; }
      }
    }
    if (i.status === 'in_progress') inProgress.push({ source: i.source, id: i.id, title: i.title, since: i.since ?? null, ...(i.assignee ? { assignee: i.assignee } : {}) });
    else if (i.status === 'blocked') blocked.push({ source: i.source, id: i.id, title: i.title, reason: i.reason ?? null });
  }
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
    progress: `${done}/${b.items.length}`,
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
