import type { SourceSet } from '../sources/plan';
import type { CheckboxItem } from '../sources/checklist/checklist';

/** The source kinds a claim can be of (as `WorkItemRef.source`). */
type ClaimSource = 'quantum' | 'flow-next' | 'checklist';

/**
 * The last verified state of every item of a run (issue 11): kept by the engine and in run.json `claimBaseline`
 * while the run lives (and left there by a run that ended without putting its claims back), so `ralph status` and a
 * later start know what is claimed but not verified. `done`: the run's source's task / story ids, or checklist box
 * keys (`<text> #<n>`); `at`: ISO time the run's first baseline was taken (a person's `ralph task done` after it is
 * theirs). `epics`, `checklists`, `items`: see the fields.
 */
export interface ClaimBaseline {
  at: string;
  source: ClaimSource;
  label: string;
  done: string[];
  /** flow-next: ids of the epics (specs) whose status was `done` (issue 11 F3/F4: an epic closed by the agent is a claim). */
  epics?: string[];
  /**
   * The other checklist files `ralph status` reads as sources (issue 11 A3/A3b), by folder-relative path: the keys of
   * their boxes done. A file absent here but present later has all its done boxes as claims.
   */
  checklists?: Record<string, string[]>;
  /** Every item key of the run's source the run has seen (issue 11 A6/C3: one gone since has vanished). */
  items?: string[];
}

/** Is `v` a {@link ClaimBaseline} (run.json is read loosely). */
export function isClaimBaseline(v: unknown): v is ClaimBaseline {
  const b = v as ClaimBaseline | null;
  return !!b && typeof b === 'object' && typeof b.at === 'string' && typeof b.label === 'string' && Array.isArray(b.done);
}

/**
 * A box's identity that survives edits elsewhere in its file: its text and which occurrence of that text it is (two
 * sections may both say "Add tests"), e.g. `Add tests #2`. Same order as `boxes`.
 */
export function boxKeys<B extends Pick<CheckboxItem, 'text'>>(boxes: readonly B[]): { box: B; key: string }[] {
  const seen = new Map<string, number>();
  return boxes.map((box) => {
    const n = (seen.get(box.text) ?? 0) + 1;
    seen.set(box.text, n);
    return { box, key: `${box.text} #${n}` };
  });
}

/** An item claimed done that no gate verified (`ralph status` `unverified_claims`). `id` as the plan names it. */
export interface UnverifiedClaim {
  source: ClaimSource;
  id: string;
  title: string;
  /** The run whose baseline it is claimed against. */
  run: string;
}

/**
 * The items of `src` done now that were not done at `b` (issue 11 C1/C4): the run's source, flow-next epics, and
 * the other checklist files the baseline names (a file it does not name: every done box). Items a person marked
 * done (`.ralph/person-done.json`, `marks` `{"<source>:<id>": ISO}`) at or after `b.at` are theirs, not claims.
 * Checklist ids are `<path>:<line>` (the plan's); epic ids are the epic's. Pure.
 */
export function unverifiedClaimsOf(src: SourceSet, b: ClaimBaseline, run: string, marks: Readonly<Record<string, string>> = {}): UnverifiedClaim[] {
  const out: UnverifiedClaim[] = [];
  const since = Date.parse(b.at);
  const push = (source: ClaimSource, id: string, title: string) => {
    const m = marks[`${source}:${id}`];
    if (m !== undefined && Date.parse(m) >= since) return;
    out.push({ source, id, title, run });
  };
  const was = new Set(b.done);
  if (b.source === 'quantum') for (const s of src.quantum?.data.stories ?? []) if (s.status === 'passed' && !was.has(s.id)) push('quantum', s.id, s.title);
  if (b.source === 'flow-next' && src.flow) {
    for (const t of src.flow.tasks) if (t.merged.status === 'done' && !was.has(t.id)) push('flow-next', t.id, t.merged.title);
    if (b.epics) {
      const epicsWere = new Set(b.epics);
      for (const e of src.flow.epics) if (e.epic.status === 'done' && !epicsWere.has(e.id)) push('flow-next', e.id, e.epic.title);
    }
  }
  for (const list of src.checklists) {
    const keys = list.path === b.label && b.source === 'checklist' ? b.done : b.checklists ? (b.checklists[list.path] ?? []) : null;
    if (!keys) continue;
    const wasBox = new Set(keys);
    for (const k of boxKeys(list.items)) if (k.box.done && !wasBox.has(k.key)) push('checklist', `${list.path}:${k.box.line}`, k.box.text);
  }
  return out;
}
