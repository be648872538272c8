import * as path from 'node:path';
import { updateRunRecord } from '../../control/runRecords';
import { honourStop } from '../../control/sentinels';
import type { ResolvedGates } from '../../gates/gateConfig';
import { readQuantum } from '../../sources/quantum/readQuantum';
import type { SpaceReserve } from '../../store/storageFailure';
import type { EngineEvent, WorkItemRef } from '../events';
import type { RunEnd } from '../lane/phases';
import { engineErrorEnd, LatestRecordWrite } from '../runShell';
import type { RunRecordPatch } from '../lane/agentIteration';
import { timingFromConfig, type EngineOptions } from '../runOptions';
import type { SentinelWatcher } from '../sentinelWatcher';
import { LANE_DIR, type LaneDispatcher } from './dispatcher';
import { makeLaneTree, passSentinels, runLaneEngine, saveLeftovers, StartTurns } from './laneEngine';
import { LaneStorySource } from './laneSource';
import { MainStatuses } from './mainStatuses';
import { MergeSlot } from './mergeSlot';
import { laneEnded, lanesStarted } from './quantumRuntime';
import { pickRound } from './rounds';
import { decideCoordinator, decideLaneEnd } from './rules';
import { startingLane, type RunningLane } from './runningLane';
import { trace } from './trace';

/**
 * The coordinator of a parallel run, inside its run shell (runParallel.ts): rounds of lanes, each running the usual
 * `Lane` (lane/lane.ts with {@link EngineOptions.lane}) on one quantum story in its own git worktree, then their
 * merges (mergeSlot.ts), with the run's caps, sentinels and cost. The rules are pure functions (rules.ts
 * `decideCoordinator`, `decideLaneEnd`, `decideMerge`; rounds.ts `pickRound`); this file observes, asks them, and
 * acts. Events carry their lane (lane 0: the run's own).
 */
/** The run's caps (0 = none): iterations, USD, ms. */
export interface CoordinatorLimits {
  maxIterations: number;
  maxCostUsd: number;
  maxWallMs: number;
}

export class Coordinator {
  private readonly timing;
  private readonly lanes = new Map<number, RunningLane>();
  /** The run's iterations (over every lane) and cost (USD), for its records. */
  iterations = 0;
  cost = 0;
  private round = 0;
  /** The highest round recorded as quantum.json `execution.currentWave`. */
  private waveWritten = 0;
  private wake: (() => void) | null = null;
  private readonly merges: MergeSlot;
  /** Lane engines start one at a time (laneEngine.ts `StartTurns`). */
  private readonly turns = new StartTurns();
  private sentinels!: SentinelWatcher;
  private runEnding = false;
  private readonly maxParallel: number;
  private readonly storyTimeoutMs: number;
  private lastProgress = '';
  /** A lane or the coordinator could not write (a full disk, a read-only `.ralph/`): the cause; the run then ends failed, exit 74. */
  storageFailure: string | null = null;
  /** The statuses of the main quantum.json, written by the coordinator alone (mainStatuses.ts). */
  private readonly statuses = new MainStatuses({
    folder: () => this.folder,
    lanes: () => [...this.lanes.values()],
    emit: (e, lane) => this.emit(e, lane),
    warn: (what) => this.warn(what),
    reportProgress: () => this.reportProgress(),
  });

