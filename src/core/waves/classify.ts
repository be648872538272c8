import type { FileProblem } from '../store/parseError';
import { checkpointDoneSource, isUseful, type Checkpoint, type CheckpointRead } from './checkpoint';
import { claimFor, claimSummary, WAVE_OVER_STATUSES, type ClaimSummary, type WaveState } from './waveState';

/**
 * Wave recovery's decisions, pure (seed-systems.md §1.2, §1.5, §1.10): which subagents are done, active, or
 * orphaned, and of the orphans which can be resumed. Inputs are observations of the files (read by readWave.ts) and a
 * clock value; nothing here touches the disk.
 */

/** The age windows of the orphan rule (§1.10-1), ms. */
export interface OrphanWindows {
  /** A checkpoint older than this (and no DONE) may be an orphan. IJFW's prose: 60 s. */
  orphanAfterMs: number;
  /** …when the sub's last activity (checkpoint, events log, STATE.md) is older than this. IJFW's prose: 90 s. */
  inactiveAfterMs: number;
}

/** IJFW's windows (§1.2 step 3): no new checkpoint in 60 s, no activity in 90 s. */
export const DEFAULT_WINDOWS: OrphanWindows = { orphanAfterMs: 60_000, inactiveAfterMs: 90_000 };

import type { Disposition } from '../model/waves';

export type { Disposition } from '../model/waves';

/** Where DONE was found (§1.5, in the order consulted). */
export type DoneSource = 'checkpoint-status' | 'report' | 'state-tasks' | 'wave-status';

/** One subagent's checkpoint as observed on disk. */
export interface SubObservation {
  /** From the file's name (the identity); never from the file's content. */
  subId: string;
  /** The root folder the checkpoint was read from (the workspace, or a worktree root given with `--root`). */
  root: string;
  /** Absolute path of the checkpoint file. */
  file: string;
  /** The file's text as read (verbatim in the resume brief); `undefined` when it could not be read. */
  text?: string;
  read: CheckpointRead;
  /**
   * The checkpoint file's modification time, ms since epoch: the age of a checkpoint without a time of its own
   * (§1.10-2). readWave.ts asks for it only then (a readable checkpoint with a time may leave it out).
   */
  mtimeMs?: number;
  /** Modification time of `events-<subId>.jsonl`, when one exists. */
  eventsMtimeMs?: number;
  /** The worktree the checkpoint names, once confirmed to be a git worktree of the workspace (readWave.ts). */
  namedWorktree?: string;
}

/** A wave as observed on disk. */
export interface WaveObservation {
  waveId: string;
  /** The workspace folder (first) and any extra worktree roots. */
  roots: string[];
  state?: WaveState;
  claims: readonly ClaimSummary[];
  /** One per subagent id (de-duplicated across roots: the newer checkpoint wins). */
  subs: SubObservation[];
  /** Valid roster ids (STATE.md `subagents:`) without a checkpoint in any root. */
  pending: string[];
  problems: FileProblem[];
}

/** One subagent as every face shows it. Times in ms. */
export interface SubView {
  subId: string;
  disposition: Disposition;
  doneSource?: DoneSource;
  /** now − the checkpoint's own time (or the file's mtime); null for PENDING. */
  checkpointAgeMs: number | null;
  /** now − the last activity (checkpoint, events log, STATE.md updated_at); null for PENDING. */
  lastActivityAgeMs: number | null;
  /** When an ACTIVE sub becomes an orphan if nothing happens (ms since epoch). */
  orphanAtMs?: number;
  nextStep?: string;
  lastAction?: string;
  /** Why the checkpoint is unreadable, for STALE and in the problems. */
  unreadable?: string;
  /** The task summary from the sub's blackboard claim (§1.7). */
  summary?: string;
  checkpoint?: Checkpoint;
  /** The checkpoint's text, verbatim. */
  checkpointText?: string;
  /** Absolute path of the checkpoint file. */
  file?: string;
  /**
   * The sub's worktree: the root its checkpoint was read from when that is not the workspace folder, else the
   * worktree the checkpoint names when it is a confirmed git worktree of the workspace.
   */
  worktree?: string;
}

/** A wave classified at one instant. */
export interface WaveView {
  waveId: string;
  /** STATE.md `status`, when read. */
  status?: string;
  /** The clock value the view was computed at (ms since epoch). */
  now: number;
  windows: OrphanWindows;
  subagents: SubView[];
  problems: FileProblem[];
}

