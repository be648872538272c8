import { EventEmitter } from 'node:events';
import { rm, stat } from 'node:fs/promises';
import * as path from 'node:path';
import { guardGapWarning } from '../../agents/guardSupport';
import { getAdapter } from '../../agents/registry';
import { createRunRecord, newRunId, updateRunRecord } from '../../control/runRecords';
import { ralphRunDir, type SentinelCheck } from '../../control/sentinels';
import { startGuardServer, type GuardServer } from '../../gates/guardServer';
import { ensureHandoff } from '../../gates/handoff';
import { ralphFile } from '../../model/ralphPaths';
import type { SpaceReserve } from '../../store/storageFailure';
import { type TokenCounts, zeroTokens, addTokens } from '../../stream/events';
import { recoverCrashedRuns, skippedRunRecords } from '../crashRecovery';
import type { EngineEvent } from '../events';
import { ensureRalphIgnored } from '../git';
import {
  engineErrorEnd,
  holdFolderLock,
  makeRunReserve,
  recordRunEnd,
  recoverFolder,
  recoveryWarnings,
  refuseReadOnly,
  runResult,
  startRunFolder,
} from '../runShell';
import { EngineRefusal, timingFromConfig, type EngineOptions, type EngineTiming, type RunResult } from '../runOptions';
import { SentinelWatcher } from '../sentinelWatcher';
import { TaskFileStash, type RestoredFile } from '../taskFileStash';
import { availableSources } from '../workSource';
import { act } from './actions';
import { runAgentIteration, type IterationContext, type IterationOutcome, type RunRecordPatch } from './agentIteration';
import { AgentRoster } from './agentRoster';
import { ClaimBook } from './claimBook';
import { decide } from './decide';
import type { AgentAsk, LaneContext, LaneFacts } from './laneContext';
import { notify, readAnswer, reportProgress } from './laneIO';
import { prepareLane, type LaneSetup } from './laneSetup';
import {
  initialLaneState,
  initialRunState,
  type Action,
  type LaneState,
  type Observation,
  type RunEnd,
} from './phases';

/**
 * A lane: the loop of one item at a time in one working tree. It picks work from a task source, runs one agent
 * process per iteration (lane/agentIteration.ts), verifies every claimed completion with a gate before recording it,
 * retries with every earlier failure in the prompt, runs the final gate (and optionally a reviewer), honours PAUSE /
 * STOP / stop-requested within the iteration, backs off on rate limits, and stops on caps and stalls. The rules are
 * lane/decide.ts `decide` over the phase table (lane/phases.ts); each action is one handler (lane/actions.ts); the
 * claim baseline is the claim book (lane/claimBook.ts).
 *
 * It only emits {@link EngineEvent}s; run records, the activity log and the UIs are consumers (see recorder.ts).
 * Every agent process is owned: on rotate, stop or cancel its group gets SIGTERM, then SIGKILL after the grace,
 * and the lane waits for it before going on.
 */
export class Lane extends EventEmitter<{ event: [event: EngineEvent, lane?: number] }> {
  readonly runId: string;
  private readonly timing: EngineTiming;
  private readonly folder: string;
  private sentinels: SentinelWatcher | undefined;
  private iteration = 0;
  private cost = 0;
  private tokens: TokenCounts = zeroTokens();
  /** The task files' content at each agent start; none in a parallel run's lane (the coordinator owns quantum.json). */
  private readonly stash: TaskFileStash | null;
  private laneState: LaneState = initialLaneState(0);
  private stopNoted = false;
  /** When the STOP now in force was first seen (ms since the epoch), for the watchdog's STOP grace. */
  private stopRequestedAt: number | null = null;
  private pauseNoted = false;
  /** Project settings files already reported as changed (one warning per file and run). */
  private readonly agentConfigWarned = new Set<string>();
  /** The run's agents in failover order and the usage limits they hit. */
  private readonly roster: AgentRoster;
  private readonly book: ClaimBook;
  private readonly facts: LaneFacts = {
    work: null,
    review: null,
    current: null,
    setAside: new Map(),
    firstItem: undefined,
    lastDone: null,
    lastGreen: null,
    lastProgress: '',
  };
  /** The run's command guard (claude only), stopped when the run ends. */
  private guard: GuardServer | null = null;
  /** What the run settled before it started; its context once running. */
  private setup: LaneSetup | null = null;
  private cx: LaneContext | null = null;

