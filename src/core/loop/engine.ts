import { EventEmitter } from 'node:events';
import { mkdir, rm, stat, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import type { AgentAdapter } from '../agents/adapter';
import { which } from '../agents/discover';
import { getAdapter } from '../agents/registry';
import { spawnIteration, type IterationExit } from '../agents/spawn';
import { createRunRecord, newRunId, updateRunRecord } from '../control/runRecords';
import { listRuns } from '../control/runs';
import { tryHoldLock } from '../store/fileLock';
import { honourStop, ralphRunDir, type SentinelCheck } from '../control/sentinels';
import { gateCommandFor, resolveGates, type ResolvedGates } from '../gates/gateConfig';
import { runGate, type GateResult } from '../gates/gateRunner';
import { ensureHandoff, readHandoff, workingSet, workingSetChanged, writeAutoEnriched, writeLastGateState } from '../gates/handoff';
import type { RalphConfig } from '../model/config';
import { isoString } from '../model/time';
import { resolveActor } from '../sources/actor';
import { type TokenCounts, zeroTokens, addTokens } from '../stream/events';
import { iterationTotals } from '../stream/ledger';
import { findSignals, type AgentSignal } from '../stream/signals';
import { decideDeferral, defaultBackoffPolicy, type BackoffPolicy, type DeferralState } from './backoff';
import { appendAttempt, clearAttempts, readAttempts } from './attemptStore';
import { formatAttemptHistory, nextAttempt, oneLine, type AttemptKind } from './attempts';
import { recoverCrashedRuns } from './crashRecovery';
import { EXIT_CODES, type EngineEvent, type GateTier, type IterationEnding, type IterationPurpose, type RunEndState, type WorkItemRef } from './events';
import { ensureRalphIgnored, headSha, lastCommitLine, lastCommitSubject } from './git';
import { loadTemplate, renderTemplate } from './prompt';
import { IterationStreamWriter } from './runFiles';
import { SentinelWatcher } from './sentinelWatcher';
import { availableSources, type WorkItem, type WorkSource } from './workSource';

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
    backoff: {
      baseMs: t.backoffBaseMs ?? b.baseMs, capMs: t.backoffCapMs ?? b.capMs, resetMarginMs: t.resetMarginMs ?? b.resetMarginMs,
      maxResetWaitMs: t.maxResetWaitMs ?? b.maxResetWaitMs, maxQuotaWaits: t.maxQuotaWaits ?? b.maxQuotaWaits, maxDeferrals: t.maxDeferrals ?? b.maxDeferrals,
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
}

/** What {@link LoopEngine.run} resolves with. */
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
}

/** A refusal to start (no gates, no source, bad configuration): a message a user can act on. */
export class EngineRefusal extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EngineRefusal';
  }
}

/** Thrown inside the loop to end the run with a state and reason. */
class RunEnd {
  constructor(readonly state: RunEndState, readonly reason: string, readonly completionReason: string) {}
}

interface IterationOutcome {
  ending: IterationEnding;
  detail: string;
  exit: IterationExit;
  signals: AgentSignal[];
  lastText: string;
  resetsAt: number | null;
}

/**
 * The loop engine (issue "The loop engine"): picks work from a task source, runs one agent process per iteration,
 * accounts its tokens (warn at 7/8, rotate at the threshold with a handoff), classifies how it ended, verifies
 * every claimed completion with a gate before recording it, retries with every earlier failure in the prompt
 * (attempt, fixes, one debugging pass, then block), runs the final gate (and optionally a reviewer), honours
 * PAUSE / STOP / stop-requested within the iteration, backs off on rate limits, and stops on caps and stalls.
 *
 * It only emits {@link EngineEvent}s; run records, the activity log and the UIs are consumers (see recorder.ts).
 * Every agent process is owned: on rotate, stop or cancel its group gets SIGTERM, then SIGKILL after the grace,
 * and the engine waits for it before going on.
 */
export class LoopEngine extends EventEmitter<{ event: [EngineEvent] }> {
  readonly runId: string;
  private readonly timing: EngineTiming;
  private readonly folder: string;
  private sentinels: SentinelWatcher | undefined;
  private iteration = 0;
  private workIterations = 0;
  private cost = 0;
  private tokens: TokenCounts = zeroTokens();
  private stall = 0;
  private deferral: DeferralState = { inARow: 0, quotaWaits: 0 };
  private startedAt = '';
  private stopNoted = false;
  private pauseNoted = false;
  private lastDone: string | null = null;
  private pendingFix: { purpose: IterationPurpose; text: string } | null = null;
  /** The run's gates, resolved once at start: frozen for the run (seed-systems.md §3.9), the prompt and the verdicts agree. */
  private gates: ResolvedGates | null = null;
  /** The last progress text reported. */
  private lastProgress = '';
  /** Absolute path of the agent CLI, resolved once at start. */
  private agentBinary: string | null = null;
  /** The item this run started and has not finished; given back when the run ends otherwise. */
  private current: WorkItem | null = null;
  /** flow-next actor of the run; the agent gets it as FLOW_ACTOR so its `flowctl done` matches our claim. */
  private actor = 'unknown';

