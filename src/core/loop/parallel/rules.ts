import { cleanCommitOf } from '../../git/gitState';
import type { RunEndState } from '../events';
import type { RunEnd, RunRules } from '../lane/phases';

/*
 * The coordinator's rules of a parallel run. Each lane runs the lane's rules (lane/decide.ts) for its one story;
 * these are the rules around them: when to start lanes, what a lane's end means for its story, what a merge means,
 * and when a gate need not run again. parallel/coordinator.ts is their shell.
 */

/** What the coordinator observed before starting lanes: sentinels, cancel, spend (USD), iterations, time (ms), lanes. */
export interface CoordinatorObservation {
  cancelled: boolean;
  /** The STOP file in force (state root), or null. */
  stop: string | null;
  pause: boolean;
  /** Every lane's cost so far, USD. */
  costUsd: number;
  /** Iterations started over every lane. */
  iterations: number;
  elapsedMs: number;
  /** Lanes running now. */
  running: number;
  /** Stories that could start now (rounds.ts `pickRound` with every lane free). */
  ready: number;
  /** Every story of quantum.json passed; `stories`: how many there are. */
  allPassed: boolean;
  stories: number;
  /** A lane or the coordinator could not write (a full disk, a read-only `.ralph/`): the cause, else null. */
  storageFailure?: string | null;
}

/**
 * The coordinator's decision: start lanes (`dispatch`), wait for running lanes (`wait`, also while paused), let the
 * running lanes finish and then end (`drain`: STOP, cancel and caps act on every lane: the shell passes STOP on to
 * them), or end now. Rules: cancel → cancelled; a storage failure → failed (no new lane on a full disk);
 * STOP → stopped; the caps count every lane (iterations, cost USD,
 * wall time) → capReached; PAUSE → no new lane; nothing running and nothing ready → completed when every story
 * passed (NO_WORK without stories), else blocked. Pure.
 */
export function decideCoordinator(
  rules: Pick<RunRules, 'maxIterations' | 'maxCostUsd' | 'maxWallMs'>,
  o: CoordinatorObservation,
): { kind: 'dispatch' } | { kind: 'wait' } | { kind: 'drain'; end: RunEnd } | { kind: 'end'; end: RunEnd } {
  const drainOrEnd = (e: RunEnd) =>
    o.running > 0 ? { kind: 'drain' as const, end: e } : { kind: 'end' as const, end: e };
  if (o.cancelled) return drainOrEnd({ state: 'cancelled', reason: 'cancelled', completionReason: 'INTERRUPTED' });
  if (o.storageFailure)
    return drainOrEnd({ state: 'failed', reason: `storage error: ${o.storageFailure}`, completionReason: 'FAILED' });
  if (o.stop) return drainOrEnd({ state: 'stopped', reason: `stopped by ${o.stop}`, completionReason: 'STOPPED' });
  if (o.stories === 0)
    return {
      kind: 'end',
      end: { state: 'completed', reason: 'nothing to do: quantum.json has no stories', completionReason: 'NO_WORK' },
    };
  if (o.running === 0 && o.allPassed)
    return {
      kind: 'end',
      end: {
        state: 'completed',
        reason: 'complete: every story merged, the feature branch green',
        completionReason: 'DONE',
      },
    };
  if (o.iterations >= rules.maxIterations)
    return drainOrEnd({
      state: 'capReached',
      reason: `max iterations (${rules.maxIterations}) reached over every lane`,
      completionReason: 'MAX_ITERATIONS',
    });
  if (rules.maxCostUsd > 0 && o.costUsd >= rules.maxCostUsd)
    return drainOrEnd({
      state: 'capReached',
      reason: `max cost reached over every lane: $${o.costUsd.toFixed(4)} ≥ $${rules.maxCostUsd}`,
      completionReason: 'MAX_COST',
    });
  if (rules.maxWallMs > 0 && o.elapsedMs >= rules.maxWallMs)
    return drainOrEnd({
      state: 'capReached',
      reason: `max wall time reached (${Math.round(rules.maxWallMs / 60000)} min)`,
      completionReason: 'MAX_WALL_TIME',
    });
  if (o.pause) return { kind: 'wait' };
  if (o.ready > 0) return { kind: 'dispatch' };
  if (o.running > 0) return { kind: 'wait' };
  return {
    kind: 'end',
    end: {
      state: 'blocked',
      reason: 'no story is eligible: the rest are failed out, blocked or waiting on them',
      completionReason: 'BLOCKED',
    },
  };
}