  /** `feature`: the feature branch, checked out. */
  constructor(
    private readonly o: EngineOptions,
    private readonly folder: string,
    private readonly runId: string,
    private readonly gates: ResolvedGates | null,
    private readonly emitLane: (e: EngineEvent, lane: number) => void,
    private readonly feature: string,
    /** The run's actor (git identity or $USER), resolved once for every lane. */
    private readonly actor: string,
    /** The run's disk-space reserve, shared by its lanes: ready (or null) before the first lane's engine. */
    private readonly reserve: { ready: Promise<SpaceReserve | null> },
    /** Where lanes get their trees and run: worktrees here (dispatcher.ts), or workers (remote/bullmqDispatcher.ts). */
    private readonly dispatcher: LaneDispatcher,
  ) {
    this.timing = { ...timingFromConfig(o.config), ...o.timing };
    this.maxParallel = Math.max(1, o.maxParallel ?? o.config.maxParallel);
    this.storyTimeoutMs = o.config.storyTimeoutMs;
    this.merges = new MergeSlot({
      folder: this.folder,
      config: this.o.config,
      timing: this.timing,
      gates: this.gates,
      feature: this.feature,
      dispatcher: this.dispatcher,
      emit: (e, lane) => this.emit(e, lane),
      guardMain: () => this.guardMain(),
      writeStatus: (id, status, write) => this.writeStatus(id, status, write),
      activeTrees: () => this.activeTrees(),
      reportProgress: () => this.reportProgress(),
    });
  }

  private emit(e: EngineEvent, lane = 0): void {
    this.emitLane(e, lane);
  }

  private warn(what: string): (err: unknown) => void {
    return (err) =>
      this.emit({ type: 'warning', message: `${what}: ${err instanceof Error ? err.message : String(err)}` });
  }

  /**
   * The run's rounds, inside the parallel run's shell (runParallel.ts, which wrote run.json and reported the start):
   * dispatches rounds of lanes until the rules end or drain the run, then waits for every lane's merge and tree
   * removal. Returns the run's end; a failure no rule covers is an engine error's end (the lanes drained first).
   */
  async rounds(limits: CoordinatorLimits, sentinels: SentinelWatcher): Promise<RunEnd> {
    const o = this.o;
    const { maxIterations, maxCostUsd: maxCost, maxWallMs } = limits;
    this.sentinels = sentinels;
    for (const s of readQuantum(this.folder)?.doc?.data.stories ?? []) this.statuses.found(s.id, s.status);
    this.sentinels.on('change', () => this.poke());
    const onAbort = () => this.poke();
    o.signal?.addEventListener('abort', onAbort);
    await this.reportProgress(true);
    const t0 = Date.now();
    let end: RunEnd;
    let stopHonoured = false;
    try {
      for (;;) {
        const c = this.sentinels.check();
        const stop = c.stop.length ? path.relative(this.folder, c.stop[0]!.file) : null;
        await this.guardMain();
        if (this.startFailure) throw this.startFailure;
        const stories = readQuantum(this.folder)?.doc?.data.stories ?? [];
        const laneIds = new Set([...this.lanes.values()].map((l) => l.story.id));
        const startingIds = [...this.starting.keys()].filter((id) => !laneIds.has(id));
        const running = [...laneIds, ...startingIds];
        const working = [...this.lanes.values()].filter((l) => l.working).length + startingIds.length;
        const d = decideCoordinator(
          { maxIterations, maxCostUsd: maxCost, maxWallMs },
          {
            cancelled: o.signal?.aborted ?? false,
            stop,
            pause: c.pause.length > 0,
            costUsd: this.cost,
            iterations: this.iterations,
            elapsedMs: Date.now() - t0,
            running: running.length,
            ready: pickRound(stories, running, this.maxParallel).length,
            allPassed: stories.length > 0 && stories.every((s) => s.status === 'passed'),
            stories: stories.length,
            storageFailure: this.storageFailure,
          },
        );
        await this.mirrorSentinels(stop !== null || d.kind === 'drain', c.pause.length > 0);
        if (stop && !stopHonoured && (d.kind === 'drain' || d.kind === 'end')) {
          stopHonoured = true;
          await honourStop(c).catch(this.warn('could not honour STOP'));
        }
        if (d.kind === 'end') {
          end = d.end;
          break;
        }
        if (d.kind === 'drain') {
          this.runEnding = true;
          this.emit({
            type: 'warning',
            message: `${d.end.reason}: letting ${this.lanes.size} lane(s) finish their iteration`,
          });
          await this.drain();
          end = d.end;
          break;
        }
        if (d.kind === 'dispatch') {
          const free = this.maxParallel - working;
          const ids = pickRound(stories, running, free);
          if (ids.length) {
            this.round++;
            // Not awaited: a lane freed while this round starts is refilled at once (its stories count as running).
            const start: Promise<void> = this.startLanes(ids, this.round)
              .catch((err: unknown) => {
                this.startFailure ??= err instanceof Error ? err : new Error(String(err));
              })
              .finally(() => {
                this.startingRounds.delete(start);
                this.poke();
              });
            this.startingRounds.add(start);
            continue;
          }
        }
        await this.nextChange(1000);
      }
    } catch (err) {
      let storageFailure: string | null;
      ({ end, storageFailure } = engineErrorEnd(err));
      // The reserve goes, so that the lanes' ends and the run's can be written.
      if (storageFailure) {
        this.storageFailure ??= storageFailure;
        await (await this.reserve.ready)?.release();
      }
      this.runEnding = true;
      // A round still starting aborts its own lanes (runEnding).
      await this.settleStarts();
      for (const l of this.lanes.values()) l.abort.abort();
      await this.drain().catch(this.warn('could not end the lanes'));
    } finally {
      o.signal?.removeEventListener('abort', onAbort);
      this.sentinels.close();
    }
    await this.settleStarts();
    await this.merges.mergeChain;
    // Trees are removed off the lanes' critical path; none is left behind when the run ends.
    await Promise.all(this.removing.values());
    await this.guardMain();
    return end;
  }

