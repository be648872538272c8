import type { SourceSet } from '../sources/plan';
import { boxKeys, type ClaimBaseline, type ClaimSource } from '../model/claimBaseline';

/** An item claimed done that no gate verified (`ralph status` `unverified_claims`). `id` as the plan names it. */
export interface UnverifiedClaim {
  source: ClaimSource;
  id: string;
  title: string;
  /** The run whose baseline it is claimed against. */
  run: string;
}

/**
 * The items of `src` done now that were not done at `b`: the run's source, flow-next epics, and
 * the other checklist files the baseline names (a file it does not name: every done box). Items a person marked
 * done (`.ralph/person-done.json`, `marks` `{"<source>:<id>": ISO}`) at or after `b.at` are theirs, not claims.
 * The baseline's `sources` (quantum.json and `.flow` when not the run's own) are checked the same way.
 * Checklist ids are `<path>:<line>` (the plan's); epic ids are the epic's. Pure.
 */
export function unverifiedClaimsOf(
  src: SourceSet,
  b: ClaimBaseline,
  run: string,
  marks: Readonly<Record<string, string>> = {},
): UnverifiedClaim[] {
  const out: UnverifiedClaim[] = [];
  const since = Date.parse(b.at);
  const push = (source: ClaimSource, id: string, title: string) => {
    const m = marks[`${source}:${id}`];
    if (m !== undefined && Date.parse(m) >= since) return;
    out.push({ source, id, title, run });
  };
  const was = new Set(b.done);
  if (b.source === 'quantum')
    for (const s of src.quantum?.data.stories ?? [])
      if (s.status === 'passed' && !was.has(s.id)) push('quantum', s.id, s.title);
  if (b.source === 'flow-next' && src.flow) {
    for (const t of src.flow.tasks)
      if (t.merged.status === 'done' && !was.has(t.id)) push('flow-next', t.id, t.merged.title);
    if (b.epics) {
      const epicsWere = new Set(b.epics);
      for (const e of src.flow.epics)
        if (e.epic.status === 'done' && !epicsWere.has(e.id)) push('flow-next', e.id, e.epic.title);
    }
  }
  // The folder's sources of another kind than the run's.
  if (b.sources?.quantum && b.source !== 'quantum') {
    const was = new Set(b.sources.quantum);
    for (const s of src.quantum?.data.stories ?? [])
      if (s.status === 'passed' && !was.has(s.id)) push('quantum', s.id, s.title);
  }
  if (b.sources?.flow && b.source !== 'flow-next' && src.flow) {
    const was = new Set(b.sources.flow);
    const epicsWere = new Set(b.sources.flowEpics ?? []);
    for (const t of src.flow.tasks)
      if (t.merged.status === 'done' && !was.has(t.id)) push('flow-next', t.id, t.merged.title);
    for (const e of src.flow.epics)
      if (e.epic.status === 'done' && !epicsWere.has(e.id)) push('flow-next', e.id, e.epic.title);
  }
  for (const list of src.checklists) {
    const keys =
      list.path === b.label && b.source === 'checklist'
        ? b.done
        : b.checklists
          ? (b.checklists[list.path] ?? [])
          : null;
    if (!keys) continue;
    const wasBox = new Set(keys);
    for (const k of boxKeys(list.items))
      if (k.box.done && !wasBox.has(k.key)) push('checklist', `${list.path}:${k.box.line}`, k.box.text);
  }
  return out;
}
