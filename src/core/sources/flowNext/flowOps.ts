import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { epicOfTaskId, FLOW_RESET_DELETED_KEYS, FLOW_TASK_ID } from '../../model/flowNext';
import { OperationError } from '../../model/operationError';
import { flowIsoString } from '../../model/time';
import { applyJsonChanges, newJsonText, refuseDuplicateKeys, type JsonChange } from '../../store/jsonEdit';
import { FileProblemError, parseJsonText, workspacePath } from '../../store/parseError';
import type { FileWrite } from '../../store/writePlan';
import { transitiveDependents } from '../dependents';
import { readTextSync } from '../../store/readJsonFile';
import type { FlowTaskRecord, FlowWorkspace } from './readFlow';
import { taskStateFile } from './stateDir';
import { appendBlockedToSummary, clearEvidence, evidenceLines, replaceSection } from './taskMarkdown';

/**
 * flow-next task operations (seed-systems.md §2.5, flowctl v0.8) as pure planners: each takes the workspace read
 * inside the lock and returns the decision plus the file writes; the caller commits them with `commitPlan`.
 * Refusals are {@link OperationError}s with flowctl's wording.
 */

/** A change of a task's runtime fields: keys to set and keys to delete (deleted, never set to null). */
export interface RuntimeChange {
  set: Record<string, unknown>;
  delete: readonly string[];
}

/** Result of a reset decision: the ids to reset, in order (the task itself first). */
export interface FlowResetDecision {
  reset: string[];
  message?: string;
}

function findTask(ws: FlowWorkspace, id: string): FlowTaskRecord {
  if (!FLOW_TASK_ID.test(id))
    throw new OperationError('invalid_id', `Invalid task ID: ${id}. Expected format: fn-N.M or fn-N-xxx.M`);
  const t = ws.tasks.find((x) => x.id === id);
  if (!t) {
    // A task file that does not parse is never written: name its problem instead of "not found".
    const bad = ws.problems.find((p) => p.file.endsWith(`tasks/${id}.json`) || p.file.endsWith(`${id}.state.json`));
    if (bad) throw new FileProblemError(bad);
    throw new OperationError('not_found', `Task ${id} not found`);
  }
  return t;
}

/**
 * Decides `task reset <id> [--cascade]` (§2.5, flowctl 4.4.0 `cmd_task_reset`): refuses an invalid id, a missing
 * task, a task whose epic is closed (`status == done`) and an `in_progress` task; a `todo` task is a successful
 * no-op (`"<id> already todo"`). Cascade walks every transitive dependent in the same epic (the epic named by the
 * id, as flowctl's `spec_id_from_task`), through tasks of any status ({@link transitiveDependents}), and resets
 * those that are not `in_progress` or `todo`; the list is the task, then the dependents in code-unit order.
 */
export function decideFlowReset(ws: FlowWorkspace, id: string, cascade: boolean): FlowResetDecision {
  const task = findTask(ws, id);
  const epic = ws.epics.find((e) => e.id === task.epicId);
  if (epic && epic.epic.status === 'done')
    throw new OperationError('closed_epic', `Cannot reset task in closed epic ${epic.id}`);
  const status = task.merged.status;
  if (status === 'in_progress')
    throw new OperationError(
      'invalid_state',
      `Cannot reset in_progress task ${id}. Wait for it to finish or block it first.`,
    );
  if (status === 'todo') return { reset: [], message: `${id} already todo` };
  const reset = [id];
  if (cascade) {
    const spec = epicOfTaskId(id);
    const inSpec = ws.tasks.filter((t) => epicOfTaskId(t.id) === spec);
    const byId = new Map(inSpec.map((t) => [t.id, t]));
    for (const dep of transitiveDependents(
      inSpec.map((t) => ({ id: t.id, deps: t.merged.depends_on })),
      id,
    )) {
      const s = byId.get(dep)!.merged.status;
      if (s !== 'in_progress' && s !== 'todo') reset.push(dep);
    }
  }
  return { reset };
}

/**
 * The writes of a reset (flowctl 4.4.0 `cmd_task_reset`): in the task JSON and, when the status was read from
 * one, in its state file, `status` → `todo`, `updated_at` → now, and {@link FLOW_RESET_DELETED_KEYS} deleted
 * (in place, keeping the file's formatting); the md's `## Evidence` body replaced as flowctl does
 * ({@link clearEvidence}).
 */