  private poke(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }

  /** Waits until a lane ends, a sentinel changes, cancel, or `ms` pass. */
  private nextChange(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.wake = null;
        resolve();
      }, ms);
      this.wake = () => {
        clearTimeout(t);
        resolve();
      };
    });
  }

  /** Waits for every running lane (and its merge) to end. */
  private async drain(): Promise<void> {
    await this.settleStarts();
    while (this.lanes.size) {
      await this.mirrorSentinels(true, false);
      await this.nextChange(500);
    }
    await this.merges.mergeChain;
  }

  /** STOP and PAUSE of the run, passed on to every lane's own run folder (each lane engine watches its own). */
  private mirrorSentinels(stop: boolean, pause: boolean): Promise<void> {
    return passSentinels([...this.lanes.values()], this.runId, stop, pause, (what) => this.warn(what));
  }

  /** The lowest lane number not in use (a lane waiting for its merge keeps its number until its `laneMerge`). */
  private freeIndex(reserved: ReadonlySet<number>): number {
    const taken = new Set(this.starting.values());
    for (let i = 1; ; i++) if (!this.lanes.has(i) && !reserved.has(i) && !taken.has(i)) return i;
  }

  /** Writes run.json `lanes[]` ({@link lanesPatch}): the latest view, one write at a time. */
  private readonly lanesRecord = new LatestRecordWrite(
    () => updateRunRecord(this.folder, this.runId, this.lanesPatch()),
    (err) => this.warn('could not write the lanes to run.json')(err),
  );
  /** Trees being removed, by story id (a story started again waits for its old tree to go). */
  private readonly removing = new Map<string, Promise<void>>();
  /**
   * Stories whose lanes are being started ({@link startLanes}: worktree, marks), with the lane number each has: they
   * count as running, so the loop can start the next round meanwhile (a lane freed while another starts waits for
   * nothing) without picking them twice.
   */
  private readonly starting = new Map<string, number>();
  /** The rounds being started; awaited before the lanes are drained and before the run ends. */
  private readonly startingRounds = new Set<Promise<void>>();
  /** The error a round's start threw: the run ends with it as an engine error. */
  private startFailure: Error | null = null;

  /** Waits until no round is being started. */
  private async settleStarts(): Promise<void> {
    while (this.startingRounds.size) await Promise.all([...this.startingRounds]);
  }

  /** run.json `lanes[]` and the run's totals, as they are now. */
  private lanesPatch(): RunRecordPatch {
    const lanes = [...this.lanes.values()].map((l) => ({
      lane: l.index,
      item: l.story.id,
      worktree: path.relative(this.folder, l.tree),
      branch: l.branch,
      iteration: l.iteration,
      agentPgid: l.agentPgid,
      agentToken: l.agentToken,
    }));
    return { lanes, iteration: this.iterations, costUsd: this.cost };
  }

  /**
   * Starts a lane for each story of `ids` (one round): their worktrees are created at once, then one quantum.json
   * write marks them all started and one run.json write lists them, then each lane's engine starts. The loop does not
   * wait for it (`starting` holds the stories meanwhile); a lane set up after the run began to end is aborted before
   * its first iteration (its story goes back to pending).
   */
  private async startLanes(ids: readonly string[], round: number): Promise<void> {
    const reserved = new Set<number>();
    const picks = ids.map((id) => {
      const index = this.freeIndex(reserved);
      reserved.add(index);
      this.starting.set(id, index);
      trace(index, id, 'dispatch');
      return { id, index };
    });
    try {
      await this.startPicked(picks, round);
    } finally {
      for (const p of picks) this.starting.delete(p.id);
    }
  }

  private async startPicked(picks: readonly { id: string; index: number }[], round: number): Promise<void> {
    const doc = readQuantum(this.folder)?.doc;
    const made = await Promise.all(
      picks.map(async ({ id, index }) => {
        const created = await makeLaneTree(this.dispatcher, this.folder, id, this.removing.get(id), (what) =>
          this.warn(what),
        );
        trace(index, id, 'worktreeAdded');
        if (!created) return null;
        trace(index, id, 'configCopied');
        return { id, index, created };
      }),
    );
    for (const [i, m] of made.entries()) {
      if (m) continue;
      const id = picks[i]!.id;
      await this.writeStatus(id, 'failed', () =>
        laneEnded(
          this.folder,
          id,
          { kind: 'failed', phase: 'worktree', reason: 'could not create its worktree' },
          this.activeTrees(),
        ),
      ).catch(this.warn(`could not record ${id} failed`));
    }
    const lanes: RunningLane[] = [];
    for (const m of made) {
      if (!m) continue;
      const s = doc?.data.stories.find((x) => x.id === m.id);
      const story: WorkItemRef = { source: 'quantum', id: m.id, title: s?.title ?? '' };
      const source = new LaneStorySource(this.folder, m.id, this.actor, () => this.guardMain());
      const lane = startingLane({ index: m.index, story, tree: m.created.tree, branch: m.created.branch, source });
      this.lanes.set(m.index, lane);
      this.starting.delete(m.id);
      lanes.push(lane);
      if (m.created.reused)
        this.emit(
          { type: 'warning', message: `lane ${m.index}: ${m.id} takes up its kept branch ${m.created.branch}` },
          m.index,
        );
    }
    if (!lanes.length) return;
    // Rounds start concurrently and can finish starting out of order (one waits for a retried story's old tree):
    // the wave recorded never goes back.
    await this.statuses.writeStarted(
      lanes.map((l) => l.story.id),
      () =>
        lanesStarted(
          this.folder,
          lanes.map((l) => ({ id: l.story.id, worktree: path.relative(this.folder, l.tree) })),
          (this.waveWritten = Math.max(this.waveWritten, round)),
          this.activeTrees(),
        ),
    );
    for (const l of lanes) trace(l.index, l.story.id, 'quantumStarted');
    await this.lanesRecord.write();
    for (const lane of lanes) {
      trace(lane.index, lane.story.id, 'lanesWritten');
      // The run began to end while this round started (STOP, cancel, an error): the lane ends before its first
      // iteration, its story back to pending (decideLaneEnd: release).
      if (this.runEnding) lane.abort.abort();
      lane.done = this.runLane(lane)
        .catch(this.warn(`lane ${lane.index} (${lane.story.id})`))
        .finally(() => {
          this.lanes.delete(lane.index);
          trace(lane.index, lane.story.id, 'freed');
          void this.lanesRecord.write();
          this.poke();
        });
    }
  }

  /** The coordinator's status writes in the main quantum.json, and the guard that puts back any other. */
  private writeStatus(id: string, status: string, write: () => Promise<void>): Promise<void> {
    return this.statuses.write(id, status, write);
  }

  private guardMain(): Promise<void> {
    return this.statuses.guard();
  }

  private activeTrees(): string[] {
    return [...this.lanes.values()].filter((l) => !l.settled).map((l) => path.relative(this.folder, l.tree));
  }

  /** One lane: its engine over its story in its tree, then what its end means (merge, fail, release). */
  private async runLane(lane: RunningLane): Promise<void> {
    const o = this.o;
    const reserve = await this.reserve.ready;
    const result = await runLaneEngine(
      {
        options: o,
        dispatcher: this.dispatcher,
        runId: this.runId,
        stateRoot: this.folder,
        actor: this.actor,
        storyTimeoutMs: this.storyTimeoutMs,
        reserve,
        nextIteration: () => ++this.iterations,
        lanesChanged: () => void this.lanesRecord.write(),
        startTurn: () => this.turns.take(),
        onEvent: (e) => this.fromLane(lane, e),
        runEnding: () => {
          if (!this.runEnding && this.sentinels.check().stop.length) this.runEnding = true;
          return this.runEnding;
        },
      },
      lane,
    );
    trace(lane.index, lane.story.id, 'engineReturned');
    // The agent's lane is free: the next story may start while this one waits for its merge.
    lane.working = false;
    this.poke();
    if (result.storageFailure) this.storageFailure ??= result.storageFailure;
    const d = decideLaneEnd({
      end: result.state,
      reason: result.reason,
      storyVerified: lane.source.verified,
      blocked: lane.source.blocked,
      timedOut: lane.timedOut,
      runEnding: this.runEnding || (o.signal?.aborted ?? false),
      storageFailure: result.storageFailure ?? null,
    });
    await saveLeftovers(this.dispatcher, lane, this.o.config.containment, (what) => this.warn(what));
    trace(lane.index, lane.story.id, 'leftoversSaved');
    // One merge at a time: the lanes' merges, gates and records go through one chain; lanes waiting at the same
    // time are merged as a batch under one feature gate (endBatch).
    await this.merges.enqueue(lane, d);
    trace(lane.index, lane.story.id, 'endLaneDone');
    // The tree goes once its branch is merged or kept on purpose (failed, released: the branch stays for a person or
    // the next lane), off the critical path: the run waits for every removal before it ends.
    const id = lane.story.id;
    const removal = this.dispatcher
      .remove(id)
      .catch(this.warn(`could not remove ${LANE_DIR}/${id}`))
      .finally(() => {
        if (this.removing.get(id) === removal) this.removing.delete(id);
        trace(lane.index, id, 'removed');
      });
    this.removing.set(id, removal);
  }

  /** A lane's event, passed on with its lane; the lane's own run start, end and progress are the coordinator's to report. */
  private fromLane(lane: RunningLane, e: EngineEvent): void {
    if (e.type === 'runStarted' || e.type === 'runEnded' || e.type === 'progress' || e.type === 'verified') return;
    if (e.type === 'iterationStarted') lane.iteration = e.iteration;
    if (e.type === 'iterationEnded') {
      this.cost += e.totals.costUsd;
      lane.agentPgid = null;
      lane.agentToken = null;
      void this.lanesRecord.write();
      this.poke();
    }
    this.emit(e, lane.index);
  }

  progress(): { done: number; total: number } {
    const stories = readQuantum(this.folder)?.doc?.data.stories ?? [];
    return { done: stories.filter((s) => s.status === 'passed').length, total: stories.length };
  }

  private async reportProgress(force = false): Promise<void> {
    const p = this.progress();
    const text = `${p.done}/${p.total} done`;
    if (!force && text === this.lastProgress) return;
    this.lastProgress = text;
    this.emit({ type: 'progress', done: p.done, total: p.total, text });
  }
}
