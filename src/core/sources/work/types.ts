import { createHash } from 'node:crypto';
import type { BaselineSlot, ClaimBaseline } from '../../model/claimBaseline';
import type { CommitOptions } from '../../store/writePlan';
import type { AgentSignal } from '../../stream/signals';
import type { WorkItemRef } from '../../model/runEvent';

/*
 * What the lane asks of a task source (`WorkSource`), written once for the three kinds (quantumSource.ts,
 * flowSource.ts, checklistSource.ts), and what every kind's put-back shares.
 */

/** An item the engine works on, with what the prompt needs. */
export interface WorkItem extends WorkItemRef {
  /** The task text for the prompt (flow task md, story description + acceptance criteria, the box line). */
  body: string;
  /** Needs the `full` gate instead of `basic` (checklist `[risky]`, seed-systems.md §3.13). */
  risky: boolean;
}

/**
 * An item done now that was not done at a baseline: a claim to verify or put back. `slot` and `key` say where it
 * goes in a carried baseline once verified (decide.ts `carriedBaseline`).
 */
export type Claim = WorkItemRef & { risky?: boolean; slot: BaselineSlot; key: string };

/**
 * What {@link WorkSource.next} leaves out or prefers (`continueOnBlocked`): `skip` = ids of items that wait
 * for a human answer (left as they are: in progress and claimed), never returned; `take` = the item whose answer
 * came (or the item `ralph run --item` names), returned first while it is still open.
 */
export interface NextOptions {
  skip?: readonly string[];
  take?: string;
}

export type NextResult =
  { kind: 'work'; item: WorkItem } | { kind: 'complete' } | { kind: 'blocked'; reason: string } | { kind: 'empty' };

/** What the source said about one item after an iteration. */
export interface DoneClaim {
  /** The source says the item is done (status, checkbox, STORY_PASSED). */
  done: boolean;
  /** Other items that turned done during the iteration (checkboxes ticked beyond the current one). */
  alsoDone: WorkItemRef[];
}

/**
 * The engine's view of one task source (issue "Verified, not claimed"): pick the next item, mark it started,
 * decide whether the source says it is done, and record the engine's verdicts through the control plane's
 * operations. Only the engine writes status and attempt fields.
 */
export interface WorkSource {
  readonly kind: WorkItemRef['source'];
  /** What a person calls it: `quantum.json`, `.flow`, `RALPH_TASK.md`. */
  readonly label: string;
  /**
   * The next ready item (see {@link NextOptions}); `blocked` when nothing but skipped or blocked items is open.
   * `take` also serves `ralph run --item` (the engine checked the item is ready with `startOfferOf`).
   */
  next(opts?: NextOptions): Promise<NextResult>;
  start(item: WorkItem): Promise<void>;
  /**
   * Remembers the state before an iteration, for {@link claim}; returns it in a form the engine keeps in run.json so
   * crash recovery can undo what a crashed iteration claimed (checklist: the keys of the boxes already done).
   */
  snapshot(): Promise<ClaimBaseline>;
  /**
   * Every item done now that was not done at `baseline` (the claims since then, the current item included), with
   * flow-next epics and the boxes of the folder's other checklist files; `risky`: the item needs the `full` gate.
   */
  claimsSince(baseline: ClaimBaseline): Promise<Claim[]>;
  /**
   * Puts claimed items back to not done (quantum `pending`, flow-next `todo`, an epic `open`, a box unticked, in
   * the run's source or another checklist file); attempts kept. A file the agent made hard to edit is still
   * written ({@link putBackWrites}); `how` receives a line for each file written that way.
   */
  putBack(items: readonly WorkItemRef[], how?: string[]): Promise<void>;
  claim(item: WorkItem, signals: readonly AgentSignal[]): Promise<DoneClaim>;
  /** Verified: the engine records the item as done. */
  accept(item: WorkItem, also: readonly WorkItemRef[]): Promise<void>;
  /** Verification failed: the item is not done; record the failed attempt in the source where it has a place. */
  reject(item: WorkItem, also: readonly WorkItemRef[], reason: string): Promise<void>;
  /** Out of attempts: block the item with a reason. */
  block(item: WorkItem, reason: string): Promise<void>;
  /** Failed attempts the source itself counts (quantum `attempts`), or null. */
  failedAttempts(item: WorkItem): Promise<number | null>;
  /** The source's own attempt limit (quantum `maxAttempts`, flow-next `MAX_ATTEMPTS_PER_TASK`), or null. */
  attemptLimit(item: WorkItem): Promise<number | null>;
  progress(): Promise<{ done: number; total: number }>;
  /** Changes whenever any status or checkbox changes (stall detection). */
  fingerprint(): Promise<string>;
  /**
   * Item files of this source that cannot be read (`file:line:column: message`): a source with an item it
   * cannot read is never complete. Absent: the source has no per-item files (quantum.json throws as a whole).
   */
  unreadable?(): string[];
  /** Items of this source that an earlier run left in progress (crash recovery when run.json names none). */
  inProgress(): Promise<WorkItemRef[]>;
  /**
   * Crash recovery for the item a crashed run was working on (never verified): undo what it claimed since
   * `baseline` (from {@link snapshot}) and fail it with a `crash` entry, however recent.
   */
  recoverCrashed(item: WorkItemRef, baseline: unknown, reason: string): Promise<void>;
  /**
   * The run ends (stopped, cancelled, a cap, an error) without having verified `item`: undo the agent's unverified
   * claims of this iteration (a ticked box, a story marked passed, a task marked done) and give the item back
   * (quantum: `pending`, attempts kept). Nothing is counted as an attempt.
   */
  release(item: WorkItem): Promise<void>;
}

/** Where a source reads: the folder, the actor its starts name, the environment (flow-next's state folder). */
export interface WorkSourceOptions {
  folder: string;
  actor: string;
  env?: NodeJS.ProcessEnv;
}

/** A short hash of a source's statuses (`WorkSource.fingerprint`). */
export const fingerprintOf = (s: string) => createHash('sha1').update(s).digest('hex').slice(0, 16);

/**
 * The write mode of every put-back of an unverified claim (writePlan.ts `decideWrite` with `putBack`): a file the
 * agent made read-only, not UTF-8, or a link out of the workspace is still put back; `how` collects one line per
 * file written that way, for the `claimPutBack` event.
 */
export function putBackWrites(how?: string[]): CommitOptions {
  return { putBack: { note: (text) => how?.push(text) } };
}
