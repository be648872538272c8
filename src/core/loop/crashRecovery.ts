import { ITERATION_MARKER } from '../agents/spawn';
import {
  endMarkedProcesses,
  endProcessGroup,
  groupCarriesEnv,
  isPidAlive,
  processGroupAlive,
} from '../process/processGroup';
import { ProgressTxtWriter } from './runFiles';
import { thisHostNames } from '../control/processAlive';
import { listRunRecords, updateRunRecord } from '../control/runRecords';
import { isCrashedRun } from '../model/runRecord';
import { isoString } from '../model/time';
import { isClaimBaseline, type WorkSource } from '../sources/work/workSources';
import { markedByPerson, readPersonMarks } from './personMarks';
import { openBaselines, personMarksFor, type ClaimBaseline } from '../model/claimBaseline';
import {
  baselineMirrorPath as baselineMirrorPathOf,
  listAgentMirrors,
  listBaselineMirrors,
  trustedBaseline,
  writeAgentMirror,
  writeBaselineMirror,
} from './baselineMirror';
import { FINAL_RUN_STATES, type RunRecord } from '../model/runRecord';
import type { WorkItemRef } from './events';

/** What crash recovery did for one run. */
export interface RecoveredRun {
  runId: string;
  /** The dead engine's pid. */
  pid: number;
  /** True when a still-running agent group of that run was found and ended. */
  killedGroup: boolean;
  /** Items it had in progress, now failed with a `crash` entry. */
  failedItems: string[];
  /** Items it left claimed done that no gate verified, now put back. */
  putBack: string[];
  /** False for a run that ended (stopped, e.g. Ctrl-C twice) but left unverified claims: only those were put back. */
  crashed: boolean;
  /** What recovery refused to do for this run (a recorded group that does not carry the run's token). */
  warnings?: string[];
  /**
   * False when the claims were settled from the mirror alone: the run's record is gone, names another run id, or
   * says the run ended with nothing open. Absent: settled from its record.
   */
  recorded?: boolean;
}

/** Options of {@link recoverCrashedRuns}. */
export interface RecoveryOptions {
  /** The starting run's id: its own mirror and agent file are never touched. */
  ownRunId?: string;
  /**
   * Settle every other mirror of this folder and end every other run's recorded agent (rule "the mirror is
   * the truth until settled"). Only a caller holding the folder's engine lock may (no other run of the folder lives);
   * lane engines do not (their worktree paths are reused by later lanes; the coordinator recovers lanes).
   */
  sweepMirrors?: boolean;
}

/**
 * Puts back what a run left claimed since its run.json `claimBaseline` ("every exit"): the items of the
 * baseline's source done now that were not then, except a person's own marks after it. Returns their ids.
 */
async function putBackLeftClaims(folder: string, r: RunRecord, sources: readonly WorkSource[]): Promise<string[]> {
  // The engine's mirror outside the workspace wins over run.json, which the agent can edit (K2/K3).
  const b = trustedBaseline(folder, r.runId, r.claimBaseline);
  return isClaimBaseline(b) ? putBackAgainst(folder, b, sources) : [];
}

/** Puts back what is claimed done since baseline `b` (a person's own marks after it left alone); returns the ids. */
async function putBackAgainst(folder: string, b: ClaimBaseline, sources: readonly WorkSource[]): Promise<string[]> {
  const source = sources.find((s) => s.kind === b.source && s.label === b.label);
  if (!source) return [];
  const claims = await source.claimsSince(b);
  const theirs = markedByPerson(personMarksFor(await readPersonMarks(folder), b), claims, b.at);
  const back: WorkItemRef[] = claims.filter((c) => !theirs.includes(c));
  if (back.length) await source.putBack(back);
  return back.map((i) => i.id);
}

/**
 * Crash recovery's warnings about records it skipped (a record whose runId is not its folder's name, one
 * that does not parse), one line each, `file:line:column: message`.
 */
