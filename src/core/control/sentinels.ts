import { statSync } from 'node:fs';
import * as path from 'node:path';
import { parseIsoTime } from '../model/time';
import { removeIfExists } from '../store/atomicWrite';
import { RALPH_DIR, RALPH_FILES, RUN_FILES, ralphRunDir } from '../model/ralphPaths';

/**
 * Sentinel files that steer a run (ARCHITECTURE.md "Words": sentinel). Rules, from the issue and the seeds:
 * - flow-next runs (seed-systems.md §2.7): `scripts/ralph/runs/<id>/PAUSE|STOP`; STOP is kept for audit.
 * - our runs: `.ralph/runs/<id>/PAUSE|STOP` (STOP likewise kept), plus the global aliases fn-3's spec proposed
 *   (`scripts/ralph/PAUSE`, `scripts/ralph/STOP`, §2.1) and ralph-wiggum's `.ralph/stop-requested` (§3.1).
 * - A global STOP counts only when its mtime is newer than the run's start, and is removed once honoured, so an
 *   old STOP never stops a later run (the class of bug in §3.15-9, where a stop request was lost or misapplied).
 * - PAUSE is level-triggered: present = paused, removed on resume.
 */
export const GLOBAL_PAUSE_FILES = ['scripts/ralph/PAUSE'] as const;
export const GLOBAL_STOP_FILES = ['scripts/ralph/STOP', `${RALPH_DIR}/${RALPH_FILES.stopRequested}`] as const;

/** Folder of one of our runs (named in model/ralphPaths.ts). */
export { ralphRunDir };

/** Folder of a flow-next run. */
export function flowRunDir(folder: string, runId: string): string {
  return path.join(folder, 'scripts', 'ralph', 'runs', runId);
}

/** A sentinel file found, and whether it is the run's own or a global alias. */
export interface SentinelHit {
  /** Absolute path. */
  file: string;
  scope: 'run' | 'global';
}

export interface SentinelCheck {
  stop: SentinelHit[];
  pause: SentinelHit[];
}

function mtimeMs(file: string): number | undefined {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return undefined;
  }
}

/**
 * What the sentinels say for one of our runs right now: STOP hits (the run's own, and global ones newer than
 * `startedAt`) and PAUSE hits. The loop engine calls this before selecting work and after each iteration
 * (as ralph.sh's `check_sentinels`, §2.9). Reads only; never throws for missing files.
 */
export function checkSentinels(folder: string, run: { runId: string; startedAt: string }): SentinelCheck {
  const dir = ralphRunDir(folder, run.runId);
  const started = parseIsoTime(run.startedAt) ?? 0;
  const stop: SentinelHit[] = [];
  const pause: SentinelHit[] = [];
  if (mtimeMs(path.join(dir, RUN_FILES.stop)) !== undefined)
    stop.push({ file: path.join(dir, RUN_FILES.stop), scope: 'run' });
  for (const rel of GLOBAL_STOP_FILES) {
    const f = path.join(folder, rel);
    const m = mtimeMs(f);
    if (m !== undefined && m > started) stop.push({ file: f, scope: 'global' });
  }
  if (mtimeMs(path.join(dir, RUN_FILES.pause)) !== undefined)
    pause.push({ file: path.join(dir, RUN_FILES.pause), scope: 'run' });
  for (const rel of GLOBAL_PAUSE_FILES) {
    const f = path.join(folder, rel);
    if (mtimeMs(f) !== undefined) pause.push({ file: f, scope: 'global' });
  }
  return { stop, pause };
}

/**
 * Called by the loop engine when it stops because of `check.stop`: removes the global STOP files it honoured
 * (the run's own STOP stays, for audit, as flow-next keeps it). Returns the removed paths.
 */
export async function honourStop(check: SentinelCheck): Promise<string[]> {
  const removed: string[] = [];
  for (const hit of check.stop) if (hit.scope === 'global' && (await removeIfExists(hit.file))) removed.push(hit.file);
  return removed;
}