  constructor(private readonly o: EngineOptions) {
    super();
    this.folder = path.resolve(o.folder);
    this.runId = o.runId ?? newRunId();
    this.timing = { ...timingFromConfig(o.config), ...o.timing };
  }

  private emitEvent(e: EngineEvent): void {
    this.emit('event', e);
  }

  /** Resolves the source the run works on, or throws {@link EngineRefusal}. */
  private pickSource(actor: string): WorkSource {
    const all = availableSources({ folder: this.folder, actor });
    if (!all.length) throw new EngineRefusal(`No task source in ${this.folder}: add quantum.json, .flow/, RALPH_TASK.md, PROMPT.md or specs/<name>/tasks.md.`);
    const want = this.o.source;
    if (!want) return all[0]!;
    const norm = want === 'flow' ? 'flow-next' : want;
    // A checklist path may be given as typed (`./specs/x/tasks.md`, absolute): compare workspace-relative paths.
    const rel = path.relative(this.folder, path.resolve(this.folder, want)).split(path.sep).join('/');
    const found = all.find((s) => s.kind === norm) ?? all.find((s) => s.label === want || s.label === rel);
    if (!found) throw new EngineRefusal(`No ${want} source in ${this.folder} (found: ${all.map((s) => s.label).join(', ')}).`);
    return found;
  }

  /** Runs the loop to its end. Throws {@link EngineRefusal} before starting when it cannot run. */
  async run(): Promise<RunResult> {
    const adapter = getAdapter(this.o.agent ?? this.o.config.agent);
    const actor = resolveActor(this.folder);
    this.actor = actor;
    const source = this.pickSource(actor);
    const gates = await resolveGates(this.folder, this.o.config);
    this.gates = gates;
    if (!gates && !this.o.noGates) {
      throw new EngineRefusal('No gates configured: add a [gates] section to .ralph/command-policy or "gates" to .ralph/config.json (e.g. {"gates": {"basic": "npm test"}}), or run with --no-gates.');
    }
    const configured = adapter.name === 'claude' ? this.o.config.claudePath : this.o.config.cursorAgentPath;
    // A configured path is relative to the workspace folder (as `-C` and the extension see it), not to our cwd.
    const binary = configured.includes('/') ? path.resolve(this.folder, configured) : configured;
    const pathEnv = this.o.agentEnv && 'PATH' in this.o.agentEnv ? (this.o.agentEnv.PATH ?? '') : (process.env.PATH ?? '');
    this.agentBinary = await which(binary, pathEnv);
    if (!this.agentBinary) {
      const key = adapter.name === 'claude' ? 'claudePath' : 'cursorAgentPath';
      throw new EngineRefusal(`The ${adapter.name} CLI was not found (${configured} is not an executable${configured.includes('/') ? '' : ' on PATH'}). Install it, or set "${key}" in .ralph/config.json (VS Code: ralph.${key}). \`ralph doctor\` lists the agents it finds.`);
    }
    const maxIterations = this.o.maxIterations ?? this.o.config.maxIterations;
    const maxCost = this.o.maxCostUsd ?? this.o.config.maxCostUsd;
    const maxWallMs = this.o.maxWallTimeMs ?? this.o.config.maxWallTimeMinutes * 60_000;

    // One engine per folder: two runs would claim the same items and fight over the same files.
    const releaseLock = await tryHoldLock(path.join(this.folder, '.ralph', 'engine'), (err) => this.emitEvent({ type: 'warning', message: `the engine lock of this folder was lost: ${err.message}` }));
    if (!releaseLock) {
      const active = listRuns(this.folder).runs.filter((r) => r.kind === 'ralph' && r.active).map((r) => `${r.id}${r.pid ? ` (pid ${r.pid})` : ''}`);
      throw new EngineRefusal(`Another Ralph run is active in ${this.folder}${active.length ? `: ${active.join(', ')}` : ''}. Stop it with \`ralph stop\` or wait for it to end.`);
    }
    try {
      return await this.runLocked(adapter, source, gates, maxIterations, maxCost, maxWallMs);
    } finally {
      await releaseLock().catch(() => undefined);
    }
  }

