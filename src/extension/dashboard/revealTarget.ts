/**
 * What **Reveal in Dashboard** shows for its argument: a run (`runId`) and/or a work item (`itemId`). Accepts
 * `{ runId?, itemId? }`, a tree node carrying `runId`, `itemId`, `item: { id }` or `id`, or nothing.
 * Anything else reveals nothing in particular (the dashboard just opens).
 */
export function revealTarget(arg: unknown): { runId: string | null; itemId: string | null } {
  if (!arg || typeof arg !== 'object') return { runId: null, itemId: null };
  const a = arg as Record<string, unknown>;
  const str = (v: unknown) => (typeof v === 'string' && v.length > 0 && v.length <= 500 ? v : null);
  const item = a.item && typeof a.item === 'object' ? str((a.item as Record<string, unknown>).id) : null;
  return { runId: str(a.runId), itemId: str(a.itemId) ?? item ?? (a.type === 'item' ? str(a.id) : null) };
}
