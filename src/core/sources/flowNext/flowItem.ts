import type { ItemStatus, PlanItem } from '../../model/plan';
import { readTextSync } from '../../store/readJsonFile';
import type { FlowTaskRecord } from './readFlow';
import { blockedReasonFromMarkdown } from './taskMarkdown';

const FLOW_STATUS: Record<string, ItemStatus> = { todo: 'todo', in_progress: 'in_progress', blocked: 'blocked', done: 'done' };

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
  return {
    source: 'flow-next', kind: 'task', id: t.id, rootId: t.epicId, title: m.title, status, rawStatus: m.status, statusSource: t.statusSource,
    dependsOn: m.depends_on, file,
    ...(typeof m.priority === 'number' ? { priority: m.priority } : {}),
    ...(m.claimed_at ? { startedAt: m.claimed_at } : {}),
    ...(m.updated_at ? { updatedAt: m.updated_at } : {}),
    ...(m.completed_at ? { completedAt: m.completed_at } : {}),
    ...(m.assignee ? { assignee: m.assignee } : {}),
    ...(reason ? { reason } : {}),
  };
}
