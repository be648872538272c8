import type { BackoffPolicy, DeferralState } from '../backoff';
import type { AttemptKind } from '../attempts';
import type { GateTier, IterationEnding, IterationPurpose, RunEndState, WorkItemRef } from '../events';
import type { WaitingQuestion } from '../question';

/*
 * The lane's phases: the states of a run and of its lane, what the lane observes at each point it decides
 * ({@link Observation}), what it does ({@link Action}), and the phase table that ties them ({@link PHASE_OF},
 * {@link MAY_ACT}, {@link FOLLOWS}). The rules themselves are lane/decide.ts `decide`; lane/lane.ts performs the
 * actions. A terminal outcome is an `end` action, a value: nothing is thrown to end a run.
 *
 * State is split as lanes need it: {@link RunState} (caps, cost, iteration counts, deferral, the pending final fix)
 * is the run's; {@link LaneState} (the item, its attempt, stall count) is the lane's.
 */

/** Caps and rules of a run, fixed at its start. Money in USD, times in ms; 0 = no cap. */
export interface RunRules {
  maxIterations: number;
  maxCostUsd: number;
  maxWallMs: number;
  /** Iterations in a row without progress that stop the run as stalled (seed §3.6: 3). */
  stallLimit: number;
  backoff: BackoffPolicy;
  /** Run the reviewer after a green final gate. */
  reviewer: boolean;
  /** Go on with other ready work after blocking an item, instead of pausing. */
  continueOnBlocked: boolean;
  /** How long an item waits for the answer to a question before the run stops as stalled, ms; 0 = for ever. */
  questionTimeoutMs: number;
}

/** Run-level state. */
export interface RunState {
  rules: RunRules;
  /** ms since the epoch the run started (wall-time cap). */
  startedAtMs: number;
  /** Iterations that count against `maxIterations` (deferred ones do not). */
  workIterations: number;
  /** Agents' cost so far, USD. */
  costUsd: number;
  deferral: DeferralState;
  /** An iteration owed after a red final gate or a reviewer that did not ship. */
  pendingFix: { purpose: IterationPurpose; text: string } | null;
  /**
   * Items set aside while they wait for an answer and other ready work goes on (`continueOnBlocked`), in asking
   * order; the sources skip them in `next` until their answer comes.
   */
  asked: WaitingQuestion[];
  /**
   * A cap was reached ("completion wins over the cap"): the run asks the source once more and ends with
   * this unless everything is done and the final gate is green. null while no cap is reached.
   */
  capEnd: RunEnd | null;
  /**
   * Failed attempts this run counted per item ({@link itemKey}); the engine keeps them in run.json `attempts`.
   * The larger of this and the source's / `.ralph/attempts.json` count wins (deleting attempts.json
   * must not reset the count).
   */
  failedAttempts: Record<string, number>;
  /** Items this run blocked ({@link itemKey}): offered again, the run ends blocked instead of looping. */
  blocked: string[];
  /**
   * Items of the run's source that vanished since the run saw them (an agent deleting a story, task
   * or box makes the total smaller and progress look done), as labels. While any is gone the run never completes.
   */
  vanished?: string[];
}

/**
 * The key an item's attempts are counted under: `<source>:<id>`, or `<source>:<box text>` for a checklist box
 * (its line moves as the file is edited). The same key as `.ralph/attempts.json` (attemptStore.ts `attemptKey`).
 */
export function itemKey(item: WorkItemRef): string {
  return `${item.source}:${item.source === 'checklist' ? item.title : item.id}`;
}

/** Per-lane state. */
export interface LaneState {
  lane: number;
  /** The item the lane works on and has not finished. */
  item: (WorkItemRef & { risky: boolean }) | null;
  attempt: { number: number; kind: AttemptKind; max: number } | null;
  /** Iterations in a row that ended without progress. */
  stall: number;
  /**
   * Other items that turned done since the item's claim baseline ("every item"): verified by the item's
   * green gate with it, put back otherwise. Set by `claimed`, cleared when settled.
   */
  claims: WorkItemRef[];
  /** The question the lane's item waits on (`askedAtMs` ms since the epoch). */
  waiting: WaitingQuestion | null;
  /** A question and its answer, owed to the next prompt of `itemId`. */
  answered: { itemId: string | null; question: string; answer: string } | null;
}

