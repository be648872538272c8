import { EventEmitter } from 'node:events';
import { mkdir, readFile, rm, stat } from 'node:fs/promises';
import * as path from 'node:path';
import type { AgentAdapter } from '../../agents/adapter';
import { which } from '../../agents/discover';
import { type GuardGap, guardGaps, guardGapWarning, guardRefusal } from '../../agents/guardSupport';
import { agentBinary, getAdapter } from '../../agents/registry';
import { loadCommandPolicy } from '../../gates/commandPolicy';
import { createRunRecord, newRunId, updateRunRecord } from '../../control/runRecords';
import { removeFolderCaches } from '../../store/snapshotCache';
import { honourStop, ralphRunDir, type SentinelCheck } from '../../control/sentinels';
import { gateCommandFor, resolveGates, type ResolvedGates } from '../../gates/gateConfig';
import { type GateResult } from '../../gates/gateRunner';
import { runGateExclusive } from '../../gates/gateCall';
import { gateFilesChangedReason, snapshotGateFiles } from '../../trust/gateFileContent';
import { agentConfigEntries } from '../../trust/agentConfig';
import type { TrustedEntry } from '../../trust/trustedContent';
import { startGuardServer, type GuardServer } from '../../gates/guardServer';
import { ensureHandoff, writeAutoEnriched, writeLastGateState } from '../../gates/handoff';
import { isoString } from '../../model/time';
import { resolveActor } from '../../sources/actor';
import { type TokenCounts, zeroTokens, addTokens } from '../../stream/events';
import { carriedBaseline } from '../../model/claimBaseline';
import { decide, finalGateRepeats, sameItem, type GreenGate } from './decide';
import {
  initialLaneState,
  initialRunState,
  type Action,
  type LaneState,
  type Observation,
  type RunEnd,
  type RunState,
} from './phases';
import { runAgentIteration, type IterationContext, type IterationOutcome, type RunRecordPatch } from './agentIteration';
import { AgentRoster } from './agentRoster';
import { ref } from './itemRef';
import { appendAttempt, clearAttempts, readAttempts } from '../attemptStore';
import { formatAttemptHistory, oneLine, type AttemptKind, type AttemptRecord } from '../attempts';
import { recoverCrashedRuns, skippedRunRecords } from '../crashRecovery';
import { holdFolderLock, recoverFolder, recoveryWarnings, refuseReadOnly, refuseWithoutGates } from '../runShell';
import { pruneRuns } from '../../control/runPruning';
import { EngineRefusal, timingFromConfig, type EngineOptions, type EngineTiming, type RunResult } from '../runOptions';
import {
  isStorageError,
  makeSpaceReserve,
  STORAGE_EXIT,
  storageFailureText,
  type SpaceReserve,
} from '../../store/storageFailure';
import { EXIT_CODES, type EngineEvent, type GateTier, type IterationPurpose } from '../events';
import { ensureRalphIgnored, headSha, lastCommitLine, lastCommitSubject, treeState } from '../git';
import { SentinelWatcher } from '../sentinelWatcher';
import { runNotify } from '../notify';
import { answerFilePath, questionAnswerSection } from '../question';
import { loadSources, buildPlan } from '../../sources/plan';
import { startOfferOf } from '../../sources/startPolicy';
import {
  availableSources,
  checklistAt,
  type Claim,
  type ClaimBaseline,
  type DoneClaim,
  type WorkItem,
  type WorkSource,
} from '../workSource';
import { markedByPerson, readPersonMarks, removePersonMarks } from '../personMarks';
import { marksChanged, personMarksFor } from '../../model/claimBaseline';
import { writeBaselineMirror } from '../baselineMirror';
import { TaskFileStash, type RestoredFile } from '../taskFileStash';
import { ralphFile } from '../../model/ralphPaths';
import { writePauseSentinel } from '../../control/runControl';

/** The item a work iteration is about, and what the shell learned of it on the way (for the next observations). */
interface WorkInProgress {
  item: WorkItem;
  records: AttemptRecord[];
  headBefore: string | null;
  fpBefore: string | null;
  out: IterationOutcome | null;
  claim: DoneClaim | null;
  verifiedBy?: GateTier;
}

/**
 * The claims since `baseline` that are not a person's own (`ralph task done` from outside an iteration after the
 * baseline was taken, and not written while an agent ran: `personMarksFor`): what a green gate must confirm, or what
 * goes back (issue 11).
 */
