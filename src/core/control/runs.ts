import { statSync } from 'node:fs';
import * as path from 'node:path';
import { FINAL_RUN_STATES, isCrashedRun, type RunRecord } from '../model/runRecord';
import type { FileProblem } from '../store/parseError';
import { parseProgressTxt, pidFromRunId } from '../sources/flowNext/progressTxt';
import { listDirSync, readTextSync } from '../store/readJsonFile';
import { isPidAlive } from '../process/processGroup';
import { thisHostNames } from './processAlive';
import { checkSentinels, flowRunDir } from './sentinels';
import { RUN_FILES } from '../model/ralphPaths';
import { listRunRecords } from './runRecords';

/** What a person sees of a run. `crashed`: unfinished, and its known process is dead on this host; `waiting`: for the answer to a question. */
export type RunState = 'running' | 'paused' | 'waiting' | 'stopping' | 'stopped' | 'crashed' | 'completed' | 'failed';

/** One run of either kind: a flow-next ralph.sh run or one of ours. */
export interface RunInfo {
  id: string;
  kind: 'flow-next' | 'ralph';
  /** Absolute path of the run's folder. */
  dir: string;
  state: RunState;
  /** Unfinished and not crashed: what pause/resume/stop auto-detection picks from (§2.7). */
  active: boolean;
  /** Completion reason of a finished run (`DONE`, `NO_WORK`, `STOPPED`, `MAX_ITERATIONS`, `FAILED`, …). */
  reason?: string;
  iteration: number | null;
  /** flow-next epic / spec and task of the current (or last) iteration. */
  currentEpic: string | null;
  currentTask: string | null;
  /** Our runs: the item the engine works on. flow-next runs: the task. */
  currentItem: { source: string; id: string; title?: string } | null;
  /** PAUSE present (the run's own, or for our runs the global `scripts/ralph/PAUSE`). */
  paused: boolean;
  /** STOP requested and counted (for our runs, global STOPs newer than the start). */
  stopped: boolean;
  startedAt?: string;
  pid?: number;
  /** Our runs: run.json `claimBaseline` (the last verified state), while the run lives or left claims open. */
  claimBaseline?: unknown;
  /** Our runs: true for a parallel run (run.json `parallel`): its items are on lanes. */
  parallel?: boolean;
}

/** How liveness is probed; injectable so tests can say "dead" without killing anything. */
export interface RunProbe {
  isAlive?: (pid: number) => boolean;
  hostNames?: string[];
}

const exists = (f: string) => {
  try {
    statSync(f);
    return true;
  } catch {
    return false;
  }
};

/**
 * Every run of a folder: flow-next's `scripts/ralph/runs/<id>/` (those with a `progress.txt`, §2.7) and ours
 * (`.ralph/runs/<id>/run.json`), newest id last. A run is `crashed` only when a known process id (from a v0.8
 * run id, or our record's `pid`) is dead on this host; otherwise an unfinished run is active. A run record that
 * does not parse is reported in `problems` and skipped.
 */
export function listRuns(folder: string, probe: RunProbe = {}): { runs: RunInfo[]; problems: FileProblem[] } {
  const alive = probe.isAlive ?? isPidAlive;
  const hosts = probe.hostNames ?? thisHostNames();
  const runs: RunInfo[] = [];
  const problems: FileProblem[] = [];

  for (const e of listDirSync(path.join(folder, 'scripts', 'ralph', 'runs'))) {
    if (!e.isDir) continue;
    const dir = flowRunDir(folder, e.name);
    const text = readTextSync(path.join(dir, RUN_FILES.progress));
    if (text === undefined) continue;
    const p = parseProgressTxt(text);
    const paused = exists(path.join(dir, RUN_FILES.pause));
    const stopped = exists(path.join(dir, RUN_FILES.stop));
    const idPid = pidFromRunId(e.name);
    let state: RunState;
    let reason: string | undefined;
    if (p.completionReason !== undefined) {
      reason = p.completionReason;
      state =
        reason === 'STOPPED' ? 'stopped' : reason === 'FAILED' || reason === 'MAX_ITERATIONS' ? 'failed' : 'completed';
    } else if (idPid && hosts.some((h) => idPid.hostAndActor.startsWith(`${h}-`)) && !alive(idPid.pid)) {
      state = 'crashed';
    } else {
      state = stopped ? 'stopping' : paused ? 'paused' : 'running';
    }
    runs.push({
      id: e.name,
      kind: 'flow-next',
      dir,
      state,
      active: p.completionReason === undefined && state !== 'crashed',
      ...(reason !== undefined ? { reason } : {}),
      iteration: p.iteration,
      currentEpic: p.epic,
      currentTask: p.task,
      currentItem: p.task ? { source: 'flow-next', id: p.task } : null,
      paused,
      stopped,
      ...(p.startedAt ? { startedAt: p.startedAt } : {}),
      ...(idPid ? { pid: idPid.pid } : {}),
    });
  }

  const ours = listRunRecords(folder);
  problems.push(...ours.problems);
  for (const { dir, record } of ours.records) runs.push(ralphRunInfo(folder, dir, record, alive, hosts));
  return { runs, problems };
}

function ralphRunInfo(
  folder: string,
  dir: string,
  rec: RunRecord,
  alive: (pid: number) => boolean,
  hosts: string[],
): RunInfo {
  const s = checkSentinels(folder, { runId: rec.runId, startedAt: rec.startedAt });
  const paused = s.pause.length > 0;
  const stopped = s.stop.length > 0;
  const final = FINAL_RUN_STATES.includes(rec.state);
  let state: RunState;
  if (final) state = rec.state as RunState;
  else if (isCrashedRun(rec, hosts, alive)) state = 'crashed';
  else if (stopped || rec.state === 'stopping') state = 'stopping';
  else if (paused || rec.state === 'paused') state = 'paused';
  else if (rec.state === 'waiting') state = 'waiting';
  else state = 'running';
  const item = rec.currentItem;
  return {
    id: rec.runId,
    kind: 'ralph',
    dir,
    state,
    active: !final && state !== 'crashed',
    ...(rec.completion?.reason ? { reason: rec.completion.reason } : {}),
    iteration: rec.iteration,
    currentEpic: null,
    currentTask: item?.id ?? null,
    currentItem: item ? { source: item.source, id: item.id, ...(item.title ? { title: item.title } : {}) } : null,
    paused,
    stopped,
    startedAt: rec.startedAt,
    pid: rec.pid,
    ...(rec.claimBaseline ? { claimBaseline: rec.claimBaseline } : {}),
    ...((rec as { parallel?: unknown }).parallel ? { parallel: true } : {}),
  };
}
