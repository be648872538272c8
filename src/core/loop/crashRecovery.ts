import { ITERATION_MARKER } from '../agents/spawn';
import { endMarkedProcesses, endProcessGroup, isPidAlive, processGroupAlive } from '../process/processGroup';
import { ProgressTxtWriter } from './runFiles';
import { thisHostNames } from '../control/processAlive';
import { updateRunRecord } from '../control/runRecords';
import { ralphRunDir } from '../control/sentinels';
import { FINAL_RUN_STATES, runRecordSchema } from '../model/runRecord';
import { isoString } from '../model/time';
import { listDirSync, parseJsonFileText, readTextSync } from '../sources/readText';
import * as path from 'node:path';
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
  for (const e of listDirSync(path.join(folder, '.ralph', 'runs'))) {
    if (!e.isDir) continue;
    const file = path.join(ralphRunDir(folder, e.name), 'run.json');
    const text = readTextSync(file);
    if (text === undefined) continue;
    const parsed = parseJsonFileText(file, text, runRecordSchema);
    if (!parsed.ok) continue;
    const r = parsed.value;
    if (FINAL_RUN_STATES.includes(r.state) || !hosts.includes(r.host) || isPidAlive(r.pid)) continue;
    const extra = r;
    let killedGroup = false;
    if (typeof extra.agentPgid === 'number' && extra.agentPgid > 1 && processGroupAlive(extra.agentPgid)) {
      await endProcessGroup(extra.agentPgid, graceMs);
      killedGroup = true;
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
    out.push({ runId: r.runId, pid: r.pid, killedGroup, failedItems });
  }
  return out;
}
