import * as path from 'node:path';
import { ralphRunDir, type SentinelCheck } from '../../control/sentinels';
import { type TokenCounts, zeroTokens, addTokens } from '../../stream/events';
import type { EngineEvent } from '../events';
import { engineErrorEnd } from '../runShell';
import { timingFromConfig, type EngineOptions, type EngineTiming } from '../runOptions';
import type { SentinelWatcher } from '../sentinelWatcher';
import { TaskFileStash, type RestoredFile } from '../taskFileStash';
import { act } from './actions';
import { runAgentIteration, type IterationContext, type IterationOutcome, type RunRecordPatch } from './agentIteration';
import { AgentRoster } from './agentRoster';
import { ClaimBook } from './claimBook';
import { decide } from './decide';
import type { AgentAsk } from './agentIteration';
import type { LaneContext, LaneFacts } from './laneContext';
import { notify, readAnswer, reportProgress } from './laneIO';
import type { LaneSetup } from './laneSetup';
import {
  initialLaneState,
  initialRunState,
  type Action,
  type LaneState,
  type Observation,
  type RunEnd,
} from './phases';

/** What a lane needs of the shell around it (laneRun.ts): its events, and the writes of its run's record. */
export interface LaneHost {
  /** Every event of the lane, in order. */
  emit(e: EngineEvent): void;
  /** Writes fields of the run's record (run.json) and resolves once they are on disk: the shell is its only writer. */
  record(patch: RunRecordPatch): Promise<void>;
}

/** What a lane settled at its end, for the shell's end record (runShell.ts `RunEndFacts`). */
export interface LaneEnd {
  iterations: number;
  /** USD. */
  costUsd: number;
  tokens: TokenCounts;
  done: number;
  total: number;
  /** The claims were settled (the baseline was open): the last put-back, after notify, closes it. */
  settled: boolean;
}

/**
 * A lane: the loop of one item at a time in one working tree. It picks work from a task source, runs one agent
 * process per iteration (lane/agentIteration.ts), verifies every claimed completion with a gate before recording it,
 * retries with every earlier failure in the prompt, runs the final gate (and optionally a reviewer), honours PAUSE /
 * STOP / stop-requested within the iteration, backs off on rate limits, and stops on caps and stalls. The rules are
 * lane/decide.ts `decide` over the phase table (lane/phases.ts); each action is one handler (lane/actions.ts); the
 * claim baseline is the claim book (lane/claimBook.ts).
 *
 * It knows nothing of the run around it: the shell (laneRun.ts) settles its start, holds the lock, writes run.json
 * (the lane asks through {@link LaneHost.record}), watches the sentinels and records the end. It only reports
 * {@link EngineEvent}s; run records, the activity log and the UIs are consumers (see recorder.ts). Every agent process
 * is owned: on rotate, stop or cancel its group gets SIGTERM, then SIGKILL after the grace, and the lane waits for it.
 */
export class Lane {
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
  /** The run's agents in failover order and the usage limits they hit (laneSetup.ts `prepareLane` resolves them). */
  readonly roster: AgentRoster;
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
  /** What the shell settled before the lane ran, the command guard's `--settings`; its context once running. */
  private setup: LaneSetup | null = null;
  private guardSettings: Record<string, unknown> | undefined;
  private cx: LaneContext | null = null;
  /** Fields of run.json the claim book deferred to the lane's next write. */
  private deferred: RunRecordPatch | null = null;

  constructor(
    private readonly o: EngineOptions & { runId: string },
    private readonly host: LaneHost,
  ) {
    this.folder = path.resolve(o.folder);
    this.stash = o.lane ? null : new TaskFileStash(this.folder);
    this.timing = { ...timingFromConfig(o.config), ...o.timing };
    this.roster = new AgentRoster(o.config, this.folder, (e) => host.emit(e));
    this.book = new ClaimBook({
      folder: this.folder,
      runId: o.runId,
      record: (patch) => this.record(patch),
      defer: (patch) => void (this.deferred = { ...this.deferred, ...patch }),
      flush: () => (this.deferred ? this.record({}) : Promise.resolve()),
      emit: (e) => this.host.emit(e),
      warn: (what) => this.warn(what),
      shown: (text) => this.shown(text),
      progress: () => reportProgress(this.cx!, false),
    });
  }