  constructor(private readonly o: EngineOptions) {
    super();
    this.folder = path.resolve(o.folder);
    this.stash = o.lane ? null : new TaskFileStash(this.folder);
    this.runId = o.runId ?? newRunId();
    this.timing = { ...timingFromConfig(o.config), ...o.timing };
    this.roster = new AgentRoster(o.config, this.folder, (e) => this.emitEvent(e));
    this.book = new ClaimBook({
      folder: this.folder,
      runId: this.runId,
      record: (patch) => this.record(patch),
      emit: (e) => this.emitEvent(e),
      warn: (what) => this.warn(what),
      shown: (text) => text.split(this.folder + path.sep).join(''),
      progress: () => reportProgress(this.cx!, false),
    });
  }

  private emitEvent(e: EngineEvent): void {
    this.emit('event', e);
  }

  /** Writes fields of the run's record: the one place the lane reaches run.json. */
  private record(patch: RunRecordPatch): Promise<void> {
    return updateRunRecord(this.folder, this.runId, patch).then(() => undefined);
  }

  /** Reports an error the run survives as a `warning` event (never swallowed). */
  private warn(what: string): (err: unknown) => void {
    return (err: unknown) =>
      this.emitEvent({ type: 'warning', message: `${what}: ${err instanceof Error ? err.message : String(err)}` });
  }

  /** The folder of the run's shared files: the folder itself, or a parallel run's main folder. */
  private get stateRoot(): string {
    return this.o.lane?.stateRoot ?? this.folder;
  }

  private get cancelled(): boolean {
    return this.o.signal?.aborted ?? false;
  }

  /** Runs the loop to its end. Throws {@link EngineRefusal} before starting when it cannot run. */
  async run(): Promise<RunResult> {
    this.setup = await prepareLane(this.folder, this.o, this.roster);
    this.facts.firstItem = this.setup.firstItem;
    // A .ralph/ we may not write (by its mode bits: root ignores them) is refused up front.
    refuseReadOnly(this.folder);
    const releaseLock = await holdFolderLock(this.folder, (message) => this.emitEvent({ type: 'warning', message }));
    try {
      return await this.runLocked(this.setup);
    } finally {
      await this.guard?.close().catch(this.warn('could not close the command guard'));
      await releaseLock().catch(this.warn('could not release the engine lock'));
    }
  }

  private async runLocked(s: LaneSetup): Promise<RunResult> {
    await this.removeStaleStopRequest();
    // A crashed run may have worked on another source of this folder: recovery looks at all of them.
    const candidates = availableSources({ folder: this.folder, actor: s.actor });
    // A run of a task file outside the usual names (a resume brief) recovers its own file too.
    if (!candidates.some((c) => c.kind === s.source.kind && c.label === s.source.label)) candidates.push(s.source);
    const warn = (message: string) => this.emitEvent({ type: 'warning', message });
    if (!this.o.lane)
      await recoverFolder(
        this.folder,
        { runId: this.runId, sources: candidates, killGraceMs: this.timing.killGraceMs },
        warn,
      );
    else {
      // A lane recovers only its own tree's runs; the coordinator holds the folder's lock and settles every mirror.
      const recovered = await recoverCrashedRuns(this.folder, candidates, this.timing.killGraceMs, {
        ownRunId: this.runId,
      });
      for (const w of recoveryWarnings(recovered, skippedRunRecords(this.folder))) warn(w);
    }
    await startRunFolder(this.folder, this.runId, this.o.config, warn);
    // A parallel run's lane uses its run's one reserve (the coordinator's), not a 1 MiB file of its own per story.
    const lane = this.o.lane;
    const reserve = lane ? (lane.reserve ?? null) : await makeRunReserve(this.folder, this.runId, warn);
    try {
      return await this.runStarted(s, reserve);
    } finally {
      if (!lane) await reserve?.release();
    }
  }

