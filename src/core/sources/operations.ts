import * as path from 'node:path';
import { epicOfTaskId, FLOW_TASK_ID } from '../model/flowNext';
import { OperationError } from '../model/operationError';
import type { SourceId } from '../model/plan';
import { FileProblemError } from '../store/parseError';
import { commitPlan, type CommitOptions } from '../store/writePlan';
import { checklistNext, readChecklists } from './checklist/checklist';
import { flowNext, type FlowNextResult } from './flowNext/flowNext';
import {
  decideFlowReset,
  flowResetWrites,
  planFlowBlock,
  planFlowDone,
  planFlowRelease,
  planFlowStart,
} from './flowNext/flowOps';
import { flowItemProblems, hasFlow, readFlowWorkspace, type FlowWorkspace } from './flowNext/readFlow';
import { findCycles } from './plan';
import {
  planQuantumBlock,
  planQuantumDone,
  planQuantumRelease,
  planQuantumReset,
  planQuantumStale,
  planQuantumStart,
  quantumNext,
  type QuantumNextResult,
  type StaleReport,
} from './quantum/quantumOps';
import { quantumPath, readQuantum, type QuantumDoc } from './quantum/readQuantum';
import { listRunRecords } from '../control/runRecords';
import { thisHostNames } from '../control/processAlive';
import { isPidAlive } from '../process/processGroup';
import { FINAL_RUN_STATES } from '../model/runRecord';

/**
 * The task operations the CLI and the loop engine call: each finds the item's source by its id (a flow-next task
 * id `fn-…​.N` or a quantum story id), takes that source's lock, re-reads the files inside the lock, lets a pure
 * planner decide, and writes the changed files atomically (core/store/writePlan.ts). Refusals throw
 * {@link OperationError}; a file that does not parse throws {@link FileProblemError} and nothing is written.
 */

/** The outcome of an operation: the source touched and the files rewritten (absolute paths). */
export interface OperationResult {
  source: Exclude<SourceId, 'checklist'>;
  id: string;
  written: string[];
}

/** Options shared by every operation. `now` is injectable for tests (ms since epoch). */
export interface OperationContext {
  folder: string;
  env?: NodeJS.ProcessEnv;
  now?: () => number;
  /** How the files are written (writePlan.ts); `commit.putBack` for the engine's put-back of unverified claims. */
  commit?: CommitOptions;
}

const clock = (ctx: OperationContext) => (ctx.now ?? Date.now)();

/** Lock target of flow-next writes: the `.flow` folder (proper-lockfile makes `.flow.lock` beside it). */
export function flowLockTarget(folder: string): string {
  return path.join(folder, '.flow');
}

function which(ctx: OperationContext, id: string): 'flow-next' | 'quantum' {
  if (FLOW_TASK_ID.test(id) && hasFlow(ctx.folder)) return 'flow-next';
  const q = readQuantum(ctx.folder);
  if (q?.problem && !FLOW_TASK_ID.test(id)) throw new FileProblemError(q.problem);
  if (q?.doc?.data.stories.some((s) => s.id === id)) return 'quantum';
  if (FLOW_TASK_ID.test(id))
    throw new OperationError('no_source', `Task ${id} not found: no .flow/ folder in ${ctx.folder}`);
  throw new OperationError('not_found', `No task or story with id ${id} in ${ctx.folder}`);
}

function loadFlowOrThrow(ctx: OperationContext, epic?: string): FlowWorkspace {
  const ws = readFlowWorkspace(ctx.folder, ctx.env, { epic });
  if (!ws) throw new OperationError('no_source', `No .flow/ folder in ${ctx.folder}`);
  return ws;
}

function loadQuantumOrThrow(ctx: OperationContext): QuantumDoc {
  const q = readQuantum(ctx.folder);
  if (!q) throw new OperationError('no_source', `No quantum.json in ${ctx.folder}`);
  // The problem names `quantum.json` relative to the workspace, as every other command's message does.
  if (q.problem) throw new FileProblemError(q.problem);
  return q.doc!;
}

function refuseCycles(nodes: { id: string; deps: readonly string[] }[], id: string): void {
  for (const c of findCycles(nodes))
    if (c.includes(id)) throw new OperationError('cycle', `dependency cycle: ${c.join(' → ')}`);
}

/** Claim fields for flow-next `start` (§2.5): who acts, force, an optional claim note. */
export interface StartOptions extends OperationContext {
  actor: string;
  force?: boolean;
  note?: string;
}

/**
 * Starts a task or story: flow-next `todo → in_progress` with `assignee` / `claimed_at` (§2.5); quantum
 * `pending|failed → in_progress` with `startedAt` (§4.5/§4.7). Refuses items on a dependency cycle.
 */
