import type { ItemStatus, PlanItem, PlanRoot, PlanSnapshot } from '../model/plan';
import { storyRetries, type QuantumStory } from '../model/quantum';
import type { FileProblem } from '../store/parseError';
import { readChecklists, type ChecklistFile } from './checklist/checklist';
import { readFlowWorkspace, type FlowWorkspace } from './flowNext/readFlow';
import { flowItem } from './flowNext/flowItem';
import { readQuantum, type QuantumDoc } from './quantum/readQuantum';
import { relativeTo } from '../store/relativePath';
import { loadWaveViews, waveJson } from '../waves/summary';

/** The raw sources of a folder, as read: what the plan graph, `status` and the operations are built from. */
export interface SourceSet {
  folder: string;
  flow?: FlowWorkspace;
  quantum?: QuantumDoc;
  checklists: ChecklistFile[];
  problems: FileProblem[];
}

/**
 * Reads every task source of a folder (flow-next, quantum-loop, checklists). Never throws for bad content.
 */
export function loadSources(folder: string, env: NodeJS.ProcessEnv = process.env): SourceSet {
  const problems: FileProblem[] = [];
  const flow = readFlowWorkspace(folder, env);
  if (flow) problems.push(...flow.problems);
  const q = readQuantum(folder);
  if (q?.problem) problems.push(q.problem);
  return { folder, flow, quantum: q?.doc, checklists: readChecklists(folder, problems), problems };
}

/**
 * The plan graph of a folder (see core/model/plan.ts): reads the sources and maps them to roots and items.
 * Dependency cycles (flow tasks, flow epics, quantum stories) are listed in `cycles` and as problems naming
 * the cycle, e.g. `dependency cycle: US-001 → US-002 → US-001`; the loop engine must refuse to run a root with one.
 */
export async function loadPlan(folder: string, env: NodeJS.ProcessEnv = process.env): Promise<PlanSnapshot> {
  const plan = buildPlan(loadSources(folder, env));
  // IJFW waves (core/waves): subagents with their dispositions, classified now; unreadable checkpoints are problems.
  const waves = loadWaveViews(folder);
  return {
    ...plan,
    problems: [...plan.problems, ...waves.flatMap((w) => w.problems)],
    waves: waves.map((w) => waveJson(w, folder)),
  };
}

/** Maps read sources to the plan graph. Reads only the md of blocked flow tasks that lack `blocked_reason`. */
export function buildPlan(src: SourceSet): PlanSnapshot {
  const roots: PlanRoot[] = [];
  const items: PlanItem[] = [];
  const problems = [...src.problems];
  const cycles: string[][] = [];
  const rel = relativeTo(src.folder);

  if (src.flow) {
    const ws = src.flow;
    const byEpic = new Map<string, string[]>();
    for (const t of ws.tasks) {
      items.push(flowItem(t, rel(t.file)));
      const l = byEpic.get(t.epicId) ?? [];
      l.push(t.id);
      byEpic.set(t.epicId, l);
    }
    for (const e of ws.epics) {
      roots.push({
        source: 'flow-next',
        kind: 'epic',
        id: e.id,
        title: e.epic.title,
        status: e.epic.status === 'done' ? 'done' : 'open',
        rawStatus: e.epic.status,
        dependsOn: e.epic.depends_on_epics,
        file: rel(e.file),
        itemIds: byEpic.get(e.id) ?? [],
      });
    }
    const known = new Set(ws.epics.map((e) => e.id));
    for (const [epicId, ids] of byEpic) {
      if (!known.has(epicId))
        roots.push({
          source: 'flow-next',
          kind: 'epic',
          id: epicId,
          title: epicId,
          status: 'open',
          dependsOn: [],
          file: '.flow',
          itemIds: ids,
        });
    }
    for (const c of findCycles(ws.tasks.map((t) => ({ id: t.id, deps: t.merged.depends_on })))) {
      cycles.push(c);
      problems.push({
        file: rel(ws.tasks.find((t) => t.id === c[0])!.file),
        line: 0,
        column: 0,
        message: `dependency cycle: ${c.join(' → ')}`,
      });
    }
    for (const c of findCycles(ws.epics.map((e) => ({ id: e.id, deps: e.epic.depends_on_epics })))) {
      cycles.push(c);
      problems.push({
        file: rel(ws.epics.find((e) => e.id === c[0])!.file),
        line: 0,
        column: 0,
        message: `epic dependency cycle: ${c.join(' → ')}`,
      });
    }
  }

  if (src.quantum) {
    const q = src.quantum.data;
    const ids = q.stories.map((s) => s.id);
    roots.push({
      source: 'quantum',
      kind: 'project',
      id: 'quantum.json',
      title: q.project ?? 'quantum.json',
      status: q.stories.length && q.stories.every((s) => s.status === 'passed') ? 'done' : 'open',
      dependsOn: [],
      file: 'quantum.json',
      itemIds: ids,
      ...(q.staleThresholdMinutes !== undefined ? { staleThresholdMinutes: q.staleThresholdMinutes } : {}),
    });
    for (const s of q.stories) items.push(quantumItem(s));
    for (const c of findCycles(q.stories.map((s) => ({ id: s.id, deps: s.dependsOn })))) {
      cycles.push(c);
      problems.push({ file: 'quantum.json', line: 0, column: 0, message: `dependency cycle: ${c.join(' → ')}` });
    }
  }

  for (const list of src.checklists) {
    const ids = list.items.map((b) => `${list.path}:${b.line}`);
    roots.push({
      source: 'checklist',
      kind: 'checklist',
      id: list.path,
      title: list.title ?? list.path,
      status: list.items.length && list.items.every((b) => b.done) ? 'done' : 'open',
      dependsOn: [],
      file: list.path,
      itemIds: ids,
    });
    for (const b of list.items) {
      items.push({
        source: 'checklist',
        kind: 'checkbox',
        id: `${list.path}:${b.line}`,
        rootId: list.path,
        title: b.text,
        status: b.done ? 'done' : 'todo',
        rawStatus: b.mark,
        dependsOn: [],
        file: list.path,
        line: b.line,
        ...(b.risky ? { risky: true } : {}),
      });
    }
  }
  return { folder: src.folder, roots, items, problems, cycles };
}

