import * as path from 'node:path';
import { resolveGates } from '../../gates/gateConfig';
import { loadShellParser } from '../../gates/shellSyntax';
import { holdGitWorker } from '../../git/gitWorker';
import { readQuantum } from '../../sources/quantum/readQuantum';
import type { EngineEvent } from '../events';
import {
  holdFolderLock,
  makeRunReserve,
  openRun,
  recordRunEnd,
  recoverFolder,
  refuseReadOnly,
  refuseWithoutGates,
  runResult,
  startRunFolder,
} from '../runShell';
import { resolveActorAsync } from '../../sources/actor';
import { removeFolderCaches } from '../../store/snapshotCache';
import type { ResolvedGates } from '../../gates/gateConfig';
import { EngineRefusal, timingFromConfig, type EngineOptions, type RunResult } from '../runOptions';
import { availableSources } from '../../sources/work/workSources';
import { Coordinator } from './coordinator';
import { excludeRunnerFiles, git, gitFailure } from './dispatcher';
import { pickDispatcher } from './pickDispatcher';
import { trace } from './trace';

/*
 * The start of a parallel run: its refusals (a git repository's top folder, no uncommitted changes to tracked files,
 * a readable quantum.json, the shell's gates and read-only refusals), the folder's lock, then the coordinator.
 */

/** Does a run with these options run in parallel: the quantum source, named or the folder's first source. */
export function parallelApplies(folder: string, o: EngineOptions): boolean {
  if (o.source) return o.source === 'quantum';
  const first = availableSources({ folder, actor: 'unknown' })[0];
  return first?.kind === 'quantum';
}

/**
 * Runs a parallel run to its end (called by startRun.ts `startRun` when `parallel` is asked for a quantum source).
 * Refuses (EngineRefusal) outside a git repository, with uncommitted changes to tracked files (merges happen in the
 * folder), without gates unless `noGates`, or with `item`. `emit` gets every event with its lane.
 */
export async function runParallel(
  o: EngineOptions,
  runId: string,
  emit: (e: EngineEvent, lane: number) => void,
): Promise<RunResult> {
  const folder = path.resolve(o.folder);
  if (o.item)
    throw new EngineRefusal(
      '--item cannot be used with a parallel run: the rounds pick the stories (run without --parallel to begin with one story).',
    );
  // The lanes' git calls start from a small helper process (gitWorker.ts): the main thread, which drives every lane,
  // does not wait for forks of this large process. Started now, so that its start-up overlaps the checks below (which
  // run git from here).
  trace(0, 'run', 'start');
  const releaseGitWorker = holdGitWorker({ start: true });
  try {
    return await checkedRun(o, folder, runId, emit);
  } finally {
    await releaseGitWorker();
    trace(0, 'run', 'returned');
  }
}

async function checkedRun(
  o: EngineOptions,
  folder: string,
  runId: string,
  emit: (e: EngineEvent, lane: number) => void,
): Promise<RunResult> {
  // One rev-parse for the three facts the start needs (the top folder, git's common folder, the branch) beside the
  // status check: two processes at once rather than four one after another, each a fork of this large process. With
  // no commit on HEAD that rev-parse fails: the top folder is asked alone, and the rest as before.
  const statusArgs = ['status', '--porcelain', '--untracked-files=no', '--', '.', ':(exclude)quantum.json'];
  const checks = Promise.all([
    git(
      folder,
      ['rev-parse', '--show-toplevel', '--path-format=absolute', '--git-common-dir', '--abbrev-ref', 'HEAD'],
      { reject: false, direct: true },
    ),
    git(folder, statusArgs, { reject: false, direct: true }),
  ]);
  // The actor (two `git config` reads) beside them, from this thread: the helper is still starting, and the actor
  // is needed right after the lock. Asked again after a checkout of the feature branch (an `includeIf "onbranch:"`
  // can set user.email per branch).
  const actorAsked = resolveActorAsync(folder, process.env, { direct: true });
  // While git answers: the shell parser the first lane's gate-file snapshot needs (engine.ts snapshotGateFiles).
  loadShellParser();
  const [facts, status] = await checks;
  const lines = facts.exitCode === 0 ? facts.stdout.split(/\r?\n/) : [];
  const repo = lines.length === 3 ? { commonDir: lines[1]!, branch: lines[2]! } : null;
  const inside = repo
    ? { exitCode: 0, stdout: lines[0]! }
    : await git(folder, ['rev-parse', '--show-toplevel'], { reject: false, direct: true });
  if (inside.exitCode !== 0)
    throw new EngineRefusal(
      `A parallel run needs a git repository: ${folder} is not one (lanes are git worktrees merged back into the feature branch). Run without --parallel, or \`git init\` and commit first.`,
    );
  if (path.resolve(inside.stdout.trim()) !== folder)
    throw new EngineRefusal(
      `A parallel run needs the repository's top folder (${inside.stdout.trim()}), not ${folder}.`,
    );
  // quantum.json is the runner's own (its statuses change during the run; lanes never commit it).
  if (status.exitCode !== 0) throw gitFailure(statusArgs, status);
  const dirty = status.stdout.trim();
  if (dirty)
    throw new EngineRefusal(
      `A parallel run refuses to start while tracked files have uncommitted changes (the lanes merge into this folder); commit or stash them first:\n${dirty
        .split('\n')
        .slice(0, 10)
        .map((l) => `  ${l}`)
        .join('\n')}`,
    );
  const q = readQuantum(folder);
  if (!q?.doc)
    throw new EngineRefusal(
      q?.problem
        ? `${q.problem.file}:${q.problem.line}:${q.problem.column}: ${q.problem.message}`
        : `No quantum.json in ${folder}: only quantum stories run in parallel.`,
    );
  const gates = await resolveGates(folder, o.config);
  refuseWithoutGates(gates, o.noGates);
  refuseReadOnly(folder);
  const releaseLock = await holdFolderLock(folder, (message) => emit({ type: 'warning', message }, 0));
  try {
    const feature = await featureBranch(folder, repo?.branch, (message) => emit({ type: 'warning', message }, 0));
    const actor = feature === repo?.branch ? actorAsked : resolveActorAsync(folder);
    return await parallelShell(o, folder, runId, gates, emit, feature, repo?.commonDir, actor);
  } finally {
    await releaseLock().catch((err: Error) =>
      emit({ type: 'warning', message: `could not release the engine lock: ${err.message}` }, 0),
    );
  }
}

