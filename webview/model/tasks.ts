import type { TaskCost } from '../../src/protocol/dashboard';

/** Columns the cost-per-task table sorts by. */
export const TASK_SORT_KEYS = ['itemId', 'iterations', 'input', 'output', 'cacheRead', 'costUsd'] as const;
export type TaskSortKey = (typeof TASK_SORT_KEYS)[number];
export interface TaskSort {
  key: TaskSortKey;
  descending: boolean;
}

/** The tasks sorted by `sort` (ties by item id, so the order is stable); a new array. */
export function sortTasks(tasks: readonly TaskCost[], sort: TaskSort): TaskCost[] {
  const dir = sort.descending ? -1 : 1;
  return [...tasks].sort((a, b) => {
    const x = a[sort.key];
    const y = b[sort.key];
    const c =
      typeof x === 'number' && typeof y === 'number'
        ? x - y
        : String(x).localeCompare(String(y), undefined, { numeric: true });
    return c !== 0 ? c * dir : a.itemId.localeCompare(b.itemId, undefined, { numeric: true });
  });
}

/** Clicking a column: the same column flips the direction, another sorts by it (numbers largest first). */
export function nextSort(current: TaskSort, key: TaskSortKey): TaskSort {
  if (current.key === key) return { key, descending: !current.descending };
  return { key, descending: key !== 'itemId' };
}