/** A terminal outcome: the run's end state, a one-line reason and the progress.txt completion reason. */
export interface RunEnd {
  state: RunEndState;
  reason: string;
  completionReason: string;
}

/** What the shell observed, at each point the loop decides. */
export type Observation =
  /**
   * Before an iteration: cancel, sentinels, the clock. `stop` names the STOP file, if any. `answer`: the answer
   * to the lane's waiting question when one was written (null: none yet, or nothing waits). `answers`: the answers
   * written to the run's set-aside questions ({@link RunState.asked}), by question id.
   */
  | {
      kind: 'beforeIteration';
      cancelled: boolean;
      stop: string | null;
      pause: boolean;
      now: number;
      answer: string | null;
      answers?: Readonly<Record<string, string>>;
    }
  /** A pause ended (PAUSE removed, or STOP/cancel while paused). */
  | { kind: 'pauseEnded'; cancelled: boolean; stop: string | null }
  /**
   * The source's answer to "what next", with the item's failed attempts and the source's attempt limit.
   * `unverified`: items done now that no gate verified since the carried baseline (made done between
   * iterations, by a process the agent left behind); `vanished`: items of the run's source gone since the run saw
   * them, as `<id> (<title>)` labels.
   */
  | {
      kind: 'next';
      next:
        | { kind: 'empty' }
        | { kind: 'complete' }
        | { kind: 'blocked'; reason: string }
        | {
            kind: 'work';
            item: WorkItemRef & { risky: boolean };
            failedAttempts: number;
            attemptLimit: number | null;
            lastFailure: string | null;
          };
      sourceLabel: string;
      unverified?: WorkItemRef[];
      vanished?: string[];
    }
  /** An iteration ended. `fatal`: the agent cannot go on (bad key, could not start). `resetsAt` ms since the epoch. */
  | {
      kind: 'iterationEnded';
      purpose: IterationPurpose;
      iteration: number;
      ending: IterationEnding;
      detail: string;
      fatal: boolean;
      resetsAt: number | null;
      costUsd: number;
      now: number;
      question: string | null;
    }
  /**
   * After a work iteration: does the source say the item is done, which signals the agent gave, and `others`: the
   * other items that turned done since the claim baseline (a person's own `ralph task done` excluded).
   */
  | {
      kind: 'claimed';
      done: boolean;
      completeSignal: boolean;
      storyFailed: boolean;
      lastText: string;
      sourceLabel: string;
      others?: (WorkItemRef & { risky?: boolean })[];
    }
  /**
   * The item's gate ran (`gate` null: the run has no gates). `claimsAfter`: every unverified claim since the carried
   * baseline when the gate ended (B1v/B2: what became done while the gate ran is not verified by it).
   */
  | {
      kind: 'verified';
      gate: { tier: GateTier; passed: boolean; reason: string } | null;
      approach: string;
      claimsAfter?: WorkItemRef[];
    }
  /** After an iteration that claimed nothing: did anything change (status, checkbox, commit)? */
  | { kind: 'progressChecked'; progressed: boolean }
  /**
   * The final gate ran (`null`: none configured). `claimsAfter`: unverified claims when it ended (made done while it
   * ran: not verified by it, B1v/B2).
   */
  | {
      kind: 'finalGate';
      gate: { passed: boolean; command: string; exitCode: number; summary: string } | null;
      hasGates: boolean;
      claimsAfter?: WorkItemRef[];
    }
  /** The reviewer iteration gave its verdict (`NONE` when it gave none) and its final text. */
  | { kind: 'reviewed'; verdict: string; text: string }
  /** A gate was cut short by cancel. */
  | { kind: 'cancelledDuringGate' }
  /**
   * A gate was not run because a file it runs changed during the run (the agent weakened
   * scripts/check.sh). `changed`: the diff lines; `reason`: why the run ends, naming the files.
   */
  | { kind: 'gateFilesChanged'; tier: string; changed: string[]; reason: string };

