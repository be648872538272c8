import * as path from 'node:path';
import { workspacePath } from '../store/parseError';
import {
  classifyWave,
  countDispositions,
  DEFAULT_WINDOWS,
  type OrphanWindows,
  type SubView,
  type WaveView,
} from './classify';
import type { SubagentJson, WaveJson } from '../model/waves';

export type { SubagentJson, WaveJson } from '../model/waves';
import { listWaves, readWave } from './readWave';

/**
 * Waves as `ralph status --json`, the plan graph and `ralph waves check --json` show them: snake_case, times as ages
 * in ms, paths workspace-relative.
 */

/**
 * `workspacePath` for paths Ralph built itself under `folder` (a prefix check, no `path.relative`: 1,000 subagents
 * per pass, bench/waves.bench.ts); anything else goes through `workspacePath`.
 */
export function relPath(folder: string, file: string): string {
  const prefix = folder.endsWith(path.sep) ? folder : folder + path.sep;
  if (file.startsWith(prefix) && !file.includes(`${path.sep}..${path.sep}`)) {
    const rel = file.slice(prefix.length);
    return path.sep === '/' ? rel : rel.split(path.sep).join('/');
  }
  return workspacePath(folder, file);
}

/** A subagent view as JSON (pure). */
export function subagentJson(s: SubView, folder: string, now: number): SubagentJson {
  // Plain assignments in the JSON's key order (not conditional spreads): a thousand per pass, in cold code.
  const j: SubagentJson = { sub_id: s.subId, disposition: s.disposition } as SubagentJson;
  if (s.doneSource) j.done_source = s.doneSource;
  // Whole milliseconds: a file's mtime has a fraction, which no reader wants printed.
  j.checkpoint_age_ms = wholeMs(s.checkpointAgeMs);
  j.last_activity_age_ms = wholeMs(s.lastActivityAgeMs);
  if (s.orphanAtMs !== undefined) j.orphan_in_ms = Math.max(0, Math.round(s.orphanAtMs - now));
  if (s.nextStep !== undefined) j.next_step = s.nextStep;
  if (s.lastAction !== undefined) j.last_action = s.lastAction;
  if (s.unreadable) j.unreadable = s.unreadable;
  if (s.file) j.checkpoint = relPath(folder, s.file);
  if (s.worktree) j.worktree = s.worktree;
  if (s.summary) j.summary = s.summary;
  return j;
}

/** A wave view as JSON (pure). */
export function waveJson(v: WaveView, folder: string): WaveJson {
  return {
    wave_id: v.waveId,
    status: v.status ?? null,
    counts: countDispositions(v),
    subagents: v.subagents.map((s) => subagentJson(s, folder, v.now)),
  };
}

/**
 * Every wave of a folder classified at `now` (newest first), for `ralph status` and the plan graph. Reads only;
 * RESOLVED here is a state, not a log event. Never throws for bad content (problems are in each view).
 */
export function loadWaveViews(
  folder: string,
  o: { roots?: readonly string[]; now?: number; windows?: OrphanWindows } = {},
): WaveView[] {
  const roots = [folder, ...(o.roots ?? [])];
  const now = o.now ?? Date.now();
  const seen = new Set<string>();
  const out: WaveView[] = [];
  for (const w of listWaves(roots)) {
    if (seen.has(w.waveId)) continue;
    seen.add(w.waveId);
    out.push(classifyWave(readWave(roots, w.waveId), now, o.windows ?? DEFAULT_WINDOWS));
  }
  return out;
}

export { formatAge, formatWaveLine } from './format';

/** An age in whole milliseconds (null stays null). */
export function wholeMs(ms: number | null): number | null {
  return ms === null ? null : Math.round(ms);
}
