import { listRuns } from '../control/runs';
import { HOW_TO_ADD_A_GATE, type ResolvedGates } from '../gates/gateConfig';
import { ralphFile } from '../model/ralphPaths';
import { tryHoldLock } from '../store/fileLock';
import { recoverCrashedRuns, skippedRunRecords, type RecoveredRun } from './crashRecovery';
import { recoverParallel } from './parallel/recovery';
import { EngineRefusal, NoGatesRefusal, StorageRefusal, type RunResult } from './runOptions';
import type { WorkSource } from '../sources/work/workSources';
import { createRunRecord, updateRunRecord } from '../control/runRecords';
import type { RunRecord } from '../model/runRecord';
import { SentinelWatcher } from './sentinelWatcher';
import type { EngineOptions } from './runOptions';
import { isoString } from '../model/time';
import { removeFolderCaches } from '../store/snapshotCache';
import {
  isStorageError,
  makeSpaceReserve,
  ralphWritableProblem,
  STORAGE_EXIT,
  storageFailureText,
  type SpaceReserve,
} from '../store/storageFailure';
import { mkdir } from 'node:fs/promises';
import { pruneRuns } from '../control/runPruning';
import { ralphRunDir } from '../control/sentinels';
import type { TokenCounts } from '../stream/events';
import { EXIT_CODES, type EngineEvent } from './events';
import type { RunRecordPatch } from './lane/agentIteration';
import type { RunEnd } from './lane/phases';

/*
 * The run's shell, written once for a sequential and a parallel run: the refusals every start makes, the folder's
 * lock, crash recovery with the warnings it reports, the start and end records. The shell around a lane (laneRun.ts)
 * and the parallel run's (parallel/runParallel.ts) call these, so the two starts refuse and recover with the same texts.
 */

/** A warning of the run, as an event (`{type: 'warning'}`) of its lane 0. */
export type Warn = (message: string) => void;

/** Refuses a run without gates unless `noGates` (`--no-gates`): a claim is verified by a gate, or by nothing. */
export function refuseWithoutGates(gates: ResolvedGates | null, noGates: boolean | undefined): void {
  if (!gates && !noGates)
    throw new NoGatesRefusal(`No gates configured: ${HOW_TO_ADD_A_GATE}, or run with --no-gates.`);
}

/**
 * Refuses a run whose `.ralph/` cannot be written (read-only by its mode, a read-only mount): the run could record
 * neither its state nor its end. A {@link StorageRefusal}: `ralph run` exits 74.
 */
export function refuseReadOnly(folder: string): void {
  const readOnly = ralphWritableProblem(folder);
  if (readOnly) throw new StorageRefusal(readOnly);
}

/**
 * Holds the folder's engine lock for the run (one run per folder: two would claim the same items and fight over the
 * same files) and returns its release; refuses, naming the active runs, when another run holds it.
 */
export async function holdFolderLock(folder: string, warn: Warn): Promise<() => Promise<void>> {
  const release = await tryHoldLock(ralphFile(folder, 'engineLock'), (err) =>
    warn(`the engine lock of this folder was lost: ${err.message}`),
  );
  if (release) return release;
  const active = listRuns(folder)
    .runs.filter((r) => r.kind === 'ralph' && r.active)
    .map((r) => `${r.id}${r.pid ? ` (pid ${r.pid})` : ''}`);
  throw new EngineRefusal(
    `Another Ralph run is active in ${folder}${active.length ? `: ${active.join(', ')}` : ''}. Stop it with \`ralph stop\` or wait for it to end.`,
  );
}

/**
 * The warnings crash recovery gives (one line each): the run records it skipped (`skipped`, crashRecovery.ts
 * `skippedRunRecords`), what it refused to do, and per recovered run: crashed (its agent group ended, its items
 * failed, its unverified claims put back), claims left open in a mirror without a record, or a run that ended with
 * unverified claims. Pure.
 */
export function recoveryWarnings(recovered: readonly RecoveredRun[], skipped: readonly string[] = []): string[] {
  const out = skipped.map((s) => `run record skipped: ${s}`);
  out.push(...recovered.flatMap((r) => r.warnings ?? []));
  for (const r of recovered) {
    const back = r.putBack.length ? `, put back ${r.putBack.join(', ')} (claimed done, never verified)` : '';
    if (r.crashed)
      out.push(
        `run ${r.runId} had crashed (engine pid ${r.pid} is gone): marked crashed${r.killedGroup ? ', its agent group killed' : ''}${r.failedItems.length ? `, failed ${r.failedItems.join(', ')}` : ''}${back}`,
      );
    else if (r.recorded === false)
      out.push(
        `run ${r.runId} left claims open in its baseline mirror (its run record is gone, names another run, or says it ended)${r.killedGroup ? ', its agent group killed' : ''}${back || ', nothing to put back'}`,
      );
    else if (r.putBack.length) out.push(`run ${r.runId} ended with unverified claims${back}`);
  }
  return out;
}