  private async runLocked(adapter: AgentAdapter, source: WorkSource, gates: ResolvedGates | null, maxIterations: number, maxCost: number, maxWallMs: number): Promise<RunResult> {
    await this.removeStaleStopRequest();
    // A crashed run may have worked on another source of this folder: recovery looks at all of them.
    const recovered = await recoverCrashedRuns(this.folder, availableSources({ folder: this.folder, actor: this.actor }), this.timing.killGraceMs);
    for (const r of recovered) this.emitEvent({ type: 'warning', message: `run ${r.runId} had crashed (engine pid ${r.pid} is gone): marked crashed${r.killedGroup ? ', its agent group killed' : ''}${r.failedItems.length ? `, failed ${r.failedItems.join(', ')}` : ''}` });

    await mkdir(ralphRunDir(this.folder, this.runId), { recursive: true });
    const record = await createRunRecord(this.folder, {
      runId: this.runId, state: 'running', agent: adapter.name,
      source: { kind: source.kind, label: source.label }, config: { maxIterations, maxCostUsd: maxCost, maxWallTimeMs: maxWallMs, model: this.o.config.model, noGates: !!this.o.noGates }, agentPgid: null,
    });
    this.startedAt = record.startedAt;
    await ensureRalphIgnored(this.folder).catch(() => false);
    await ensureHandoff(this.folder);
    this.sentinels = new SentinelWatcher(this.folder, { runId: this.runId, startedAt: this.startedAt }, this.timing.sentinelPollMs);
    this.sentinels.on('change', (c) => this.noteSentinels(c));
    this.noteSentinels(this.sentinels.state);
    this.emitEvent({ type: 'runStarted', runId: this.runId, folder: this.folder, source: source.label, agent: adapter.name, maxIterations, gates: gates?.commands ?? {}, maxCostUsd: maxCost, pid: process.pid });
    await this.reportProgress(source);

    const wallStart = Date.now();
    let end: RunEnd;
    try {
      end = await this.loop(source, gates, { maxIterations, maxCost, maxWallMs, wallStart });
    } catch (err) {
      end = err instanceof RunEnd ? err : new RunEnd('failed', `engine error: ${(err as Error).message}`, 'FAILED');
    } finally {
      this.sentinels.close();
    }
    if (this.current && end.state !== 'completed') {
      const item = this.current;
      await source.release(item).catch((err: Error) => this.emitEvent({ type: 'warning', message: `could not give ${item.id} back: ${err.message}` }));
    }
    const progress = await source.progress().catch(() => ({ done: 0, total: 0 }));
    const exitCode = EXIT_CODES[end.state];
    const finalState = end.state === 'completed' ? 'completed' : end.state === 'stopped' || end.state === 'cancelled' ? 'stopped' : 'failed';
    await updateRunRecord(this.folder, this.runId, {
      state: finalState, currentItem: null, iteration: this.iteration,
      completion: { reason: end.completionReason, at: isoString(Date.now()) },
      endState: end.state, endReason: end.reason, endedAt: isoString(Date.now()), agentPgid: null, costUsd: this.cost, tokens: this.tokens,
    }).catch(() => undefined);
    this.emitEvent({ type: 'runEnded', state: end.state, reason: end.reason, completionReason: end.completionReason, exitCode, iterations: this.iteration, costUsd: this.cost, done: progress.done, total: progress.total });
    return { runId: this.runId, state: end.state, reason: end.reason, exitCode, iterations: this.iteration, costUsd: this.cost, done: progress.done, total: progress.total };
  }

  /**
   * A `.ralph/stop-requested` older than this run was meant for an earlier one: it never stops this run (the
   * sentinel rules), and left in place it would tell the agent to yield after every commit. It is removed, with a
   * warning (seed-systems.md §3.15-9 is the opposite failure: a fresh request lost).
   */
  private async removeStaleStopRequest(): Promise<void> {
    const file = path.join(this.folder, '.ralph', 'stop-requested');
    const st = await stat(file).catch(() => null);
    if (!st) return;
    await rm(file, { force: true });
    this.emitEvent({ type: 'warning', message: `removed .ralph/stop-requested from ${st.mtime.toISOString()}: it predates this run` });
  }

  private noteSentinels(c: SentinelCheck): void {
    if (c.stop.length && !this.stopNoted) {
      this.stopNoted = true;
      this.emitEvent({ type: 'stopRequested', file: c.stop[0]!.file, graceful: c.stop.some((h) => h.file.endsWith('stop-requested')) });
    }
    if (!c.stop.length) this.stopNoted = false;
    if (c.pause.length && !this.pauseNoted) {
      this.pauseNoted = true;
      this.emitEvent({ type: 'pauseRequested', file: c.pause[0]!.file });
    }
    if (!c.pause.length) this.pauseNoted = false;
  }