/** quantum status → normalized; failed with attempts ≥ maxAttempts reads as blocked (§4.2). */
export function quantumItemStatus(s: QuantumStory): ItemStatus {
  switch (s.status) {
    case 'pending':
      return 'todo';
    case 'in_progress':
      return 'in_progress';
    case 'passed':
      return 'done';
    case 'blocked':
      return 'blocked';
    case 'failed': {
      const r = storyRetries(s);
      return r.attempts >= r.maxAttempts ? 'blocked' : 'failed';
    }
    default:
      return 'unknown';
  }
}

function quantumItem(s: QuantumStory): PlanItem {
  const r = storyRetries(s);
  const lastFailure = r.failureLog.at(-1);
  const status = quantumItemStatus(s);
  const item: PlanItem = {
    source: 'quantum',
    kind: 'story',
    id: s.id,
    rootId: 'quantum.json',
    title: s.title,
    status,
    rawStatus: s.status,
    dependsOn: s.dependsOn,
    attempts: r.attempts,
    maxAttempts: r.maxAttempts,
    file: 'quantum.json',
  };
  // Optional keys in this order (key order is part of `ralph plan --json`); no spread objects.
  if (typeof s.priority === 'number') item.priority = s.priority;
  if (s.startedAt) item.startedAt = s.startedAt;
  if ((status === 'blocked' || status === 'failed') && lastFailure)
    item.reason = lastFailure.error ?? lastFailure.phase;
  return item;
}

/**
 * Every dependency cycle of a graph, each as ids around the cycle with the first repeated at the end
 * (`[a, b, a]`). Edges to unknown ids are ignored. Iterative DFS, linear in nodes + edges. Pure.
 */
export function findCycles(nodes: readonly { id: string; deps: readonly string[] }[]): string[][] {
  // Each id stands for the last node with it (as a Map built in order would keep); the walk runs on indexes, with
  // the path as two int stacks (node, next dependency) and each node's place on it (no object per step).
  const index = new Map<string, number>();
  for (let i = 0; i < nodes.length; i++) index.set(nodes[i]!.id, i);
  const color = new Uint8Array(nodes.length); // 0 unseen, 1 on the path, 2 done
  const place = new Int32Array(nodes.length); // position on the path while color is 1
  const pathNode = new Int32Array(nodes.length);
  const pathNext = new Int32Array(nodes.length);
  const cycles: string[][] = [];
  for (const start of nodes) {
    const s = index.get(start.id)!;
    if (color[s] !== 0) continue;
    pathNode[0] = s;
    pathNext[0] = 0;
    place[s] = 0;
    color[s] = 1;
    let depth = 1;
    while (depth > 0) {
      const top = pathNode[depth - 1]!;
      const ds = nodes[top]!.deps;
      const next = pathNext[depth - 1]!;
      if (next >= ds.length) {
        color[top] = 2;
        depth--;
        continue;
      }
      pathNext[depth - 1] = next + 1;
      const d = index.get(ds[next]!);
      if (d === undefined) continue;
      if (color[d] === 1) {
        const cycle: string[] = [];
        for (let p = place[d]!; p < depth; p++) cycle.push(nodes[pathNode[p]!]!.id);
        cycle.push(nodes[d]!.id);
        cycles.push(cycle);
      } else if (color[d] === 0) {
        color[d] = 1;
        place[d] = depth;
        pathNode[depth] = d;
        pathNext[depth] = 0;
        depth++;
      }
    }
  }
  return cycles;
}
