import { existsSync } from 'node:fs';
import { cp, rm, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { ralphRunDir } from '../../control/sentinels';
import type { RalphConfig } from '../../model/config';
import { ralphFile } from '../../model/ralphPaths';
import { resolveContainment } from '../../process/containment';
import type { SpaceReserve } from '../../store/storageFailure';
import { treeStatePaths } from '../../git/gitState';
import type { LaneDispatcher } from './dispatcher';
import { greenTreeStandsForLeftovers } from './rules';
import type { EngineEvent } from '../events';
import { LaneRun } from '../laneRun';
import type { EngineLane, EngineOptions, RunResult } from '../runOptions';
import type { RunningLane } from './runningLane';
import { trace } from './trace';

/*
 * Running one lane of a parallel run: a `LaneRun` (laneRun.ts: the shell around a `Lane`) over its story in its worktree, in its start turn, within the
 * story's time. The one place the coordinator hands a lane to a runner: a lane run elsewhere replaces this function.
 */

/** How a lane's engine ended, as the coordinator's lane-end rule (rules.ts `decideLaneEnd`) reads it. */
export interface LaneEngineResult {
  state: RunResult['state'];
  reason: string;
  storageFailure?: string;
}

/** What running a lane needs of its coordinator. */
export interface LaneEngineHost {
  /** The run's options (each lane runs with the run's agent, gates and timing). */
  options: EngineOptions;
  /** A dispatcher that runs lanes elsewhere gives the lane's engine ({@link LaneDispatcher.lane}). */
  dispatcher: LaneDispatcher;
  runId: string;
  /** The main folder: the run's shared files (iteration streams, answers). */
  stateRoot: string;
  actor: string;
  storyTimeoutMs: number;
  /** The run's one disk-space reserve, shared by its lanes. */
  reserve: SpaceReserve | null;
  /** The next iteration number, counted over every lane. */
  nextIteration(): number;
  /** The lane's agent process group changed (run.json `lanes[]`). */
  lanesChanged(): void;
  /**
   * Waits for this lane's start turn; resolves with the turn's end ({@link StartTurns.take}). Not asked for a lane a
   * dispatcher runs elsewhere ({@link LaneDispatcher.lane}).
   */
  startTurn(): Promise<() => void>;
  /** A lane's event, for the coordinator to pass on. */
  onEvent(e: EngineEvent): void;
  /** Is the run ending (asked once the lane's turn came): the lane then starts no iteration. */
  runEnding(): boolean;
}

/**
 * Lane engines start one at a time: an engine's start (records under locks, the claim baseline, the agent's spawn) is
 * work on this process's one thread, so four lanes started at once all got their agents late, together, and their
 * later ends and starts collided again; in turn, the first agents start at once and the lanes' transitions spread out
 * over the others' agent time (the 4-lane bench: −5 % wall time). Creating the worktrees (git, seconds in a large
 * repository) is not in the turn: a round's trees are made at once. A lane run elsewhere takes no turn: its start is a
 * job for a worker, its agent another machine's work, and waiting for each agent to start before the next job is
 * enqueued would start lanes on different workers one after the other.
 */
export class StartTurns {
  /** A lane's engine is starting (its turn). */
  private taken = false;
  /** Lanes waiting for their turn to start, in the order they came. */
  private readonly waiters: (() => void)[] = [];

  /**
   * Waits for a lane's turn to start its engine, and resolves with the function that ends the turn (idempotent):
   * called when its first agent has started, or when its engine returned without one.
   */
  async take(): Promise<() => void> {
    if (this.taken) await new Promise<void>((resolve) => this.waiters.push(resolve));
    this.taken = true;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      const next = this.waiters.shift();
      if (next) next();
      else this.taken = false;
    };
  }
}

