/** The source kinds a claim can be of (as `WorkItemRef.source`). */
export type ClaimSource = 'quantum' | 'flow-next' | 'checklist';

/**
 * The last verified state of every item of a run: kept by the engine and in run.json `claimBaseline`
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
  /** flow-next: ids of the epics (specs) whose status was `done` (an epic closed by the agent is a claim). */
  epics?: string[];
  /**
   * The other checklist files `ralph status` reads as sources, by folder-relative path: the keys of
   * their boxes done. A file absent here but present later has all its done boxes as claims.
   */
  checklists?: Record<string, string[]>;
  /** Every item key of the run's source the run has seen (one gone since has vanished). */
  items?: string[];
  /**
   * The folder's sources of another kind than the run's that `ralph status` counts (a
   * quantum story set `passed` during a checklist run): `quantum` the passed story ids of quantum.json, `flow` the done
   * task ids and `flowEpics` the done epic ids of `.flow`; an empty list also when the source was absent (one created
   * later has all its done items as claims). A kind absent here (the run's own, or a baseline of an older ralph) has
   * no claims.
   */
  sources?: { quantum?: string[]; flow?: string[]; flowEpics?: string[] };
  /**
   * Keys of `.ralph/person-done.json` (`<source>:<id>`) that appeared or changed while an agent of this run was running
   * (the file is in the workspace the agent can write, so a mark made then is the agent's forgery or, rarely,
   * a person's: either way a claim the gate must verify, never a person's own for this run).
   */
  agentMarks?: string[];
  /**
   * The person marks as they were when the agent now running started; present only while an agent runs, so crash
   * recovery and `ralph status` can tell which marks changed during the iteration the engine did not see end.
   */
  marksAtAgentStart?: Record<string, string>;
}

/** Is `v` a {@link ClaimBaseline} (run.json is read loosely). */
export function isClaimBaseline(v: unknown): v is ClaimBaseline {
  const b = v as ClaimBaseline | null;
  return (
    !!b && typeof b === 'object' && typeof b.at === 'string' && typeof b.label === 'string' && Array.isArray(b.done)
  );
}

/**
 * The keys whose mark differs between two readings of `.ralph/person-done.json` (added, changed or removed), in
 * `after`'s order then `before`'s. Pure.
 */
export function marksChanged(
  before: Readonly<Record<string, string>>,
  after: Readonly<Record<string, string>>,
): string[] {
  const out = Object.keys(after).filter((k) => before[k] !== after[k]);
  for (const k of Object.keys(before)) if (!(k in after)) out.push(k);
  return out;
}

/**
 * The person marks that count as a person's own for a run with baseline `b` ("run by a person from outside, it is
 * theirs"): `marks` without the keys the agent could have written — those in `b.agentMarks`, and, while an agent
 * runs (or a run crashed during one), those that changed since `b.marksAtAgentStart`. Pure.
 */
export function personMarksFor(
  marks: Readonly<Record<string, string>>,
  b: Pick<ClaimBaseline, 'agentMarks' | 'marksAtAgentStart'> | null | undefined,
): Record<string, string> {
  const drop = new Set([
    ...(b?.agentMarks ?? []),
    ...(b?.marksAtAgentStart ? marksChanged(b.marksAtAgentStart, marks) : []),
  ]);
  return drop.size ? Object.fromEntries(Object.entries(marks).filter(([k]) => !drop.has(k))) : { ...marks };
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
    return Object.fromEntries(
      Object.entries(v as Record<string, unknown>).filter((e): e is [string, string] => typeof e[1] === 'string'),
    );
  } catch {
    return {};
  }
}

/** A run's open claims as a start or `ralph status` finds them: the baseline to judge against and where it was read. */
export interface OpenBaseline {
  runId: string;
  baseline: ClaimBaseline;
  /** `mirror`: the engine's copy in the user's state folder; `record`: run.json `claimBaseline` (no mirror). */
  from: 'mirror' | 'record';
}

/**
 * The baselines whose claims are open in a folder (the mirror is the truth until settled:
 * a forged runId, a forged end state, a deleted run folder): every mirror that parses, whatever run.json says or whether it exists (a record naming
 * another run id, a state forged to completed, a deleted run folder); then, for a run with no mirror that parses, its
 * record's `claimBaseline` (a run of an older ralph, or a mirror that could not be written). `except`: the run id to leave out
 * (the new run's own at a start). Mirrors first, both in the order given. Pure.
 */
export function openBaselines(
  mirrors: readonly { runId: string; baseline: ClaimBaseline | null }[],
  records: readonly { runId: string; claimBaseline?: unknown }[],
  except: string | null = null,
): OpenBaseline[] {
  const out: OpenBaseline[] = [];
  const mirrored = new Set(mirrors.filter((m) => m.baseline).map((m) => m.runId));
  for (const m of mirrors)
    if (m.runId !== except && m.baseline) out.push({ runId: m.runId, baseline: m.baseline, from: 'mirror' });
  for (const r of records) {
    if (r.runId === except || mirrored.has(r.runId) || !isClaimBaseline(r.claimBaseline)) continue;
    out.push({ runId: r.runId, baseline: r.claimBaseline, from: 'record' });
  }
  return out;
}

