import { appendFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

/**
 * `RALPH_TRACE_REMOTE=<file>`: one line per phase of each remote lane dispatch, appended to `<file>` by the
 * coordinator and by every worker that has the variable: `{"at": ms since the epoch (to 0.01 ms), "who":
 * "coordinator" or the worker's id, "story", "token", "phase"}`. All processes on one machine share one clock, so
 * bench/remoteLanes.bench.ts reads the file for its per-phase breakdown of a story's dispatch (enqueue, pickup,
 * mirror fetch, worktree, lane, agent, gates, push, report, merge). Off by default: no cost but reading one variable.
 */
export function remoteTrace(who: string, story: string, token: number, phase: string): void {
  const file = process.env.RALPH_TRACE_REMOTE;
  if (!file) return;
  const at = Math.round((performance.timeOrigin + performance.now()) * 100) / 100;
  try {
    appendFileSync(file, JSON.stringify({ at, who, story, token, phase }) + '\n');
  } catch {
    // A trace that cannot be written is not the run's concern.
  }
}
