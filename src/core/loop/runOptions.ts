import type { RalphConfig } from '../model/config';
import { STORAGE_EXIT, type SpaceReserve } from '../store/storageFailure';
import { defaultBackoffPolicy, type BackoffPolicy } from './backoff';
import { DEFAULT_WATCHDOG, type WatchdogRules } from './lane/watchdog';
import type { RunEndState } from './events';
import type { WorkSource } from '../sources/work/workSources';

/*
 * What a run is started with and what it ends with: the options every face passes to `startRun` (startRun.ts), the
 * timing, the result, and the refusals. Shared by the run's entry, its lane (lane/lane.ts) and the coordinator of a
 * parallel run (parallel/coordinator.ts), so that none of them imports another for its shapes.
 */

/** Delays and limits of the engine; every one is configurable so tests take seconds (issue "Caps"). */
export interface EngineTiming {
  /** Pause between iterations, ms (seed: `sleep 2`, §2.9 / §3.6). */
  betweenIterationsMs: number;
  /** SIGTERM → SIGKILL grace when ending an agent's process group, ms (issue: 5 s). */
  killGraceMs: number;
  /** Fallback poll of the sentinel files, ms. */
  sentinelPollMs: number;
  /** Natural ends in a row without progress that stop the run as stalled (seed §3.6: 3). */
  stallLimit: number;
  /** Gate timeout, ms (config `gateTimeoutMs`). */
  gateTimeoutMs: number;
  /** Rate-limit backoff (seed §3.6, see backoff.ts). */
  backoff: BackoffPolicy;
  /** The iteration watchdog (decide.ts `decideWatchdog`): silence, iteration and STOP-grace limits, ms. */
  watchdog?: WatchdogRules;
}

export const defaultTiming: EngineTiming = {
  betweenIterationsMs: 2000,
  killGraceMs: 5000,
  sentinelPollMs: 250,
  stallLimit: 3,
  gateTimeoutMs: 1_200_000,
  backoff: defaultBackoffPolicy,
};

/** The engine's timing from `.ralph/config.json` `timing` and `gateTimeoutMs`, over {@link defaultTiming}. */
export function timingFromConfig(config: RalphConfig): EngineTiming {
  const t = config.timing;
  const b = defaultBackoffPolicy;
  return {
    betweenIterationsMs: t.betweenIterationsMs ?? defaultTiming.betweenIterationsMs,
    killGraceMs: t.killGraceMs ?? defaultTiming.killGraceMs,
    sentinelPollMs: defaultTiming.sentinelPollMs,
    stallLimit: t.stallLimit ?? defaultTiming.stallLimit,
    gateTimeoutMs: config.gateTimeoutMs,
    watchdog: {
      silenceTimeoutMs: t.silenceTimeoutMs ?? DEFAULT_WATCHDOG.silenceTimeoutMs,
      iterationTimeoutMs: t.iterationTimeoutMs ?? DEFAULT_WATCHDOG.iterationTimeoutMs,
      stopGraceMs: t.stopGraceMs ?? DEFAULT_WATCHDOG.stopGraceMs,
    },
    backoff: {
      baseMs: t.backoffBaseMs ?? b.baseMs,
      capMs: t.backoffCapMs ?? b.capMs,
      resetMarginMs: t.resetMarginMs ?? b.resetMarginMs,
      maxResetWaitMs: t.maxResetWaitMs ?? b.maxResetWaitMs,
      maxQuotaWaits: t.maxQuotaWaits ?? b.maxQuotaWaits,
      maxDeferrals: t.maxDeferrals ?? b.maxDeferrals,
    },
  };
}