  private async runStarted(s: LaneSetup, reserve: SpaceReserve | null): Promise<RunResult> {
    const o = this.o;
    const source = s.source;
    // The command guard of this run: the agents that run ralph's hook get it (claude through --settings, the others
    // through their own settings: AgentAdapter.prepareGuard); cursor-agent, opencode and copilot run no hook.
    if (this.roster.agents.some((a) => getAdapter(a).guardHook))
      this.guard = await startGuardServer({
        workspace: this.folder,
        runDir: ralphRunDir(this.folder, this.runId),
        onRecord: (r) => this.emitEvent({ type: 'guard', ...r }),
      }).catch((err: Error) => {
        throw new EngineRefusal(`The command guard could not start: ${err.message}`);
      });
    const maxIterations = o.maxIterations ?? o.config.maxIterations;
    const maxCost = o.maxCostUsd ?? o.config.maxCostUsd;
    const maxWallMs = o.maxWallTimeMs ?? o.config.maxWallTimeMinutes * 60_000;
    const record = await createRunRecord(this.folder, {
      runId: this.runId,
      state: 'running',
      agent: s.adapter.name,
      source: { kind: source.kind, label: source.label },
      config: {
        maxIterations,
        maxCostUsd: maxCost,
        maxWallTimeMs: maxWallMs,
        model: o.config.model,
        noGates: !!o.noGates,
      },
      agentPgid: null,
    });
    // A lane's `.ralph/` is kept out of git by the repository's info/exclude (parallel/dispatcher.ts excludeRunnerFiles).
    if (!o.lane) await ensureRalphIgnored(this.folder).catch(this.warn('could not add .ralph/ to .gitignore'));
    await ensureHandoff(this.folder);
    const sentinels = new SentinelWatcher(
      this.folder,
      { runId: this.runId, startedAt: record.startedAt },
      this.timing.sentinelPollMs,
    );
    this.sentinels = sentinels;
    sentinels.on('change', (c) => this.noteSentinels(c));
    this.noteSentinels(sentinels.state);
    this.emitEvent({
      type: 'runStarted',
      runId: this.runId,
      folder: this.folder,
      source: source.label,
      agent: s.adapter.name,
      maxIterations,
      gates: s.gates?.commands ?? {},
      maxCostUsd: maxCost,
      pid: process.pid,
    });
    for (const g of s.guardGaps) this.emitEvent({ type: 'warning', message: guardGapWarning(g.agent, g.gap) });
    let runState = initialRunState(
      {
        maxIterations,
        maxCostUsd: maxCost,
        maxWallMs,
        stallLimit: this.timing.stallLimit,
        backoff: this.timing.backoff,
        reviewer: o.reviewer ?? o.config.reviewer,
        continueOnBlocked: o.continueOnBlocked ?? o.config.continueOnBlocked,
        questionTimeoutMs: o.config.questionTimeoutMinutes * 60_000,
      },
      Date.now(),
    );
    const step = (obs: Observation): Action[] => {
      const d = decide(runState, this.laneState, obs);
      runState = d.next.run;
      this.laneState = d.next.lane;
      this.cost = runState.costUsd;
      return d.actions;
    };
    const perform = async (actions: Action[]): Promise<RunEnd | null> => {
      for (const a of actions) {
        const end = await act(cx, a);
        if (end) return end;
      }
      return null;
    };
    const cx: LaneContext = {
      folder: this.folder,
      runId: this.runId,
      stateRoot: this.stateRoot,
      lane: o.lane,
      config: o.config,
      timing: this.timing,
      signal: o.signal,
      source,
      gates: s.gates,
      gateFiles: s.gateFiles,
      book: this.book,
      roster: this.roster,
      facts: this.facts,
      runState: () => runState,
      then: (obs) => perform(step(obs)),
      runAgent: (ask) => this.runAgent(ask, runState.costUsd),
      emit: (e) => this.emitEvent(e),
      warn: (what) => this.warn(what),
      shown: (text) => text.split(this.folder + path.sep).join(''),
      record: (patch) => this.record(patch),
      sentinels: () => sentinels.check(),
      stopName: (c) => (c.stop.length ? path.relative(this.folder, c.stop[0]!.file) : null),
      cancelled: () => this.cancelled,
      waitForSentinelChange: (ms, wake) => this.waitForSentinelChange(ms, wake),
      sleep: (ms) => this.sleep(ms),
    };
    this.cx = cx;
    await reportProgress(cx);

    let end: RunEnd;
    let storageFailure: string | null = null;
    try {
      await this.book.open(source);
      end = await this.loop(cx, step, perform);
    } catch (err) {
      ({ end, storageFailure } = engineErrorEnd(err));
      // Free the reserve so the cause and the give-back can be written.
      if (storageFailure) await reserve?.release();
    } finally {
      sentinels.close();
    }
    return this.finish(cx, end, storageFailure, reserve);
  }

