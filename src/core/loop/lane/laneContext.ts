import type { SentinelCheck } from '../../control/sentinels';
import type { ResolvedGates } from '../../gates/gateConfig';
import type { RalphConfig } from '../../model/config';
import type { AttemptRecord } from '../attempts';
import type { EngineEvent, GateTier } from '../events';
import type { EngineLane, EngineTiming } from '../runOptions';
import type { DoneClaim, WorkItem, WorkSource } from '../../sources/work/workSources';
import type { AgentAsk, RunRecordPatch, IterationOutcome } from './agentIteration';
import type { AgentRoster } from './agentRoster';
import type { ClaimBook } from './claimBook';
import type { GreenGate } from './decide';
import type { Observation, RunEnd, RunState } from './phases';

/*
 * What the lane's action handlers (lane/actions.ts) see of their lane: its fixed setting, the facts it carries from
 * one action to the next, and its effects. Built once per run by lane/lane.ts; nothing else of the lane is reachable.
 */

/** The item a work iteration is about, and what the lane learned of it on the way (for the next observations). */
export interface WorkInProgress {
  item: WorkItem;
  records: AttemptRecord[];
  headBefore: string | null;
  fpBefore: string | null;
  out: IterationOutcome | null;
  claim: DoneClaim | null;
  verifiedBy?: GateTier;
}

/** The facts a lane carries between actions (mutable; one object per run). */
export interface LaneFacts {
  work: WorkInProgress | null;
  /** The reviewer's iteration, read by `checkVerdict`. */
  review: IterationOutcome | null;
  /** The item this run started and has not finished; given back when the run ends otherwise. */
  current: WorkItem | null;
  /** Items set aside while they wait for an answer (continueOnBlocked), by id; given back like `current`. */
  readonly setAside: Map<string, WorkItem>;
  /** `--item`: handed to the source's first `next()` only. */
  firstItem: string | undefined;
  /** The title of the last verified item (for the handoff). */
  lastDone: string | null;
  /** A lane's last green gate and the tree around it (decide.ts `finalGateRepeats`); null in a sequential run. */
  lastGreen: GreenGate | null;
  /** The last progress text reported. */
  lastProgress: string;
}

/** A lane as its action handlers see it. */
export interface LaneContext {
  readonly folder: string;
  readonly runId: string;
  /** The folder of the run's shared files: the folder itself, or a parallel run's main folder (answers live there). */
  readonly stateRoot: string;
  /** Set when this lane is one of a parallel run's (its worktree, its story). */
  readonly lane: EngineLane | undefined;
  readonly config: RalphConfig;
  readonly timing: EngineTiming;
  readonly signal: AbortSignal | undefined;
  readonly source: WorkSource;
  /** The run's gates, resolved once at start: frozen for the run, so the prompt and the verdicts agree. */
  readonly gates: ResolvedGates | null;
  /** The files the gates run, compared with the run's start before every gate. */
  readonly gateFiles: { changed: () => Promise<string[]> } | null;
  readonly book: ClaimBook;
  readonly roster: AgentRoster;
  readonly facts: LaneFacts;
  /** The run's state as the last decision left it. */
  runState(): RunState;
  /** Decides on `obs` and performs what follows; the run's end when one was reached. */
  then(obs: Observation): Promise<RunEnd | null>;
  runAgent(ask: AgentAsk): Promise<IterationOutcome>;
  emit(e: EngineEvent): void;
  warn(what: string): (err: unknown) => void;
  shown(text: string): string;
  /** Writes fields of the run's record (run.json); the run shell owns the file. */
  record(patch: RunRecordPatch): Promise<void>;
  sentinels(): SentinelCheck;
  /** The STOP file in force, workspace-relative, or null. */
  stopName(c: SentinelCheck): string | null;
  cancelled(): boolean;
  /** Waits up to `ms`, woken early by a sentinel change `wake` accepts or by cancel; true on timeout. */
  waitForSentinelChange(ms: number, wake?: (c: SentinelCheck) => boolean): Promise<boolean>;
  /** Sleeps, waking early on STOP or cancel; false when woken by one. */
  sleep(ms: number): Promise<boolean>;
}
