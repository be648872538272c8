import { listRuns } from '../control/runs';
import type { ResolvedGates } from '../gates/gateConfig';
import { ralphFile } from '../model/ralphPaths';
import { tryHoldLock } from '../store/fileLock';
import { ralphWritableProblem } from '../store/storageFailure';
import { recoverCrashedRuns, skippedRunRecords, type RecoveredRun } from './crashRecovery';
import { recoverParallel } from './parallel/recovery';
import { EngineRefusal, NoGatesRefusal, StorageRefusal } from './runOptions';
import type { WorkSource } from './workSource';

/*
 * The run's shell, written once for a sequential and a parallel run: the refusals every start makes, the folder's
 * lock, and crash recovery with the warnings it reports. The sequential run (lane/lane.ts) and the coordinator
 * (parallel/coordinator.ts) call these, so the two starts refuse and recover with the same texts.
 */

/** A warning of the run, as an event (`{type: 'warning'}`) of its lane 0. */
export type Warn = (message: string) => void;

/** Refuses a run without gates unless `noGates` (`--no-gates`): a claim is verified by a gate, or by nothing. */
export function refuseWithoutGates(gates: ResolvedGates | null, noGates: boolean | undefined): void {
  if (!gates && !noGates)
    throw new NoGatesRefusal(
      'No gates configured: add a [gates] section to .ralph/command-policy or "gates" to .ralph/config.json (e.g. {"gates": {"basic": "npm test"}}), or run with --no-gates.',
    );
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
 * settled. Each finding is a warning; a failure of the lanes' recovery is one too.
 */
export async function recoverFolder(
  folder: string,
  o: { runId: string; sources: WorkSource[]; killGraceMs: number; feature?: string },
  warn: Warn,
): Promise<void> {
  const lanes = await recoverParallel(folder, o.killGraceMs, o.feature).catch((err: Error) => ({
    notes: [`could not recover a parallel run's lanes: ${err.message}`],
  }));
  for (const note of lanes.notes) warn(note);
  const recovered = await recoverCrashedRuns(folder, o.sources, o.killGraceMs, {
    ownRunId: o.runId,
    sweepMirrors: true,
  });
  for (const w of recoveryWarnings(recovered, skippedRunRecords(folder))) warn(w);
}
