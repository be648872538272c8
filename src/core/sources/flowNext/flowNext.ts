import { epicNumber, taskNumber } from '../../model/flowNext';
import type { FlowTaskRecord, FlowWorkspace } from './readFlow';

/** flowctl's `next --json` answer (seed-systems.md §2.5), with both `epic` and v1+'s `spec` keys. */
export type FlowNextResult =
  | { status: 'work'; epic: string; spec: string; task: string; reason: 'resume_in_progress' | 'ready_task' }
  | { status: 'plan'; epic: string; spec: string; task: null; reason: 'needs_plan_review' }
  | {
      status: 'none';
      epic: null;
      spec: null;
      task: null;
      reason: 'none' | 'blocked_by_epic_deps';
      blocked_epics?: Record<string, string[]>;
    };

export interface FlowNextOptions {
  actor: string;
  /** Only these epics (a run's `--epics-file`), in the given set; all when absent. */
  epics?: readonly string[];
  requirePlanReview?: boolean;
  /** Task ids never returned (the engine's tasks that wait for a human answer); the order is otherwise kept. */
  skip?: readonly string[];
}

/**
 * flow-next's selector (§2.5 `next`): epics in numeric order, skipping `done` epics and epics whose
 * `depends_on_epics` are not all done; with `requirePlanReview` an epic whose `plan_review_status` is not `ship`
 * answers `plan`; else the actor's own `in_progress` task (`resume_in_progress`), else the first ready task
 * (`todo` with every same-epic dependency `done`) by (priority, null = 999; task number). Pure.
 */
export function flowNext(ws: FlowWorkspace, opts: FlowNextOptions): FlowNextResult {
  const epicStatus = new Map(ws.epics.map((e) => [e.id, e.epic.status]));
  const byEpic = new Map<string, FlowTaskRecord[]>();
  for (const t of ws.tasks) {
    const list = byEpic.get(t.epicId) ?? [];
    list.push(t);
    byEpic.set(t.epicId, list);
  }
  const blocked: Record<string, string[]> = {};
  const skip = new Set(opts.skip ?? []);
  const scope = opts.epics ? new Set(opts.epics) : undefined;
  const epics = [...ws.epics]
    .filter((e) => !scope || scope.has(e.id))
    .sort((a, b) => epicNumber(a.id) - epicNumber(b.id));
  for (const e of epics) {
    if (e.epic.status === 'done') continue;
    const unmet = e.epic.depends_on_epics.filter((d) => epicStatus.get(d) !== 'done');
    if (unmet.length) {
      blocked[e.id] = unmet;
      continue;
    }
    if (opts.requirePlanReview && e.epic.plan_review_status !== 'ship') {
      return { status: 'plan', epic: e.id, spec: e.id, task: null, reason: 'needs_plan_review' };
    }
    const tasks = byEpic.get(e.id) ?? [];
    const mine = tasks.find(
      (t) => t.merged.status === 'in_progress' && t.merged.assignee === opts.actor && !skip.has(t.id),
    );
    if (mine) return { status: 'work', epic: e.id, spec: e.id, task: mine.id, reason: 'resume_in_progress' };
    const status = new Map(tasks.map((t) => [t.id, t.merged.status]));
    const ready = tasks
      .filter(
        (t) =>
          t.merged.status === 'todo' &&
          !skip.has(t.id) &&
          t.merged.depends_on.every((d) => !status.has(d) || status.get(d) === 'done'),
      )
      .sort((a, b) => (a.merged.priority ?? 999) - (b.merged.priority ?? 999) || taskNumber(a.id) - taskNumber(b.id));
    if (ready[0]) return { status: 'work', epic: e.id, spec: e.id, task: ready[0].id, reason: 'ready_task' };
  }
  if (Object.keys(blocked).length)
    return {
      status: 'none',
      epic: null,
      spec: null,
      task: null,
      reason: 'blocked_by_epic_deps',
      blocked_epics: blocked,
    };
  return { status: 'none', epic: null, spec: null, task: null, reason: 'none' };
}