export async function startItem(id: string, opts: StartOptions): Promise<OperationResult> {
  const source = which(opts, id);
  if (source === 'flow-next') {
    const { written } = await commitPlan(flowLockTarget(opts.folder), async () => {
      const ws = loadFlowOrThrow(opts);
      refuseCycles(
        ws.tasks.map((t) => ({ id: t.id, deps: t.merged.depends_on })),
        id,
      );
      return { writes: planFlowStart(ws, id, opts, clock(opts)), result: undefined };
    });
    return { source, id, written };
  }
  const { written } = await commitPlan(quantumPath(opts.folder), async () => {
    const doc = loadQuantumOrThrow(opts);
    refuseCycles(
      doc.data.stories.map((s) => ({ id: s.id, deps: s.dependsOn })),
      id,
    );
    return {
      writes: [{ file: doc.file, before: doc.text, after: planQuantumStart(doc, id, opts, clock(opts)).text }],
      result: undefined,
    };
  });
  return { source, id, written };
}

export interface DoneOptions extends OperationContext {
  actor: string;
  force?: boolean;
  /** flow-next: text for `## Done summary`. */
  summary?: string;
  /** flow-next: evidence stored in JSON and the md's `## Evidence`. */
  evidence?: { commits?: string[]; tests?: string[]; prs?: string[] };
}

/** Completes a task (`in_progress → done`, §2.5) or story (`in_progress → passed`, `startedAt` cleared, §4.7). */
export async function completeItem(id: string, opts: DoneOptions): Promise<OperationResult> {
  const source = which(opts, id);
  if (source === 'flow-next') {
    const { written } = await commitPlan(flowLockTarget(opts.folder), async () => ({
      writes: planFlowDone(loadFlowOrThrow(opts), id, opts, clock(opts)),
      result: undefined,
    }));
    return { source, id, written };
  }
  const { written } = await commitPlan(quantumPath(opts.folder), async () => {
    const doc = loadQuantumOrThrow(opts);
    return {
      writes: [{ file: doc.file, before: doc.text, after: planQuantumDone(doc, id, opts, clock(opts)).text }],
      result: undefined,
    };
  });
  return { source, id, written };
}

/**
 * Gives an item back when a run ends without finishing it: an `in_progress` quantum story → `pending`, attempts kept
 * (see `planQuantumRelease`; with `alsoPassed`, a `passed` the run never verified too); an `in_progress` flow-next
 * task claimed by `actor` (or by nobody) → `todo` without its claim (see `planFlowRelease`). Nothing stays claimed by
 * a run that has ended.
 */
export async function releaseItem(
  id: string,
  opts: OperationContext & { alsoPassed?: boolean; actor?: string },
): Promise<OperationResult | undefined> {
  const source = which(opts, id);
  if (source === 'flow-next') {
    const { written } = await commitPlan(
      flowLockTarget(opts.folder),
      async () => ({
        writes: planFlowRelease(loadFlowOrThrow(opts), id, opts.actor ?? '', clock(opts)),
        result: undefined,
      }),
      opts.commit,
    );
    return { source, id, written };
  }
  const { written } = await commitPlan(
    quantumPath(opts.folder),
    async () => {
      const doc = loadQuantumOrThrow(opts);
      return {
        writes: [{ file: doc.file, before: doc.text, after: planQuantumRelease(doc, id, clock(opts), opts).text }],
        result: undefined,
      };
    },
    opts.commit,
  );
  return { source: 'quantum', id, written };
}

export interface BlockOptions extends OperationContext {
  reason: string;
  /** quantum failure-log phase (default `agent_failed`). */
  phase?: string;
}

/**
 * Blocks a flow-next task (`blocked`, `blocked_reason`, md `Blocked:` text; §2.5 with §2.11-6 fixed) or fails a
 * quantum story (`failed`, `attempts += 1`, failure-log entry; §4.2).
 */
export async function blockItem(id: string, opts: BlockOptions): Promise<OperationResult & { attempts?: number }> {
  const source = which(opts, id);
  if (source === 'flow-next') {
    const { written } = await commitPlan(flowLockTarget(opts.folder), async () => ({
      writes: planFlowBlock(loadFlowOrThrow(opts), id, opts.reason, clock(opts)),
      result: undefined,
    }));
    return { source, id, written };
  }
  const { written, result } = await commitPlan(quantumPath(opts.folder), async () => {
    const doc = loadQuantumOrThrow(opts);
    const plan = planQuantumBlock(doc, id, opts, clock(opts));
    return { writes: [{ file: doc.file, before: doc.text, after: plan.text }], result: plan.result };
  });
  return { source, id, written, attempts: result.attempts };
}

export interface ResetOptions extends OperationContext {
  cascade?: boolean;
  force?: boolean;
}

/** flowctl's reset answer: the ids reset (the item first, then dependents) and, for a no-op, a message. */
export interface ResetResult extends OperationResult {
  reset: string[];
  message?: string;
}

/**
 * `reset <id> [--cascade] [--force]`: flow-next exactly as flowctl (§2.5, see `decideFlowReset`); quantum-loop
 * `passed|failed|blocked → pending`, attempts 0, failure log kept (see `planQuantumReset`).
 */