/** Classifies one subagent at `now` by §1.10-1 (pure). */
export function classifySub(
  obs: SubObservation,
  wave: Pick<WaveObservation, 'waveId' | 'state' | 'claims' | 'roots'> & {
    claimsByAgent?: ReadonlyMap<string, ClaimSummary>;
  },
  now: number,
  windows: OrphanWindows,
): SubView {
  const cp = obs.read.ok ? obs.read.checkpoint : undefined;
  // readWave.ts always gives the mtime of a checkpoint without a time; `now` (age 0) only for a hand-made observation.
  const anchor = cp?.timeMs ?? obs.mtimeMs ?? now;
  const lastActivity = Math.max(anchor, obs.eventsMtimeMs ?? -Infinity, wave.state?.updatedAtMs ?? -Infinity);
  const summary = claimSummary(claimFor(wave.claims, wave.waveId, obs.subId, wave.claimsByAgent));
  // Plain assignments in the order of the fields of SubView, not conditional spreads: a pass classifies a thousand
  // subagents in code that has not warmed up yet (bench/waves.bench.ts). The disposition is set last, in place.
  const view: SubView = {
    subId: obs.subId,
    disposition: 'ACTIVE',
    checkpointAgeMs: now - anchor,
    lastActivityAgeMs: now - lastActivity,
  };
  if (cp?.nextStep !== undefined) view.nextStep = cp.nextStep;
  if (cp?.lastAction !== undefined) view.lastAction = cp.lastAction;
  if (!obs.read.ok) view.unreadable = obs.read.reason;
  if (summary) view.summary = summary;
  if (cp) view.checkpoint = cp;
  if (obs.text !== undefined) view.checkpointText = obs.text;
  view.file = obs.file;
  if (obs.root !== wave.roots[0]) view.worktree = obs.root;
  else if (obs.namedWorktree) view.worktree = obs.namedWorktree;
  const done: DoneSource | undefined =
    (cp && checkpointDoneSource(cp)) ??
    (wave.state?.doneTasks.has(obs.subId) ? 'state-tasks' : undefined) ??
    (wave.state?.status && WAVE_OVER_STATUSES.includes(wave.state.status) ? 'wave-status' : undefined);
  if (done) {
    view.disposition = 'RESOLVED';
    view.doneSource = done;
    return view;
  }
  // Strictly older than both windows (§1.2 step 3: "no new checkpoint in the last 60 s, no DONE in the last 90 s").
  const orphanAt = Math.max(anchor + windows.orphanAfterMs, lastActivity + windows.inactiveAfterMs) + 1;
  if (now < orphanAt) {
    view.orphanAtMs = orphanAt;
    return view;
  }
  view.disposition = cp && isUseful(cp) ? 'RESUMED' : 'STALE';
  return view;
}

/** Claims by `agent`, the first one winning: {@link classifySub}'s `claimsByAgent` (pure). */
export function claimsIndex(claims: readonly ClaimSummary[]): Map<string, ClaimSummary> {
  const byAgent = new Map<string, ClaimSummary>();
  for (const c of claims) if (c.agent && !byAgent.has(c.agent)) byAgent.set(c.agent, c);
  return byAgent;
}

/**
 * Classifies every subagent of a wave at `now` (pure). Subagents are sorted by id; PENDING ones come from the roster.
 * `known`: views already computed by {@link classifySub} for some of `obs.subs` at the same `now`, windows and wave
 * (check.ts classifies while reading), reused as they are.
 */
export function classifyWave(
  obs: WaveObservation,
  now: number,
  windows: OrphanWindows = DEFAULT_WINDOWS,
  known?: ReadonlyMap<SubObservation, SubView>,
): WaveView {
  const claimsByAgent = claimsIndex(obs.claims);
  const subs = obs.subs.map((s) => known?.get(s) ?? classifySub(s, { ...obs, claimsByAgent }, now, windows));
  for (const id of obs.pending)
    subs.push({ subId: id, disposition: 'PENDING', checkpointAgeMs: null, lastActivityAgeMs: null });
  subs.sort((a, b) => (a.subId < b.subId ? -1 : a.subId > b.subId ? 1 : 0));
  return {
    waveId: obs.waveId,
    ...(obs.state?.status ? { status: obs.state.status } : {}),
    now,
    windows,
    subagents: subs,
    problems: obs.problems,
  };
}

/**
 * The next instant (ms since epoch) at which a disposition changes with no file event: the earliest `orphanAtMs` of
 * an ACTIVE subagent; `undefined` when none will (pure). A monitor sets its timer to this.
 */
export function nextTransitionAt(view: WaveView): number | undefined {
  let next: number | undefined;
  for (const s of view.subagents)
    if (s.orphanAtMs !== undefined && (next === undefined || s.orphanAtMs < next)) next = s.orphanAtMs;
  return next;
}

/** `{subId: disposition}` of a view: equal keys mean nothing a face shows has changed state. */
export function dispositionKey(view: WaveView): string {
  return view.subagents
    .map((s) => `${s.subId}=${s.disposition}${s.nextStep !== undefined ? `:${s.nextStep}` : ''}`)
    .join('\n');
}

/** Counts per disposition (orphans = RESUMED + STALE). */
export function countDispositions(view: WaveView): Record<Disposition, number> & { orphans: number } {
  const c = { RESOLVED: 0, RESUMED: 0, STALE: 0, ACTIVE: 0, PENDING: 0, orphans: 0 };
  for (const s of view.subagents) c[s.disposition]++;
  c.orphans = c.RESUMED + c.STALE;
  return c;
}