export async function unverifiedClaims(folder: string, source: WorkSource, baseline: ClaimBaseline): Promise<Claim[]> {
  const claims = await source.claimsSince(baseline);
  if (!claims.length) return [];
  const theirs = markedByPerson(personMarksFor(await readPersonMarks(folder), baseline), claims, baseline.at);
  return claims.filter((c) => !theirs.includes(c));
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
export class Lane extends EventEmitter<{ event: [event: EngineEvent, lane?: number] }> {
  readonly runId: string;
  private readonly timing: EngineTiming;
  private readonly folder: string;
  private sentinels: SentinelWatcher | undefined;
  private iteration = 0;
  private cost = 0;
  private tokens: TokenCounts = zeroTokens();
  /** The task files' content at each agent start (issue 11 row 14); none in a lane (the coordinator owns quantum.json). */
  private readonly stash: TaskFileStash | null;
  /** The loop's run-level and lane states (decide.ts); set at start. */
  private runState: RunState | undefined;
  private laneState: LaneState = initialLaneState(0);
  private work: WorkInProgress | null = null;
  private review: IterationOutcome | null = null;
  private startedAt = '';
  private stopNoted = false;
  /** When the STOP now in force was first seen (ms since the epoch), for the watchdog's STOP grace. */
  private stopRequestedAt: number | null = null;
  private pauseNoted = false;
  private lastDone: string | null = null;
  /** A lane's last green gate and the tree around it (decide.ts `finalGateRepeats`); null in a sequential run. */
  private lastGreen: GreenGate | null = null;
  /** The run's gates, resolved once at start: frozen for the run (seed-systems.md §3.9), the prompt and the verdicts agree. */
  private gates: ResolvedGates | null = null;
  /** The files the gates run as they were when the run started (null without gates). */
  private gateFiles: { changed: () => Promise<string[]> } | null = null;
  /** The agents' project configuration files at run start (core/trust/agentConfig.ts); compared before each agent start. */
  private agentConfigAtStart: TrustedEntry[] = [];
  /** Project settings files already reported as changed (one warning per file and run). */
  private agentConfigWarned = new Set<string>();
  /** The last progress text reported. */
  private lastProgress = '';
  /** Absolute path of the agent CLI, resolved once at start. */
  private agentBinary: string | null = null;
  /** Rows of the command policy the run's agents do not enforce (a best-effort run lists them at its start). */
  private guardGapsOfRun: { agent: string; gap: GuardGap }[] = [];
  /** The run's agents in failover order and the usage limits they hit. */
  private readonly roster: AgentRoster;
  /** The item this run started and has not finished; given back when the run ends otherwise. */
  private current: WorkItem | null = null;
  /**
   * The last VERIFIED state of every item (issue 11 R1): taken when the run starts, then carried (decide.ts
   * `carriedBaseline`): a green gate adds what it verified, what was undone leaves it; nothing made done otherwise
   * (between iterations, during a gate, after the check) ever enters it, so it stays a claim. In run.json
   * `claimBaseline` while the run lives; null once the run's end put back what was open.
   */
  private baseline: ClaimBaseline | null = null;
  /** Items set aside while they wait for an answer (continueOnBlocked), by id; given back like `current`. */
  private readonly setAside = new Map<string, WorkItem>();
  /** The run's command guard (claude only), stopped when the run ends. */
  private guard: GuardServer | null = null;
  /** flow-next actor of the run; the agent gets it as FLOW_ACTOR so its `flowctl done` matches our claim. */
  private actor = 'unknown';
  /** `--item`: handed to the source's first `next()` only. */
  private firstItem: string | undefined;

  constructor(private readonly o: EngineOptions) {
    super();
    this.folder = path.resolve(o.folder);
    this.stash = o.lane ? null : new TaskFileStash(this.folder);
    this.runId = o.runId ?? newRunId();
    this.timing = { ...timingFromConfig(o.config), ...o.timing };
    this.roster = new AgentRoster(o.config, this.folder, (e) => this.emitEvent(e));
  }

  private emitEvent(e: EngineEvent): void {
    this.emit('event', e);
  }

  /** A message with the workspace's absolute path shortened to workspace-relative paths (for events). */
  private shown(text: string): string {
    return text.split(this.folder + path.sep).join('');
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

  /**
   * With `item`: checks it can start (core `startOfferOf` over the plan graph) and returns the source to run on (the
   * given one, else the item's own); throws {@link EngineRefusal} naming why and the next ready item when it cannot.
   */
  private firstItemSource(): string | undefined {
    const id = this.o.item;
    if (!id) return this.o.source;
    const offer = startOfferOf(buildPlan(loadSources(this.folder)), id);
    if (!offer.ready) {
      throw new EngineRefusal(
        `Cannot start with ${id}: ${offer.why ?? 'it is not ready'}.${offer.next ? ` The next ready item of its source is ${offer.next} (ralph run --item ${offer.next}).` : ' No other item of its source is ready.'}`,
      );
    }
    this.firstItem = id;
    return this.o.source ?? offer.source;
  }

  /** Resolves the source the run works on, or throws {@link EngineRefusal}. */
  private pickSource(actor: string, want = this.o.source): WorkSource {
    const all = availableSources({ folder: this.folder, actor });
    // A markdown task file named by path (a resume brief) needs no other source in the folder.
    const named = want ? checklistAt(this.folder, want, actor) : undefined;
    if (!all.length && !named)
      throw new EngineRefusal(
        `No task source in ${this.folder}: add quantum.json, .flow/, RALPH_TASK.md, PROMPT.md or specs/<name>/tasks.md.`,
      );
    if (!want) return all[0]!;
    const norm = want === 'flow' ? 'flow-next' : want;
    // A checklist path may be given as typed (`./specs/x/tasks.md`, absolute): compare workspace-relative paths.
    const rel = path.relative(this.folder, path.resolve(this.folder, want)).split(path.sep).join('/');
    const found = all.find((s) => s.kind === norm) ?? all.find((s) => s.label === want || s.label === rel) ?? named;
    if (!found)
      throw new EngineRefusal(`No ${want} source in ${this.folder} (found: ${all.map((s) => s.label).join(', ')}).`);
    return found;
  }

  /** Runs the loop to its end. Throws {@link EngineRefusal} before starting when it cannot run. */
  async run(): Promise<RunResult> {
    const adapter = getAdapter(this.o.agent ?? this.o.config.agent);
    const actor = this.o.lane?.actor ?? resolveActor(this.folder);
    this.actor = actor;
    const source = this.o.lane?.source ?? this.pickSource(actor, this.firstItemSource());
    const unreadable = source.unreadable?.() ?? [];
    if (unreadable.length)
      throw new EngineRefusal(
        `${source.label} has ${unreadable.length === 1 ? 'a file' : `${unreadable.length} files`} that cannot be read; fix ${unreadable.length === 1 ? 'it' : 'them'} first (a source with an item it cannot read is never complete):\n${unreadable.map((u) => `  ${u}`).join('\n')}`,
      );
    const gates = await resolveGates(this.folder, this.o.config);
    this.gates = gates;
    // The files the gates run, read again before every gate run (issue 11, core/trust/gateFileContent.ts).
    this.gateFiles = gates ? await snapshotGateFiles(this.folder, Object.values(gates.commands)) : null;
    // The agents' project configuration as `ralph run` checked it against the user's trust (breaker-s6 row 05).
    this.agentConfigAtStart = await agentConfigEntries(this.folder);
    refuseWithoutGates(gates, this.o.noGates);
    // A configured path is relative to the workspace folder (as `-C` and the extension see it), not to our cwd.
    const { configured, binary, key } = agentBinary(adapter, this.o.config, this.folder);
    const pathEnv =
      this.o.agentEnv && 'PATH' in this.o.agentEnv ? (this.o.agentEnv.PATH ?? '') : (process.env.PATH ?? '');
    this.agentBinary = await which(binary, pathEnv);
    if (!this.agentBinary) {
      throw new EngineRefusal(
        `The ${adapter.name} CLI was not found (${configured} is not an executable${configured.includes('/') ? '' : ' on PATH'}). Install it, or set "${key}" in .ralph/config.json (VS Code: ralph.${key}). \`ralph doctor\` lists the agents it finds.`,
      );
    }
    await this.roster.resolve(adapter.name, this.agentBinary, pathEnv);
    // What the run's agents cannot enforce of the command policy (agents/guardSupport.ts): refused, or listed.
    const policy = (await loadCommandPolicy(this.folder))?.policy;
    for (const agent of this.roster.agents) {
      const gaps = guardGaps(agent, policy);
      if (gaps.length && this.o.config.guard !== 'best-effort')
        throw new EngineRefusal(guardRefusal(agent, '.ralph/command-policy', gaps));
      this.guardGapsOfRun.push(...gaps.map((gap) => ({ agent, gap })));
    }
    const maxIterations = this.o.maxIterations ?? this.o.config.maxIterations;
    const maxCost = this.o.maxCostUsd ?? this.o.config.maxCostUsd;
    const maxWallMs = this.o.maxWallTimeMs ?? this.o.config.maxWallTimeMinutes * 60_000;

    // A .ralph/ we may not write (by its mode bits: root ignores them) is refused up front.
    refuseReadOnly(this.folder);
    const releaseLock = await holdFolderLock(this.folder, (message) => this.emitEvent({ type: 'warning', message }));
    try {
      return await this.runLocked(adapter, source, gates, maxIterations, maxCost, maxWallMs);
    } finally {
      await this.guard?.close().catch(this.warn('could not close the command guard'));
      await releaseLock().catch(this.warn('could not release the engine lock'));
    }
  }

  private async runLocked(
    adapter: AgentAdapter,
    source: WorkSource,
    gates: ResolvedGates | null,
    maxIterations: number,
    maxCost: number,
    maxWallMs: number,
  ): Promise<RunResult> {
    await this.removeStaleStopRequest();
    // A crashed run may have worked on another source of this folder: recovery looks at all of them.
    const candidates = availableSources({ folder: this.folder, actor: this.actor });
    // A run of a task file outside the usual names (a resume brief) recovers its own file too.
    if (!candidates.some((c) => c.kind === source.kind && c.label === source.label)) candidates.push(source);
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

    // .ralph/runs/ stays bounded (issue 12): finished runs' raw streams compressed, the oldest finished runs deleted.
    await pruneRuns(this.folder, { keepRuns: this.o.config.keepRuns, runsMaxMb: this.o.config.runsMaxMb }).catch(
      this.warn('could not prune .ralph/runs'),
    );
    await mkdir(ralphRunDir(this.folder, this.runId), { recursive: true });
    // Space to record the end on a full disk (issue 12): released before the end is written after a storage error.
    // A lane uses its run's one reserve (the coordinator's), not a 1 MiB file of its own per story.
    const lane = this.o.lane;
    const reserve = lane
      ? (lane.reserve ?? null)
      : await makeSpaceReserve(ralphRunDir(this.folder, this.runId)).catch((err: Error) => {
          this.emitEvent({
            type: 'warning',
            message: `could not set disk space aside for the run's end: ${err.message}`,
          });
          return null;
        });
    try {
      return await this.runStarted(adapter, source, gates, maxIterations, maxCost, maxWallMs, reserve);
    } finally {
      if (!lane) await reserve?.release();
    }
  }

  private async runStarted(
    adapter: AgentAdapter,
    source: WorkSource,
    gates: ResolvedGates | null,
    maxIterations: number,
    maxCost: number,
    maxWallMs: number,
    reserve: SpaceReserve | null,
  ): Promise<RunResult> {
    // The command guard of this run (issue 17): claude gets the hook through --settings; cursor-agent has no PreToolUse hook.
    if (this.roster.agents.some((a) => getAdapter(a).guardHook))
      this.guard = await startGuardServer({
        workspace: this.folder,
        runDir: ralphRunDir(this.folder, this.runId),
        onRecord: (r) => this.emitEvent({ type: 'guard', ...r }),
      }).catch((err: Error) => {
        throw new EngineRefusal(`The command guard could not start: ${err.message}`);
      });
    const record = await createRunRecord(this.folder, {
      runId: this.runId,
      state: 'running',
      agent: adapter.name,
      source: { kind: source.kind, label: source.label },
      config: {
        maxIterations,
        maxCostUsd: maxCost,
        maxWallTimeMs: maxWallMs,
        model: this.o.config.model,
        noGates: !!this.o.noGates,
      },
      agentPgid: null,
    });
    this.startedAt = record.startedAt;
    // A lane's `.ralph/` is kept out of git by the repository's info/exclude (parallel/dispatcher.ts excludeRunnerFiles).
    if (!this.o.lane) await ensureRalphIgnored(this.folder).catch(this.warn('could not add .ralph/ to .gitignore'));
    await ensureHandoff(this.folder);
    this.sentinels = new SentinelWatcher(
      this.folder,
      { runId: this.runId, startedAt: this.startedAt },
      this.timing.sentinelPollMs,
    );
    this.sentinels.on('change', (c) => this.noteSentinels(c));
    this.noteSentinels(this.sentinels.state);
    this.emitEvent({
      type: 'runStarted',
      runId: this.runId,
      folder: this.folder,
      source: source.label,
      agent: adapter.name,
      maxIterations,
      gates: gates?.commands ?? {},
      maxCostUsd: maxCost,
      pid: process.pid,
    });
    for (const g of this.guardGapsOfRun) this.emitEvent({ type: 'warning', message: guardGapWarning(g.agent, g.gap) });
    await this.reportProgress(source);

    this.runState = initialRunState(
      {
        maxIterations,
        maxCostUsd: maxCost,
        maxWallMs,
        stallLimit: this.timing.stallLimit,
        backoff: this.timing.backoff,
        reviewer: this.o.reviewer ?? this.o.config.reviewer,
        continueOnBlocked: this.o.continueOnBlocked ?? this.o.config.continueOnBlocked,
        questionTimeoutMs: this.o.config.questionTimeoutMinutes * 60_000,
      },
      Date.now(),
    );
    let end: RunEnd;
    let storageFailure: string | null = null;
    try {
      end = await this.loop(source, gates);
    } catch (err) {
      // An effect failed in a way no decision covers (a file system error, a source that cannot be written): the
      // run ends failed with the error's message, as a value like every other end.
      end = { state: 'failed', reason: `engine error: ${(err as Error).message}`, completionReason: 'FAILED' };
      // A full disk or a read-only .ralph/ (issue 12): free the reserve so the cause and the give-back can be written.
      if (isStorageError(err)) {
        storageFailure = storageFailureText(err);
        end.reason = `storage error: ${err.message}`;
        await reserve?.release();
      }
    } finally {
      this.sentinels.close();
    }
    // No exit path leaves an unverified claim behind (issue 11): what was claimed since the open baseline goes back.
    // The baseline stays open through the end's notify (breaker-s6 25): it is closed only by the last check, below.
    let settled = false;
    if (this.baseline)
      settled = await this.putBackAtEnd(source, `the run ended ${end.state} before a gate verified it`);
    if (end.state !== 'completed') {
      for (const item of [...(this.current ? [this.current] : []), ...this.setAside.values()]) {
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
    const finalState =
      end.state === 'completed'
        ? 'completed'
        : end.state === 'stopped' || end.state === 'cancelled'
          ? 'stopped'
          : 'failed';
    const writeEnd = () =>
      updateRunRecord(this.folder, this.runId, {
        state: finalState,
        currentItem: null,
        iteration: this.iteration,
        completion: { reason: end.completionReason, at: isoString(Date.now()) },
        endState: end.state,
        endReason: end.reason,
        endedAt: isoString(Date.now()),
        agentPgid: null,
        costUsd: this.cost,
        tokens: this.tokens,
      });
    let endNotRecorded: string | null = null;
    removeFolderCaches(this.folder);
    await writeEnd().catch(async (err: Error) => {
      // The disk filled up at the very end: free the reserve and try once more before giving up (issue 12).
      if (isStorageError(err) && (await reserve?.release())) {
        storageFailure ??= storageFailureText(err);
        const again = await writeEnd().then(
          () => null,
          (e: Error) => e,
        );
        if (!again) return;
        err = again;
      }
      if (isStorageError(err)) storageFailure ??= storageFailureText(err);
      endNotRecorded = err.message;
      this.warn('could not write the end to run.json')(err);
    });
    const exitCode = storageFailure ? STORAGE_EXIT : EXIT_CODES[end.state];
    const ended: EngineEvent = {
      type: 'runEnded',
      state: end.state,
      reason: end.reason,
      completionReason: end.completionReason,
      exitCode,
      iterations: this.iteration,
      costUsd: this.cost,
      done: progress.done,
      total: progress.total,
    };
    // Notified before the event is logged, so a follower that stops at runEnded sees how the notification went.
    await this.notify(
      ended,
      `Ralph run ${this.runId} ${end.state}: ${end.reason} (${progress.done}/${progress.total} done, $${this.cost.toFixed(4)})`,
    );
    // The run's last check comes after its last child (breaker-s6 25: notify's code ran after the put-back): what
    // became done, or was marked, while the end's notify ran goes back too; then the baseline is closed.
    if (
      settled &&
      (await this.putBackAtEnd(source, `it became done while notify ran at the run's end (after the run's last gate)`))
    ) {
      // Marks written while a child ran were claims: settled now, they leave the file (else they read as a person's).
      await removePersonMarks(this.folder, this.baseline?.agentMarks ?? []).catch(
        this.warn('could not remove the claimed marks from .ralph/person-done.json'),
      );
      this.baseline = null;
      await updateRunRecord(this.folder, this.runId, { claimBaseline: null }).catch(
        this.warn('could not clear the claim baseline in run.json'),
      );
      await writeBaselineMirror(this.folder, this.runId, null).catch(
        this.warn('could not remove the claim baseline mirror'),
      );
    }
    this.emitEvent(ended);
    return {
      runId: this.runId,
      state: end.state,
      reason: end.reason,
      exitCode,
      iterations: this.iteration,
      costUsd: this.cost,
      done: progress.done,
      total: progress.total,
      ...(storageFailure ? { storageFailure } : {}),
      ...(endNotRecorded ? { endNotRecorded } : {}),
    };
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
    if (this.stopOrCancel()) return false;
    if (ms <= 0) return true;
    return (await this.waitForSentinelChange(ms, (c) => c.stop.length > 0)) && !this.cancelled;
  }

  private stopOrCancel(): boolean {
    return this.cancelled || (this.sentinels?.check().stop.length ?? 0) > 0;
  }

  /** At the run's end: puts back what is open since the baseline; false (with a warning) when that failed. */
  private async putBackAtEnd(source: WorkSource, reason: string): Promise<boolean> {
    if (!this.baseline) return true;
    return this.putBack(source, this.baseline, reason).then(
      () => true,
      (err: Error) => {
        this.emitEvent({
          type: 'warning',
          message: `could not put back unverified claims: ${err.message} (the next run puts them back)`,
        });
        return false;
      },
    );
  }

  /** Puts back every unverified claim since `baseline`, with a `claimPutBack` event naming them. */
  private async putBack(source: WorkSource, baseline: ClaimBaseline, reason: string): Promise<void> {
    const items = await unverifiedClaims(this.folder, source, baseline);
    if (!items.length) return;
    const how: string[] = [];
    await source.putBack(items, how);
    this.emitEvent({
      type: 'claimPutBack',
      items: items.map((i) => ref(i)),
      reason,
      ...(how.length ? { how: how.map((h) => this.shown(h)) } : {}),
    });
    await this.reportProgress(source, false);
  }

  /**
   * The open claims are settled (put back): the baseline is carried (what was undone leaves it, nothing joins it)
   * and kept in run.json. `verified`: the claims a green gate verified, which join it.
   */
  private async carryBaseline(source: WorkSource, verified: readonly Claim[] = []): Promise<void> {
    this.baseline = carriedBaseline(
      this.baseline,
      await source.snapshot(),
      verified.map((c) => ({ slot: c.slot, key: c.key })),
    );
    await updateRunRecord(this.folder, this.runId, { claimBaseline: this.baseline });
    await this.mirrorBaseline();
  }

  /**
   * Before a child of the run starts (an agent, a gate, `notify`: each runs code the agent could have written): the
   * person marks as they are now go into the baseline (`marksAtAgentStart`, run.json and the mirror), so marks
   * written while it runs are told apart even if the engine dies meanwhile (issue 11; breaker-s6 02/36: gate and
   * notify code are not "a person"). Returns that reading (none without an open baseline). `also`: other fields
   * of run.json written in the same write (the iteration's start), or alone without an open baseline.
   */
  private async markChildStart(also?: RunRecordPatch): Promise<Record<string, string> | null> {
    if (!this.baseline) {
      if (also) await updateRunRecord(this.folder, this.runId, also);
      return null;
    }
    const marks = await readPersonMarks(this.folder);
    this.baseline = { ...this.baseline, marksAtAgentStart: marks };
    await updateRunRecord(this.folder, this.runId, { ...also, claimBaseline: this.baseline });
    await this.mirrorBaseline();
    return marks;
  }

  /**
   * After a child of the run ended (`who`: "the agent", "the basic gate", "notify (question)"; `when`: "iteration 3"): the folder's
   * `ralph status` / `ralph next` answer-cache entries and parse caches are removed, under every spelling of the folder
   * (its code could have forged them), and marks that
   * changed while it ran join `agentMarks` (claims a gate verifies, never a person's own for this run), with a warning
   * naming them; `marksAtAgentStart` is dropped. `also`: other fields of run.json written in the same write (the
   * agent's end), or alone when no marks were taken.
   */
  private async markChildEnd(
    before: Record<string, string> | null,
    who: string,
    when?: string,
    also?: RunRecordPatch,
  ): Promise<void> {
    // The child's code could have forged an answer of `ralph status` / `ralph next` (breaker-s5 row 23) or a parsed
    // value (breaker-s6 row 21) in the user's cache.
    removeFolderCaches(this.folder);
    if (!before || !this.baseline) {
      if (also) await updateRunRecord(this.folder, this.runId, also);
      return;
    }
    const changed = marksChanged(before, await readPersonMarks(this.folder));
    const { marksAtAgentStart: _, ...rest } = this.baseline;
    const agentMarks = [...new Set([...(rest.agentMarks ?? []), ...changed])];
    this.baseline = agentMarks.length ? { ...rest, agentMarks } : rest;
    if (changed.length)
      this.emitEvent({
        type: 'warning',
        message: `${when ? `${when}: ` : ''}.ralph/person-done.json changed while ${who} ran (${changed.join(', ')}): those marks are claims a gate must verify, not a person's`,
      });
    await updateRunRecord(this.folder, this.runId, { ...also, claimBaseline: this.baseline });
    await this.mirrorBaseline();
  }

  /** Runs `child` between {@link markChildStart} and {@link markChildEnd} (also when it throws). */
  private async aroundChild<T>(who: string, child: () => Promise<T>): Promise<T> {
    const before = await this.markChildStart();
    try {
      return await child();
    } finally {
      await this.markChildEnd(before, who);
    }
  }

  /** Mirrors the baseline outside the workspace (K2/K3: the agent can edit run.json); a failure is a warning. */
  private async mirrorBaseline(): Promise<void> {
    await writeBaselineMirror(this.folder, this.runId, this.baseline).catch(
      this.warn('could not mirror the claim baseline in the state folder'),
    );
  }

  /**
   * What the source says now against the carried baseline: the unverified claims (a person's marks left out) and
   * the items of the run's source that vanished since the run saw them (issue 11 R1, A6/C3).
   */
  private async truthNow(source: WorkSource): Promise<{ unverified: Claim[]; vanished: string[] }> {
    const b = this.baseline;
    if (!b) return { unverified: [], vanished: [] };
    const unverified = await unverifiedClaims(this.folder, source, b);
    const now = await source.snapshot();
    const present = new Set(now.items ?? []);
    const vanished = b.items && now.items ? b.items.filter((k) => !present.has(k)) : [];
    return { unverified, vanished };
  }

  /** Persists the run's own attempt counts (decide.ts `failedAttempts`) in run.json `attempts` (issue 11). */
  private async recordAttemptCounts(): Promise<void> {
    await updateRunRecord(this.folder, this.runId, { attempts: this.runState?.failedAttempts ?? {} });
  }

  /** Applies the loop's pure decision to an observation: keeps its states, returns its actions. */
  private step(obs: Observation): Action[] {
    const d = decide(this.runState!, this.laneState, obs);
    this.runState = d.next.run;
    this.laneState = d.next.lane;
    this.cost = this.runState.costUsd;
    return d.actions;
  }

  /** Reports an error the run survives as a `warning` event (never swallowed). */
  private warn(what: string): (err: unknown) => void {
    return (err: unknown) =>
      this.emitEvent({ type: 'warning', message: `${what}: ${err instanceof Error ? err.message : String(err)}` });
  }

  private stopName(c: SentinelCheck): string | null {
    return c.stop.length ? path.relative(this.folder, c.stop[0]!.file) : null;
  }

  /** The shell: observes, asks {@link decide}, performs the actions, until an `end`. */
  private async loop(source: WorkSource, gates: ResolvedGates | null): Promise<RunEnd> {
    // The state the run found is its first verified baseline (R1); crash recovery has put back what earlier runs left.
    this.baseline = await source.snapshot();
    await updateRunRecord(this.folder, this.runId, { claimBaseline: this.baseline });
    await this.mirrorBaseline();
    let first = true;
    for (;;) {
      // Woken early by STOP or cancel, the sleep returns at once; the decision then ends the run.
      if (!first) await this.sleep(this.timing.betweenIterationsMs);
      first = false;
      const c = this.sentinels!.check();
      const answer = this.laneState.waiting ? await this.readAnswer(this.laneState.waiting.id) : null;
      const answers: Record<string, string> = {};
      for (const q of this.runState!.asked) {
        const text = await this.readAnswer(q.id);
        if (text !== null) answers[q.id] = text;
      }
      const end = await this.perform(
        source,
        gates,
        this.step({
          kind: 'beforeIteration',
          cancelled: this.cancelled,
          stop: this.stopName(c),
          pause: c.pause.length > 0,
          now: Date.now(),
          answer,
          answers,
        }),
      );
      if (end) return end;
    }
  }

  /** Performs actions in order; an action that observes something performs the decision on it. Returns the run's end, if reached. */
  private async perform(source: WorkSource, gates: ResolvedGates | null, actions: Action[]): Promise<RunEnd | null> {
    for (const a of actions) {
      const end = await this.act(source, gates, a);
      if (end) return end;
    }
    return null;
  }

  private async act(source: WorkSource, gates: ResolvedGates | null, a: Action): Promise<RunEnd | null> {
    const then = (obs: Observation) => this.perform(source, gates, this.step(obs));
    switch (a.type) {
      case 'end':
        return a.end;
      case 'honourStop':
        await honourStop(this.sentinels!.check());
        return null;
      case 'pause': {
        this.emitEvent({ type: 'paused' });
        await updateRunRecord(this.folder, this.runId, { state: 'paused' }).catch(
          this.warn('could not mark run.json paused'),
        );
        let c = this.sentinels!.check();
        while (c.pause.length && !c.stop.length && !this.cancelled) {
          await this.waitForSentinelChange(1000);
          c = this.sentinels!.check();
        }
        const end = await then({ kind: 'pauseEnded', cancelled: this.cancelled, stop: this.stopName(c) });
        if (end) return end;
        await updateRunRecord(this.folder, this.runId, { state: 'running' }).catch(
          this.warn('could not mark run.json running'),
        );
        this.emitEvent({ type: 'resumed' });
        return null;
      }
      case 'runFix': {
        const out = await this.runAgent(source, null, a.purpose, 1, 'fix', '', a.text);
        return then(this.endedObservation(a.purpose, out));
      }
      case 'pickNext': {
        const first = this.firstItem;
        this.firstItem = undefined;
        // `ralph run --item` (the first pick) and an answered item are both "take this one": the source returns it while open.
        const take = a.take ?? first;
        const next = await source.next({ ...(a.skip ? { skip: a.skip } : {}), ...(take ? { take } : {}) });
        const truth = await this.truthNow(source);
        const seen = {
          vanished: truth.vanished,
          ...(next.kind === 'complete' ? { unverified: truth.unverified.map((i) => ref(i)) } : {}),
        };
        if (next.kind !== 'work') return then({ kind: 'next', next, sourceLabel: source.label, ...seen });
        const item = next.item;
        const records = await readAttempts(this.folder, item);
        this.work = { item, records, headBefore: null, fpBefore: null, out: null, claim: null };
        const failed = Math.max(records.length, (await source.failedAttempts(item)) ?? 0);
        return then({
          kind: 'next',
          next: {
            kind: 'work',
            item: ref(item, item.risky),
            failedAttempts: failed,
            attemptLimit: await source.attemptLimit(item),
            lastFailure: records.at(-1)?.reason ?? null,
          },
          sourceLabel: source.label,
          ...seen,
        });
      }
      case 'runWork': {
        const w = this.work!;
        const item = w.item;
        // The count can change between verifications (the agent ticked another box, a person edited the file).
        await this.reportProgress(source, false);
        // Current before the start is written: whatever ends the run from here gives the item back.
        this.current = item;
        await source.start(item);
        this.setAside.delete(item.id);
        // Kept in run.json with the current item, so a later start can undo what an unfinished run claimed. The
        // baseline is carried, never read afresh (R1): what became done since the last verdict is still a claim.
        this.baseline = carriedBaseline(this.baseline, await source.snapshot());
        await updateRunRecord(this.folder, this.runId, {
          currentItem: { source: item.source, id: item.id, title: item.title },
          claimBaseline: this.baseline,
        });
        await this.mirrorBaseline();
        w.headBefore = await headSha(this.folder);
        w.fpBefore = await source.fingerprint();
        const history = formatAttemptHistory(w.records, a.attempt.kind);
        const qa = a.answered ? questionAnswerSection(a.answered.question, a.answered.answer) : '';
        w.out = await this.runAgent(
          source,
          item,
          'work',
          a.attempt.number,
          a.attempt.kind,
          [qa, history].filter(Boolean).join('\n'),
          undefined,
          a.attempt.max,
        );
        return then(this.endedObservation('work', w.out));
      }
      case 'block': {
        const item = this.work?.item.id === a.item.id ? this.work.item : a.item;
        await source.block(item as WorkItem, a.reason);
        if (this.current?.id === a.item.id) this.current = null;
        this.emitEvent({ type: 'itemBlocked', item: ref(a.item), reason: a.reason });
        // Pause the run: a person looks at the blocked item, then resumes (or stops).
        if (a.pauseRun)
          await writePauseSentinel(ralphRunDir(this.folder, this.runId), `blocked: ${a.item.id}: ${a.reason}\n`);
        return null;
      }
      case 'defer': {
        // A usage limit may fail over to the next agent at once, or wait for another agent's earlier reset.
        const failover = this.roster.onDefer();
        const d = failover?.decision;
        if (d?.kind === 'switch') return null;
        // Waiting on another agent's reset: until that reset (with the loop's margin), not the limited agent's.
        const waitMs =
          d?.until != null && d.agent !== failover!.from
            ? Math.max(0, d.until - Date.now()) + this.timing.backoff.resetMarginMs
            : a.waitMs;
        this.emitEvent({
          type: 'deferred',
          reason: a.reason,
          waitMs,
          resetsAt: d?.until ?? a.resetsAt,
          inARow: a.inARow,
        });
        await this.sleep(waitMs);
        return null;
      }
      case 'checkClaim': {
        const w = this.work!;
        const signals = w.out?.signals ?? [];
        w.claim = await source.claim(w.item, signals);
        const others = this.baseline
          ? (await unverifiedClaims(this.folder, source, this.baseline))
              .filter((i) => i.id !== w.item.id)
              .map((i) => ({ ...ref(i), ...(i.risky ? { risky: true } : {}) }))
          : [];
        return then({
          kind: 'claimed',
          done: w.claim.done,
          completeSignal: signals.some((s) => s.kind === 'complete'),
          storyFailed: signals.some((s) => s.kind === 'storyFailed'),
          lastText: oneLine(w.out?.lastText ?? ''),
          sourceLabel: source.label,
          others,
        });
      }
      case 'runGate': {
        const w = this.work!;
        // A lane notes the tree around a green gate, so that its final gate does not repeat it (finalGateRepeats).
        this.lastGreen = null;
        const treeBefore = this.o.lane ? await treeState(this.folder) : null;
        const gate = await this.runTier(gates, a.tier);
        if (gate && 'filesChanged' in gate) return then(gate.filesChanged);
        if (this.cancelled) return then({ kind: 'cancelledDuringGate' });
        if (!gate) return then({ kind: 'verified', gate: null, approach: '' });
        if (this.o.lane && gate.exitCode === 0)
          this.lastGreen = { command: gate.command, treeBefore, treeAfter: await treeState(this.folder) };
        // B1v/B2: what is claimed now; decide() keeps only what was claimed before the gate started.
        const claimsAfter = this.baseline
          ? (await unverifiedClaims(this.folder, source, this.baseline)).map((i) => ref(i))
          : undefined;
        const approach =
          (w.headBefore !== (await headSha(this.folder)) ? await lastCommitSubject(this.folder) : null) ??
          oneLine(w.out?.lastText ?? '');
        const reason = `${gate.label} gate exit ${gate.exitCode}${gate.timedOut ? ' (timed out)' : ''}: ${gate.failingLines.slice(0, 5).join(' | ') || gate.tail.slice(-3).join(' | ') || 'no output'}`;
        this.work!.verifiedBy = gate.label as GateTier;
        return then({
          kind: 'verified',
          gate: { tier: gate.label as GateTier, passed: gate.exitCode === 0, reason },
          approach,
          ...(claimsAfter ? { claimsAfter } : {}),
        });
      }
      case 'accept': {
        const w = this.work!;
        const alsoDone = a.also;
        await source.accept(w.item, alsoDone);
        this.current = null;
        // The verified items join the carried baseline (R1); nothing else does.
        const claims = this.baseline ? await unverifiedClaims(this.folder, source, this.baseline) : [];
        await this.carryBaseline(
          source,
          claims.filter((c) => sameItem(c, w.item) || alsoDone.some((x) => sameItem(x, c))),
        );
        await updateRunRecord(this.folder, this.runId, { currentItem: null });
        await clearAttempts(this.folder, w.item);
        this.lastDone = w.item.title;
        const tier = w.verifiedBy ?? null;
        this.emitEvent({ type: 'verified', item: ref(w.item), tier });
        for (const also of alsoDone) this.emitEvent({ type: 'verified', item: also, tier });
        await this.reportProgress(source);
        return null;
      }
      case 'attemptFailed': {
        const w = this.work!;
        await this.recordAttemptCounts();
        await appendAttempt(this.folder, w.item, {
          number: a.attempt,
          approach: a.approach,
          reason: a.reason,
          at: isoString(Date.now()),
          runId: this.runId,
        });
        // The other claims went back with `putBack`; the item itself goes back here (its status, its box).
        await source.reject(w.item, [], a.reason);
        this.emitEvent({
          type: 'attemptFailed',
          item: ref(a.item),
          attempt: a.attempt,
          approach: a.approach,
          reason: a.reason,
        });
        await this.carryBaseline(source);
        await this.reportProgress(source, false);
        return null;
      }
      case 'putBack': {
        const how: string[] = [];
        await source.putBack(a.items, how);
        this.emitEvent({
          type: 'claimPutBack',
          items: a.items.map((i) => ref(i)),
          reason: a.reason,
          ...(how.length ? { how: how.map((h) => this.shown(h)) } : {}),
        });
        await this.reportProgress(source, false);
        return null;
      }
      case 'checkProgress': {
        const w = this.work!;
        const progressed = w.headBefore !== (await headSha(this.folder)) || w.fpBefore !== (await source.fingerprint());
        // Nothing was claimed done that is still open (other claims went back with `putBack`).
        await this.carryBaseline(source);
        return then({ kind: 'progressChecked', progressed });
      }
      case 'enrichHandoff':
        await this.enrichHandoff(source);
        return null;
      case 'runFinalGate': {
        // A lane whose last green gate ran this same command on this same tree does not run it again (issue 19); no
        // gate event: none ran (the run log shows the green gate it repeats).
        const finalCommand = gates ? (gateCommandFor(gates, 'final')?.command ?? null) : null;
        const last = this.lastGreen;
        this.lastGreen = null;
        const treeNow = last && this.o.lane ? await treeState(this.folder) : null;
        if (last && finalGateRepeats({ lane: !!this.o.lane, finalCommand, lastGreen: last, treeNow })) {
          if (treeNow !== null) this.o.lane?.onGreenTree?.({ command: last.command, state: treeNow });
          return then({
            kind: 'finalGate',
            hasGates: true,
            claimsAfter: (await this.truthNow(source)).unverified.map((i) => ref(i)),
            gate: { passed: true, command: last.command, exitCode: 0, summary: 'passed on this same tree just before' },
          });
        }
        const gate = await this.runTier(gates, 'final');
        if (gate && 'filesChanged' in gate) return then(gate.filesChanged);
        if (this.cancelled) return then({ kind: 'cancelledDuringGate' });
        // B1v/B2: the final gate started with nothing unverified (decide() put it back first); what is claimed now
        // became done while it ran.
        const claimsAfter = gate ? (await this.truthNow(source)).unverified.map((i) => ref(i)) : [];
        return then({
          kind: 'finalGate',
          hasGates: gates !== null,
          claimsAfter,
          gate: gate
            ? {
                passed: gate.exitCode === 0,
                command: gate.command,
                exitCode: gate.exitCode,
                summary: gate.summary ?? gate.failingLines.join('\n'),
              }
            : null,
        });
      }
      case 'runReview': {
        this.review = await this.runAgent(source, null, 'review', 1, 'first', '');
        return then(this.endedObservation('review', this.review));
      }
      case 'checkVerdict': {
        const out = this.review;
        const verdict =
          [...(out?.signals ?? [])]
            .reverse()
            .find((s) => s.kind === 'verdict')
            ?.value.toUpperCase() ?? 'NONE';
        this.emitEvent({ type: 'reviewVerdict', verdict });
        return then({ kind: 'reviewed', verdict, text: out?.lastText ?? '' });
      }
      case 'ask': {
        const event: EngineEvent = {
          type: 'question',
          id: a.id,
          iteration: a.iteration,
          item: a.item,
          text: a.text,
          answerFile: answerFilePath(this.stateRoot, this.runId, a.id),
        };
        this.emitEvent(event);
        // continueOnBlocked: decide() set the item aside; it stays started (in progress, claimed) while other work goes on.
        if (this.current && this.runState!.asked.some((q) => q.id === a.id)) {
          this.setAside.set(this.current.id, this.current);
          this.current = null;
        }
        await updateRunRecord(this.folder, this.runId, { state: 'waiting' }).catch(
          this.warn('could not mark run.json waiting'),
        );
        await this.notify(event, `Ralph run ${this.runId}: question${a.item ? ` on ${a.item.id}` : ''}: ${a.text}`);
        return null;
      }
      case 'waitForAnswer':
        // Woken early by a sentinel change or cancel; the answer file is looked at again before the next decision.
        await this.waitForSentinelChange(1000);
        return null;
      case 'answered':
        this.emitEvent({ type: 'answered', id: a.id, item: a.item, text: a.text });
        await updateRunRecord(this.folder, this.runId, { state: 'running' }).catch(
          this.warn('could not mark run.json running'),
        );
        return null;
      case 'questionTimedOut':
        this.emitEvent({ type: 'questionTimedOut', id: a.id, item: a.item, waitedMs: a.waitedMs });
        return null;
      case 'warning':
        this.emitEvent({ type: 'warning', message: a.message });
        return null;
      case 'itemsVanished':
        this.emitEvent({ type: 'itemsVanished', source: a.source, items: a.items });
        return null;
      case 'continue':
        return null;
    }
  }

  /**
   * The folder of the run's shared files: the folder itself, or a lane's state root (issue 19). Answers live in its
   * run folder (`.ralph/runs/<run>/answers/`), where `ralph answer` (control/runControl.ts `answerQuestion`) writes them.
   */
  private get stateRoot(): string {
    return this.o.lane?.stateRoot ?? this.folder;
  }

  /** The answer written for question `id` in the state root's run folder (trimmed), or null while there is none. Read errors are warnings. */
  private async readAnswer(id: string): Promise<string | null> {
    const file = answerFilePath(this.stateRoot, this.runId, id);
    try {
      const st = await stat(file);
      // An answer is a few lines; a huge file is not read whole (never an unbounded read).
      const text = st.size > 1024 * 1024 ? null : (await readFile(file, 'utf8')).trim();
      if (text === null)
        this.emitEvent({
          type: 'warning',
          message: `${path.relative(this.stateRoot, file)} is larger than 1 MiB: not read as an answer`,
        });
      return text ? text : null;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
        this.warn(`could not read ${path.relative(this.stateRoot, file)}`)(err);
      return null;
    }
  }

  /**
   * Runs the `notify` command (if configured) for an event, between {@link markChildStart} and {@link markChildEnd};
   * its failure is a warning, never a failed run.
   */
  private async notify(event: EngineEvent, text: string): Promise<void> {
    const command = this.o.config.notify.trim();
    if (!command) return;
    // Its code may load files the agent wrote (breaker-s6 36): marks made while it runs are claims, not a person's.
    const r = await this.aroundChild(`notify (${event.type})`, () =>
      runNotify(command, { runId: this.runId, folder: this.folder, event }, text, {
        cwd: this.folder,
        timeoutMs: this.o.config.notifyTimeoutMs,
      }),
    );
    this.emitEvent({ type: 'notified', about: event.type, ok: r.ok, ...(r.ok ? {} : { detail: r.detail }) });
  }

  /** The `iterationEnded` observation of an iteration's outcome. */
  private endedObservation(purpose: IterationPurpose, out: IterationOutcome): Observation {
    return {
      kind: 'iterationEnded',
      purpose,
      iteration: out.iteration,
      ending: out.ending,
      detail: out.detail,
      fatal: out.exit.outcome.kind === 'fatal' || !!out.exit.spawnError,
      resetsAt: out.resetsAt,
      costUsd: out.costUsd,
      now: Date.now(),
      question: out.question?.text ?? null,
    };
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
    const skip = this.runState?.asked.flatMap((q) => (q.item ? [q.item.id] : [])) ?? [];
    const next = await source.next(skip.length ? { skip } : {}).catch((err: unknown) => {
      this.warn('could not ask the source for the next item (handoff)')(err);
      return null;
    });
    await writeAutoEnriched(this.folder, {
      lastCommit: await lastCommitLine(this.folder),
      lastDone: this.lastDone,
      nextItem: next?.kind === 'work' ? next.item.title : null,
    }).catch(this.warn('could not update the handoff'));
  }

  /**
   * Runs the gate of a tier (with the fallback of gateCommandFor); null when the run has no gates. A gate whose
   * files changed during the run (the agent weakened scripts/check.sh) is not run: `filesChanged` is returned,
   * and decide() ends the run (the `gateFilesChanged` observation).
   */
  private async runTier(
    gates: ResolvedGates | null,
    tier: GateTier,
  ): Promise<GateResult | null | { filesChanged: Extract<Observation, { kind: 'gateFilesChanged' }> }> {
    if (!gates) return null;
    const g = gateCommandFor(gates, tier);
    if (!g) return null;
    const changed = (await this.gateFiles?.changed()) ?? [];
    if (changed.length)
      return {
        filesChanged: {
          kind: 'gateFilesChanged',
          tier: g.tier,
          changed,
          reason: gateFilesChangedReason(g.tier, changed),
        },
      };
    this.emitEvent({ type: 'gateStarted', tier: g.tier, command: g.command });
    // Cancel ends the gate's process group too (an already-aborted signal means the gate never starts).
    const r = await this.aroundChild(`the ${g.tier} gate`, () =>
      runGateExclusive(
        {
          folder: this.folder,
          label: g.tier,
          command: g.command,
          timeoutMs: this.timing.gateTimeoutMs,
          signal: this.o.signal,
          killGraceMs: this.timing.killGraceMs,
          containment: this.o.config.containment,
        },
        (message) => this.emitEvent({ type: 'warning', message }),
      ),
    );
    this.emitEvent({
      type: 'gateResult',
      tier: g.tier,
      command: g.command,
      exitCode: r.exitCode,
      durationMs: r.durationMs,
      passed: r.exitCode === 0,
      logPath: r.logRelPath,
      failingLines: r.failingLines,
    });
    await writeLastGateState(this.folder, {
      label: r.label,
      exitCode: r.exitCode,
      summary: r.summary,
      command: r.command,
      durationMs: r.durationMs,
      logRelPath: r.logRelPath,
      failingLines: r.failingLines,
    });
    return r;
  }

  /** One iteration: build the prompt, spawn the agent, stream its events through the ledger, classify the end. */
  /** What one agent iteration needs of this lane (agentIteration.ts). */
  private iterationContext(): IterationContext {
    return {
      folder: this.folder,
      runId: this.runId,
      stateRoot: this.stateRoot,
      config: this.o.config,
      agentEnv: this.o.agentEnv,
      signal: this.o.signal,
      timing: this.timing,
      actor: this.actor,
      guardSettings: this.guard?.settings,
      gates: this.gates,
      agentConfigAtStart: this.agentConfigAtStart,
      agentConfigWarned: this.agentConfigWarned,
      stash: this.stash,
      stopRequestedAt: () => this.stopRequestedAt,
      onAgent: this.o.lane?.onAgent,
      emitEvent: (e) => this.emitEvent(e),
      warn: (what) => this.warn(what),
      markChildStart: (also) => this.markChildStart(also),
      markChildEnd: (before, who, when, also) => this.markChildEnd(before, who, when, also),
      restoreTaskFiles: (n) => this.restoreTaskFiles(n),
    };
  }

  private async runAgent(
    source: WorkSource,
    item: WorkItem | null,
    purpose: IterationPurpose,
    attempt: number,
    attemptKind: AttemptKind,
    attemptsText: string,
    taskText?: string,
    maxAttempts?: number,
  ): Promise<IterationOutcome> {
    this.iteration = this.o.lane ? this.o.lane.nextIteration() : this.iteration + 1;
    this.lastGreen = null;
    const agent = this.roster.next();
    const out = await runAgentIteration(this.iterationContext(), {
      n: this.iteration,
      agent,
      source,
      item,
      purpose,
      attempt,
      attemptKind,
      attemptsText,
      taskText,
      maxAttempts,
      costBefore: this.runState?.costUsd ?? 0,
    });
    this.roster.noteExit(agent.name, out.exit.outcome);
    this.cost = out.runCostUsd;
    this.tokens = addTokens(this.tokens, out.tokens);
    return out;
  }
}
