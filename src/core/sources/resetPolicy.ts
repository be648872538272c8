import type { PlanItem, PlanSnapshot } from '../model/plan';

/**
 * Which plan items can be reset, and what a cascade reset takes with them, read off the plan graph: the rules of
 * `ralph task reset` (flowctl `reset` for flow-next, seed-systems.md §2.5, as `decideFlowReset` applies them; quantum
 * stories as `planQuantumReset`), so the tree's and the palette's offers match what the operation will do.
 *
 * - A done, blocked or failed task or story can be reset; a todo / pending one needs none; an in-progress one cannot
 *   (flowctl refuses it; quantum needs `--force`, which the UI does not offer); a flow-next task of a closed (done)
 *   epic cannot; a checkbox cannot (untick it in the file).
 * - The cascade takes every item that depends on it, directly or through other taken items, except todo / pending
 *   and in-progress ones; flow-next looks only within the task's epic (flowctl), quantum across all stories. The
 *   in-progress dependents it leaves alone are listed (`leftInProgress`), so a confirm can name them.
 */
export interface ResetOffer {
  id: string;
  resettable: boolean;
  /** Why not, when not resettable (a sentence for a person). */
  why?: string;
  /** What `--cascade` resets besides the item, in reset order. Empty when nothing depends on it. */
  cascade: string[];
  /**
   * Items in progress that depend on the item or on one the cascade takes: the cascade leaves them (and what depends
   * on them) alone. In plan order; empty when none.
   */
  leftInProgress: string[];
}

const RESETTABLE = new Set(['done', 'blocked', 'failed']);

/** The reset offer of item `id` of `plan` (see the module docstring). An unknown id is not resettable. */
export function resetOfferOf(plan: PlanSnapshot, id: string): ResetOffer {
  const item = plan.items.find((i) => i.id === id && i.source !== 'checklist') ?? plan.items.find((i) => i.id === id);
  if (!item) return { id, resettable: false, why: `no task or story ${id}`, cascade: [], leftInProgress: [] };
  const no = (why: string): ResetOffer => ({ id, resettable: false, why, cascade: [], leftInProgress: [] });
  if (item.source === 'checklist') return no('a checkbox is reset by unticking it in its file');
  if (item.status === 'in_progress') return no(`${id} is in progress: wait for it to finish or block it first`);
  if (!RESETTABLE.has(item.status)) return no(`${id} is already ${item.rawStatus}`);
  if (
    item.source === 'flow-next' &&
    plan.roots.find((r) => r.source === 'flow-next' && r.id === item.rootId)?.status === 'done'
  ) {
    return no(`${id} belongs to the closed epic ${item.rootId}`);
  }
  return { id, resettable: true, ...cascadeOf(plan, item) };
}

/** Every item of `plan` that can be reset, in plan order. */
export function resettableItems(plan: PlanSnapshot): PlanItem[] {
  return plan.items.filter((i) => i.source !== 'checklist' && resetOfferOf(plan, i.id).resettable);
}

function cascadeOf(plan: PlanSnapshot, item: PlanItem): Pick<ResetOffer, 'cascade' | 'leftInProgress'> {
  const pool = plan.items.filter(
    (i) => i.source === item.source && i.id !== item.id && (item.source !== 'flow-next' || i.rootId === item.rootId),
  );
  const chosen = new Set([item.id]);
  for (let changed = true; changed;) {
    changed = false;
    for (const t of pool) {
      if (chosen.has(t.id) || t.status === 'todo' || t.status === 'in_progress') continue;
      if (!t.dependsOn.some((d) => chosen.has(d))) continue;
      chosen.add(t.id);
      changed = true;
    }
  }
  return {
    cascade: pool.filter((t) => chosen.has(t.id)).map((t) => t.id),
    leftInProgress: pool
      .filter((t) => t.status === 'in_progress' && t.dependsOn.some((d) => chosen.has(d)))
      .map((t) => t.id),
  };
}