const both = (a: readonly string[] | undefined, b: readonly string[] | undefined): string[] | undefined =>
  a && b ? a.filter((k) => b.includes(k)) : (a ?? b)?.slice();

/**
 * The baseline that counts the fewest items done of two copies of one run's baseline (pure; the attack: the agent
 * deleted or forged one copy). A forged copy adds done keys so the agent's claims read as
 * verified; taking, per list, only the keys both copies hold undoes that. Done lists (`done`, `epics`, each
 * `sources` kind) are intersected (a list one copy lacks is the other's); a checklist file one copy lacks counts as no
 * box done; `items` and `agentMarks` are joined (more vanished items, more claims); the rest is `a`'s.
 */
export function leastDone(a: ClaimBaseline, b: ClaimBaseline): ClaimBaseline {
  const out: ClaimBaseline = { ...a, done: both(a.done, b.done)! };
  const epics = both(a.epics, b.epics);
  if (epics) out.epics = epics;
  if (a.checklists || b.checklists) {
    const labels = new Set([...Object.keys(a.checklists ?? {}), ...Object.keys(b.checklists ?? {})]);
    out.checklists = Object.fromEntries(
      [...labels].map((l) => [l, both(a.checklists?.[l] ?? [], b.checklists?.[l] ?? [])!]),
    );
  }
  if (a.sources || b.sources) {
    const s: NonNullable<ClaimBaseline['sources']> = {};
    for (const k of ['quantum', 'flow', 'flowEpics'] as const) {
      const v = both(a.sources?.[k], b.sources?.[k]);
      if (v) s[k] = v;
    }
    out.sources = s;
  }
  if (a.items || b.items) out.items = [...new Set([...(a.items ?? []), ...(b.items ?? [])])];
  if (a.agentMarks || b.agentMarks) out.agentMarks = [...new Set([...(a.agentMarks ?? []), ...(b.agentMarks ?? [])])];
  if (!out.marksAtAgentStart && b.marksAtAgentStart) out.marksAtAgentStart = b.marksAtAgentStart;
  return out;
}

/** A place in a {@link ClaimBaseline}: the source's own items (`done`), flow-next epics, or another checklist file. */
export type BaselineSlot =
  'done' | 'epics' | `checklist:${string}` | 'source:quantum' | 'source:flow' | 'source:flowEpics';

/**
 * The claim baseline carried to the next point of the run: the last VERIFIED state, never a fresh
 * read. `prev` null (the run's start): `now`, the state the run found. Else, per slot: what was done at `prev` and
 * is still done `now` (an item undone since, by a put-back or a person's reset, is a claim again when redone), plus
 * what a green gate `verified` (`{slot, key}`) and is done `now`. What became done otherwise (between iterations,
 * during a gate, after the check) stays out: it is a claim, verified by a later green gate or put back. `at` is
 * kept from `prev` (a person's `ralph task done` since the run began is theirs); `items` (every item key the run has
 * seen, for vanished items) is the union. Pure.
 */
export function carriedBaseline(
  prev: ClaimBaseline | null,
  now: ClaimBaseline,
  verified: readonly { slot: BaselineSlot; key: string }[] = [],
): ClaimBaseline {
  if (!prev) return now;
  const keep = (
    was: readonly string[] | undefined,
    is: readonly string[] | undefined,
    slot: BaselineSlot,
  ): string[] => {
    const nowSet = new Set(is ?? []);
    const wasSet = new Set(was ?? []);
    const ok = new Set(verified.filter((v) => v.slot === slot).map((v) => v.key));
    return (is ?? []).filter((k) => nowSet.has(k) && (wasSet.has(k) || ok.has(k)));
  };
  const out: ClaimBaseline = {
    at: prev.at,
    source: now.source,
    label: now.label,
    done: keep(prev.done, now.done, 'done'),
  };
  if (now.epics || prev.epics) out.epics = keep(prev.epics, now.epics, 'epics');
  if (now.checklists || prev.checklists) {
    const labels = new Set([...Object.keys(prev.checklists ?? {}), ...Object.keys(now.checklists ?? {})]);
    out.checklists = Object.fromEntries(
      [...labels].map((l) => [l, keep(prev.checklists?.[l], now.checklists?.[l], `checklist:${l}`)]),
    );
  }
  if (now.items || prev.items) out.items = [...new Set([...(prev.items ?? []), ...(now.items ?? [])])];
  if (now.sources || prev.sources) {
    const kinds = ['quantum', 'flow', 'flowEpics'] as const;
    out.sources = Object.fromEntries(
      kinds
        .filter((k) => (now.sources?.[k] ?? prev.sources?.[k]) !== undefined)
        .map((k) => [k, keep(prev.sources?.[k], now.sources?.[k], `source:${k}`)]),
    );
  }
  // What the engine learned about the person marks is the run's, not the source's: carried as is.
  if (prev.agentMarks?.length) out.agentMarks = [...prev.agentMarks];
  if (prev.marksAtAgentStart) out.marksAtAgentStart = { ...prev.marksAtAgentStart };
  return out;
}
