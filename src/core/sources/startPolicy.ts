import type { PlanItem, PlanSnapshot } from '../model/plan';

/**
 * # Start Here: can a run begin with this item?
 *
 * One answer for `ralph run --item <id>` (the engine refuses with `why`) and the tree's **Start Here** (it shows `why`
 * and offers `next`). The readiness rules are the sources' own selectors' (so the run would pick the item itself once
 * the others are out of the way):
 *
 * - flow-next (flowctl `next`, core `flowNext`): a `todo` task whose same-epic dependencies are all `done` (a
 *   dependency the epic does not know is ignored), in an open epic whose `depends_on_epics` are all done; an
 *   `in_progress` task is resumed.
 * - quantum-loop (`quantumNext`): a `pending` story, or a `failed` one with attempts left, whose `dependsOn` stories
 *   have all `passed` (an unknown id never passes); an `in_progress` story is resumed.
 * - checklist: any unticked box (boxes have no dependencies).
 *
 * Done, blocked (quantum: failed out) and unknown-status items are not ready. `next` is the first ready item of the
 * same source (the same checklist file for a box) by (priority, plan order), so a refused Start Here can offer it.
 */
export interface StartOffer {
  id: string;
  ready: boolean;
  /** Why not, when not ready: a sentence for a person naming the open dependencies or the status. */
  why?: string;
  /** The ids of the dependencies that are not done yet (empty when ready). */
  openDependencies: string[];
  /** The source's next ready item when this one is not ready (undefined when none is). */
  next?: string;
  /** Which source the item belongs to: `flow`, `quantum`, or the checklist's workspace-relative path (`--source`). */
  source?: string;
}

/** `--source` value naming the item's source (the engine's `pickSource` accepts these). */
export function sourceArgOf(item: PlanItem): string {
  return item.source === 'flow-next' ? 'flow' : item.source === 'quantum' ? 'quantum' : item.rootId;
}

/** Whether `item` can start now, with the dependencies that hold it (see the module docstring). Pure. */
function readiness(
  plan: PlanSnapshot,
  item: PlanItem,
  byId: Map<string, PlanItem>,
): { ready: boolean; why?: string; open: string[] } {
  const no = (why: string, open: string[] = []) => ({ ready: false, why, open });
  if (item.status === 'done') return no(`${item.id} is already done`);
  if (item.status === 'blocked') return no(`${item.id} is blocked${item.reason ? `: ${item.reason}` : ''}`);
  if (item.status === 'unknown') return no(`${item.id} has the unknown status "${item.rawStatus}"`);
  if (item.source === 'checklist') return { ready: true, open: [] };
  if (item.source === 'flow-next') {
    const epic = plan.roots.find((r) => r.source === 'flow-next' && r.id === item.rootId);
    if (epic?.status === 'done') return no(`${item.id} belongs to the closed epic ${item.rootId}`);
    const epicsOpen = (epic?.dependsOn ?? []).filter(
      (d) => plan.roots.find((r) => r.source === 'flow-next' && r.id === d)?.status !== 'done',
    );
    if (epicsOpen.length)
      return no(
        `its epic ${item.rootId} waits on the epic${epicsOpen.length > 1 ? 's' : ''} ${epicsOpen.join(', ')}`,
        epicsOpen,
      );
  }
  if (item.status === 'in_progress') return { ready: true, open: [] };
  const open = item.dependsOn.filter((d) => {
    const dep = byId.get(`${item.source}\u0000${d}`);
    if (item.source === 'flow-next') return dep !== undefined && dep.rootId === item.rootId && dep.status !== 'done';
    return dep?.status !== 'done';
  });
  if (open.length)
    return no(
      `${item.id} waits on ${open.map((d) => `${d} (${byId.get(`${item.source}\u0000${d}`)?.rawStatus ?? 'missing'})`).join(', ')}`,
      open,
    );
  if (
    item.source === 'quantum' &&
    item.status === 'failed' &&
    item.attempts !== undefined &&
    item.maxAttempts !== undefined &&
    item.attempts >= item.maxAttempts
  ) {
    return no(`${item.id} has used all ${item.maxAttempts} attempts`);
  }
  return { ready: true, open: [] };
}

/** The Start Here offer of item `id` of `plan` (see the module docstring). An unknown id is not ready. Pure. */
export function startOfferOf(plan: PlanSnapshot, id: string): StartOffer {
  const item = plan.items.find((i) => i.id === id);
  if (!item) return { id, ready: false, why: `no task, story or box ${id}`, openDependencies: [] };
  const byId = new Map(plan.items.map((i) => [`${i.source}\u0000${i.id}`, i]));
  const r = readiness(plan, item, byId);
  const source = sourceArgOf(item);
  if (r.ready) return { id, ready: true, openDependencies: [], source };
  const order = new Map(plan.roots.map((root, i) => [`${root.source}\u0000${root.id}`, i]));
  const candidates = plan.items
    .map((it, i) => ({ it, i }))
    .filter(
      ({ it }) =>
        it.source === item.source && (item.source !== 'checklist' || it.rootId === item.rootId) && it.id !== id,
    )
    .sort(
      (a, b) =>
        (order.get(`${a.it.source}\u0000${a.it.rootId}`) ?? 0) -
          (order.get(`${b.it.source}\u0000${b.it.rootId}`) ?? 0) ||
        (a.it.priority ?? 999) - (b.it.priority ?? 999) ||
        a.i - b.i,
    );
  const next = candidates.find(({ it }) => it.status !== 'in_progress' && readiness(plan, it, byId).ready)?.it.id;
  return { id, ready: false, why: r.why, openDependencies: r.open, source, ...(next ? { next } : {}) };
}