/** What the shell does, in order. */
export type Action =
  | { type: 'end'; end: RunEnd }
  /** Honour the STOP sentinel (global STOP files are removed once honoured), before ending. */
  | { type: 'honourStop' }
  /** Wait while PAUSE exists (re-checking STOP and cancel), then observe `pauseEnded`. */
  | { type: 'pause' }
  /** Run the owed fix (or review) iteration, then observe `iterationEnded`. */
  | { type: 'runFix'; purpose: IterationPurpose; text: string }
  /**
   * Ask the source what is next, then observe `next`. `skip`: ids of items that wait for an answer (never
   * picked); `take`: the item whose answer just came, picked first while it is still open.
   */
  | { type: 'pickNext'; skip?: string[]; take?: string }
  /**
   * Start the item and run a work iteration at this attempt, then observe `iterationEnded`. `answered`: a question
   * of the item and its answer, for the prompt verbatim.
   */
  | {
      type: 'runWork';
      item: WorkItemRef & { risky: boolean };
      attempt: { number: number; kind: AttemptKind; max: number };
      answered: { question: string; answer: string } | null;
    }
  /** The agent asked a human: report the question (and notify); the item waits. */
  | { type: 'ask'; id: string; iteration: number; item: WorkItemRef | null; text: string }
  /** Wait a little for the answer (woken by a sentinel or cancel), then observe `beforeIteration` again. */
  | { type: 'waitForAnswer'; id: string }
  /** The answer came: report it. */
  | { type: 'answered'; id: string; item: WorkItemRef | null; text: string }
  /** The question waited too long: report it (the run then ends stalled). */
  | { type: 'questionTimedOut'; id: string; item: WorkItemRef | null; waitedMs: number }
  /** Block the item; pause the run unless `continueOnBlocked`. */
  | { type: 'block'; item: WorkItemRef; reason: string; pauseRun: boolean }
  /** Wait, ms (woken early by STOP or cancel), emitting the deferral first. */
  | { type: 'defer'; reason: string; waitMs: number; resetsAt: number | null; inARow: number }
  /** Ask the source whether the item is done, then observe `claimed`. */
  | { type: 'checkClaim' }
  /** Run the item's gate (`tier`), then observe `verified`. */
  | { type: 'runGate'; tier: GateTier }
  /** The gate confirmed the item: accept it and `also` (the other items the iteration finished), clear its attempts. */
  | { type: 'accept'; item: WorkItemRef; also: WorkItemRef[] }
  /**
   * Claims no green gate confirmed: put every item back to its state at the claim baseline, and report
   * what the agent claimed.
   */
  | { type: 'putBack'; items: WorkItemRef[]; reason: string }
  /** Record a failed attempt and give the item back. */
  | { type: 'attemptFailed'; item: WorkItemRef; attempt: number; approach: string; reason: string }
  /** Compare status, checkboxes and HEAD with before the iteration, then observe `progressChecked`. */
  | { type: 'checkProgress' }
  /** Update the handoff's auto-enriched section. */
  | { type: 'enrichHandoff' }
  /** Run the final gate, then observe `finalGate`. */
  | { type: 'runFinalGate' }
  /** Run the reviewer iteration, then observe `iterationEnded` (purpose review) and `reviewed`. */
  | { type: 'runReview' }
  /** Read the reviewer's verdict from its iteration, then observe `reviewed`. */
  | { type: 'checkVerdict' }
  /** Report something that does not end the run. */
  | { type: 'warning'; message: string }
  /** Items of the run's source vanished: report them (event + activity line); the run cannot complete. */
  | { type: 'itemsVanished'; items: string[]; source: string }
  /** Nothing more at this point: go on to the next iteration. */
  | { type: 'continue' };

/** What {@link decide} returns: the actions to perform, in order, and the states after them. */
export interface Decision {
  actions: Action[];
  next: { run: RunState; lane: LaneState };
}

/** The first state of a run. */
export function initialRunState(rules: RunRules, startedAtMs: number): RunState {
  return {
    rules,
    startedAtMs,
    workIterations: 0,
    costUsd: 0,
    deferral: { inARow: 0, quotaWaits: 0 },
    pendingFix: null,
    capEnd: null,
    failedAttempts: {},
    blocked: [],
    asked: [],
  };
}