export function flowResetWrites(ws: FlowWorkspace, ids: readonly string[], nowMs: number): FileWrite[] {
  const writes: FileWrite[] = [];
  for (const id of ids) {
    const t = findTask(ws, id);
    const change = { set: { status: 'todo', updated_at: flowIsoString(nowMs) }, delete: FLOW_RESET_DELETED_KEYS };
    // flowctl 4.4.0 resets the state file and also cleans the task JSON (its "legacy runtime fields"), so a reader
    // of either file sees the task as todo without a claim.
    if (t.statusSource === 'flow-state' && t.stateFile) writes.push(runtimeWrite(ws, t.stateFile, change));
    writes.push(runtimeWrite(ws, t.file, change));
    const md = readTextSync(t.mdFile);
    if (md !== undefined) {
      const after = clearEvidence(md);
      if (after !== md) writes.push({ file: t.mdFile, before: md, after });
    }
  }
  return writes;
}

/** Options of `start` (§2.5 `start <id> [--force] [--note]`). */
export interface FlowStartOptions {
  actor: string;
  force?: boolean;
  note?: string;
}

/**
 * Decides and plans `start` (§2.5): refuses `done`; `blocked` needs force; a task claimed by another actor needs
 * force (then `claim_note` "Taken over from <x>"); requires `todo` unless resuming one's own `in_progress`;
 * requires every `depends_on` task `done` unless force. Sets `assignee`/`claimed_at` when unclaimed.
 */
export function planFlowStart(ws: FlowWorkspace, id: string, opts: FlowStartOptions, nowMs: number): FileWrite[] {
  const t = findTask(ws, id);
  const m = t.merged;
  const status = m.status;
  if (status === 'done') throw new OperationError('invalid_state', `Cannot start task ${id}: status is 'done'.`);
  if (status === 'blocked' && !opts.force)
    throw new OperationError('invalid_state', `Cannot start task ${id}: status is 'blocked'. Use --force to override.`);
  const owner = m.assignee ?? undefined;
  const ownInProgress = status === 'in_progress' && owner === opts.actor;
  if (owner && owner !== opts.actor && status === 'in_progress' && !opts.force) {
    throw new OperationError('claimed', `Cannot start task ${id}: claimed by '${owner}'. Use --force to override.`);
  }
  if (status !== 'todo' && !ownInProgress && !opts.force && status !== 'blocked') {
    throw new OperationError('invalid_state', `Cannot start task ${id}: status is '${status}'. Expected 'todo'.`);
  }
  if (!opts.force) {
    for (const dep of m.depends_on) {
      const d = ws.tasks.find((x) => x.id === dep);
      if (d && d.merged.status !== 'done')
        throw new OperationError(
          'deps_not_done',
          `Cannot start task ${id}: dependency ${dep} is '${d.merged.status}', not 'done'.`,
        );
    }
  }
  const now = flowIsoString(nowMs);
  const set: Record<string, unknown> = { status: 'in_progress', updated_at: now };
  if (!owner || owner !== opts.actor) {
    set.assignee = opts.actor;
    set.claimed_at = now;
    if (owner && owner !== opts.actor) set.claim_note = `Taken over from ${owner}`;
  }
  if (opts.note !== undefined) set.claim_note = opts.note;
  if (ownInProgress && opts.note === undefined) return [];
  return [runtimeWrite(ws, runtimeTargetForWrite(ws, t), { set, delete: [] })];
}

/** Keys of a claim: what giving a task back removes (a subset of {@link FLOW_RESET_DELETED_KEYS}). */
const FLOW_CLAIM_KEYS = ['assignee', 'claimed_at', 'claim_note'] as const;

/**
 * Plans giving an `in_progress` task back when the run that started it ends without finishing it (stopped, failed,
 * a cap, an agent that never started): `status` → `todo`, `updated_at` → now, the claim's keys deleted, in the file
 * the status was read from and in the task JSON (as flowctl's reset cleans both). Not a flowctl command: flowctl
 * keeps a stopped worker's claim for its `next` to resume, but a Ralph run that has ended holds nothing, and a task
 * left `in_progress` reads as work going on (a spinner in the tree, "1 in progress" in status). Anything else
 * (another status, or a task another actor claimed since) is left alone: no writes.
 */
export function planFlowRelease(ws: FlowWorkspace, id: string, actor: string, nowMs: number): FileWrite[] {
  const t = findTask(ws, id);
  if (t.merged.status !== 'in_progress') return [];
  if (t.merged.assignee && t.merged.assignee !== actor) return [];
  const change = { set: { status: 'todo', updated_at: flowIsoString(nowMs) }, delete: FLOW_CLAIM_KEYS };
  const writes: FileWrite[] = [];
  if (t.statusSource === 'flow-state' && t.stateFile) writes.push(runtimeWrite(ws, t.stateFile, change));
  writes.push(runtimeWrite(ws, t.file, change));
  return writes;
}

