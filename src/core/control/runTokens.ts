import type { RunLogEntry, UnknownRunLogEntry } from '../model/runEvent';
import { addTokens, zeroTokens, type TokenCounts } from '../stream/events';

/**
 * Token counts per iteration and per run, from a run's log: what the status bar gauge's tooltip and the dashboard's
 * token table show (input / output / cache read / cache write). A pure reducer beside `RunView` (runView.ts keeps cost
 * per iteration, not tokens). Units: tokens; USD.
 *
 * Rules: an iteration's figures are the latest `tokens` event of that iteration (the agent's running totals), replaced
 * by its `iterationEnded` totals when it ends; the run's totals are the sum over iterations. Entries already applied
 * (`seq` at or below `lastSeq`) are ignored, so a replay is harmless.
 */
export interface RunTokens {
  /** Per iteration, oldest first; at most {@link ITERATION_TOKENS_KEPT} (older ones are folded into `older`). */
  iterations: IterationTokens[];
  /** Sum of the iterations no longer listed. */
  older: { count: number; tokens: TokenCounts; costUsd: number };
  /** Sum of every iteration, listed or not. */
  total: TokenCounts;
  lastSeq: number;
}

export interface IterationTokens {
  iteration: number;
  lane: number;
  itemId: string | null;
  tokens: TokenCounts;
  /** USD so far; null while the agent has reported no cost. */
  costUsd: number | null;
  /** The iteration ended (its totals are final). */
  ended: boolean;
}

/** Iterations listed one by one; older ones are summed. */
export const ITERATION_TOKENS_KEPT = 50;

export function emptyRunTokens(): RunTokens {
  return { iterations: [], older: { count: 0, tokens: zeroTokens(), costUsd: 0 }, total: zeroTokens(), lastSeq: 0 };
}

/** Applies one log entry (see the module docstring). Returns the same object when nothing changed. Never throws. */
export function reduceRunTokens(t: RunTokens, entry: RunLogEntry | UnknownRunLogEntry): RunTokens {
  if (entry.seq <= t.lastSeq) return t;
  if ('unknown' in entry) return { ...t, lastSeq: entry.seq };
  const e = entry as RunLogEntry;
  switch (e.type) {
    case 'iterationStarted':
      return push({ ...t, lastSeq: e.seq }, { iteration: e.iteration, lane: e.lane, itemId: e.item?.id ?? null, tokens: zeroTokens(), costUsd: null, ended: false });
    case 'tokens':
      return set({ ...t, lastSeq: e.seq }, e.iteration, e.lane, (i) => ({ ...i, tokens: e.totals, costUsd: e.costUsd ?? i.costUsd }));
    case 'iterationEnded':
      return set({ ...t, lastSeq: e.seq }, e.iteration, e.lane, (i) => ({ ...i, tokens: e.totals.tokens, costUsd: e.totals.costUsd, ended: true }));
    default:
      return { ...t, lastSeq: e.seq };
  }
}

function push(t: RunTokens, it: IterationTokens): RunTokens {
  if (t.iterations.some((i) => i.iteration === it.iteration && i.lane === it.lane)) return t;
  let iterations = [...t.iterations, it];
  let older = t.older;
  while (iterations.length > ITERATION_TOKENS_KEPT) {
    const [first, ...rest] = iterations;
    older = { count: older.count + 1, tokens: addTokens(older.tokens, first!.tokens), costUsd: older.costUsd + (first!.costUsd ?? 0) };
    iterations = rest;
  }
  return { ...t, iterations, older };
}

function set(t: RunTokens, iteration: number, lane: number, f: (i: IterationTokens) => IterationTokens): RunTokens {
  let list = t;
  // A tokens event for an iteration never announced (a log read from its middle): list it.
  if (!t.iterations.some((i) => i.iteration === iteration && i.lane === lane)) list = push(t, { iteration, lane, itemId: null, tokens: zeroTokens(), costUsd: null, ended: false });
  const iterations = list.iterations.map((i) => (i.iteration === iteration && i.lane === lane ? f(i) : i));
  const total = iterations.reduce((a, i) => addTokens(a, i.tokens), list.older.tokens);
  return { ...list, iterations, total };
}