/**
 * Crash recovery at a run's start, holding the folder's lock: first the lanes and stories a crashed parallel run
 * left (parallel/recovery.ts; `feature`: the parallel run's feature branch), then the usual rule over every source
 * (`sources`): dead runs marked crashed, their agents ended, their unverified claims put back, every mirror left
 * settled (`lane`: a parallel run's lane in its tree, only the usual rule over its own runs). Each finding is a
 * warning; a failure of the lanes' recovery is one too.
 */
export async function recoverFolder(
  folder: string,
  o: { runId: string; sources: WorkSource[]; killGraceMs: number; feature?: string; lane?: boolean },
  warn: Warn,
): Promise<void> {
  // A parallel run's lane recovers only its own tree's runs: its coordinator holds the folder's lock and settles the rest.
  const lanes = o.lane
    ? { notes: [] }
    : await recoverParallel(folder, o.killGraceMs, o.feature).catch((err: Error) => ({
        notes: [`could not recover a parallel run's lanes: ${err.message}`],
      }));
  for (const note of lanes.notes) warn(note);
  const recovered = await recoverCrashedRuns(folder, o.sources, o.killGraceMs, {
    ownRunId: o.runId,
    sweepMirrors: !o.lane,
  });
  for (const w of recoveryWarnings(recovered, skippedRunRecords(folder))) warn(w);
}

/** What a run's end writes and reports: the end reached, the counts, and what the run learned of its storage. */
export interface RunEndFacts {
  end: RunEnd;
  iterations: number;
  costUsd: number;
  /** The run's tokens (a sequential run's; a parallel run's lanes keep theirs). */
  tokens?: TokenCounts;
  done: number;
  total: number;
  /** The storage failure the run already met (a full disk, a read-only `.ralph/`), or null. */
  storageFailure: string | null;
}

/** How a run's end went on disk: its exit code and the `runEnded` event to report, and the result's extra fields. */
export interface RecordedEnd {
  exitCode: number;
  ended: Extract<EngineEvent, { type: 'runEnded' }>;
  storageFailure: string | null;
  endNotRecorded: string | null;
}

/**
 * Writes a run's end to run.json (its state, completion, end reason, counts; `patch`: more fields, a parallel run's
 * `lanes: []`). On a storage error the run's disk-space reserve is freed (`release`, true when it freed something) and
 * the end written once more; a storage error makes the exit code {@link STORAGE_EXIT}; an end that could not be
 * written is a warning and `endNotRecorded` (the next run marks the record crashed). The caches of the folder are
 * removed first: a child of the run could have forged them.
 */
