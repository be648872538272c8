import { existsSync } from 'node:fs';
import { cp, mkdir, rm, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { availableSources } from '../workSource';
import { createRunRecord, updateRunRecord } from '../../control/runRecords';
import { honourStop, ralphRunDir } from '../../control/sentinels';
import { pruneRuns } from '../../control/runPruning';
import { gateCommandFor, resolveGates, type ResolvedGates } from '../../gates/gateConfig';
import { runGateExclusive } from '../../gates/gateCall';
import { loadShellParser } from '../../gates/shellSyntax';
import { ralphFile } from '../../model/ralphPaths';
import { resolveActorAsync } from '../../sources/actor';
import { holdGitWorker } from '../../process/gitWorker';
import { resolveContainment } from '../../process/containment';
import { readQuantum } from '../../sources/quantum/readQuantum';
import { makeSpaceReserve, type SpaceReserve } from '../../store/storageFailure';
import { cleanCommitOf } from '../git';
import {
  decideCoordinator,
  decideLaneEnd,
  decideMerge,
  decideMergeBatch,
  featureGateRepeats,
  greenTreeStandsForLeftovers,
  type LaneGreen,
} from './rules';
import { type RunEnd } from '../lane/phases';
import { Lane } from '../lane/lane';
import { EngineRefusal, timingFromConfig, type EngineLane, type EngineOptions, type RunResult } from '../runOptions';
import { type EngineEvent, type GateTier, type WorkItemRef } from '../events';
import { treeStatePaths } from '../git';
import { SentinelWatcher } from '../sentinelWatcher';
import {
  excludeRunnerFiles,
  git,
  gitFailure,
  LANE_DIR,
  laneBranch,
  type LaneDispatcher,
  type MergeOutcome,
} from './dispatcher';
import { LaneStorySource } from './laneSource';
import { removeFolderCaches } from '../../store/snapshotCache';
import { laneEnded, lanesStarted, putBackStatuses, statusDrift, type StoryEnd } from './quantumRuntime';
import {
  engineErrorEnd,
  holdFolderLock,
  recordRunEnd,
  recoverFolder,
  refuseReadOnly,
  refuseWithoutGates,
  runResult,
} from '../runShell';
import { pickRound } from './rounds';
import { pickDispatcher } from './pickDispatcher';

/**
 * The coordinator of a parallel run (issue 19 "Lanes"): the run's caps, sentinels, cost, run.json and merging, over
 * lanes that each run the usual engine (engine.ts with {@link EngineOptions.lane}) on one quantum story in its own
 * git worktree. The rules are pure functions in decide.ts (`decideCoordinator`, `decideLaneEnd`, `decideMerge`) and
 * rounds.ts (`pickRound`); this file observes, asks them, and acts. One merge at a time, followed by the feature
 * branch's gate; lanes that wait for the merge slot together share one gate (`decideMergeBatch`). Events carry their lane (lane 0: the run's own).
 */

/**
 * `RALPH_TRACE_LANES=1`: one line per phase of each lane on stderr (`trace-lanes {"t":ms since the run began,"busy":ms
 * the main thread was busy since this process started (event-loop utilization),"lane",
 * "story","phase"}`), to see where a story's time goes (bench/lanes.bench.ts; docs/NOTES.md "Issue 19, lanes
 * profile"). Off by default: no cost but the test of one variable.
 */
const TRACE = process.env.RALPH_TRACE_LANES === '1';
const TRACE_T0 = performance.now();
function trace(lane: number, story: string, phase: string): void {
  if (TRACE)
    process.stderr.write(
      `trace-lanes ${JSON.stringify({ t: Math.round(performance.now() - TRACE_T0), busy: Math.round(performance.eventLoopUtilization().active), lane, story, phase })}\n`,
    );
}

/** Does a run with these options run in parallel: the quantum source, named or the folder's first source. */
export function parallelApplies(folder: string, o: EngineOptions): boolean {
  if (o.source) return o.source === 'quantum';
  const first = availableSources({ folder, actor: 'unknown' })[0];
  return first?.kind === 'quantum';
}

/** One running lane. */
interface RunningLane {
  index: number;
  story: WorkItemRef;
  tree: string;
  branch: string;
  source: LaneStorySource;
  abort: AbortController;
  timedOut: boolean;
  done: Promise<void>;
  iteration: number | null;
  agentPgid: number | null;
  agentToken: string | null;
  /** Its end is being recorded: no longer one of quantum.json's `activeWorktrees`. */
  settled: boolean;
  /**
   * Its engine still runs (the agent's lane is taken). False once the engine returned: the story then waits for its
   * merge, still a running story for the rounds (its files taken, its dependents waiting), but its lane is free for
   * the next story at once, not after the merge queue.
   */
  working: boolean;
  /** The lane's last green gate on a clean tree, when its final gate was not repeated (engine.ts `onGreenTree`). */
  green: LaneGreen | null;
}

/**
 * Runs a parallel run to its end (called by startRun.ts `startRun` when `parallel` is asked for a quantum source).
 * Refuses (EngineRefusal) outside a git repository, with uncommitted changes to tracked files (merges happen in the
 * folder), without gates unless `noGates`, or with `item`. `emit` gets every event with its lane.
 */
export async function runParallel(
  o: EngineOptions,
  runId: string,
  emit: (e: EngineEvent, lane: number) => void,
): Promise<RunResult> {
  const folder = path.resolve(o.folder);
  if (o.item)
    throw new EngineRefusal(
      '--item cannot be used with a parallel run: the rounds pick the stories (run without --parallel to begin with one story).',
    );
  // The lanes' git calls start from a small helper process (gitWorker.ts): the main thread, which drives every lane,
  // does not wait for forks of this large process. Started now, so that its start-up overlaps the checks below (which
  // run git from here).
  const releaseGitWorker = holdGitWorker({ start: true });
  try {
    return await checkedRun(o, folder, runId, emit);
  } finally {
    await releaseGitWorker();
  }
}

async function checkedRun(
  o: EngineOptions,
  folder: string,
  runId: string,
  emit: (e: EngineEvent, lane: number) => void,
): Promise<RunResult> {
  // One rev-parse for the three facts the start needs (the top folder, git's common folder, the branch) beside the
  // status check: two processes at once rather than four one after another, each a fork of this large process. With
  // no commit on HEAD that rev-parse fails: the top folder is asked alone, and the rest as before.
  const statusArgs = ['status', '--porcelain', '--untracked-files=no', '--', '.', ':(exclude)quantum.json'];
  const checks = Promise.all([
    git(
      folder,
      ['rev-parse', '--show-toplevel', '--path-format=absolute', '--git-common-dir', '--abbrev-ref', 'HEAD'],
      { reject: false, direct: true },
    ),
    git(folder, statusArgs, { reject: false, direct: true }),
  ]);
  // While git answers: the shell parser the first lane's gate-file snapshot needs (engine.ts snapshotGateFiles).
  loadShellParser();
  const [facts, status] = await checks;
  const lines = facts.exitCode === 0 ? facts.stdout.split(/\r?\n/) : [];
  const repo = lines.length === 3 ? { commonDir: lines[1]!, branch: lines[2]! } : null;
  const inside = repo
    ? { exitCode: 0, stdout: lines[0]! }
    : await git(folder, ['rev-parse', '--show-toplevel'], { reject: false, direct: true });
  if (inside.exitCode !== 0)
    throw new EngineRefusal(
      `A parallel run needs a git repository: ${folder} is not one (lanes are git worktrees merged back into the feature branch). Run without --parallel, or \`git init\` and commit first.`,
    );
  if (path.resolve(inside.stdout.trim()) !== folder)
    throw new EngineRefusal(
      `A parallel run needs the repository's top folder (${inside.stdout.trim()}), not ${folder}.`,
    );
  // quantum.json is the runner's own (its statuses change during the run; lanes never commit it).
  if (status.exitCode !== 0) throw gitFailure(statusArgs, status);
  const dirty = status.stdout.trim();
  if (dirty)
    throw new EngineRefusal(
      `A parallel run refuses to start while tracked files have uncommitted changes (the lanes merge into this folder); commit or stash them first:\n${dirty
        .split('\n')
        .slice(0, 10)
        .map((l) => `  ${l}`)
        .join('\n')}`,
    );
  const q = readQuantum(folder);
  if (!q?.doc)
    throw new EngineRefusal(
      q?.problem
        ? `${q.problem.file}:${q.problem.line}:${q.problem.column}: ${q.problem.message}`
        : `No quantum.json in ${folder}: only quantum stories run in parallel.`,
    );
  const gates = await resolveGates(folder, o.config);
  refuseWithoutGates(gates, o.noGates);
  refuseReadOnly(folder);
  const releaseLock = await holdFolderLock(folder, (message) => emit({ type: 'warning', message }, 0));
  try {
    return await new Coordinator(o, folder, runId, gates, emit, repo).run();
  } finally {
    await releaseLock().catch((err: Error) =>
      emit({ type: 'warning', message: `could not release the engine lock: ${err.message}` }, 0),
    );
  }
}

class Coordinator {
  private readonly timing;
  private readonly lanes = new Map<number, RunningLane>();
  private iterations = 0;
  private cost = 0;
  private round = 0;
  /** The highest round recorded as quantum.json `execution.currentWave`. */
  private waveWritten = 0;
  private mergeChain: Promise<void> = Promise.resolve();
  private wake: (() => void) | null = null;
  private dispatcher!: LaneDispatcher;
  private feature = '';
  private sentinels!: SentinelWatcher;
  private startedAt = '';
  private runEnding = false;
  private readonly maxParallel: number;
  private readonly storyTimeoutMs: number;
  private lastProgress = '';
  /** A lane or the coordinator could not write (a full disk, a read-only `.ralph/`, issue 12): the cause; the run then ends failed, exit 74. */
  private storageFailure: string | null = null;
  /** The run's disk-space reserve, shared by its lanes (null when it could not be written). */
  private reserve: SpaceReserve | null = null;
  /** Resolves once {@link reserve} is written (or could not be). */
  private reserveReady: Promise<void> = Promise.resolve();
  /** The run's actor (git identity or $USER), resolved once for every lane. */
  private actor = 'unknown';
  /**
   * The status of every story of the main folder's quantum.json as the coordinator last wrote or found it (issue 11,
   * breaker-s5 row 36): the coordinator is the only writer of statuses there; see {@link guardMain}.
   */
  private readonly expected = new Map<string, string>();
  /** The coordinator's status writes and the guard's checks, one at a time. */
  private mainChain: Promise<unknown> = Promise.resolve();

  /** `repo`: git's common folder and the branch checked out, when the start's checks read them (else asked again). */
  constructor(
    private readonly o: EngineOptions,
    private readonly folder: string,
    private readonly runId: string,
    private readonly gates: ResolvedGates | null,
    private readonly emitLane: (e: EngineEvent, lane: number) => void,
    private readonly repo: { commonDir: string; branch: string } | null = null,
  ) {
    this.timing = { ...timingFromConfig(o.config), ...o.timing };
    this.maxParallel = Math.max(1, o.maxParallel ?? o.config.maxParallel);
    this.storyTimeoutMs = o.config.storyTimeoutMs;
  }

  private emit(e: EngineEvent, lane = 0): void {
    this.emitLane(e, lane);
  }

  private warn(what: string): (err: unknown) => void {
    return (err) =>
      this.emit({ type: 'warning', message: `${what}: ${err instanceof Error ? err.message : String(err)}` });
  }

  async run(): Promise<RunResult> {
    const o = this.o;
    const maxIterations = o.maxIterations ?? o.config.maxIterations;
    const maxCost = o.maxCostUsd ?? o.config.maxCostUsd;
    const maxWallMs = o.maxWallTimeMs ?? o.config.maxWallTimeMinutes * 60_000;
    // Asked now (git, through the helper), needed after the recovery.
    const actor = resolveActorAsync(this.folder);
    await this.useFeatureBranch();
    await excludeRunnerFiles(this.folder, this.repo?.commonDir);
    // Recovery first: lanes and stories of a crashed parallel run, then the usual crash rule over every source.
    this.actor = await actor;
    await recoverFolder(
      this.folder,
      {
        runId: this.runId,
        sources: availableSources({ folder: this.folder, actor: this.actor }),
        killGraceMs: this.timing.killGraceMs,
        feature: this.feature,
      },
      (message) => this.emit({ type: 'warning', message }),
    );
    await pruneRuns(this.folder, { keepRuns: o.config.keepRuns, runsMaxMb: o.config.runsMaxMb }).catch(
      this.warn('could not prune .ralph/runs'),
    );
    await mkdir(ralphRunDir(this.folder, this.runId), { recursive: true });
    // The run's one disk-space reserve (issue 12), shared by the lanes (engine.ts EngineLane `reserve`): written
    // while the run starts (1 MiB and an fsync), ready before the first lane's engine.
    this.reserveReady = makeSpaceReserve(ralphRunDir(this.folder, this.runId)).then(
      (r) => {
        this.reserve = r;
      },
      (err: Error) =>
        this.emit({ type: 'warning', message: `could not set disk space aside for the run's end: ${err.message}` }),
    );
    try {
      return await this.runReserved(maxIterations, maxCost, maxWallMs);
    } finally {
      await this.reserveReady;
      await this.reserve?.release();
      await this.dispatcher.close?.().catch(this.warn('could not close the lane dispatcher'));
    }
  }

  private async runReserved(maxIterations: number, maxCost: number, maxWallMs: number): Promise<RunResult> {
    const o = this.o;
    const agent = o.agent ?? o.config.agent;
    const record = await createRunRecord(this.folder, {
      runId: this.runId,
      state: 'running',
      agent,
      source: { kind: 'quantum', label: 'quantum.json' },
      config: {
        maxIterations,
        maxCostUsd: maxCost,
        maxWallTimeMs: maxWallMs,
        model: o.config.model,
        noGates: !!o.noGates,
      },
      agentPgid: null,
      parallel: { maxParallel: this.maxParallel, featureBranch: this.feature },
      lanes: [],
    });
    this.startedAt = record.startedAt;
    for (const s of readQuantum(this.folder)?.doc?.data.stories ?? []) this.expected.set(s.id, s.status);
    this.sentinels = new SentinelWatcher(
      this.folder,
      { runId: this.runId, startedAt: this.startedAt },
      this.timing.sentinelPollMs,
    );
    this.sentinels.on('change', () => this.poke());
    const onAbort = () => this.poke();
    o.signal?.addEventListener('abort', onAbort);
    this.emit({
      type: 'runStarted',
      runId: this.runId,
      folder: this.folder,
      source: `quantum.json (parallel, up to ${this.maxParallel} lanes, feature branch ${this.feature})`,
      agent,
      maxIterations,
      gates: this.gates?.commands ?? {},
      maxCostUsd: maxCost,
      pid: process.pid,
    });
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
        await this.reserveReady;
        await this.reserve?.release();
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
    await this.mergeChain;
    // Trees are removed off the lanes' critical path; none is left behind when the run ends.
    await Promise.all(this.removing.values());
    await this.dispatcher.close?.().catch(this.warn('could not close the lane dispatcher'));
    await this.guardMain();
    // A lane's agent could have forged this folder's status / next answers or parse caches in the user's cache.
    removeFolderCaches(this.folder);
    const progress = this.progress();
    const facts = {
      end,
      iterations: this.iterations,
      costUsd: this.cost,
      done: progress.done,
      total: progress.total,
      storageFailure: this.storageFailure,
    };
    const recorded = await recordRunEnd(
      this.folder,
      this.runId,
      facts,
      async () => {
        await this.reserveReady;
        return this.reserve?.release();
      },
      (message) => this.emit({ type: 'warning', message }),
      { lanes: [] },
    );
    this.emit(recorded.ended);
    return runResult(this.runId, facts, recorded);
  }

  /** The feature branch: quantum.json's `branchName` (checked out, created from HEAD when missing), else the branch checked out now. */
  private async useFeatureBranch(): Promise<void> {
    const want = readQuantum(this.folder)?.doc?.data.branchName?.trim();
    const current = this.repo?.branch ?? (await git(this.folder, ['rev-parse', '--abbrev-ref', 'HEAD'])).stdout.trim();
    if (want && want !== current) {
      const exists =
        (await git(this.folder, ['rev-parse', '--verify', '-q', `refs/heads/${want}`], { reject: false })).exitCode ===
        0;
      await git(this.folder, exists ? ['checkout', '-q', want] : ['checkout', '-q', '-b', want]);
      this.emit({
        type: 'warning',
        message: `checked out the feature branch ${want} (quantum.json branchName)${exists ? '' : ', created from ' + current}`,
      });
    }
    this.feature = want || current;
    if (this.feature === 'HEAD')
      throw new EngineRefusal(
        'A parallel run needs a branch checked out (HEAD is detached): check out the feature branch, or set quantum.json "branchName".',
      );
    this.dispatcher = await pickDispatcher(this.o.config, this.folder, this.feature, this.runId, (message) =>
      this.emit({ type: 'warning', message }),
    );
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
    await this.mergeChain;
  }

  /** STOP and PAUSE of the run, passed on to every lane's own run folder (each lane engine watches its own). */
  private async mirrorSentinels(stop: boolean, pause: boolean): Promise<void> {
    for (const l of this.lanes.values()) {
      const dir = ralphRunDir(l.tree, this.runId);
      if (!existsSync(dir)) continue;
      const stopFile = path.join(dir, 'STOP');
      const pauseFile = path.join(dir, 'PAUSE');
      if (stop && !existsSync(stopFile))
        await writeFile(stopFile, 'the parallel run stops\n').catch(
          this.warn(`could not pass STOP to lane ${l.index}`),
        );
      if (pause && !existsSync(pauseFile))
        await writeFile(pauseFile, 'the parallel run is paused\n').catch(
          this.warn(`could not pass PAUSE to lane ${l.index}`),
        );
      if (!pause && existsSync(pauseFile)) await rm(pauseFile, { force: true });
    }
  }

  /** The lowest lane number not in use (a lane waiting for its merge keeps its number until its `laneMerge`). */
  private freeIndex(reserved: ReadonlySet<number>): number {
    const taken = new Set(this.starting.values());
    for (let i = 1; ; i++) if (!this.lanes.has(i) && !reserved.has(i) && !taken.has(i)) return i;
  }

  private lanesWrite: Promise<void> = Promise.resolve();
  private lanesWriteQueued: Promise<void> | null = null;
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

  /**
   * Writes run.json `lanes[]`; one write at a time, each taking the lanes as they are when it runs (never an older
   * view last). Calls made while a write waits to start share it (one write for a burst of changes).
   */
  private writeLanes(): Promise<void> {
    if (this.lanesWriteQueued) return this.lanesWriteQueued;
    const next = this.lanesWrite.then(() => {
      this.lanesWriteQueued = null;
      return this.writeLanesNow();
    });
    this.lanesWriteQueued = next;
    this.lanesWrite = next;
    return next;
  }

  private async writeLanesNow(): Promise<void> {
    const lanes = [...this.lanes.values()].map((l) => ({
      lane: l.index,
      item: l.story.id,
      worktree: path.relative(this.folder, l.tree),
      branch: l.branch,
      iteration: l.iteration,
      agentPgid: l.agentPgid,
      agentToken: l.agentToken,
    }));
    await updateRunRecord(this.folder, this.runId, { lanes, iteration: this.iterations, costUsd: this.cost }).catch(
      this.warn('could not write the lanes to run.json'),
    );
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
        // A story started again (a failed attempt) waits for its previous tree to be removed.
        await this.removing.get(id);
        const created = await this.dispatcher.create(id).catch((err: Error) => {
          this.emit({ type: 'warning', message: `could not create the worktree of ${id}: ${err.message}` });
          return null;
        });
        trace(index, id, 'worktreeAdded');
        if (!created) return null;
        // The lane's engine reads the run's own configuration files from its tree's .ralph/ (ignored, never committed).
        for (const name of ['commandPolicy', 'config', 'prompts'] as const) {
          const from = ralphFile(this.folder, name);
          if (existsSync(from))
            await cp(from, ralphFile(created.tree, name), { recursive: true }).catch(
              this.warn(`could not copy .ralph/${path.basename(from)} into ${id}'s worktree`),
            );
        }
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
      const lane: RunningLane = {
        index: m.index,
        story,
        tree: m.created.tree,
        branch: m.created.branch,
        source,
        abort: new AbortController(),
        timedOut: false,
        done: Promise.resolve(),
        iteration: null,
        agentPgid: null,
        agentToken: null,
        settled: false,
        working: true,
        green: null,
      };
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
    await this.writeStarted(
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
    await this.writeLanes();
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
          void this.writeLanes();
          this.poke();
        });
    }
  }

  /** One coordinator write of story `id`'s status (`status`, as `write` records it), in turn with the guard's checks. */
  private writeStatus(id: string, status: string, write: () => Promise<void>): Promise<void> {
    const step = this.mainChain.then(async () => {
      await write();
      this.expected.set(id, status);
    });
    this.mainChain = step.catch(() => undefined);
    return step;
  }

  /** The coordinator's one write marking a round's stories `in_progress` (`write`), in turn with the guard's checks. */
  private writeStarted(ids: readonly string[], write: () => Promise<void>): Promise<void> {
    const step = this.mainChain.then(async () => {
      await write();
      for (const id of ids) this.expected.set(id, 'in_progress');
    });
    this.mainChain = step.catch(() => undefined);
    return step;
  }

  /**
   * Puts back every story status of the main folder's quantum.json that the coordinator did not write (issue 11,
   * breaker-s5 row 36: a lane's agent set `US-002=passed` there), with a `claimPutBack` event naming the stories,
   * what they were set to and the lanes at work. Run before each round, by each lane before it reads its story
   * (LaneStorySource), before each merge and record, and at the end. A quantum.json that cannot be read is left to
   * the run's readers (they refuse it; nothing in it counts).
   */
  private guardMain(): Promise<void> {
    const step = this.mainChain.then(async () => {
      const stories = readQuantum(this.folder)?.doc?.data.stories;
      if (!stories) return;
      const drift = statusDrift(this.expected, stories);
      if (!drift.length) return;
      await putBackStatuses(this.folder, drift);
      const lanes = [...this.lanes.values()].map((l) => `lane ${l.index} (${l.story.id})`);
      for (const d of drift) {
        const item = { source: 'quantum' as const, id: d.id, title: stories.find((s) => s.id === d.id)?.title ?? '' };
        const lane = [...this.lanes.values()].find((l) => l.story.id === d.id);
        this.emit(
          {
            type: 'claimPutBack',
            items: [item],
            reason: `status set to ${d.found} in the main folder's quantum.json by no write of the coordinator${lanes.length ? ` while ${lanes.join(', ')} worked` : ''}; only the coordinator records statuses in a parallel run: back to ${d.expected}`,
          },
          lane?.index ?? 0,
        );
      }
      await this.reportProgress();
    });
    this.mainChain = step.catch(() => undefined);
    return step.catch(this.warn('could not check the main quantum.json for status changes'));
  }

  private activeTrees(): string[] {
    return [...this.lanes.values()].filter((l) => !l.settled).map((l) => path.relative(this.folder, l.tree));
  }

  /** One lane: its engine over its story in its tree, then what its end means (merge, fail, release). */
  private async runLane(lane: RunningLane): Promise<void> {
    const o = this.o;
    await this.reserveReady;
    const signals = [lane.abort.signal, ...(o.signal ? [o.signal] : [])];
    const options: EngineOptions & { lane: EngineLane } = {
      folder: lane.tree,
      config: { ...o.config, notify: '', parallel: false },
      agent: o.agent,
      noGates: o.noGates,
      maxIterations: o.maxIterations ?? o.config.maxIterations,
      maxCostUsd: 0,
      maxWallTimeMs: this.storyTimeoutMs,
      reviewer: o.reviewer,
      continueOnBlocked: true,
      agentEnv: o.agentEnv,
      timing: o.timing,
      signal: AbortSignal.any(signals),
      runId: this.runId,
      lane: {
        index: lane.index,
        stateRoot: this.folder,
        source: lane.source,
        actor: this.actor,
        nextIteration: () => ++this.iterations,
        onAgent: (pid, token) => {
          lane.agentPgid = pid;
          lane.agentToken = token;
          void this.writeLanes();
        },
        onGreenTree: (green) => {
          lane.green = green;
        },
        reserve: this.reserve,
      },
    };
    // A dispatcher that runs lanes elsewhere (remote/bullmqDispatcher.ts) gives the engine; else the lane runs here.
    const engine = this.dispatcher.lane?.(options, lane.story) ?? new Lane(options);
    // The lane's engine starts in its turn (startTurn) and lets the next lane start once its agent runs.
    let endTurn: (() => void) | null = null;
    engine.on('event', (e) => {
      trace(lane.index, lane.story.id, `event:${e.type}`);
      if (e.type === 'agentStarted') {
        endTurn?.();
        // A tree seen green before this agent (a reviewer after the final gate) says nothing about the tree after it.
        lane.green = null;
      }
      this.fromLane(lane, e);
    });
    let timer: NodeJS.Timeout | undefined;
    let result: { state: RunResult['state']; reason: string; storageFailure?: string };
    try {
      endTurn = await this.startTurn();
      // The story's time (storyTimeoutMs) counts from its turn, not from the wait for it.
      timer = setTimeout(() => {
        lane.timedOut = true;
        lane.abort.abort();
      }, this.storyTimeoutMs);
      // A STOP that came while this lane waited for its turn never reached it (mirrorSentinels writes only into lanes'
      // existing run folders): the run is ending, and the lane starts no iteration; its story goes back (release).
      if (!this.runEnding && this.sentinels.check().stop.length) this.runEnding = true;
      if (this.runEnding) lane.abort.abort();
      result = await engine.run();
    } catch (err) {
      result = { state: 'failed', reason: (err as Error).message };
    } finally {
      clearTimeout(timer);
      endTurn?.();
    }
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
    // In the lane's own tree, so outside the merge chain: what the agent left uncommitted goes onto its branch.
    // The tree as the lane saw it after its last agent, when its final gate was a repeat (no agent ran since: an
    // agent's start clears `green`), saves the git status of the leftovers check, in a PID namespace only
    // (decide.ts greenTreeStandsForLeftovers).
    const green = lane.green;
    const changed = greenTreeStandsForLeftovers(resolveContainment(this.o.config.containment).kind, green !== null)
      ? treeStatePaths(green!.state)
      : undefined;
    await this.dispatcher
      .saveLeftovers(lane.story.id, `ralph: ${lane.story.id}: work the lane left uncommitted`, changed)
      .catch(this.warn(`could not commit what the lane of ${lane.story.id} left`));
    trace(lane.index, lane.story.id, 'leftoversSaved');
    // One merge at a time: the lanes' merges, gates and records go through one chain; lanes waiting at the same
    // time are merged as a batch under one feature gate (endBatch).
    await new Promise<void>((resolve, reject) => {
      this.mergeQueue.push({ lane, d, resolve, reject });
      this.scheduleMerges();
    });
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

  /** A lane's engine is starting (its turn, {@link startTurn}). */
  private turnTaken = false;
  /** Lanes waiting for their turn to start, in the order they came. */
  private readonly turnWaiters: (() => void)[] = [];

  /**
   * Waits for this lane's turn to start its engine, and resolves with the function that ends the turn (idempotent):
   * called when its first agent has started, or when its engine returned without one. Lane engines start one at a
   * time (issue 19 bench, session 11): an engine's start (records under locks, the claim baseline, the agent's spawn)
   * is work on this process's one thread, so four lanes started at once all got their agents late, together, and
   * their later ends and starts collided again; in turn, the first agents start at once and the lanes' transitions
   * spread out over the others' agent time (the 4-lane bench: −5 % wall time). Creating the worktrees (git, seconds
   * in a large repository) is not in the turn: a round's trees are made at once.
   */
  private async startTurn(): Promise<() => void> {
    if (this.turnTaken) await new Promise<void>((resolve) => this.turnWaiters.push(resolve));
    this.turnTaken = true;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      const next = this.turnWaiters.shift();
      if (next) next();
      else this.turnTaken = false;
    };
  }

  /** Lanes waiting for the merge slot, in the order they came. */
  private readonly mergeQueue: {
    lane: RunningLane;
    d: ReturnType<typeof decideLaneEnd>;
    resolve: () => void;
    reject: (err: unknown) => void;
  }[] = [];
  private merging = false;

  /** Starts the merge drainer on the merge chain unless it runs (it takes every lane queued meanwhile). */
  private scheduleMerges(): void {
    if (this.merging) return;
    this.merging = true;
    this.mergeChain = this.mergeChain.then(
      () => this.drainMerges(),
      () => this.drainMerges(),
    );
  }

  /**
   * Ends the queued lanes until none waits: what waits at the same moment is one batch; its lanes to merge go
   * through {@link endBatch} when there are several, the others through {@link endLane} one by one. Never throws (each
   * lane's error goes to its own waiter); `merging` goes false in the same step as the last look at the queue.
   */
  private async drainMerges(): Promise<void> {
    while (this.mergeQueue.length) {
      const batch = this.mergeQueue.splice(0);
      const merges = batch.filter((b) => b.d.kind === 'merge');
      for (const b of batch) {
        if (b.d.kind === 'merge' && merges.length > 1) continue;
        await this.endLane(b.lane, b.d).then(b.resolve, b.reject);
      }
      if (merges.length > 1)
        await this.endBatch(merges.map((b) => b.lane)).then(
          () => {
            for (const b of merges) b.resolve();
          },
          (err) => {
            for (const b of merges) b.reject(err);
          },
        );
    }
    this.merging = false;
  }

  /**
   * Merges several verified lanes' branches one after another, then runs the feature branch's gate once
   * (decide.ts `decideMergeBatch`): a conflict fails its story at once (as in {@link endLane}); one merge in: the
   * usual gate of {@link endLane}; green: each merged story passed; red: the batch's merges are undone and each story
   * goes through {@link endLane} again (merged and gated alone), so that the right story fails `merge_regression`.
   * Each story's `durationMs`: its merge plus its share of the one gate.
   */
  private async endBatch(lanes: readonly RunningLane[]): Promise<void> {
    const merged: { lane: RunningLane; outcome: Extract<MergeOutcome, { kind: 'merged' }>; ms: number }[] = [];
    for (const lane of lanes) {
      trace(lane.index, lane.story.id, 'mergeSlot');
      const t0 = Date.now();
      const m = await this.dispatcher.merge(lane.story.id);
      trace(lane.index, lane.story.id, 'merged');
      if (m.kind === 'merged') {
        merged.push({ lane, outcome: m, ms: Date.now() - t0 });
        continue;
      }
      const f = decideMerge({ merge: m, gate: null });
      if (f.kind !== 'fail') continue;
      await this.recordEnd(
        lane,
        { kind: 'merge' },
        { kind: 'failed', phase: f.phase, reason: f.reason, ...(f.files ? { files: f.files } : {}) },
        'conflict',
        f.files,
        Date.now() - t0,
        false,
      );
    }
    if (merged.length === 1) {
      const only = merged[0]!;
      await this.gateAndRecord(only.lane, only.outcome, Date.now() - only.ms);
      return;
    }
    if (!merged.length) return;
    const t0 = Date.now();
    for (const m of merged) trace(m.lane.index, m.lane.story.id, 'featureGateRuns');
    const gate = await this.featureGate(merged[merged.length - 1]!.lane);
    const share = Math.round((Date.now() - t0) / merged.length);
    const b = decideMergeBatch({ merged: merged.length, gate });
    if (b.kind === 'oneByOne') {
      await this.dispatcher.undoMerge(merged[0]!.outcome.before);
      this.emit({
        type: 'warning',
        message: `the feature branch's gate is red after merging ${merged.map((m) => m.lane.story.id).join(', ')} together: merged again one at a time to find the story that broke it`,
      });
      for (const m of merged) await this.endLane(m.lane, { kind: 'merge' });
      return;
    }
    for (const m of merged)
      await this.recordEnd(
        m.lane,
        { kind: 'merge' },
        { kind: 'passed' },
        'merged',
        undefined,
        m.ms + share,
        false,
        merged.length,
      );
  }

  /** Merges (or not), runs the feature branch's gate after a merge, records the story and reports the lane's end. */
  private async endLane(lane: RunningLane, d: ReturnType<typeof decideLaneEnd>): Promise<void> {
    const id = lane.story.id;
    trace(lane.index, id, 'mergeSlot');
    if (d.kind === 'merge') {
      const t0 = Date.now();
      const merged = await this.dispatcher.merge(id);
      trace(lane.index, id, 'merged');
      if (merged.kind === 'merged') return this.gateAndRecord(lane, merged, t0);
      const m = decideMerge({ merge: merged, gate: null });
      if (m.kind === 'fail')
        return this.recordEnd(
          lane,
          d,
          { kind: 'failed', phase: m.phase, reason: m.reason, ...(m.files ? { files: m.files } : {}) },
          'conflict',
          m.files,
          Date.now() - t0,
          false,
        );
      return this.recordEnd(lane, d, { kind: 'passed' }, 'merged', undefined, Date.now() - t0, false);
    }
    if (d.kind === 'release') return this.recordEnd(lane, d, { kind: 'released' }, 'released', undefined, 0, false);
    return this.recordEnd(lane, d, { kind: 'failed', phase: d.phase, reason: d.reason }, 'failed', undefined, 0, false);
  }

  /**
   * After one story's merge went in (`merged`, begun at `t0`): the feature branch's gate, unless the lane's green gate
   * already ran that command on the tree the merge made; a red gate undoes the merge (`merge_regression`); then the record.
   */
  private async gateAndRecord(
    lane: RunningLane,
    merged: Extract<MergeOutcome, { kind: 'merged' }>,
    t0: number,
  ): Promise<void> {
    const repeated = await this.featureGateRepeated(lane);
    trace(lane.index, lane.story.id, repeated ? 'featureGateSkipped' : 'featureGateRuns');
    const gate = !repeated ? await this.featureGate(lane) : null;
    const m = decideMerge({ merge: merged, gate });
    if (m.kind === 'fail' && m.undo) await this.dispatcher.undoMerge(merged.before);
    const durationMs = Date.now() - t0;
    if (m.kind === 'passed')
      return this.recordEnd(lane, { kind: 'merge' }, { kind: 'passed' }, 'merged', undefined, durationMs, repeated);
    return this.recordEnd(
      lane,
      { kind: 'merge' },
      { kind: 'failed', phase: m.phase, reason: m.reason, ...(m.files ? { files: m.files } : {}) },
      m.phase === 'merge_conflict' ? 'conflict' : 'regression',
      m.files,
      durationMs,
      repeated,
    );
  }

  /**
   * Records a lane's story end in the main quantum.json and reports it (`laneMerge`, then `verified` or
   * `itemBlocked`). `batch`: the number of stories merged under one feature gate (endBatch), for the reason text.
   */
  private async recordEnd(
    lane: RunningLane,
    d: ReturnType<typeof decideLaneEnd>,
    end: StoryEnd,
    outcome: 'merged' | 'conflict' | 'regression' | 'failed' | 'released',
    files: string[] | undefined,
    durationMs: number,
    repeated: boolean,
    batch = 1,
  ): Promise<void> {
    const id = lane.story.id;
    lane.settled = true;
    const others = this.activeTrees();
    removeFolderCaches(this.folder);
    trace(lane.index, id, 'featureGateDone');
    await this.guardMain();
    await this.writeStatus(id, end.kind === 'passed' ? 'passed' : end.kind === 'failed' ? 'failed' : 'pending', () =>
      laneEnded(this.folder, id, end, others),
    );
    trace(lane.index, id, 'recorded');
    const how = repeated
      ? ' (the same gate passed on this same tree in the lane: not run again)'
      : batch > 1
        ? ` (with ${batch - 1} other stor${batch === 2 ? 'y' : 'ies'} under one run of the feature branch's gate)`
        : '';
    const reason =
      end.kind === 'passed'
        ? `merged into ${this.feature}${how}`
        : end.kind === 'released'
          ? d.kind === 'release'
            ? d.reason
            : ''
          : end.reason;
    this.emit(
      {
        type: 'laneMerge',
        item: lane.story,
        branch: laneBranch(id),
        outcome,
        reason,
        ...(files ? { files } : {}),
        durationMs,
      },
      lane.index,
    );
    if (end.kind === 'passed')
      this.emit(
        {
          type: 'verified',
          item: lane.story,
          tier: this.gates ? (gateCommandFor(this.gates, 'final')?.tier ?? null) : null,
        },
        lane.index,
      );
    else if (end.kind === 'failed')
      this.emit({ type: 'itemBlocked', item: lane.story, reason: `${end.phase}: ${end.reason}` }, lane.index);
    await this.reportProgress();
  }

  /**
   * Would the feature branch's gate repeat the lane's last green gate (decide.ts `featureGateRepeats`)? One git call
   * (the merged tree and the green commit's tree), made only when the commands match and the lane's tree was clean.
   */
  private async featureGateRepeated(lane: RunningLane): Promise<boolean> {
    const featureCommand = this.gates ? (gateCommandFor(this.gates, 'final')?.command ?? null) : null;
    const commit = cleanCommitOf(lane.green?.state ?? null);
    if (!lane.green || !commit || featureCommand !== lane.green.command) return false;
    const r = await git(this.folder, ['rev-parse', 'HEAD^{tree}', `${commit}^{tree}`], { reject: false });
    const [mergedTree = null, greenTree = null] = r.exitCode === 0 ? r.stdout.trim().split('\n') : [];
    return featureGateRepeats({ featureCommand, laneGreen: lane.green, mergedTree, greenTree });
  }

  /** The feature branch's gate after a merge (the final tier, else the next one there is), in the folder itself. */
  private async featureGate(lane: RunningLane): Promise<{ passed: boolean; reason: string } | null> {
    if (!this.gates) return null;
    const g = gateCommandFor(this.gates, 'final');
    if (!g) return null;
    this.emit({ type: 'gateStarted', tier: g.tier, command: g.command }, lane.index);
    const r = await runGateExclusive({
      folder: this.folder,
      label: g.tier,
      command: g.command,
      timeoutMs: this.timing.gateTimeoutMs,
      killGraceMs: this.timing.killGraceMs,
      containment: this.o.config.containment,
    });
    this.emit(
      {
        type: 'gateResult',
        tier: g.tier as GateTier,
        command: g.command,
        exitCode: r.exitCode,
        durationMs: r.durationMs,
        passed: r.exitCode === 0,
        logPath: r.logRelPath,
        failingLines: r.failingLines,
      },
      lane.index,
    );
    return {
      passed: r.exitCode === 0,
      reason: `${g.tier} gate exit ${r.exitCode}: ${r.failingLines.slice(0, 3).join(' | ') || r.tail.slice(-3).join(' | ') || 'no output'}`,
    };
  }

  /** A lane's event, passed on with its lane; the lane's own run start, end and progress are the coordinator's to report. */
  private fromLane(lane: RunningLane, e: EngineEvent): void {
    if (e.type === 'runStarted' || e.type === 'runEnded' || e.type === 'progress' || e.type === 'verified') return;
    if (e.type === 'iterationStarted') lane.iteration = e.iteration;
    if (e.type === 'iterationEnded') {
      this.cost += e.totals.costUsd;
      lane.agentPgid = null;
      lane.agentToken = null;
      void this.writeLanes();
      this.poke();
    }
    this.emit(e, lane.index);
  }

  private progress(): { done: number; total: number } {
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
