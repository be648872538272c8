import { performance } from 'node:perf_hooks';

/**
 * `RALPH_TRACE_LANES=1`: one line per phase of each lane on stderr (`trace-lanes {"t":ms since the run began,"busy":ms
 * the main thread was busy since this process started (event-loop utilization),"lane",
 * "story","phase"}`), to see where a story's time goes (bench/lanes.bench.ts); lane 0, story "run": the run's own
 * phases (start, opened, roundsEnded, returned). Off by default: no cost but the test of one variable and of an empty
 * set of listeners.
 */
const TRACE = process.env.RALPH_TRACE_LANES === '1';
const TRACE_T0 = performance.now();

/**
 * Called with each phase as it happens, traced or not: a test that must act once lanes reach a phase (two lanes
 * queued for the merge slot) listens here instead of guessing with time.
 */
export const traceListeners = new Set<(lane: number, story: string, phase: string) => void>();

export function trace(lane: number, story: string, phase: string): void {
  for (const listener of traceListeners) listener(lane, story, phase);
  if (TRACE)
    process.stderr.write(
      `trace-lanes ${JSON.stringify({ t: Math.round(performance.now() - TRACE_T0), busy: Math.round(performance.eventLoopUtilization().active), lane, story, phase })}\n`,
    );
}