export interface EngineOptions {
  folder: string;
  config: RalphConfig;
  /** `flow` | `quantum` | `checklist` | a checklist path; default: the first available source (flow, quantum, checklists). */
  source?: string;
  /** Agent adapter name; default `config.agent`. */
  agent?: string;
  /** Run without gates (otherwise the engine refuses to start when none is configured). */
  noGates?: boolean;
  /** Caps; default from config. `maxCostUsd` / `maxWallTimeMs` 0 = none. */
  maxIterations?: number;
  maxCostUsd?: number;
  maxWallTimeMs?: number;
  /** Run a reviewer iteration after the final gate (`<verdict>SHIP|NEEDS_WORK</verdict>`). */
  reviewer?: boolean;
  /** Go on with other ready work after blocking an item, instead of pausing. */
  continueOnBlocked?: boolean;
  /** Extra environment for the agent (tests point `ANTHROPIC_BASE_URL` at the scripted model server). */
  agentEnv?: Record<string, string | undefined>;
  timing?: Partial<EngineTiming>;
  /** Cancel: end the agent's process group now and stop (Ctrl-C, **Ralph: Cancel**). */
  signal?: AbortSignal;
  /** Run id to use (default a new one). */
  runId?: string;
  /**
   * Begin with this item (`ralph run --item <id>`, the tree's **Start Here**): the run's first item when it is ready
   * (core `startOfferOf`); else the engine refuses, naming why and the source's next ready item. Without `source`, the
   * item's source is used. Later items are the source's usual picks.
   */
  item?: string;
  /**
   * Run independent quantum stories at once, each on its own lane in its own git worktree (`ralph run --parallel`,
   * **Ralph: Start**'s "in parallel" choice); default the configuration's. Only the quantum source runs in parallel.
   */
  parallel?: boolean;
  /** Most lanes at once in a parallel run (`--max-parallel N`, a whole number ≥ 1); default the configuration's. */
  maxParallel?: number;
  /** Set by a parallel run's coordinator for each lane's engine (loop/parallel/coordinator.ts); never by a face. */
  lane?: EngineLane;
}

/**
 * What makes an engine one lane of a parallel run: `folder` is then the lane's working tree (the agent's
 * cwd, its gates, handoff and `.ralph/` of the lane), while the run's state root keeps the iteration streams; the
 * lane works on `source` (its one story); iteration numbers are counted over every lane (`nextIteration`); the
 * coordinator learns each agent's process group and token (`onAgent`) for crash recovery.
 */
export interface EngineLane {
  index: number;
  stateRoot: string;
  source: WorkSource;
  nextIteration(): number;
  onAgent?(pid: number | null, token: string | null): void;
  /** The run's actor, resolved once by the coordinator (the lane's tree has the repository's config): no git call per lane. */
  actor?: string;
  /**
   * The lane's final gate was not repeated: `command` passed on the tree `state` (git.ts `treeState`, the same at the
   * gate's start, end and now). The coordinator may then skip the same gate on the same tree after the merge
   * (decide.ts `featureGateRepeats`).
   */
  onGreenTree?(green: { command: string; state: string }): void;
  /**
   * The run's disk-space reserve (the coordinator's, store/storageFailure.ts): a lane on a storage error frees it,
   * for every lane and the coordinator, before it records its end; the coordinator removes it when the run ends.
   */
  reserve?: SpaceReserve | null;
}

/** What a run (startRun.ts `startRun`) resolves with. */
export interface RunResult {
  runId: string;
  state: RunEndState;
  reason: string;
  /** The CLI exit code: 0 complete, 1 failed / stalled / blocked, 2 a cap reached, 3 stopped by the user, 130 interrupted. */
  exitCode: number;
  iterations: number;
  costUsd: number;
  done: number;
  total: number;
  /** Set when the run ended on a storage error (disk full, read-only): the cause; the exit code is then {@link STORAGE_EXIT}. */
  storageFailure?: string;
  /** Set when even the end could not be written to run.json: why (the next run marks the record crashed). */
  endNotRecorded?: string;
}

/** A refusal to start (no gates, no source, bad configuration): a message a user can act on. */
export class EngineRefusal extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EngineRefusal';
  }
}

/** A refusal because no gate is configured and `noGates` was not given (VS Code offers the ways out as actions). */
export class NoGatesRefusal extends EngineRefusal {}

/** A refusal because `.ralph/` cannot be written (read-only by its mode, a read-only mount): `ralph run` exits {@link STORAGE_EXIT}. */
export class StorageRefusal extends EngineRefusal {
  readonly exitCode = STORAGE_EXIT;
}
