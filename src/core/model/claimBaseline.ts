/** The source kinds a claim can be of (as `WorkItemRef.source`). */
export type ClaimSource = 'quantum' | 'flow-next' | 'checklist';

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
export function boxKeys<B extends { text: string }>(boxes: readonly B[]): { box: B; key: string }[] {
  const seen = new Map<string, number>();
  return boxes.map((box) => {
    const n = (seen.get(box.text) ?? 0) + 1;
    seen.set(box.text, n);
    return { box, key: `${box.text} #${n}` };
  });
}

/**
 * Parses `.ralph/person-done.json` (`{"<source>:<id>": "<ISO time>"}`, loop/personMarks.ts): the string entries; text
 * absent, not JSON or not an object reads as none (the marks only ever keep claims back, so none reports more). Pure.
 */
export function parsePersonMarks(text: string | null | undefined): Record<string, string> {
  if (!text) return {};
  try {
    const v = JSON.parse(text) as unknown;
    if (!v || typeof v !== 'object' || Array.isArray(v)) return {};
    return Object.fromEntries(Object.entries(v as Record<string, unknown>).filter((e): e is [string, string] => typeof e[1] === 'string'));
  } catch {
    return {};
  }
}
