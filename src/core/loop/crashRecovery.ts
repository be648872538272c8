import { ITERATION_MARKER } from '../agents/spawn';
import { endMarkedProcesses, endProcessGroup, groupCarriesEnv, isPidAlive, processGroupAlive } from '../process/processGroup';
import { ProgressTxtWriter } from './runFiles';
import { thisHostNames } from '../control/processAlive';
import { listRunRecords, updateRunRecord } from '../control/runRecords';
import { isCrashedRun } from '../model/runRecord';
import { isoString } from '../model/time';
import type { WorkSource } from './workSource';

/** What crash recovery did for one run. */
export interface RecoveredRun {
  runId: string;
  /** The dead engine's pid. */
  pid: number;
  /** True when a still-running agent group of that run was found and ended. */
  killedGroup: boolean;
  /** Items it had in progress, now failed with a `crash` entry. */
  failedItems: string[];
  /** What recovery refused to do for this run (a recorded group that does not carry the run's token). */
  warnings?: string[];
}

/**
 * Crash recovery's warnings about records it skipped (issue 12: a record whose runId is not its folder's name, one
 * that does not parse), one line each, `file:line:column: message`.
 */
export function skippedRunRecords(folder: string): string[] {
  return listRunRecords(folder).problems.map((p) => `${p.line > 0 ? `${p.file}:${p.line}:${p.column}` : p.file}: ${p.message}`);
}

/**
 * Crash recovery at start (issue "Crash recovery"): a run of this folder without a final state whose engine pid is
 * dead on this host is marked crashed; a still-running agent process group of it (`agentPgid` in run.json) is
 * ended (SIGTERM, grace, SIGKILL); the items it had in progress are failed with a `crash` entry however recent
 * (quantum-loop left them in_progress forever, seed-systems.md §4.8-1 and -4). Runs of other hosts and runs whose
 * engine is alive are left alone.
 */
export async function recoverCrashedRuns(folder: string, sources: readonly WorkSource[], graceMs: number): Promise<RecoveredRun[]> {
  const out: RecoveredRun[] = [];
  const hosts = thisHostNames();
  for (const { record: r } of listRunRecords(folder).records) {
    if (!isCrashedRun(r, hosts, isPidAlive)) continue;
    const extra = r;
    let killedGroup = false;
    const warnings: string[] = [];
    // Only a group whose processes carry this run's own token is this run's agent (issue 12: a pgid in a record can
    // name any group, an unrelated one once the number is reused, or one a hostile record points at).
    if (typeof extra.agentPgid === 'number' && extra.agentPgid > 1 && processGroupAlive(extra.agentPgid)) {
      if (typeof extra.agentToken === 'string' && extra.agentToken && groupCarriesEnv(extra.agentPgid, ITERATION_MARKER, extra.agentToken)) {
        await endProcessGroup(extra.agentPgid, graceMs);
        killedGroup = true;
      } else {
        warnings.push(`process group ${extra.agentPgid} named by run ${r.runId} does not carry that run's token: left alone`);
      }
    }
    // What the agent's tools started outside its group (setsid, nohup) carries the iteration's marker.
    if (typeof extra.agentToken === 'string' && (await endMarkedProcesses(ITERATION_MARKER, extra.agentToken, graceMs)).length) killedGroup = true;
    const failedItems: string[] = [];
    const reason = `crash: run ${r.runId} ended without finishing (engine pid ${r.pid} is gone)`;
    for (const source of sources) {
      const items = r.currentItem ? (r.currentItem.source === source.kind ? [{ ...r.currentItem, title: r.currentItem.title ?? '' }] : []) : await source.inProgress();
      for (const item of items) {
        await source.recoverCrashed(item, extra.claimBaseline, reason);
        failedItems.push(item.id);
      }
    }
    new ProgressTxtWriter(folder, r.runId).complete('CRASHED');
    await updateRunRecord(folder, r.runId, {
      state: 'failed', currentItem: null,
      completion: { reason: 'CRASHED', at: isoString(Date.now()) },
      endState: 'crashed', endReason: reason, endedAt: isoString(Date.now()), agentPgid: null,
    });
    out.push({ runId: r.runId, pid: r.pid, killedGroup, failedItems, ...(warnings.length ? { warnings } : {}) });
  }
  return out;
}