export async function resetItem(id: string, opts: ResetOptions): Promise<ResetResult> {
  const source = which(opts, id);
  if (source === 'flow-next') {
    const { written, result } = await commitPlan(
      flowLockTarget(opts.folder),
      async () => {
        // Only the task's own epic / spec: the cascade never leaves it, so the other epics' tasks need no reading.
        const ws = loadFlowOrThrow(opts, FLOW_TASK_ID.test(id) ? epicOfTaskId(id) : undefined);
        const decision = decideFlowReset(ws, id, opts.cascade ?? false);
        return { writes: flowResetWrites(ws, decision.reset, clock(opts)), result: decision };
      },
      opts.commit,
    );
    return { source, id, written, ...result };
  }
  const { written, result } = await commitPlan(
    quantumPath(opts.folder),
    async () => {
      const doc = loadQuantumOrThrow(opts);
      const plan = planQuantumReset(doc, id, opts, clock(opts));
      return { writes: [{ file: doc.file, before: doc.text, after: plan.text }], result: plan.result };
    },
    opts.commit,
  );
  return { source, id, written, ...result };
}

export interface StaleOptions extends OperationContext {
  /** `--stale-timeout N` in minutes; overrides `staleThresholdMinutes`. */
  thresholdMinutes?: number;
  /** Write the changes (`--apply`); otherwise only report. */
  apply?: boolean;
}

/**
 * Quantum stories held by a live run of this folder (story id → run id): the `currentItem` of every run record that
 * is not final and whose engine is alive on this host, or runs on another host (which cannot be probed from here).
 */
export function heldStories(folder: string): Map<string, string> {
  const hosts = thisHostNames();
  const held = new Map<string, string>();
  for (const { record: r } of listRunRecords(folder).records) {
    if (FINAL_RUN_STATES.includes(r.state) || r.currentItem?.source !== 'quantum') continue;
    if (hosts.includes(r.host) && !isPidAlive(r.pid)) continue;
    held.set(r.currentItem.id, r.runId);
  }
  return held;
}

/** Finds (and with `apply` resets) stale quantum stories (§4.7, see `planQuantumStale`). `undefined` without quantum.json. */
export async function staleStories(opts: StaleOptions): Promise<(StaleReport & { written: string[] }) | undefined> {
  if (!readQuantum(opts.folder)) return undefined;
  if (!opts.apply) {
    const doc = loadQuantumOrThrow(opts);
    return { ...planQuantumStale(doc, { ...opts, held: heldStories(opts.folder) }, clock(opts)).result, written: [] };
  }
  const { written, result } = await commitPlan(quantumPath(opts.folder), async () => {
    const doc = loadQuantumOrThrow(opts);
    const plan = planQuantumStale(doc, { ...opts, held: heldStories(opts.folder) }, clock(opts));
    return { writes: [{ file: doc.file, before: doc.text, after: plan.text }], result: plan.result };
  });
  return { ...result, written };
}

/** What each source would work on next. */
export interface NextAnswer {
  flow?: FlowNextResult;
  quantum?: QuantumNextResult;
  checklists: { path: string; line: number | null; text: string | null; risky?: boolean }[];
  /** The first actionable item over all sources (flow-next, then quantum, then checklists), or null. */
  item: { source: SourceId; id: string; title: string } | null;
}

/**
 * `next` over every source (read-only): flowctl's selector (§2.5), quantum's eligibility (§4.3) and each
 * checklist's first unchecked box. A dependency cycle in quantum stories is an error naming the cycle.
 */
export function nextWork(
  opts: OperationContext & {
    actor: string;
    epics?: string[];
    requirePlanReview?: boolean;
    skip?: readonly string[];
  },
): NextAnswer {
  const answer: NextAnswer = { checklists: [], item: null };
  const ws = readFlowWorkspace(opts.folder, opts.env);
  if (ws) {
    // An item file that does not parse hides a task: "none" would be a lie.
    const bad = flowItemProblems(ws)[0];
    if (bad) throw new FileProblemError(bad);
    answer.flow = flowNext(ws, opts);
    if (answer.flow.status === 'work') {
      const t = ws.tasks.find((x) => x.id === answer.flow!.task);
      answer.item = { source: 'flow-next', id: answer.flow.task, title: t?.merged.title ?? '' };
    }
  }
  const q = readQuantum(opts.folder);
  if (q?.problem) throw new FileProblemError(q.problem);
  if (q?.doc) {
    const cycle = findCycles(q.doc.data.stories.map((s) => ({ id: s.id, deps: s.dependsOn })))[0];
    if (cycle) throw new OperationError('cycle', `dependency cycle in quantum.json: ${cycle.join(' → ')}`);
    answer.quantum = quantumNext(q.doc.data.stories);
    const first = answer.quantum.stories[0];
    if (!answer.item && first)
      answer.item = {
        source: 'quantum',
        id: first,
        title: q.doc.data.stories.find((s) => s.id === first)?.title ?? '',
      };
  }
  for (const list of readChecklists(opts.folder)) {
    const box = checklistNext(list);
    answer.checklists.push({
      path: list.path,
      line: box?.line ?? null,
      text: box?.text ?? null,
      ...(box?.risky ? { risky: true } : {}),
    });
    if (!answer.item && box) answer.item = { source: 'checklist', id: `${list.path}:${box.line}`, title: box.text };
  }
  return answer;
}
