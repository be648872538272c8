import { existsSync, readdirSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import * as path from 'node:path';
import { ITERATION_MARKER } from '../../agents/spawn';
import { thisHostNames } from '../../control/processAlive';
import { listRunRecords } from '../../control/runRecords';
import { isCrashedRun } from '../../model/runRecord';
import type { QuantumStory } from '../../model/quantum';
import {
  endMarkedProcesses,
  endProcessGroup,
  groupCarriesEnv,
  isPidAlive,
  processGroupAlive,
} from '../../process/processGroup';
import { quantumPath, readQuantum } from '../../sources/quantum/readQuantum';
import { git, GitWorktreeDispatcher, LANE_DIR, laneBranch } from './dispatcher';
import { editQuantum } from './quantumRuntime';

/** What is known of a story's lane branch at recovery: does `ql-wt/<id>` exist, is its tip merged into the feature branch. */
export interface BranchFacts {
  exists: boolean;
  merged: boolean;
}

/** What recovery does to one story. */
export type RecoveryStep = { id: string; to: 'passed' | 'pending'; why: string };

/**
 * Crash recovery of a parallel run (seed-systems.md §4.8-1 done right), the decision: an `in_progress`
 * story whose lane branch is merged into the feature branch passed (the crash came after its merge); every other
 * `in_progress` story goes back to `pending` with its branch kept (the next lane takes the branch up again: nothing
 * it committed is lost). Only stories of lanes (a lane branch, or `worktree` set) are touched: other in-progress
 * stories are the sequential crash rule's (crashRecovery.ts). Other statuses are left alone. Pure.
 */
export function planRecovery(
  stories: readonly QuantumStory[],
  branches: ReadonlyMap<string, BranchFacts>,
): RecoveryStep[] {
  const out: RecoveryStep[] = [];
  for (const s of stories) {
    if (s.status !== 'in_progress') continue;
    const b = branches.get(s.id);
    // Only a lane's story: one a sequential run left in progress is the usual crash rule's (failed with a crash entry).
    if (!b?.exists && !s.worktree) continue;
    if (b?.exists && b.merged) out.push({ id: s.id, to: 'passed', why: `its branch ${laneBranch(s.id)} is merged` });
    else
      out.push({
        id: s.id,
        to: 'pending',
        why: b?.exists ? `its branch ${laneBranch(s.id)} is kept` : 'it has no branch',
      });
  }
  return out;
}

/** The lanes a run record names (run.json `lanes[]`), loosely read. */
/** What {@link recoverParallel} did, one line each (the engine reports them as warnings). */
export interface ParallelRecovery {
  notes: string[];
}

/**
 * Crash recovery at the start of any run of a git folder with quantum.json: ends the lane agents of
 * crashed runs (run.json `lanes[]`, their process groups and tokens), saves what a leftover lane tree left
 * uncommitted (a commit on its branch), applies {@link planRecovery} through the locked store, then, only after
 * that, removes leftover worktrees under `.ql-wt/` (branches kept) and prunes git's worktree list, clears
 * `execution.activeWorktrees` and removes `quantum.json.tmp`. `feature`: the branch merges went into (default HEAD).
 * A folder that is not a git repository, or has no quantum.json, is left alone.
 */
export async function recoverParallel(folder: string, graceMs: number, feature = 'HEAD'): Promise<ParallelRecovery> {
  const notes: string[] = [];
  const q = readQuantum(folder);
  if (!q?.doc) return { notes };
  // No lane was ever here: no git call, no `worktree prune` in a repository that never ran in parallel (every
  // sequential run's start comes through here).
  if (!hasLaneEvidence(q.doc.data, existsSync(path.join(folder, LANE_DIR)))) {
    await rm(`${quantumPath(folder)}.tmp`, { force: true });
    return { notes };
  }
  if ((await git(folder, ['rev-parse', '--is-inside-work-tree'], { reject: false })).exitCode !== 0) return { notes };
  // 1. Lane agents of crashed runs are ended before anything they work on is touched.
  const hosts = thisHostNames();
  for (const { record: r } of listRunRecords(folder).records) {
    if (!isCrashedRun(r, hosts, isPidAlive)) continue;
    for (const l of r.lanes ?? []) {
      if (
        l.agentPgid !== null &&
        l.agentPgid > 1 &&
        processGroupAlive(l.agentPgid) &&
        l.agentToken &&
        groupCarriesEnv(l.agentPgid, ITERATION_MARKER, l.agentToken)
      ) {
        await endProcessGroup(l.agentPgid, graceMs);
        notes.push(`ended lane ${l.lane}'s agent (group ${l.agentPgid}) of crashed run ${r.runId}`);
      }
      if (l.agentToken) await endMarkedProcesses(ITERATION_MARKER, l.agentToken, graceMs);
    }
  }
  // A lane engine's own record in its tree names its agent too (in case run.json's lanes[] was behind).
  const leftovers = existsSync(path.join(folder, LANE_DIR)) ? readdirSync(path.join(folder, LANE_DIR)) : [];
  for (const id of leftovers) {
    for (const { record: r } of listRunRecords(path.join(folder, LANE_DIR, id)).records) {
      if (!isCrashedRun(r, hosts, isPidAlive)) continue;
      if (
        typeof r.agentPgid === 'number' &&
        r.agentPgid > 1 &&
        processGroupAlive(r.agentPgid) &&
        typeof r.agentToken === 'string' &&
        r.agentToken &&
        groupCarriesEnv(r.agentPgid, ITERATION_MARKER, r.agentToken)
      ) {
        await endProcessGroup(r.agentPgid, graceMs);
        notes.push(`ended the agent (group ${r.agentPgid}) of ${id}'s lane of crashed run ${r.runId}`);
      }
      if (typeof r.agentToken === 'string' && r.agentToken)
        await endMarkedProcesses(ITERATION_MARKER, r.agentToken, graceMs);
    }
  }
  // 2. What a leftover tree holds uncommitted goes onto its branch.
  const dispatcher = new GitWorktreeDispatcher(folder, feature);
  for (const id of leftovers) {
    const saved = await dispatcher
      .saveLeftovers(id, `ralph: work left uncommitted by the lane of ${id} (recovered)`)
      .catch((err: Error) => {
        notes.push(`could not save the leftovers of ${LANE_DIR}/${id}: ${err.message}`);
        return null;
      });
    if (saved) notes.push(`saved what the lane of ${id} left uncommitted as ${saved.slice(0, 8)} on ${laneBranch(id)}`);
  }
  // 3. Stories: merged → passed, else pending with the branch kept.
  const merges = await mergedTips(folder, feature);
  const branches = new Map<string, BranchFacts>();
  for (const s of q.doc.data.stories) {
    if (s.status !== 'in_progress') continue;
    const tip = await git(folder, ['rev-parse', '--verify', '-q', `refs/heads/${laneBranch(s.id)}`], { reject: false });
    const sha = tip.exitCode === 0 ? tip.stdout.trim() : '';
    branches.set(s.id, { exists: !!sha, merged: !!sha && merges.has(sha) });
  }
  const steps = planRecovery(q.doc.data.stories, branches);
  const hadActive = (q.doc.data.execution?.activeWorktrees?.length ?? 0) > 0;
  if (steps.length || hadActive) {
    await editQuantum(folder, (doc) => {
      const changes = steps.flatMap((st) => {
        const i = doc.data.stories.findIndex((s) => s.id === st.id);
        if (i < 0 || doc.data.stories[i]!.status !== 'in_progress') return [];
        return [
          { op: 'set' as const, path: ['stories', i, 'status'], value: st.to },
          { op: 'set' as const, path: ['stories', i, 'startedAt'], value: null },
        ];
      });
      if (doc.data.execution?.activeWorktrees?.length)
        changes.push({ op: 'set', path: ['execution', 'activeWorktrees'], value: [] as never });
      return changes;
    });
    for (const st of steps) notes.push(`story ${st.id} was in progress in a crashed run: ${st.to} (${st.why})`);
  }
  // 4. Only now the leftover trees go (their branches stay), and git forgets them.
  for (const id of leftovers) {
    await dispatcher.remove(id);
    notes.push(`removed the leftover worktree ${LANE_DIR}/${id} (branch ${laneBranch(id)} kept)`);
  }
  await git(folder, ['worktree', 'prune'], { reject: false });
  await rm(`${quantumPath(folder)}.tmp`, { force: true });
  return { notes };
}

/**
 * Whether a parallel run may have left something to recover (pure): a leftover `.ql-wt/` folder, recorded
 * `execution.activeWorktrees`, or an in-progress story with its `worktree` set (the coordinator sets it before a
 * lane starts, so a crashed lane always leaves one of the three).
 */
export function hasLaneEvidence(
  doc: {
    stories: readonly { status: string; worktree?: unknown }[];
    execution?: { activeWorktrees?: readonly unknown[] };
  },
  laneDirExists: boolean,
): boolean {
  return (
    laneDirExists ||
    (doc.execution?.activeWorktrees?.length ?? 0) > 0 ||
    doc.stories.some((s) => s.status === 'in_progress' && !!s.worktree)
  );
}

/** Tips of branches merged into `feature` by a merge commit (its second and later parents). */
async function mergedTips(folder: string, feature: string): Promise<Set<string>> {
  const r = await git(folder, ['rev-list', '--merges', '--parents', '--max-count=2000', feature], { reject: false });
  const out = new Set<string>();
  for (const line of r.stdout.split('\n')) for (const p of line.trim().split(/\s+/).slice(2)) out.add(p);
  return out;
}
