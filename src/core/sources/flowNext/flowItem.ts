import type { ItemStatus, PlanItem } from '../../model/plan';
import { readTextSync } from '../../store/readJsonFile';
import type { FlowTaskRecord } from './readFlow';
import { blockedReasonFromMarkdown } from './taskMarkdown';

const FLOW_STATUS: Record<string, ItemStatus> = {
  todo: 'todo',
  in_progress: 'in_progress',
  blocked: 'blocked',
  done: 'done',
};

/**
 * A flow-next task as a plan item: the merged view's fields (state overlay over the committed JSON, §2.4). A blocked
 * task without `blocked_reason` takes its reason from the task markdown's `Blocked:` text (the one file read here).
 */
export function flowItem(t: FlowTaskRecord, file: string): PlanItem {
  const m = t.merged;
  const status = FLOW_STATUS[m.status] ?? 'unknown';
  let reason = m.blocked_reason ?? undefined;
  if (status === 'blocked' && !reason) {
    const md = readTextSync(t.mdFile);
    if (md) reason = blockedReasonFromMarkdown(md);
  }
  // Optional keys set in this order (the item's key order is part of `ralph plan --json`); no spread objects.
  const item: PlanItem = {
    source: 'flow-next',
    kind: 'task',
    id: t.id,
    rootId: t.epicId,
    title: m.title,
    status,
    rawStatus: m.status,
    statusSource: t.statusSource,
    dependsOn: m.depends_on,
    file,
  };
  if (typeof m.priority === 'number') item.priority = m.priority;
  if (m.claimed_at) item.startedAt = m.claimed_at;
  if (m.updated_at) item.updatedAt = m.updated_at;
  if (m.completed_at) item.completedAt = m.completed_at;
  if (m.assignee) item.assignee = m.assignee;
  if (reason) item.reason = reason;
  return item;
}