export function skippedRunRecords(folder: string): string[] {
  return listRunRecords(folder).problems.map(
    (p) => `${p.line > 0 ? `${p.file}:${p.line}:${p.column}` : p.file}: ${p.message}`,
  );
}

/**
 * Crash recovery at start (issue "Crash recovery"): a run of this folder without a final state whose engine pid is
 * dead on this host is marked crashed; a still-running agent process group of it (`agentPgid` in run.json) is
 * ended (SIGTERM, grace, SIGKILL); the items it had in progress are failed with a `crash` entry however recent
 * (quantum-loop left them in_progress forever, seed-systems.md §4.8-1 and -4). Runs of other hosts and runs whose
 * engine is alive are left alone. With `o.sweepMirrors` (the caller holds the folder's engine lock), first every other
 * run's agent recorded in the state folder is ended (token checked), and last every mirror left (a run whose record is
 * gone, names another id, or was forged to a final state) has its claims put back and is removed: a dead
 * run's claims never outlive it, whatever its record says.
 */
export async function recoverCrashedRuns(
  folder: string,
  sources: readonly WorkSource[],
  graceMs: number,
  o: RecoveryOptions = {},
): Promise<RecoveredRun[]> {
  const out: RecoveredRun[] = [];
  const hosts = thisHostNames();
  // Another run's agent recorded outside the workspace: ended first, before it can claim again.
  const agentsEnded = new Map<string, { killed: boolean; warning?: string }>();
  if (o.sweepMirrors) {
    for (const a of listAgentMirrors(folder)) {
      if (a.runId === o.ownRunId) continue;
      agentsEnded.set(a.runId, await endRecordedAgent(a.pgid, a.token, a.runId, graceMs));
      await writeAgentMirror(folder, a.runId, null);
    }
  }
  for (const { record: r } of listRunRecords(folder).records) {
    // A run that ended (Ctrl-C twice marks it stopped) with its claims still open: put them back, nothing more.
    if (
      FINAL_RUN_STATES.includes(r.state) &&
      trustedBaseline(folder, r.runId, r.claimBaseline) &&
      hosts.includes(r.host) &&
      !isPidAlive(r.pid)
    ) {
      const putBack = await putBackLeftClaims(folder, r, sources);
      await updateRunRecord(folder, r.runId, { claimBaseline: null });
      await writeBaselineMirror(folder, r.runId, null);
      out.push({ runId: r.runId, pid: r.pid, killedGroup: false, failedItems: [], putBack, crashed: false });
      continue;
    }
    if (!isCrashedRun(r, hosts, isPidAlive)) continue;
    const extra = r;
    let killedGroup = agentsEnded.get(r.runId)?.killed ?? false;
    agentsEnded.delete(r.runId);
    const warnings: string[] = [];
    // Only a group whose processes carry this run's own token is this run's agent (a pgid in a record can
    // name any group, an unrelated one once the number is reused, or one a hostile record points at).
    if (typeof extra.agentPgid === 'number' && extra.agentPgid > 1 && processGroupAlive(extra.agentPgid)) {
      if (
        typeof extra.agentToken === 'string' &&
        extra.agentToken &&
        groupCarriesEnv(extra.agentPgid, ITERATION_MARKER, extra.agentToken)
      ) {
        await endProcessGroup(extra.agentPgid, graceMs);
        killedGroup = true;
      } else {
        warnings.push(
          `process group ${extra.agentPgid} named by run ${r.runId} does not carry that run's token: left alone`,
        );
      }
    }
    // What the agent's tools started outside its group (setsid, nohup) carries the iteration's marker.
    if (
      typeof extra.agentToken === 'string' &&
      (await endMarkedProcesses(ITERATION_MARKER, extra.agentToken, graceMs)).length
    )
      killedGroup = true;
    const failedItems: string[] = [];
    const reason = `crash: run ${r.runId} ended without finishing (engine pid ${r.pid} is gone)`;
    const trusted = trustedBaseline(folder, r.runId, extra.claimBaseline);
    // A person's own mark since the baseline (made while no child ran: a pause, between iterations) is theirs here
    // too, as putBackLeftClaims leaves it: run.json may still name the item of an attempt that ended without a verdict.
    const marks = isClaimBaseline(trusted) ? personMarksFor(await readPersonMarks(folder), trusted) : {};
    for (const source of sources) {
      const items = r.currentItem
        ? r.currentItem.source === source.kind
          ? [{ ...r.currentItem, title: r.currentItem.title ?? '' }]
          : []
        : await source.inProgress();
      for (const item of items) {
        if (isClaimBaseline(trusted) && markedByPerson(marks, [item], trusted.at).length) continue;
        await source.recoverCrashed(item, trusted, reason);
        failedItems.push(item.id);
      }
    }
    const putBack = (await putBackLeftClaims(folder, r, sources)).filter((id) => !failedItems.includes(id));
    await writeBaselineMirror(folder, r.runId, null);
    new ProgressTxtWriter(folder, r.runId).complete('CRASHED');
    await updateRunRecord(folder, r.runId, {
      state: 'failed',
      currentItem: null,
      claimBaseline: null,
      completion: { reason: 'CRASHED', at: isoString(Date.now()) },
      endState: 'crashed',
      endReason: reason,
      endedAt: isoString(Date.now()),
      agentPgid: null,
    });
    out.push({
      runId: r.runId,
      pid: r.pid,
      killedGroup,
      failedItems,
      putBack,
      crashed: true,
      ...(warnings.length ? { warnings } : {}),
    });
  }
  if (o.sweepMirrors) {
    // What is left in the state folder are claims no record settled: the mirror is the truth until they are.
    const left = listBaselineMirrors(folder).filter((m) => m.runId !== o.ownRunId);
    for (const m of openBaselines(left, [], o.ownRunId)) {
      const putBack = await putBackAgainst(folder, m.baseline, sources);
      await writeBaselineMirror(folder, m.runId, null);
      const agent = agentsEnded.get(m.runId);
      out.push({
        runId: m.runId,
        pid: 0,
        killedGroup: agent?.killed ?? false,
        failedItems: [],
        putBack,
        crashed: false,
        recorded: false,
        ...(agent?.warning ? { warnings: [agent.warning] } : {}),
      });
      agentsEnded.delete(m.runId);
    }
    for (const m of left.filter((x) => !x.baseline))
      out.push({
        runId: m.runId,
        pid: 0,
        killedGroup: false,
        failedItems: [],
        putBack: [],
        crashed: false,
        recorded: false,
        warnings: [
          `the claim baseline mirror of run ${m.runId} cannot be read: left in place (${baselineMirrorPathOf(folder, m.runId)})`,
        ],
      });
    for (const [runId, a] of agentsEnded)
      if (a.killed || a.warning)
        out.push({
          runId,
          pid: 0,
          killedGroup: a.killed,
          failedItems: [],
          putBack: [],
          crashed: false,
          recorded: false,
          ...(a.warning ? { warnings: [a.warning] } : {}),
        });
  }
  return out;
}

/**
 * Ends a recorded agent group `pgid` of run `runId` when its processes carry the run's `token` (a recorded pgid may
 * name a reused or unrelated group: left alone, with a warning), then whatever else carries the token.
 */
async function endRecordedAgent(
  pgid: number,
  token: string,
  runId: string,
  graceMs: number,
): Promise<{ killed: boolean; warning?: string }> {
  let killed = false;
  let warning: string | undefined;
  if (processGroupAlive(pgid)) {
    if (groupCarriesEnv(pgid, ITERATION_MARKER, token)) {
      await endProcessGroup(pgid, graceMs);
      killed = true;
    } else
      warning = `process group ${pgid} recorded for run ${runId}'s agent does not carry that run's token: left alone`;
  }
  if ((await endMarkedProcesses(ITERATION_MARKER, token, graceMs)).length) killed = true;
  return { killed, ...(warning ? { warning } : {}) };
}