/**
 * The feature branch: quantum.json's `branchName` (checked out, created from HEAD when missing), else the branch
 * checked out now (`current`, when the start's checks read it). Refuses on a detached HEAD.
 */
async function featureBranch(
  folder: string,
  current: string | undefined,
  warn: (message: string) => void,
): Promise<string> {
  const want = readQuantum(folder)?.doc?.data.branchName?.trim();
  const now = current ?? (await git(folder, ['rev-parse', '--abbrev-ref', 'HEAD'])).stdout.trim();
  if (want && want !== now) {
    const exists =
      (await git(folder, ['rev-parse', '--verify', '-q', `refs/heads/${want}`], { reject: false })).exitCode === 0;
    await git(folder, exists ? ['checkout', '-q', want] : ['checkout', '-q', '-b', want]);
    warn(`checked out the feature branch ${want} (quantum.json branchName)${exists ? '' : ', created from ' + now}`);
  }
  const feature = want || now;
  if (feature === 'HEAD')
    throw new EngineRefusal(
      'A parallel run needs a branch checked out (HEAD is detached): check out the feature branch, or set quantum.json "branchName".',
    );
  return feature;
}

/**
 * The run shell around the coordinator, holding the folder's lock: crash recovery (a crashed parallel run's lanes
 * first), pruning, the run's one disk-space reserve (shared by its lanes), run.json, the sentinels and the start
 * record; then the coordinator's rounds; then the end record (runShell.ts `recordRunEnd`).
 */
async function parallelShell(
  o: EngineOptions,
  folder: string,
  runId: string,
  gates: ResolvedGates | null,
  emit: (e: EngineEvent, lane: number) => void,
  feature: string,
  commonDir: string | undefined,
  /** The run's actor, being asked of git (checkedRun). */
  actorAsked: Promise<string>,
): Promise<RunResult> {
  const warn = (message: string) => emit({ type: 'warning', message }, 0);
  const timing = { ...timingFromConfig(o.config), ...o.timing };
  const limits = {
    maxIterations: o.maxIterations ?? o.config.maxIterations,
    maxCostUsd: o.maxCostUsd ?? o.config.maxCostUsd,
    maxWallMs: o.maxWallTimeMs ?? o.config.maxWallTimeMinutes * 60_000,
  };
  const maxParallel = Math.max(1, o.maxParallel ?? o.config.maxParallel);
  await excludeRunnerFiles(folder, commonDir);
  const actor = await actorAsked;
  await recoverFolder(
    folder,
    { runId, sources: availableSources({ folder, actor }), killGraceMs: timing.killGraceMs, feature },
    warn,
  );
  // Worktrees here, or jobs for `ralph worker` processes (laneDispatcher "bullmq"): refused before anything is written.
  const dispatcher = await pickDispatcher(o.config, folder, feature, runId, warn, (e) => emit(e, 0));
  await startRunFolder(folder, runId, o.config, warn);
  // Written while the run starts (1 MiB and an fsync), ready before the first lane's engine.
  const reserve = { ready: makeRunReserve(folder, runId, warn) };
  try {
    const sentinels = await openRun(
      folder,
      runId,
      o,
      {
        agent: o.agent ?? o.config.agent,
        source: { kind: 'quantum', label: 'quantum.json' },
        sourceText: `quantum.json (parallel, up to ${maxParallel} lanes, feature branch ${feature})`,
        limits,
        gates,
        more: { parallel: { maxParallel, featureBranch: feature }, lanes: [] },
      },
      timing.sentinelPollMs,
      (e) => emit(e, 0),
    );
    trace(0, 'run', 'opened');
    const coordinator = new Coordinator(o, folder, runId, gates, emit, feature, actor, reserve, dispatcher);
    const end = await coordinator.rounds(limits, sentinels);
    trace(0, 'run', 'roundsEnded');
    // A lane's agent could have forged this folder's status / next answers or parse caches in the user's cache.
    removeFolderCaches(folder);
    const progress = coordinator.progress();
    const facts = {
      end,
      iterations: coordinator.iterations,
      costUsd: coordinator.cost,
      done: progress.done,
      total: progress.total,
      storageFailure: coordinator.storageFailure,
    };
    const release = async () => (await reserve.ready)?.release();
    const recorded = await recordRunEnd(folder, runId, facts, release, warn, { lanes: [] });
    emit(recorded.ended, 0);
    return runResult(runId, facts, recorded);
  } finally {
    await (await reserve.ready)?.release();
    await dispatcher.close?.().catch((err: Error) => warn(`could not close the lane dispatcher: ${err.message}`));
  }
}