/** How a lane's run ended, for {@link decideLaneEnd}. */
export interface LaneEndObservation {
  /** The lane engine's end state. */
  end: RunEndState;
  reason: string;
  /** The lane's story was verified (its gate green) in the lane. */
  storyVerified: boolean;
  /** The lane blocked its story (out of attempts, STORY_FAILED on the last attempt): the lane's reason. */
  blocked: string | null;
  /** The story's time (`storyTimeoutMs`) ran out and the lane was ended. */
  timedOut: boolean;
  /** The run is stopping or cancelled (STOP, cancel, a cap): the lane was asked to end. */
  runEnding: boolean;
  /** The lane ended on a storage error (a full disk, a read-only `.ralph/`: engine.ts `storageFailure`), or null. */
  storageFailure?: string | null;
}

/**
 * What a lane's end means for its story ("Behaviour"): verified and completed → merge; the story's time ran
 * out → failed `story_timeout`; stopped or cancelled while the run ends, or the lane could not write (a full disk:
 * not the story's fault, gives the item back) → back to pending, its branch kept (`release`); blocked →
 * failed with the lane's reason; any other end (stalled, failed, a lane cap, a crash of the lane) → failed
 * `lane_failed`. Pure.
 */
export function decideLaneEnd(
  o: LaneEndObservation,
): { kind: 'merge' } | { kind: 'release'; reason: string } | { kind: 'fail'; phase: string; reason: string } {
  if (o.storyVerified && o.end === 'completed') return { kind: 'merge' };
  if (o.storageFailure) return { kind: 'release', reason: `the lane could not write its files: ${o.storageFailure}` };
  if (o.timedOut)
    return { kind: 'fail', phase: 'story_timeout', reason: `the story ran out of time (storyTimeoutMs): ${o.reason}` };
  if (o.runEnding && (o.end === 'stopped' || o.end === 'cancelled' || o.end === 'capReached'))
    return { kind: 'release', reason: `the run ended ${o.end}: ${o.reason}` };
  if (o.blocked !== null) return { kind: 'fail', phase: 'blocked', reason: o.blocked };
  return { kind: 'fail', phase: 'lane_failed', reason: `the lane ended ${o.end}: ${o.reason}` };
}

/**
 * Does the tree state a lane saw at its repeated final gate (engine.ts `onGreenTree`, taken after its last agent)
 * stand for its tree when its leftovers are saved, so that no `git status` is needed then (coordinator.ts)? Only in
 * a PID namespace (process/containment.ts), where nothing the agent started outlives it; with the marker sweep a
 * process that escaped it could write into the tree after that state was taken, and its work would be lost with the
 * tree. No green state (a final gate that ran, an agent after it): no. Pure.
 */
export function greenTreeStandsForLeftovers(containment: 'pid-namespace' | 'marker', hasGreen: boolean): boolean {
  return hasGreen && containment === 'pid-namespace';
}

/**
 * What a merge of a lane's branch means: a conflict fails the story `merge_conflict` naming the files
 * (the branch is kept for a person); a red feature-branch gate after the merge undoes the merge and fails the story
 * `merge_regression`; else the story passed. `gate` null: the run has no gates. Pure.
 */
export function decideMerge(o: {
  merge: { kind: 'merged' } | { kind: 'conflict'; files: readonly string[]; detail: string };
  gate: { passed: boolean; reason: string } | null;
}):
  | { kind: 'passed' }
  | { kind: 'fail'; phase: 'merge_conflict' | 'merge_regression'; reason: string; files?: string[]; undo: boolean } {
  if (o.merge.kind === 'conflict')
    return {
      kind: 'fail',
      phase: 'merge_conflict',
      reason: `merge conflict in ${o.merge.files.join(', ') || '(unknown files)'}${o.merge.detail ? `: ${o.merge.detail}` : ''}`,
      files: [...o.merge.files],
      undo: false,
    };
  if (o.gate && !o.gate.passed)
    return {
      kind: 'fail',
      phase: 'merge_regression',
      reason: `the feature branch's gate is red after the merge: ${o.gate.reason}`,
      undo: true,
    };
  return { kind: 'passed' };
}