/** The first state of a lane. */
export function initialLaneState(lane = 0): LaneState {
  return { lane, item: null, attempt: null, stall: 0, claims: [], waiting: null, answered: null };
}

/**
 * The points where a lane decides, one per observation kind ({@link PHASE_OF}). In a turn: BEFORE (sentinels, caps,
 * answers) → PAUSED | PICKED (the source's next item) → ITERATED (an agent ended) → CLAIMED (the item reads done or
 * not) → GATED (its gate ran) | PROGRESS (nothing claimed: did anything change?); when everything is done: PICKED →
 * FINAL (the final gate ran) → ITERATED (the reviewer) → REVIEWED.
 */
export type Phase =
  'BEFORE' | 'PAUSED' | 'PICKED' | 'ITERATED' | 'CLAIMED' | 'GATED' | 'PROGRESS' | 'FINAL' | 'REVIEWED';

/** The phase each observation is decided in. A gate cut short (cancel, its files changed) is decided where it ran. */
export const PHASE_OF = {
  beforeIteration: 'BEFORE',
  pauseEnded: 'PAUSED',
  next: 'PICKED',
  iterationEnded: 'ITERATED',
  claimed: 'CLAIMED',
  verified: 'GATED',
  cancelledDuringGate: 'GATED',
  gateFilesChanged: 'GATED',
  progressChecked: 'PROGRESS',
  finalGate: 'FINAL',
  reviewed: 'REVIEWED',
} as const satisfies Record<Observation['kind'], Phase>;

/**
 * Each action and the observations that must follow it: the lane performs the action, observes one of these and
 * decides on it (lane/lane.ts: each action's handler returns that observation, and the compiler holds it to this
 * table through {@link FollowedBy}). None: the lane goes on with the next action of the list, or the next turn.
 * An action with a following observation is always the last of its list (phase table test).
 */
export const FOLLOWS = {
  end: [],
  honourStop: [],
  pause: ['pauseEnded'],
  runFix: ['iterationEnded'],
  pickNext: ['next'],
  runWork: ['iterationEnded'],
  ask: [],
  waitForAnswer: [],
  answered: [],
  questionTimedOut: [],
  block: [],
  defer: [],
  checkClaim: ['claimed'],
  runGate: ['verified', 'cancelledDuringGate', 'gateFilesChanged'],
  accept: [],
  putBack: [],
  attemptFailed: [],
  checkProgress: ['progressChecked'],
  enrichHandoff: [],
  runFinalGate: ['finalGate', 'cancelledDuringGate', 'gateFilesChanged'],
  runReview: ['iterationEnded'],
  checkVerdict: ['reviewed'],
  warning: [],
  itemsVanished: [],
  continue: [],
} as const satisfies Record<Action['type'], readonly Observation['kind'][]>;

/** The observations that may follow action `T` ({@link FOLLOWS}); `never` for an action after which nothing is observed. */
export type FollowedBy<T extends Action['type']> = Extract<Observation, { kind: (typeof FOLLOWS)[T][number] }>;

/**
 * The actions a lane may decide in each phase (lane/decide.ts keeps to it: phase table test). With {@link FOLLOWS}
 * this is the lane's whole graph: docs/ARCHITECTURE.md draws it.
 */
export const MAY_ACT = {
  BEFORE: ['end', 'honourStop', 'pause', 'waitForAnswer', 'answered', 'questionTimedOut', 'pickNext', 'runFix'],
  PAUSED: ['end', 'honourStop', 'continue'],
  PICKED: ['end', 'itemsVanished', 'putBack', 'continue', 'waitForAnswer', 'runFinalGate', 'block', 'runWork'],
  ITERATED: ['end', 'continue', 'defer', 'ask', 'checkClaim', 'checkVerdict'],
  CLAIMED: ['warning', 'continue', 'runGate', 'putBack', 'attemptFailed', 'checkProgress'],
  GATED: ['warning', 'continue', 'end', 'putBack', 'accept', 'enrichHandoff', 'attemptFailed', 'block'],
  PROGRESS: ['end', 'enrichHandoff'],
  FINAL: ['putBack', 'end', 'continue', 'runReview'],
  REVIEWED: ['end', 'continue'],
} as const satisfies Record<Phase, readonly Action['type'][]>;