  private get cancelled(): boolean {
    return this.o.signal?.aborted ?? false;
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
      const onChange = (c: SentinelCheck) => { if (wake(c)) done(false); };
      const onAbort = () => done(false);
      this.sentinels?.on('change', onChange);
      this.o.signal?.addEventListener('abort', onAbort);
    });
  }

  /** Sleeps, waking early on STOP or cancel. Returns false when woken by one. */
  private async sleep(ms: number): Promise<boolean> {
    if (this.stopOrCancel()) return false;
    if (ms <= 0) return true;
    return (await this.waitForSentinelChange(ms, (c) => c.stop.length > 0)) && !this.cancelled;
  }

  private stopOrCancel(): boolean {
    return this.cancelled || (this.sentinels?.check().stop.length ?? 0) > 0;
  }

  /** STOP: end cleanly (global STOP files are removed once honoured). PAUSE: wait, re-checking STOP. */
  private async honourSentinels(): Promise<void> {
    if (this.cancelled) throw new RunEnd('cancelled', 'cancelled', 'INTERRUPTED');
    let c = this.sentinels!.check();
    if (c.stop.length) {
      await honourStop(c);
      throw new RunEnd('stopped', `stopped by ${path.relative(this.folder, c.stop[0]!.file)}`, 'STOPPED');
    }
    if (!c.pause.length) return;
    this.emitEvent({ type: 'paused' });
    await updateRunRecord(this.folder, this.runId, { state: 'paused' });
    while (c.pause.length && !c.stop.length && !this.cancelled) {
      await this.waitForSentinelChange(1000);
      c = this.sentinels!.check();
    }
    if (this.cancelled) throw new RunEnd('cancelled', 'cancelled', 'INTERRUPTED');
    if (c.stop.length) {
      await honourStop(c);
      throw new RunEnd('stopped', `stopped by ${path.relative(this.folder, c.stop[0]!.file)} while paused`, 'STOPPED');
    }
    await updateRunRecord(this.folder, this.runId, { state: 'running' });
    this.emitEvent({ type: 'resumed' });
  }

  private async loop(source: WorkSource, gates: ResolvedGates | null, caps: { maxIterations: number; maxCost: number; maxWallMs: number; wallStart: number }): Promise<RunEnd> {
    let first = true;
    for (;;) {
      // Woken early by STOP or cancel, the sleep returns at once; honourSentinels ends the run.
      if (!first) await this.sleep(this.timing.betweenIterationsMs);
      first = false;
      await this.honourSentinels();
      if (this.workIterations >= caps.maxIterations) return new RunEnd('capReached', `max iterations (${caps.maxIterations}) reached`, 'MAX_ITERATIONS');
      if (caps.maxCost > 0 && this.cost >= caps.maxCost) return new RunEnd('capReached', `max cost reached: $${this.cost.toFixed(4)} ≥ $${caps.maxCost}`, 'MAX_COST');
      if (caps.maxWallMs > 0 && Date.now() - caps.wallStart >= caps.maxWallMs) return new RunEnd('capReached', `max wall time reached (${Math.round(caps.maxWallMs / 60000)} min)`, 'MAX_WALL_TIME');

      if (this.pendingFix) {
        const fix = this.pendingFix;
        this.pendingFix = null;
        await this.fixIteration(source, fix);
        continue;
      }

      const next = await source.next();
      if (next.kind === 'empty') return new RunEnd('completed', `nothing to do: ${source.label} has no tasks`, 'NO_WORK');
      if (next.kind === 'blocked') return new RunEnd('blocked', next.reason, 'BLOCKED');
      if (next.kind === 'complete') {
        const verdict = await this.finalVerification(source, gates);
        if (verdict === 'ship') return new RunEnd('completed', gates ? 'complete: every task verified, final gate green' : 'complete: every task done (no gates configured)', 'DONE');
        continue;
      }
      const item = next.item;
      const records = await readAttempts(this.folder, item);
      const failed = Math.max(records.length, (await source.failedAttempts(item)) ?? 0);
      const attempt = nextAttempt(failed, await source.attemptLimit(item));
      if (attempt === 'exhausted') {
        await this.blockItem(source, item, records.at(-1)?.reason ?? 'out of attempts');
        continue;
      }
      // The count can change between verifications (the agent ticked another box, a person edited the file).
      await this.reportProgress(source, false);
      await source.start(item);
      this.current = item;
      // Kept in run.json with the current item, so crash recovery can undo what a crashed iteration claimed.
      const baseline = await source.snapshot();
      await updateRunRecord(this.folder, this.runId, { currentItem: { source: item.source, id: item.id, title: item.title }, claimBaseline: baseline ?? null });
      const headBefore = await headSha(this.folder);
      const fpBefore = await source.fingerprint();
      const out = await this.runAgent(source, item, 'work', attempt.number, attempt.kind, formatAttemptHistory(records, attempt.kind), undefined, attempt.max);
      const handled = await this.afterIteration(out);
      if (handled) continue;

      const claim = await source.claim(item, out.signals);
      if (claim.done) {
        const tier: GateTier = item.risky ? 'full' : 'basic';
        const gate = await this.runTier(gates, tier);
        if (!gate || gate.exitCode === 0) {
          await source.accept(item, claim.alsoDone);
          this.current = null;
          await updateRunRecord(this.folder, this.runId, { currentItem: null, claimBaseline: null });
          await clearAttempts(this.folder, item);
          this.lastDone = item.title;
          this.stall = 0;
          const verifiedBy = gate ? gate.label as GateTier : null;
          this.emitEvent({ type: 'verified', item: ref(item), tier: verifiedBy });
          for (const also of claim.alsoDone) this.emitEvent({ type: 'verified', item: also, tier: verifiedBy });
          await this.reportProgress(source);
        } else {
          const approach = (headBefore !== (await headSha(this.folder)) ? await lastCommitSubject(this.folder) : null) ?? oneLine(out.lastText);
          const reason = `${gate.label} gate exit ${gate.exitCode}${gate.timedOut ? ' (timed out)' : ''}: ${gate.failingLines.slice(0, 5).join(' | ') || gate.tail.slice(-3).join(' | ') || 'no output'}`;
          await appendAttempt(this.folder, item, { number: attempt.number, approach, reason, at: isoString(Date.now()), runId: this.runId });
          await source.reject(item, claim.alsoDone, reason);
          this.emitEvent({ type: 'attemptFailed', item: ref(item), attempt: attempt.number, approach, reason });
          if (attempt.number >= attempt.max) await this.blockItem(source, item, `verification failed ${attempt.number} times; last: ${reason}`);
        }
        await this.enrichHandoff(source);
        continue;
      }
      if (out.signals.some((s) => s.kind === 'complete')) this.emitEvent({ type: 'warning', message: `agent signaled complete but ${source.label} says "${item.title}" is not done` });
      if (out.signals.some((s) => s.kind === 'storyFailed')) {
        const reason = `agent reported STORY_FAILED: ${oneLine(out.lastText)}`;
        await appendAttempt(this.folder, item, { number: attempt.number, approach: oneLine(out.lastText), reason, at: isoString(Date.now()), runId: this.runId });
        await source.reject(item, [], reason);
        this.emitEvent({ type: 'attemptFailed', item: ref(item), attempt: attempt.number, approach: oneLine(out.lastText), reason });
        continue;
      }
      const progressed = headBefore !== (await headSha(this.folder)) || fpBefore !== (await source.fingerprint());
      this.stall = progressed ? 0 : this.stall + 1;
      if (this.stall >= this.timing.stallLimit) return new RunEnd('stalled', `stalled: ${this.stall} iterations in a row ended without progress (no status or checkbox change, no commit)`, 'STALLED');
      await this.enrichHandoff(source);
    }
  }

  /**
   * Handles the endings that are not about the item: deferral (rate limit), rotation, cancel, fatal errors, a
   * stuck signal. Returns true when the iteration needs no verification.
   */
  private async afterIteration(out: IterationOutcome): Promise<boolean> {
    switch (out.ending) {
      case 'cancelled':
        throw new RunEnd('cancelled', 'cancelled: the agent was ended', 'INTERRUPTED');
      case 'rotation':
        this.deferral.inARow = 0;
        return true;
      case 'stuck':
        throw new RunEnd('failed', `agent is stuck (GUTTER)${out.detail ? `: ${out.detail}` : ''}`, 'FAILED');
      case 'deferred': {
        this.workIterations--; // a deferred iteration does not use up the iteration budget (seed §3.6 "n.r")
        const d = decideDeferral(this.deferral, out.resetsAt, Date.now(), this.timing.backoff);
        this.deferral = d.next;
        if (d.action === 'stall') throw new RunEnd('stalled', d.reason, 'STALLED');
        this.emitEvent({ type: 'deferred', reason: out.detail, waitMs: d.waitMs, resetsAt: d.action === 'waitUntilReset' ? d.resetsAt : null, inARow: d.next.inARow });
        await this.sleep(d.waitMs);
        return true;
      }
      case 'error':
        if (out.exit.outcome.kind === 'fatal' || out.exit.spawnError) throw new RunEnd('failed', `agent error: ${out.detail}`, 'FAILED');
        this.deferral.inARow = 0;
        return false;
      default:
        this.deferral.inARow = 0;
        return false;
    }
  }

  private async blockItem(source: WorkSource, item: WorkItem, reason: string): Promise<void> {
    await source.block(item, reason);
    if (this.current?.id === item.id) this.current = null;
    this.emitEvent({ type: 'itemBlocked', item: ref(item), reason });
    if (!(this.o.continueOnBlocked ?? this.o.config.continueOnBlocked)) {
      // Pause the run: a person looks at the blocked item, then resumes (or stops).
      await writeFile(path.join(ralphRunDir(this.folder, this.runId), 'PAUSE'), `blocked: ${item.id}: ${reason}\n`);
    }
  }

  /** Emits `progress` ("k/N done") when it changed since the last report, or always with `force`. */
  private async reportProgress(source: WorkSource, force = true): Promise<void> {
    const p = await source.progress();
    const text = `${p.done}/${p.total} done`;
    if (!force && text === this.lastProgress) return;
    this.lastProgress = text;
    this.emitEvent({ type: 'progress', done: p.done, total: p.total, text });
  }

  private async enrichHandoff(source: WorkSource): Promise<void> {
    const next = await source.next().catch(() => null);
    await writeAutoEnriched(this.folder, { lastCommit: await lastCommitLine(this.folder), lastDone: this.lastDone, nextItem: next?.kind === 'work' ? next.item.title : null }).catch(() => undefined);
  }

  /** Runs the gate of a tier (with the fallback of gateCommandFor); null when the run has no gates. */
  private async runTier(gates: ResolvedGates | null, tier: GateTier): Promise<GateResult | null> {
    if (!gates) return null;
    const g = gateCommandFor(gates, tier);
    if (!g) return null;
    this.emitEvent({ type: 'gateStarted', tier: g.tier, command: g.command });
    // Cancel ends the gate's process group too (an already-aborted signal means the gate never starts).
    const r = await runGate({ folder: this.folder, label: g.tier, command: g.command, timeoutMs: this.timing.gateTimeoutMs, signal: this.o.signal, killGraceMs: this.timing.killGraceMs });
    this.emitEvent({ type: 'gateResult', tier: g.tier, command: g.command, exitCode: r.exitCode, durationMs: r.durationMs, passed: r.exitCode === 0, logPath: r.logRelPath, failingLines: r.failingLines });
    await writeLastGateState(this.folder, { label: r.label, exitCode: r.exitCode, summary: r.summary, command: r.command, durationMs: r.durationMs, logRelPath: r.logRelPath, failingLines: r.failingLines });
    if (this.cancelled) throw new RunEnd('cancelled', 'cancelled during a gate', 'INTERRUPTED');
    return r;
  }

  /** Everything reports done: the final gate, then (when configured) the reviewer. Returns 'ship' or 'work'. */
  private async finalVerification(source: WorkSource, gates: ResolvedGates | null): Promise<'ship' | 'work'> {
    const gate = await this.runTier(gates, 'final');
    if (gate && gate.exitCode !== 0) {
      this.pendingFix = { purpose: 'finalFix', text: `Every task reports done, but the final gate fails (\`${gate.command}\`, exit ${gate.exitCode}). Make it pass without undoing finished work.\n\n${gate.summary ?? gate.failingLines.join('\n')}` };
      return 'work';
    }
    if (!(this.o.reviewer ?? this.o.config.reviewer)) return 'ship';
    const out = await this.runAgent(source, null, 'review', 1, 'first', '');
    if (await this.afterIteration(out)) return 'work';
    const verdict = [...out.signals].reverse().find((s) => s.kind === 'verdict')?.value.toUpperCase() ?? 'NONE';
    this.emitEvent({ type: 'reviewVerdict', verdict });
    if (verdict === 'SHIP') return 'ship';
    this.pendingFix = { purpose: 'finalFix', text: `The reviewer did not ship the change (verdict ${verdict}). Address every point below, commit, then stop.\n\n${out.lastText.slice(0, 4000)}` };
    return 'work';
  }

  private async fixIteration(source: WorkSource, fix: { purpose: IterationPurpose; text: string }): Promise<void> {
    const out = await this.runAgent(source, null, fix.purpose, 1, 'fix', '', fix.text);
    await this.afterIteration(out);
  }

  /** One iteration: build the prompt, spawn the agent, stream its events through the ledger, classify the end. */
  private async runAgent(source: WorkSource, item: WorkItem | null, purpose: IterationPurpose, attempt: number, attemptKind: AttemptKind, attemptsText: string, taskText?: string, maxAttempts?: number): Promise<IterationOutcome> {
    this.iteration++;
    this.workIterations++;
    const n = this.iteration;
    await rm(path.join(this.folder, '.ralph', 'context-warning-active'), { force: true });
    const handoff = await readHandoff(this.folder);
    const workingBefore = workingSet(handoff);
    const progress = await source.progress();
    const gates = this.gates;
    const template = await loadTemplate(this.folder, purpose === 'review' ? 'reviewer' : 'iteration');
    const prompt = renderTemplate(template, {
      ITERATION: String(n),
      PROGRESS: `${progress.done}/${progress.total} done`,
      HANDOFF: handoff?.trim() || '(none yet)',
      COMPLETE_SIGNAL_RULE: source.kind === 'quantum'
        ? 'The story is implemented, committed and verified: print `<quantum>STORY_PASSED</quantum>` and stop.'
        : 'Every task is done and verified: print `<promise>ALL_TASKS_DONE</promise>` and stop.',
      GIT_NOTE: (await headSha(this.folder)) === null ? 'This folder may not be a git repository: if `git` fails, just save the files.' : '',
      GATES: gates ? `Run \`${gates.commands.basic ?? gates.commands.full ?? gates.commands.final}\` after each task${gates.commands.full ? `, \`${gates.commands.full}\` after a [risky] task` : ''}${gates.commands.final ? ` and \`${gates.commands.final}\` at the end` : ''}. The harness runs them again to verify.` : 'No gates are configured for this run.',
      ATTEMPTS: attemptsText,
      TASK: taskText ?? item?.body ?? (await this.allTasksText(source)),
    });
    this.emitEvent({ type: 'iterationStarted', iteration: n, item: item ? ref(item) : null, attempt, attemptKind, purpose, ...(maxAttempts ? { maxAttempts } : {}) });
    await updateRunRecord(this.folder, this.runId, { state: 'running', iteration: n, currentItem: item ? { source: item.source, id: item.id, title: item.title } : null });

    const adapter = getAdapter(this.o.agent ?? this.o.config.agent);
    const raw = new IterationStreamWriter(this.folder, this.runId, n);
    const handle = spawnIteration(adapter, {
      prompt, cwd: this.folder,
      binary: this.agentBinary ?? (adapter.name === 'claude' ? this.o.config.claudePath : this.o.config.cursorAgentPath),
      model: this.o.config.model || undefined,
      extraArgs: this.o.config.agentArgs,
      permissionMode: this.o.config.permissionMode,
      env: { RALPH_RUN_ID: this.runId, RALPH_WORKSPACE: this.folder, FLOW_ACTOR: this.actor, ...this.o.agentEnv },
    }, {
      maxLineBytes: this.o.config.maxLineBytes,
      contextWindowTokens: this.o.config.contextWindowTokens,
      thresholds: { warnThresholdTokens: this.o.config.warnThresholdTokens, rotateThresholdTokens: this.o.config.rotateThresholdTokens },
      killGraceMs: this.timing.killGraceMs,
      onStdout: (chunk) => raw.write(chunk),
    });
    this.emitEvent({ type: 'agentStarted', iteration: n, pid: handle.pid ?? null, command: [handle.invocation.file, ...handle.invocation.args.slice(0, -1)].join(' ') });
    await updateRunRecord(this.folder, this.runId, { agentPgid: handle.pid ?? null, agentToken: handle.token, agentStartedAt: isoString(Date.now()) });

    const signals: AgentSignal[] = [];
    let lastText = '';
    let lastTokensAt = 0;
    const emitTokens = () => {
      const s = handle.ledgerSnapshot();
      this.emitEvent({ type: 'tokens', iteration: n, contextTokens: s.contextTokens, contextWindow: s.contextWindow, rotateAt: s.thresholds.rotate, warnAt: s.thresholds.warn, totals: s.tokens, costUsd: s.costUsd });
    };
    handle.onEvent((e) => {
      if (e.type === 'text' && !e.subagent && !e.synthetic) {
        lastText = e.text;
        for (const s of findSignals(e.text)) {
          signals.push(s);
          this.emitEvent({ type: 'agentSignal', iteration: n, kind: s.kind, value: s.value, ...(s.reason ? { reason: s.reason } : {}) });
        }
      } else if (e.type === 'result' && !e.subagent && e.text && !e.isError) {
        // The result repeats the final text; signals there count once (deduplicated below).
        for (const s of findSignals(e.text)) if (!signals.some((x) => x.kind === s.kind && x.value === s.value)) signals.push(s);
      }
      if ((e.type === 'usage' || e.type === 'result') && Date.now() - lastTokensAt > 500) {
        lastTokensAt = Date.now();
        emitTokens();
      }
    });
    let rotated = false;
    handle.onLedgerSignal((s) => {
      if (s.type === 'warn') {
        this.emitEvent({ type: 'warn', iteration: n, contextTokens: s.contextTokens, threshold: s.threshold });
        void writeFile(path.join(this.folder, '.ralph', 'context-warning-active'), `${s.contextTokens}/${s.threshold}\n`).catch(() => undefined);
      } else if (!rotated) {
        rotated = true;
        this.emitEvent({ type: 'rotate', iteration: n, contextTokens: s.contextTokens, threshold: s.threshold });
        void handle.kill('rotate');
      }
    });
    const onAbort = () => void handle.kill('cancel');
    this.o.signal?.addEventListener('abort', onAbort);
    if (this.cancelled) onAbort();
    let exit: IterationExit;
    try {
      exit = await handle.done;
    } finally {
      this.o.signal?.removeEventListener('abort', onAbort);
      await raw.close().catch((err: Error) => this.emitEvent({ type: 'warning', message: `raw stream of iteration ${n}: ${err.message}` }));
    }
    emitTokens();
    if (exit.leftBehind.length) this.emitEvent({ type: 'warning', message: `ended ${exit.leftBehind.length} process(es) the agent left running outside its process group (pids ${exit.leftBehind.join(', ')})` });
    const totals = iterationTotals(exit.ledger);
    this.cost += totals.costUsd ?? 0;
    this.tokens = addTokens(this.tokens, totals.tokens);
    await updateRunRecord(this.folder, this.runId, { agentPgid: null, agentToken: null, costUsd: this.cost });

    const workingAfter = workingSet(await readHandoff(this.folder));
    const outcome = classifyEnding(exit, signals, workingSetChanged(workingBefore, workingAfter));
    this.emitEvent({ type: 'iterationEnded', iteration: n, ending: outcome.ending, detail: outcome.detail, totals, exitCode: exit.exitCode });
    return { ...outcome, exit, signals, lastText, resetsAt: exit.outcome.resetsAt ?? null };
  }

  private async allTasksText(source: WorkSource): Promise<string> {
    const p = await source.progress();
    return `All ${p.total} tasks of ${source.label} report done. Check the whole change against them.`;
  }
}

/**
 * How an iteration ended (issue "One iteration" 4), from the process exit, the agent's own signals and the
 * handoff: rotation and cancel (we ended it), deferral (rate limit or transient API error), error (fatal, or no
 * result), stuck (GUTTER / quantum BLOCKED), complete (a completion signal), yield (the Working set section of
 * handoff.md changed: content, not mtime, fixing seed-systems.md §3.15-2), natural end. Pure.
 */
export function classifyEnding(exit: IterationExit, signals: readonly AgentSignal[], workingSetChangedThisIteration: boolean): { ending: IterationEnding; detail: string } {
  if (exit.killedBy === 'rotate') return { ending: 'rotation', detail: `context ${exit.ledger.contextTokens} ≥ rotate ${exit.ledger.thresholds.rotate} tokens` };
  if (exit.killedBy === 'cancel') return { ending: 'cancelled', detail: 'cancelled' };
  if (exit.spawnError) return { ending: 'error', detail: `could not start the agent: ${exit.spawnError}` };
  const o = exit.outcome;
  if (o.kind === 'rateLimited' || o.kind === 'transient') return { ending: 'deferred', detail: o.reason };
  if (o.kind === 'fatal') return { ending: 'error', detail: o.reason };
  const stuck = signals.find((s) => s.kind === 'stuck');
  if (stuck) return { ending: 'stuck', detail: stuck.reason ?? stuck.value };
  if (signals.some((s) => s.kind === 'complete' || s.kind === 'storyPassed')) return { ending: 'complete', detail: signals.map((s) => s.value).join(', ') };
  if (workingSetChangedThisIteration) return { ending: 'yield', detail: 'the agent updated the handoff Working set and stopped' };
  if (o.kind === 'error' || o.kind === 'noResult') return { ending: 'error', detail: o.reason };
  return { ending: 'natural', detail: 'the agent ended its turn' };
}

function ref(item: WorkItemRef): WorkItemRef {
  return { source: item.source, id: item.id, title: item.title };
}