export async function recordRunEnd(
  folder: string,
  runId: string,
  f: RunEndFacts,
  release: () => Promise<boolean | undefined>,
  warn: Warn,
  patch: RunRecordPatch = {},
): Promise<RecordedEnd> {
  const { end } = f;
  const finalState =
    end.state === 'completed'
      ? 'completed'
      : end.state === 'stopped' || end.state === 'cancelled'
        ? 'stopped'
        : 'failed';
  const writeEnd = () =>
    updateRunRecord(folder, runId, {
      state: finalState,
      currentItem: null,
      iteration: f.iterations,
      completion: { reason: end.completionReason, at: isoString(Date.now()) },
      endState: end.state,
      endReason: end.reason,
      endedAt: isoString(Date.now()),
      agentPgid: null,
      costUsd: f.costUsd,
      ...(f.tokens ? { tokens: f.tokens } : {}),
      ...patch,
    });
  let storageFailure = f.storageFailure;
  let endNotRecorded: string | null = null;
  removeFolderCaches(folder);
  await writeEnd().catch(async (err: Error) => {
    // The disk filled up at the very end: free the reserve and try once more before giving up.
    if (isStorageError(err) && (await release())) {
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
    warn(`could not write the end to run.json: ${err.message}`);
  });
  const exitCode = storageFailure ? STORAGE_EXIT : EXIT_CODES[end.state];
  return {
    exitCode,
    storageFailure,
    endNotRecorded,
    ended: {
      type: 'runEnded',
      state: end.state,
      reason: end.reason,
      completionReason: end.completionReason,
      exitCode,
      iterations: f.iterations,
      costUsd: f.costUsd,
      done: f.done,
      total: f.total,
    },
  };
}

/** The result of a run whose end was recorded ({@link recordRunEnd}). */
export function runResult(runId: string, f: RunEndFacts, r: RecordedEnd): RunResult {
  return {
    runId,
    state: f.end.state,
    reason: f.end.reason,
    exitCode: r.exitCode,
    iterations: f.iterations,
    costUsd: f.costUsd,
    done: f.done,
    total: f.total,
    ...(r.storageFailure ? { storageFailure: r.storageFailure } : {}),
    ...(r.endNotRecorded ? { endNotRecorded: r.endNotRecorded } : {}),
  };
}

/**
 * A failure no decision covers ended the run (a file system error, a source that cannot be written): the run ends
 * failed with the error's message, as a value like every other end; a storage error (a full disk, a read-only
 * `.ralph/`) names its cause.
 */
export function engineErrorEnd(err: unknown): { end: RunEnd; storageFailure: string | null } {
  const end: RunEnd = {
    state: 'failed',
    reason: `engine error: ${(err as Error).message}`,
    completionReason: 'FAILED',
  };
  if (!isStorageError(err)) return { end, storageFailure: null };
  end.reason = `storage error: ${err.message}`;
  return { end, storageFailure: storageFailureText(err) };
}

/**
 * The run's folder under `.ralph/runs/`, made after the finished runs were pruned (their raw streams compressed, the
 * oldest deleted: `.ralph/runs/` stays bounded); a pruning failure is a warning.
 */
export async function startRunFolder(
  folder: string,
  runId: string,
  config: { keepRuns: number; runsMaxMb: number },
  warn: Warn,
): Promise<void> {
  await pruneRuns(folder, { keepRuns: config.keepRuns, runsMaxMb: config.runsMaxMb }).catch((err: Error) =>
    warn(`could not prune .ralph/runs: ${err.message}`),
  );
  await mkdir(ralphRunDir(folder, runId), { recursive: true });
}

/**
 * Space to record the run's end on a full disk (1 MiB in the run's folder, store/storageFailure.ts): released before
 * the end is written after a storage error; null, with a warning, when it could not be written.
 */
export function makeRunReserve(folder: string, runId: string, warn: Warn): Promise<SpaceReserve | null> {
  return makeSpaceReserve(ralphRunDir(folder, runId)).catch((err: Error) => {
    warn(`could not set disk space aside for the run's end: ${err.message}`);
    return null;
  });
}

/**
 * A run.json write whose latest value is all that matters (a parallel run's `lanes[]`): one write at a time, each
 * taking the state as it is when it runs (never an older view last); calls made while a write waits to start share it
 * (one write for a burst of changes). A failed write goes to `failed`.
 */
export class LatestRecordWrite {
  private last: Promise<void> = Promise.resolve();
  private queued: Promise<void> | null = null;

  constructor(
    private readonly writeNow: () => Promise<unknown>,
    private readonly failed: (err: unknown) => void,
  ) {}

  write(): Promise<void> {
    if (this.queued) return this.queued;
    const next = this.last.then(async () => {
      this.queued = null;
      await this.writeNow().catch(this.failed);
    });
    this.queued = next;
    this.last = next;
    return next;
  }
}

/** What a run's start records in run.json and reports in `runStarted`. */
export interface RunOpening {
  agent: string;
  source: RunRecord['source'];
  /** The source as `runStarted` names it. */
  sourceText: string;
  /** The run's caps (0 = none): iterations, USD, ms. */
  limits: { maxIterations: number; maxCostUsd: number; maxWallMs: number };
  gates: ResolvedGates | null;
  /** More fields of run.json (a parallel run's `parallel` and `lanes`). */
  more?: Partial<RunRecord>;
}

/**
 * A run's start, after its refusals and recovery: run.json written `running`, `runStarted` emitted, and the watcher
 * of the run's sentinels (from run.json's `startedAt`; the caller closes it) returned.
 */
export async function openRun(
  folder: string,
  runId: string,
  o: EngineOptions,
  r: RunOpening,
  sentinelPollMs: number,
  emit: (e: EngineEvent) => void,
): Promise<SentinelWatcher> {
  const record = await createRunRecord(folder, {
    runId,
    state: 'running',
    agent: r.agent,
    source: r.source,
    config: {
      maxIterations: r.limits.maxIterations,
      maxCostUsd: r.limits.maxCostUsd,
      maxWallTimeMs: r.limits.maxWallMs,
      model: o.config.model,
      noGates: !!o.noGates,
    },
    agentPgid: null,
    ...r.more,
  });
  const sentinels = new SentinelWatcher(folder, { runId, startedAt: record.startedAt }, sentinelPollMs);
  emit({
    type: 'runStarted',
    runId,
    folder,
    source: r.sourceText,
    agent: r.agent,
    maxIterations: r.limits.maxIterations,
    gates: r.gates?.commands ?? {},
    maxCostUsd: r.limits.maxCostUsd,
    pid: process.pid,
  });
  return sentinels;
}