/** Runs `lane`'s engine to its end; never throws (a refusal or error is a failed result). */
export async function runLaneEngine(h: LaneEngineHost, lane: RunningLane): Promise<LaneEngineResult> {
  const o = h.options;
  const signals = [lane.abort.signal, ...(o.signal ? [o.signal] : [])];
  const options: EngineOptions & { lane: EngineLane } = {
    folder: lane.tree,
    config: { ...o.config, notify: '', parallel: false },
    agent: o.agent,
    noGates: o.noGates,
    maxIterations: o.maxIterations ?? o.config.maxIterations,
    maxCostUsd: 0,
    maxWallTimeMs: h.storyTimeoutMs,
    reviewer: o.reviewer,
    continueOnBlocked: true,
    agentEnv: o.agentEnv,
    timing: o.timing,
    signal: AbortSignal.any(signals),
    runId: h.runId,
    lane: {
      index: lane.index,
      stateRoot: h.stateRoot,
      source: lane.source,
      actor: h.actor,
      nextIteration: () => h.nextIteration(),
      onAgent: (pid, token) => {
        lane.agentPgid = pid;
        lane.agentToken = token;
        h.lanesChanged();
      },
      onGreenTree: (green) => {
        lane.green = green;
      },
      reserve: h.reserve,
    },
  };
  // A dispatcher that runs lanes elsewhere (remote/bullmqDispatcher.ts) gives the engine; else the lane runs here.
  const engine = h.dispatcher.lane?.(options, lane.story) ?? new LaneRun(options);
  // A local lane's engine starts in its turn and lets the next lane start once its agent runs; a remote one at once.
  const takesTurn = !h.dispatcher.lane;
  let endTurn: (() => void) | null = null;
  engine.on('event', (e) => {
    trace(lane.index, lane.story.id, `event:${e.type}`);
    if (e.type === 'agentStarted') {
      endTurn?.();
      // A tree seen green before this agent (a reviewer after the final gate) says nothing about the tree after it.
      lane.green = null;
    }
    h.onEvent(e);
  });
  let timer: NodeJS.Timeout | undefined;
  try {
    if (takesTurn) endTurn = await h.startTurn();
    // The story's time (storyTimeoutMs) counts from its turn, not from the wait for it.
    timer = setTimeout(() => {
      lane.timedOut = true;
      lane.abort.abort();
    }, h.storyTimeoutMs);
    // A STOP that came while this lane waited for its turn never reached it (the coordinator passes STOP only into
    // lanes' existing run folders): the run is ending, and the lane starts no iteration; its story goes back.
    if (h.runEnding()) lane.abort.abort();
    return await engine.run();
  } catch (err) {
    return { state: 'failed', reason: (err as Error).message };
  } finally {
    clearTimeout(timer);
    endTurn?.();
  }
}

/**
 * What the lane's agent left uncommitted goes onto its branch, in the lane's own tree (so outside the merge chain).
 * `changed`: the tree as the lane saw it after its last agent, when its final gate was a repeat (no agent ran since:
 * an agent's start clears `green`), saves the git status of the leftovers check, in a PID namespace only
 * (rules.ts `greenTreeStandsForLeftovers`).
 */
export async function saveLeftovers(
  dispatcher: LaneDispatcher,
  lane: RunningLane,
  containment: RalphConfig['containment'],
  warn: (what: string) => (err: unknown) => void,
): Promise<void> {
  const green = lane.green;
  const changed = greenTreeStandsForLeftovers(resolveContainment(containment).kind, green !== null)
    ? treeStatePaths(green!.state)
    : undefined;
  await dispatcher
    .saveLeftovers(lane.story.id, `ralph: ${lane.story.id}: work the lane left uncommitted`, changed)
    .catch(warn(`could not commit what the lane of ${lane.story.id} left`));
}

/**
 * Creates story `id`'s worktree (after `removing`, its previous tree's removal, for a story started again) and copies
 * the run's own configuration files into its `.ralph/` (ignored, never committed), which the lane's engine reads;
 * null, with a warning, when git could not create it.
 */
export async function makeLaneTree(
  dispatcher: LaneDispatcher,
  folder: string,
  id: string,
  removing: Promise<void> | undefined,
  warn: (what: string) => (err: unknown) => void,
): Promise<Awaited<ReturnType<LaneDispatcher['create']>> | null> {
  await removing;
  const created = await dispatcher.create(id).catch((err: Error) => {
    warn(`could not create the worktree of ${id}`)(err);
    return null;
  });
  if (!created) return null;
  for (const name of ['commandPolicy', 'config', 'prompts'] as const) {
    const from = ralphFile(folder, name);
    if (existsSync(from))
      await cp(from, ralphFile(created.tree, name), { recursive: true }).catch(
        warn(`could not copy .ralph/${path.basename(from)} into ${id}'s worktree`),
      );
  }
  return created;
}

/** STOP and PAUSE of the run, passed on to every lane's own run folder (each lane engine watches its own). */
export async function passSentinels(
  lanes: readonly RunningLane[],
  runId: string,
  stop: boolean,
  pause: boolean,
  warn: (what: string) => (err: unknown) => void,
): Promise<void> {
  for (const l of lanes) {
    const dir = ralphRunDir(l.tree, runId);
    if (!existsSync(dir)) continue;
    const stopFile = path.join(dir, 'STOP');
    const pauseFile = path.join(dir, 'PAUSE');
    if (stop && !existsSync(stopFile))
      await writeFile(stopFile, 'the parallel run stops\n').catch(warn(`could not pass STOP to lane ${l.index}`));
    if (pause && !existsSync(pauseFile))
      await writeFile(pauseFile, 'the parallel run is paused\n').catch(warn(`could not pass PAUSE to lane ${l.index}`));
    if (!pause && existsSync(pauseFile)) await rm(pauseFile, { force: true });
  }
}
