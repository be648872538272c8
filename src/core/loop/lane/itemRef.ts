import type { WorkItemRef } from '../events';

/** The reference of an item, as events carry it (source, id, title; `risky` when given): never the item itself. */
export function ref(item: WorkItemRef): WorkItemRef;
export function ref(item: WorkItemRef, risky: boolean): WorkItemRef & { risky: boolean };
export function ref(item: WorkItemRef, risky?: boolean): WorkItemRef & { risky?: boolean } {
  return { source: item.source, id: item.id, title: item.title, ...(risky !== undefined ? { risky } : {}) };
}
