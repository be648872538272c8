import type { ResultEvent } from '../stream/events';

/**
 * Ending an agent CLI that keeps running after its turn's final event. The turn is over once the CLI printed it (the
 * result, with the usage and the final message), but some CLIs go on before they exit: opencode computes the session's
 * diff summary and disposes its instance (about 1–2 s, more on a loaded machine), and some of its versions and plugins
 * keep it alive for good after the final `step_finish` (docs/agents.md). A CLI that says so in its adapter
 * ({@link AfterTurn}) is given `graceMs` after that event to exit by itself, then ended as a group (spawn.ts); the
 * iteration is the turn it printed, a normal end (never a kill or a failure). A turn that never printed its final event
 * is not affected: the exit and the watchdog decide as for any agent.
 */

/** What an adapter says about its CLI's end (AgentAdapter.afterTurn). */
export interface AfterTurn {
  /** How long the CLI may run after its final event before ralph ends it, ms. */
  graceMs: number;
  /**
   * Whether `result` (a main-thread result event of this CLI) is the turn's last event: the CLI prints nothing more and
   * only has to exit. A result after which the CLI may go on working (opencode's finish reason `unknown`) is not.
   */
  isFinal(result: ResultEvent): boolean;
}

/** What the shell observed about a running agent: times in ms since the epoch. */
export interface TurnEndObservation {
  now: number;
  /** When the final event arrived, null until it has. */
  finalAt: number | null;
  /** The CLI printed something after its final event: it is still working, the final mark no longer holds. */
  outputAfterFinal: boolean;
  /** The process has exited, or ralph is already ending it (rotation, cancel, the watchdog): nothing to decide. */
  ending: boolean;
}

/** Nothing to do (no final event, output after it, or the agent is ending), wait until `checkAt`, or end it now. */
export type TurnEndVerdict = { kind: 'none' } | { kind: 'wait'; checkAt: number } | { kind: 'end'; detail: string };

/**
 * Whether an agent still running after its final event is ended now. `graceMs` null: the adapter lets its CLI exit by
 * itself (no end is ever decided). Pure; spawn.ts is its shell.
 */
export function decideTurnEnd(o: TurnEndObservation, graceMs: number | null): TurnEndVerdict {
  if (graceMs === null || o.finalAt === null || o.outputAfterFinal || o.ending) return { kind: 'none' };
  const checkAt = o.finalAt + graceMs;
  if (o.now < checkAt) return { kind: 'wait', checkAt };
  return {
    kind: 'end',
    detail: `the agent was still running ${Math.round((o.now - o.finalAt) / 100) / 10} s after its turn's final event: ended`,
  };
}