  /**
   * The run's end: no exit path leaves an unverified claim behind (what was claimed since the open baseline goes
   * back), the items it held go back unless it completed, the end is recorded, `notify` runs, and the baseline is
   * closed only by the last check, after notify's code ran.
   */
  private async finish(
    cx: LaneContext,
    end: RunEnd,
    storageFailure: string | null,
    reserve: SpaceReserve | null,
  ): Promise<RunResult> {
    const source = cx.source;
    let settled = false;
    if (this.book.baseline)
      settled = await this.book.putBackAtEnd(source, `the run ended ${end.state} before a gate verified it`);
    if (end.state !== 'completed') {
      for (const item of [...(this.facts.current ? [this.facts.current] : []), ...this.facts.setAside.values()]) {
        await source
          .release(item)
          .catch((err: Error) =>
            this.emitEvent({ type: 'warning', message: `could not give ${item.id} back: ${err.message}` }),
          );
      }
    }
    const progress = await source.progress().catch((err: unknown) => {
      this.warn('could not read the final progress')(err);
      return { done: 0, total: 0 };
    });
    const facts = {
      end,
      iterations: this.iteration,
      costUsd: this.cost,
      tokens: this.tokens,
      done: progress.done,
      total: progress.total,
      storageFailure,
    };
    const recorded = await recordRunEnd(
      this.folder,
      this.runId,
      facts,
      async () => reserve?.release(),
      (message) => this.emitEvent({ type: 'warning', message }),
    );
    // Notified before the event is logged, so a follower that stops at runEnded sees how the notification went.
    await notify(
      cx,
      recorded.ended,
      `Ralph run ${this.runId} ${end.state}: ${end.reason} (${progress.done}/${progress.total} done, $${this.cost.toFixed(4)})`,
    );
    // The run's last check comes after its last child (notify's code ran after the put-back): what became done, or
    // was marked, while the end's notify ran goes back too; then the baseline is closed.
    if (
      settled &&
      (await this.book.putBackAtEnd(
        source,
        `it became done while notify ran at the run's end (after the run's last gate)`,
      ))
    )
      await this.book.close();
    this.emitEvent(recorded.ended);
    return runResult(this.runId, facts, recorded);
  }

  /** Observes before each turn, asks {@link decide}, performs the actions, until an `end`. */
  private async loop(
    cx: LaneContext,
    step: (obs: Observation) => Action[],
    perform: (actions: Action[]) => Promise<RunEnd | null>,
  ): Promise<RunEnd> {
    let first = true;
    for (;;) {
      // Woken early by STOP or cancel, the sleep returns at once; the decision then ends the run.
      if (!first) await this.sleep(this.timing.betweenIterationsMs);
      first = false;
      const c = cx.sentinels();
      const answer = this.laneState.waiting ? await readAnswer(cx, this.laneState.waiting.id) : null;
      const answers: Record<string, string> = {};
      for (const q of cx.runState().asked) {
        const text = await readAnswer(cx, q.id);
        if (text !== null) answers[q.id] = text;
      }
      const end = await perform(
        step({
          kind: 'beforeIteration',
          cancelled: this.cancelled,
          stop: cx.stopName(c),
          pause: c.pause.length > 0,
          now: Date.now(),
          answer,
          answers,
        }),
      );
      if (end) return end;
    }
  }