/** Options of `done` (§2.5). Evidence is stored raw in JSON and as comma-joined lines in the md. */
export interface FlowDoneOptions {
  actor: string;
  force?: boolean;
  summary?: string;
  evidence?: { commits?: string[]; tests?: string[]; prs?: string[] };
}

/** Decides and plans `done` (§2.5): requires `in_progress` and the same actor unless force. */
export function planFlowDone(ws: FlowWorkspace, id: string, opts: FlowDoneOptions, nowMs: number): FileWrite[] {
  const t = findTask(ws, id);
  const m = t.merged;
  if (m.status === 'done' && !opts.force) throw new OperationError('invalid_state', `Task ${id} is already done.`);
  if (m.status !== 'in_progress' && !opts.force)
    throw new OperationError(
      'invalid_state',
      `Cannot complete task ${id}: status is '${m.status}'. Expected 'in_progress'.`,
    );
  if (m.assignee && m.assignee !== opts.actor && !opts.force)
    throw new OperationError(
      'claimed',
      `Cannot complete task ${id}: claimed by '${m.assignee}'. Use --force to override.`,
    );
  const set: Record<string, unknown> = { status: 'done', updated_at: flowIsoString(nowMs) };
  if (opts.evidence)
    set.evidence = {
      commits: opts.evidence.commits ?? [],
      tests: opts.evidence.tests ?? [],
      prs: opts.evidence.prs ?? [],
    };
  const writes = [runtimeWrite(ws, runtimeTargetForWrite(ws, t), { set, delete: ['blocked_reason'] })];
  const md = readTextSync(t.mdFile);
  if (md !== undefined) {
    let after = md;
    if (opts.summary !== undefined)
      after = replaceSection(after, 'Done summary', opts.summary.replace(/\r\n/g, '\n').trimEnd().split('\n'));
    if (opts.evidence) after = replaceSection(after, 'Evidence', evidenceLines(opts.evidence));
    writes.push({ file: t.mdFile, before: md, after });
  }
  return writes;
}

/**
 * Decides and plans `block` (§2.5): refuses `done`; sets `blocked`, appends `Blocked:\n<reason>` to the md's
 * Done summary, and also stores `blocked_reason` in JSON (fixes §2.11-6: v0.8 never set it, though reset clears it).
 */
export function planFlowBlock(ws: FlowWorkspace, id: string, reason: string, nowMs: number): FileWrite[] {
  const t = findTask(ws, id);
  if (t.merged.status === 'done')
    throw new OperationError('invalid_state', `Cannot block task ${id}: status is 'done'.`);
  const writes = [
    runtimeWrite(ws, runtimeTargetForWrite(ws, t), {
      set: { status: 'blocked', updated_at: flowIsoString(nowMs), blocked_reason: reason },
      delete: [],
    }),
  ];
  const md = readTextSync(t.mdFile);
  if (md !== undefined) writes.push({ file: t.mdFile, before: md, after: appendBlockedToSummary(md, reason) });
  return writes;
}

/**
 * Where start/done/block write runtime fields: the task's state file when it has one; a new state file when the
 * repository already keeps flow state (its `tasks/` folder exists, flowctl ≥ 2026-01-21); else the task JSON.
 */
export function runtimeTargetForWrite(ws: FlowWorkspace, t: FlowTaskRecord): string {
  if (t.stateFile) return t.stateFile;
  if (existsSync(path.join(ws.state.dir, 'tasks'))) return taskStateFile(ws.state.dir, t.id);
  return t.file;
}

/**
 * Applies a runtime change to a JSON file's text in place, or creates a state file in flowctl's style. Throws
 * {@link FileProblemError} (named relative to the workspace) for a file that does not parse or repeats a key.
 */
export function runtimeWrite(ws: Pick<FlowWorkspace, 'folder'>, file: string, change: RuntimeChange): FileWrite {
  const before = readTextSync(file);
  if (before === undefined) {
    return { file, before, after: newJsonText(change.set, { sortKeys: true, asciiOnly: true }) };
  }
  const shown = workspacePath(ws.folder, file);
  const parsed = parseJsonText(shown, before);
  if (!parsed.ok) throw new FileProblemError(parsed.problem);
  refuseDuplicateKeys(shown, before);
  const changes: JsonChange[] = [
    ...Object.entries(change.set).map(([k, value]): JsonChange => ({ op: 'set', path: [k], value })),
    ...change.delete.map((k): JsonChange => ({ op: 'delete', path: [k] })),
  ];
  return { file, before, after: applyJsonChanges(before, changes) };
}
