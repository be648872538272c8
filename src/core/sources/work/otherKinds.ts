import { readFile } from 'node:fs/promises';
import * as path from 'node:path';
import type { QuantumFile } from '../../model/quantum';
import { flowLockTarget, releaseItem, resetItem } from '../../sources/operations';
import { readFlowWorkspace } from '../../sources/flowNext/readFlow';
import { readQuantum } from '../../sources/quantum/readQuantum';
import { applyJsonChanges, refuseDuplicateKeys } from '../../store/jsonEdit';
import { commitPlan, type CommitOptions } from '../../store/writePlan';
import type { ClaimBaseline } from '../../model/claimBaseline';
import type { WorkItemRef } from '../../model/runEvent';
import { putBackWrites, type Claim, type WorkSourceOptions } from './types';

/*
 * quantum.json and `.flow` as the run reads them, and their put-backs: for their own sources (quantumSource.ts,
 * flowSource.ts) and for every other source's run, which claims and puts back their items too ({@link OtherKinds}).
 */

/** quantum.json's document; throws naming the file (and line:column) when it is absent or cannot be read. */
export function quantumDoc(folder: string): QuantumFile {
  const q = readQuantum(folder);
  if (!q) throw new Error(`${path.join(folder, 'quantum.json')}: not found`);
  if (q.problem) throw new Error(`${q.problem.file}:${q.problem.line}:${q.problem.column}: ${q.problem.message}`);
  return q.doc!.data;
}

/** `.flow` read with its state overlay; throws when absent. */
export function flowWorkspace(o: WorkSourceOptions) {
  const ws = readFlowWorkspace(o.folder, o.env);
  if (!ws) throw new Error(`${path.join(o.folder, '.flow')}: not found`);
  return ws;
}

/** Puts the quantum stories of `items` that are `passed` back to `pending` (attempts kept). */
export async function putBackStories(o: WorkSourceOptions, items: readonly WorkItemRef[], how?: string[]) {
  for (const i of items)
    if (i.source === 'quantum' && quantumDoc(o.folder).stories.find((s) => s.id === i.id)?.status === 'passed')
      await releaseItem(i.id, { folder: o.folder, env: o.env, alsoPassed: true, commit: putBackWrites(how) });
}

/** Puts the flow-next items of `items` back: a closed epic `open` (first: flowctl refuses a task of a closed epic), a done task `todo`. */
export async function putBackFlow(o: WorkSourceOptions, items: readonly WorkItemRef[], how?: string[]) {
  const mine = items.filter((i) => i.source === 'flow-next');
  if (!mine.length) return;
  for (const i of mine) {
    const e = flowWorkspace(o).epics.find((x) => x.id === i.id);
    if (e && e.epic.status === 'done') await reopenEpic(o.folder, e.file, putBackWrites(how));
  }
  for (const i of mine)
    if (flowWorkspace(o).tasks.find((t) => t.id === i.id)?.merged.status === 'done')
      await resetItem(i.id, { folder: o.folder, env: o.env, commit: putBackWrites(how) });
}

/**
 * The folder's quantum.json and `.flow` when they are not the run's own source :
 * `ralph status` counts their items, so one the agent made done is a claim like the run's own, snapshotted in
 * `ClaimBaseline.sources`, verified by a green gate or put back. A source that cannot be read counts as absent here
 * (no claims from it; the run's own source reports its problems).
 */
export class OtherKinds {
  constructor(
    private readonly o: WorkSourceOptions,
    private readonly except: WorkItemRef['source'],
  ) {}
  /** quantum.json's stories, or null when it is the run's own source, absent or unreadable. */
  private stories() {
    if (this.except === 'quantum') return null;
    try {
      const q = readQuantum(this.o.folder);
      return q?.doc && !q.problem ? q.doc.data.stories : q ? null : [];
    } catch {
      return null;
    }
  }
  /** `.flow`'s tasks and epics, or null when it is the run's own source or unreadable; empty when absent. */
  private flow() {
    if (this.except === 'flow-next') return null;
    try {
      const ws = readFlowWorkspace(this.o.folder, this.o.env);
      return ws ? { tasks: ws.tasks, epics: ws.epics } : { tasks: [], epics: [] };
    } catch {
      return null;
    }
  }
  snapshot(): NonNullable<ClaimBaseline['sources']> {
    const out: NonNullable<ClaimBaseline['sources']> = {};
    if (this.except !== 'quantum')
      out.quantum = (this.stories() ?? []).filter((s) => s.status === 'passed').map((s) => s.id);
    if (this.except !== 'flow-next') {
      const f = this.flow();
      out.flow = (f?.tasks ?? []).filter((t) => t.merged.status === 'done').map((t) => t.id);
      out.flowEpics = (f?.epics ?? []).filter((e) => e.epic.status === 'done').map((e) => e.id);
    }
    return out;
  }
  claimsSince(b: ClaimBaseline): Claim[] {
    const src = b.sources;
    if (!src) return [];
    const out: Claim[] = [];
    if (src.quantum) {
      const was = new Set(src.quantum);
      for (const s of this.stories() ?? [])
        if (s.status === 'passed' && !was.has(s.id))
          out.push({ source: 'quantum', id: s.id, title: s.title, slot: 'source:quantum', key: s.id });
    }
    const f = src.flow ? this.flow() : null;
    if (f && src.flow) {
      const epicsWere = new Set(src.flowEpics ?? []);
      for (const e of f.epics)
        if (e.epic.status === 'done' && !epicsWere.has(e.id))
          out.push({ source: 'flow-next', id: e.id, title: e.epic.title, slot: 'source:flowEpics', key: e.id });
      const was = new Set(src.flow);
      for (const t of f.tasks)
        if (t.merged.status === 'done' && !was.has(t.id))
          out.push({ source: 'flow-next', id: t.id, title: t.merged.title, slot: 'source:flow', key: t.id });
    }
    return out;
  }
  async putBack(items: readonly WorkItemRef[], how?: string[]): Promise<void> {
    if (this.except !== 'quantum') await putBackStories(this.o, items, how);
    if (this.except !== 'flow-next') await putBackFlow(this.o, items, how);
  }
}

/** Sets a closed epic's (spec's) `status` back to `open` in place, under flowctl's lock (put-back). */
async function reopenEpic(folder: string, file: string, commit: CommitOptions): Promise<void> {
  await commitPlan(
    flowLockTarget(folder),
    async () => {
      const before = await readFile(file, 'utf8');
      refuseDuplicateKeys(file, before);
      return {
        writes: [{ file, before, after: applyJsonChanges(before, [{ op: 'set', path: ['status'], value: 'open' }]) }],
        result: undefined,
      };
    },
    commit,
  );
}