/**
 * The feature branch's gate over a batch : lanes that waited for the merge slot at the
 * same time are merged one after another (a conflict fails its own story at once, its merge aborted), then the gate
 * runs once on the result. `merged`: how many of the batch's merges went in; `gate`: that one gate's result, null when
 * the run has no gates. Pure.
 * - fewer than two merges: nothing to share (`single`: the usual one-story path, its gate skipped when it would repeat
 *   the lane's green gate, decide.ts `featureGateRepeats`);
 * - no gate, or green: every merged story passed (`allPassed`);
 * - red: the batch's merges are undone (the feature branch back to its head before them) and its stories are merged
 *   and gated again one at a time (`oneByOne`, the usual path), so that the story that broke the gate fails
 *   `merge_regression`, the others pass, and the feature branch ends green.
 */
export function decideMergeBatch(o: {
  merged: number;
  gate: { passed: boolean } | null;
}): { kind: 'single' } | { kind: 'allPassed' } | { kind: 'oneByOne' } {
  if (o.merged < 2) return { kind: 'single' };
  if (!o.gate || o.gate.passed) return { kind: 'allPassed' };
  return { kind: 'oneByOne' };
}

/**
 * Which of a batch's merges since its last gate need that gate (mergeSlot.ts `mergeBatch`; the batch is the lanes
 * waiting for the slot when it began, joined by every lane queued for a merge while its merges ran, so that lanes that
 * end close together wait for one gate, not one gate each: docs/decisions/0028). `repeats`: per merge in order, would
 * the feature branch's gate on the tree that merge made repeat the lane's green gate (decide.ts `featureGateRepeats`).
 * The leading merges that would (`passAlone`) pass without a gate, as a lone story does: the tree each made is the
 * tree its lane's gate passed on. The rest go under one gate (rules `decideMergeBatch`; one: the usual lone gate).
 * A repeat after a merge that needs the gate does not count: that tree holds the earlier lane's work. Pure.
 */
export function decideBatchGate(o: { repeats: readonly boolean[] }): { passAlone: number; gated: number } {
  let passAlone = 0;
  while (passAlone < o.repeats.length && o.repeats[passAlone]) passAlone++;
  return { passAlone, gated: o.repeats.length - passAlone };
}

/** A lane's last green gate on a clean tree (engine.ts tells the coordinator): its command and the tree it ran on. */
export interface LaneGreen {
  command: string;
  /** git.ts `treeState` when it started, ended, and when the lane's final gate was decided (all equal). */
  state: string;
}

/**
 * May the coordinator skip the feature branch's gate after merging a lane (bench; same reasoning as
 * {@link finalGateRepeats})? Yes only when all of these hold, else the gate runs:
 * - the feature gate's command (`featureCommand`, the final tier after the fallback) is the command of the lane's
 *   last green gate (`laneGreen`), which ran on a clean tree (`cleanCommitOf(laneGreen.state)`);
 * - the tree the merge made (`mergedTree`: `HEAD^{tree}` in the folder after the merge) is the tree of that commit
 *   (`greenTree`): the feature branch had not moved since the lane began (or moved to the same content), and nothing
 *   was committed in the lane after its gate (leftovers). The gate would run the same command on the same files.
 * Unknown values (null) never match. Pure.
 */
export function featureGateRepeats(o: {
  featureCommand: string | null;
  laneGreen: LaneGreen | null;
  mergedTree: string | null;
  greenTree: string | null;
}): boolean {
  if (o.featureCommand === null || !o.laneGreen || o.laneGreen.command !== o.featureCommand) return false;
  if (cleanCommitOf(o.laneGreen.state) === null) return false;
  return o.mergedTree !== null && o.greenTree !== null && o.mergedTree === o.greenTree;
}
