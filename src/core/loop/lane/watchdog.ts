/*
 * The iteration watchdog's rule: when a running agent is ended for silence, for running too long, or for ignoring a
 * STOP. Pure; lane/agentIteration.ts is its shell (it observes time and output and ends the agent on a verdict).
 */

/**
 * The iteration watchdog's limits, ms (`.ralph/config.json` `timing`): `silenceTimeoutMs` (default
 * 20 minutes, longer than a tool call may run without output) ends a silent agent's iteration as stalled;
 * `iterationTimeoutMs` (default 0 = none) ends any iteration that long; once STOP is requested, an agent silent for
 * `stopGraceMs` (default 60000) is ended, one still printing finishes its iteration.
 */
export interface WatchdogRules {
  silenceTimeoutMs: number;
  iterationTimeoutMs: number;
  stopGraceMs: number;
}

/** Defaults of {@link WatchdogRules}. */
export const DEFAULT_WATCHDOG: Readonly<WatchdogRules> = Object.freeze({
  silenceTimeoutMs: 20 * 60_000,
  iterationTimeoutMs: 0,
  stopGraceMs: 60_000,
});

/** What the shell observed about a running iteration: times in ms since the epoch. */
export interface WatchdogObservation {
  now: number;
  iterationStartedAt: number;
  /** Last byte the agent printed (stdout), or the iteration's start. */
  lastOutputAt: number;
  /** When a graceful STOP was requested during this iteration, else null. */
  stopRequestedAt: number | null;
}

/** The watchdog's verdict: keep waiting (and look again at `checkAt`), or end the iteration for `reason`. */
export type WatchdogVerdict =
  | { kind: 'wait'; checkAt: number | null }
  | { kind: 'end'; reason: 'silence' | 'iterationTimeout' | 'stopGrace'; detail: string };

/**
 * Decides whether a running iteration is ended now (pure; the shell only observes time and output). Order: the
 * iteration timeout, then STOP with a silent agent (silent for `stopGraceMs` since the later of the request and its
 * last output), then silence. `checkAt` is the earliest time the verdict can change (null: never, all limits off).
 */
export function decideWatchdog(o: WatchdogObservation, rules: WatchdogRules = DEFAULT_WATCHDOG): WatchdogVerdict {
  const silentFor = o.now - o.lastOutputAt;
  if (rules.iterationTimeoutMs > 0 && o.now - o.iterationStartedAt >= rules.iterationTimeoutMs) {
    return {
      kind: 'end',
      reason: 'iterationTimeout',
      detail: `the iteration ran ${Math.round((o.now - o.iterationStartedAt) / 1000)} s, the limit is ${Math.round(rules.iterationTimeoutMs / 1000)} s (timing.iterationTimeoutMs)`,
    };
  }
  if (o.stopRequestedAt !== null && o.now - Math.max(o.stopRequestedAt, o.lastOutputAt) >= rules.stopGraceMs) {
    return {
      kind: 'end',
      reason: 'stopGrace',
      detail: `STOP was requested and the agent printed nothing for ${Math.round(Math.min(silentFor, o.now - o.stopRequestedAt) / 1000)} s (timing.stopGraceMs)`,
    };
  }
  if (rules.silenceTimeoutMs > 0 && silentFor >= rules.silenceTimeoutMs) {
    return {
      kind: 'end',
      reason: 'silence',
      detail: `the agent printed nothing for ${Math.round(silentFor / 1000)} s (timing.silenceTimeoutMs): stalled`,
    };
  }
  const at = [
    rules.iterationTimeoutMs > 0 ? o.iterationStartedAt + rules.iterationTimeoutMs : Infinity,
    o.stopRequestedAt !== null ? Math.max(o.stopRequestedAt, o.lastOutputAt) + rules.stopGraceMs : Infinity,
    rules.silenceTimeoutMs > 0 ? o.lastOutputAt + rules.silenceTimeoutMs : Infinity,
  ].reduce((a, b) => Math.min(a, b));
  return { kind: 'wait', checkAt: Number.isFinite(at) ? at : null };
}