  /**
   * A `.ralph/stop-requested` older than this run was meant for an earlier one: it never stops this run (the
   * sentinel rules), and left in place it would tell the agent to yield after every commit. It is removed, with a
   * warning (seed-systems.md §3.15-9 is the opposite failure: a fresh request lost).
   */
  private async removeStaleStopRequest(): Promise<void> {
    const file = ralphFile(this.folder, 'stopRequested');
    const st = await stat(file).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') this.warn('could not look at .ralph/stop-requested')(err);
      return null;
    });
    if (!st) return;
    await rm(file, { force: true });
    this.emitEvent({
      type: 'warning',
      message: `removed .ralph/stop-requested from ${st.mtime.toISOString()}: it predates this run`,
    });
  }

  private noteSentinels(c: SentinelCheck): void {
    if (c.stop.length && !this.stopNoted) {
      this.stopNoted = true;
      this.stopRequestedAt = Date.now();
      this.emitEvent({
        type: 'stopRequested',
        file: c.stop[0]!.file,
        graceful: c.stop.some((h) => h.file.endsWith('stop-requested')),
      });
    }
    if (!c.stop.length) {
      this.stopNoted = false;
      this.stopRequestedAt = null;
    }
    if (c.pause.length && !this.pauseNoted) {
      this.pauseNoted = true;
      this.emitEvent({ type: 'pauseRequested', file: c.pause[0]!.file });
    }
    if (!c.pause.length) this.pauseNoted = false;
  }

  /**
   * Waits up to `ms`, waking early when `wake` says so for a sentinel change, or on cancel. Every listener and timer
   * is removed whichever comes first (a long pause polls this every second for hours). Resolves true on timeout.
   */
  private waitForSentinelChange(ms: number, wake: (c: SentinelCheck) => boolean = () => true): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      const done = (timedOut: boolean) => {
        clearTimeout(t);
        this.sentinels?.off('change', onChange);
        this.o.signal?.removeEventListener('abort', onAbort);
        resolve(timedOut);
      };
      const t = setTimeout(() => done(true), ms);
      const onChange = (c: SentinelCheck) => {
        if (wake(c)) done(false);
      };
      const onAbort = () => done(false);
      this.sentinels?.on('change', onChange);
      this.o.signal?.addEventListener('abort', onAbort);
    });
  }

  /** Sleeps, waking early on STOP or cancel. Returns false when woken by one. */
  private async sleep(ms: number): Promise<boolean> {
    if (this.cancelled || (this.sentinels?.check().stop.length ?? 0) > 0) return false;
    if (ms <= 0) return true;
    return (await this.waitForSentinelChange(ms, (c) => c.stop.length > 0)) && !this.cancelled;
  }

  /**
   * After agent process `n`: a task file it left unreadable (a duplicate key, a JSON error, a checklist that cannot
   * be read) is moved aside into the run folder and its content at the agent's start written back, with a
   * `fileRestored` event per file (taskFileStash.ts). Before any claim is read: nothing in it stays done.
   */
  private restoreTaskFiles(n: number): void {
    if (!this.stash) return;
    const dir = path.join(ralphRunDir(this.folder, this.runId), 'rejected', `iter-${String(n).padStart(3, '0')}`);
    let restored: RestoredFile[] = [];
    try {
      restored = this.stash.restoreUnreadable(dir);
    } catch (err) {
      this.warn(`iteration ${n}: could not restore a task file the agent left unreadable`)(err);
    }
    for (const r of restored)
      this.emitEvent({ type: 'fileRestored', file: r.file, aside: r.aside, problem: r.problem });
  }

  /** What one agent iteration needs of this lane (agentIteration.ts). */
  private iterationContext(): IterationContext {
    const s = this.setup!;
    return {
      folder: this.folder,
      runId: this.runId,
      stateRoot: this.stateRoot,
      config: this.o.config,
      agentEnv: this.o.agentEnv,
      signal: this.o.signal,
      timing: this.timing,
      actor: s.actor,
      guardSettings: this.guard?.settings,
      commandPolicy: s.policy,
      gates: s.gates,
      agentConfigAtStart: s.agentConfigAtStart,
      agentConfigWarned: this.agentConfigWarned,
      stash: this.stash,
      stopRequestedAt: () => this.stopRequestedAt,
      onAgent: this.o.lane?.onAgent,
      emitEvent: (e) => this.emitEvent(e),
      warn: (what) => this.warn(what),
      markChildStart: (also) => this.book.markChildStart(also),
      markChildEnd: (before, who, when, also) => this.book.markChildEnd(before, who, when, also),
      restoreTaskFiles: (n) => this.restoreTaskFiles(n),
    };
  }

  /** One iteration: numbered (over every lane of a parallel run), its agent picked, run, its totals kept. */
  private async runAgent(ask: AgentAsk, costBefore: number): Promise<IterationOutcome> {
    this.iteration = this.o.lane ? this.o.lane.nextIteration() : this.iteration + 1;
    this.facts.lastGreen = null;
    const agent = this.roster.next();
    const out = await runAgentIteration(this.iterationContext(), {
      n: this.iteration,
      agent,
      source: this.setup!.source,
      costBefore,
      ...ask,
    });
    this.roster.noteExit(agent.name, out.exit.outcome);
    this.cost = out.runCostUsd;
    this.tokens = addTokens(this.tokens, out.tokens);
    return out;
  }
}
