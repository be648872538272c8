import type { z } from 'zod';
import type { iterationEndingSchema, iterationPurposeSchema, runEndStateSchema } from '../model/runEvent';

/**
 * Everything the loop engine reports, one discriminated union (ARCHITECTURE.md: "the UI, the CLI's output and the
 * run records on disk are all consumers of that one stream"). The types come from the one schema of the run log,
 * core/model/runEvent.ts; each event is written as one line of `.ralph/runs/<run_id>/events.jsonl` with the
 * envelope `seq`, `at`, `lane` added.
 */
export type { EngineEvent, EngineEventOf, EngineEventType } from '../model/runEvent';
export { EXIT_CODES } from '../model/runEvent';

/** A gate tier (basic / full / final), from the command policy's `[gates]`. */
export type { GateTier } from '../gates/commandPolicy';

/** Why an iteration ran: work on an item, fixing a red final gate, or the reviewer pass. */
export type IterationPurpose = z.infer<typeof iterationPurposeSchema>;

/** How an iteration ended (issue "One iteration" 4; `question`: the agent asked a human). */
export type IterationEnding = z.infer<typeof iterationEndingSchema>;

/** The run's terminal state and the CLI exit code it maps to (0 complete, 1 failed/stalled/blocked, 2 cap, 3 stopped, 130 interrupted). */
export type RunEndState = z.infer<typeof runEndStateSchema>;
export type { WorkItemRef } from '../model/runEvent';
