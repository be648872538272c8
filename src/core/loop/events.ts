import type { IterationTotals } from '../stream/ledger';
import type { TokenCounts } from '../stream/events';

/**
 * Everything the loop engine reports, one discriminated union (ARCHITECTURE.md: "the UI, the CLI's output and the
 * run records on disk are all consumers of that one stream"). Each event is written as one line of
 * `.ralph/runs/<run_id>/events.jsonl` with `at` (ISO time) added.
 */
export type EngineEvent =
  | { type: 'runStarted'; runId: string; folder: string; source: string; agent: string; maxIterations: number; gates: Partial<Record<GateTier, string>> }
  | { type: 'iterationStarted'; iteration: number; item: WorkItemRef | null; attempt: number; attemptKind: string; purpose: IterationPurpose }
  | { type: 'agentStarted'; iteration: number; pid: number | null; command: string }
  | { type: 'tokens'; iteration: number; contextTokens: number; contextWindow: number; rotateAt: number; warnAt: number; totals: TokenCounts; costUsd: number | null }
  | { type: 'warn'; iteration: number; contextTokens: number; threshold: number }
  | { type: 'rotate'; iteration: number; contextTokens: number; threshold: number }
  | { type: 'agentSignal'; iteration: number; kind: string; value: string; reason?: string }
  | { type: 'iterationEnded'; iteration: number; ending: IterationEnding; detail: string; totals: IterationTotals; exitCode: number | null }
  | { type: 'gateStarted'; tier: GateTier; command: string }
  | { type: 'gateResult'; tier: GateTier; command: string; exitCode: number; durationMs: number; passed: boolean; logPath: string; failingLines: string[] }
  | { type: 'verified'; item: WorkItemRef; tier: GateTier | null }
  | { type: 'attemptFailed'; item: WorkItemRef; attempt: number; approach: string; reason: string }
  | { type: 'itemBlocked'; item: WorkItemRef; reason: string }
  | { type: 'progress'; done: number; total: number; text: string }
  | { type: 'pauseRequested'; file: string }
  | { type: 'paused' }
  | { type: 'resumed' }
  | { type: 'stopRequested'; file: string; graceful: boolean }
  | { type: 'deferred'; reason: string; waitMs: number; resetsAt: number | null; inARow: number }
  | { type: 'reviewVerdict'; verdict: string }
  | { type: 'warning'; message: string }
  /** The command guard denied or rewrote an agent's tool call (issue 17); `text` is the activity line. */
  | { type: 'guard'; decision: 'deny' | 'rewrite'; tool: string; subject: string; reason: string; command?: string; text: string }
  | { type: 'runEnded'; state: RunEndState; reason: string; completionReason: string; exitCode: number; iterations: number; costUsd: number; done: number; total: number };

/** A gate tier (basic / full / final), from the command policy's `[gates]`. */
export type { GateTier } from '../gates/commandPolicy';
import type { GateTier } from '../gates/commandPolicy';

/** Why an iteration ran: work on an item, fixing a red final gate, or the reviewer pass. */
export type IterationPurpose = 'work' | 'finalFix' | 'review';

/** How an iteration ended (issue "One iteration" 4). */
export type IterationEnding = 'complete' | 'stuck' | 'yield' | 'natural' | 'rotation' | 'deferred' | 'error' | 'cancelled';

/** The run's terminal state and the CLI exit code it maps to (0 complete, 1 failed/stalled/blocked, 2 cap, 3 stopped, 130 interrupted). */
export type RunEndState = 'completed' | 'failed' | 'stalled' | 'blocked' | 'capReached' | 'stopped' | 'cancelled';

export const EXIT_CODES: Record<RunEndState, number> = { completed: 0, failed: 1, stalled: 1, blocked: 1, capReached: 2, stopped: 3, cancelled: 130 };

/** A work item as events name it. */
export interface WorkItemRef {
  source: 'flow-next' | 'quantum' | 'checklist';
  id: string;
  title: string;
}