  /**
   * Writes fields of run.json with the fields the claim book deferred ({@link ClaimBook}), in one write; the later
   * value of a field wins. A write the file system fails keeps them deferred and rejects.
   */
  private record(patch: RunRecordPatch): Promise<void> {
    const all = this.deferred ? { ...this.deferred, ...patch } : patch;
    this.deferred = null;
    return this.host.record(all).catch((err: unknown) => {
      // Not written by the file system (a full disk): kept for the next write, under whatever was deferred since. A
      // patch the record refused (a value its schema rejects) is not kept: it would refuse every later write too.
      if (typeof (err as NodeJS.ErrnoException)?.code === 'string') this.deferred = { ...all, ...this.deferred };
      throw err;
    });
  }

  private shown(text: string): string {
    return text.split(this.folder + path.sep).join('');
  }

  /** Reports an error the run survives as a `warning` event (never swallowed). */
  private warn(what: string): (err: unknown) => void {
    return (err: unknown) =>
      this.host.emit({ type: 'warning', message: `${what}: ${err instanceof Error ? err.message : String(err)}` });
  }

  private get cancelled(): boolean {
    return this.o.signal?.aborted ?? false;
  }

  /**
   * Runs the lane's loop: opens the claim baseline, then one turn after another until an end. Never throws: an error
   * no rule covers is an end too (runShell.ts `engineErrorEnd`), with the storage failure it names.
   */
  async run(
    s: LaneSetup,
    sentinels: SentinelWatcher,
    guardSettings: Record<string, unknown> | undefined,
  ): Promise<{ end: RunEnd; storageFailure: string | null }> {
    const o = this.o;
    this.setup = s;
    this.guardSettings = guardSettings;
    this.facts.firstItem = s.firstItem;
    this.sentinels = sentinels;
    sentinels.on('change', (c) => this.noteSentinels(c));
    this.noteSentinels(sentinels.state);
    let runState = initialRunState(
      {
        maxIterations: o.maxIterations ?? o.config.maxIterations,
        maxCostUsd: o.maxCostUsd ?? o.config.maxCostUsd,
        maxWallMs: o.maxWallTimeMs ?? o.config.maxWallTimeMinutes * 60_000,
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
      runId: this.o.runId,
      stateRoot: o.lane?.stateRoot ?? this.folder,
      lane: o.lane,
      config: o.config,
      timing: this.timing,
      signal: o.signal,
      source: s.source,
      gates: s.gates,
      gateFiles: s.gateFiles,
      book: this.book,
      roster: this.roster,
      facts: this.facts,
      runState: () => runState,
      then: (obs) => perform(step(obs)),
      runAgent: (ask) => this.runAgent(ask, runState.costUsd),
      emit: (e) => this.host.emit(e),
      warn: (what) => this.warn(what),
      shown: (text) => this.shown(text),
      record: (patch) => this.record(patch),
      sentinels: () => sentinels.check(),
      stopName: (c) => (c.stop.length ? path.relative(this.folder, c.stop[0]!.file) : null),
      cancelled: () => this.cancelled,
      waitForSentinelChange: (ms, wake) => this.waitForSentinelChange(ms, wake),
      sleep: (ms) => this.sleep(ms),
    };
    this.cx = cx;
    try {
      await reportProgress(cx);
      await this.book.open(s.source);
      const end = await this.loop(cx, step, perform);
      // What the book deferred is on disk before the shell records the end.
      await this.book.flush();
      return { end, storageFailure: null };
    } catch (err) {
      await this.book.flush().catch(this.warn('could not write the claim baseline'));
      return engineErrorEnd(err);
    }
  }

  /**
   * The lane's part of the run's end: what was claimed since the open baseline and no gate verified goes back (no
   * exit path leaves an unverified claim behind), the items it held go back unless it completed, and its counts.
   */
  async settle(end: RunEnd): Promise<LaneEnd> {
    const source = this.cx!.source;
    let settled = false;
    if (this.book.baseline)
      settled = await this.book.putBackAtEnd(source, `the run ended ${end.state} before a gate verified it`);
    if (end.state !== 'completed') {
      for (const item of [...(this.facts.current ? [this.facts.current] : []), ...this.facts.setAside.values()]) {
        await source
          .release(item)
          .catch((err: Error) =>
            this.host.emit({ type: 'warning', message: `could not give ${item.id} back: ${err.message}` }),
          );
      }
    }
    const progress = await source.progress().catch((err: unknown) => {
      this.warn('could not read the final progress')(err);
      return { done: 0, total: 0 };
    });
    return { iterations: this.iteration, costUsd: this.cost, tokens: this.tokens, ...progress, settled };
  }

  /**
   * After the end is recorded: `notify` runs (config `notify`, between the claim book's child marks), then the run's
   * last check comes after its last child: what became done, or was marked, while notify ran goes back too; then the
   * baseline is closed.
   */
  async notifyAndClose(
    ended: Extract<EngineEvent, { type: 'runEnded' }>,
    text: string,
    settled: boolean,
  ): Promise<void> {
    await notify(this.cx!, ended, text);
    if (
      settled &&
      (await this.book.putBackAtEnd(
        this.cx!.source,
        `it became done while notify ran at the run's end (after the run's last gate)`,
      ))
    )
      await this.book.close();
    else await this.book.flush().catch(this.warn('could not write the claim baseline'));
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

  private noteSentinels(c: SentinelCheck): void {
    if (c.stop.length && !this.stopNoted) {
      this.stopNoted = true;
      this.stopRequestedAt = Date.now();
      this.host.emit({
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
      this.host.emit({ type: 'pauseRequested', file: c.pause[0]!.file });
    }
    if (!c.pause.length) this.pauseNoted = false;
  }

  /**
   * Waits up to `ms`, waking early when `wake` says so for a sentinel change, or on cancel, after writing what the claim
   * book deferred. Every listener and timer is removed whichever comes first (a long pause polls this every second for
   * hours). Resolves true on timeout.
   */
  private async waitForSentinelChange(ms: number, wake: (c: SentinelCheck) => boolean = () => true): Promise<boolean> {
    // Nothing deferred waits with the lane: a person's mark made during a pause is not read as a child's after a crash.
    await this.book.flush();
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
    const dir = path.join(ralphRunDir(this.folder, this.o.runId), 'rejected', `iter-${String(n).padStart(3, '0')}`);
    let restored: RestoredFile[] = [];
    try {
      restored = this.stash.restoreUnreadable(dir);
    } catch (err) {
      this.warn(`iteration ${n}: could not restore a task file the agent left unreadable`)(err);
    }
    for (const r of restored)
      this.host.emit({ type: 'fileRestored', file: r.file, aside: r.aside, problem: r.problem });
  }

  /** What one agent iteration needs of this lane (agentIteration.ts). */
  private iterationContext(): IterationContext {
    const s = this.setup!;
    return {
      folder: this.folder,
      runId: this.o.runId,
      stateRoot: this.o.lane?.stateRoot ?? this.folder,
      config: this.o.config,
      agentEnv: this.o.agentEnv,
      signal: this.o.signal,
      timing: this.timing,
      actor: s.actor,
      guardSettings: this.guardSettings,
      commandPolicy: s.policy,
      gates: s.gates,
      agentConfigAtStart: s.agentConfigAtStart,
      agentConfigWarned: this.agentConfigWarned,
      stash: this.stash,
      stopRequestedAt: () => this.stopRequestedAt,
      onAgent: this.o.lane?.onAgent,
      emitEvent: (e) => this.host.emit(e),
      warn: (what) => this.warn(what),
      record: (patch) => this.record(patch),
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
