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
  /**
   * The context of each lane's current iteration as the latest event says: `tokens` events, and also `warn` / `rotate`,
   * which carry the context that crossed the line (the engine rate-limits `tokens` events, so the crossing figure may
   * be in `warn` / `rotate` only). When an iteration ends, its lane keeps the highest context the iteration reached
   * (the agent's closing `result` reports only its last message's usage). Cleared when the lane's next iteration
   * starts.
   */
  contexts: LaneContext[];
  /** The highest context of each lane's current iteration (what {@link contexts} falls back to at its end). */
  peaks: LaneContext[];
  lastSeq: number;
}

/** A lane's context figures (tokens); `window`, `warnAt`, `rotateAt` from the iteration's last `tokens` event, 0 before one. */
export interface LaneContext {
  lane: number;
  iteration: number;
  tokens: number;
  window: number;
  warnAt: number;
  rotateAt: number;
}

export interface IterationTokens {
  iteration: number;
  lane: number;
  itemId: string | null;
  /** The agent CLI that ran the iteration (its `agentStarted`); null before it started or in a log without the name. */
  agent: string | null;
  tokens: TokenCounts;
  /** USD so far; null while the agent has reported no cost. */
  costUsd: number | null;
  /** The iteration ended (its totals are final). */
  ended: boolean;
}

/** Iterations listed one by one; older ones are summed. */
export const ITERATION_TOKENS_KEPT = 50;

export function emptyRunTokens(): RunTokens {
  return {
    iterations: [],
    older: { count: 0, tokens: zeroTokens(), costUsd: 0 },
    total: zeroTokens(),
    contexts: [],
    peaks: [],
    lastSeq: 0,
  };
}

/** Applies one log entry (see the module docstring). Returns the same object when nothing changed. Never throws. */
export function reduceRunTokens(t: RunTokens, entry: RunLogEntry | UnknownRunLogEntry): RunTokens {
  if (entry.seq <= t.lastSeq) return t;
  if ('unknown' in entry) return { ...t, lastSeq: entry.seq };
  const e = entry as RunLogEntry;
  switch (e.type) {
    case 'iterationStarted':
      return push(
        {
          ...t,
          lastSeq: e.seq,
          contexts: t.contexts.filter((c) => c.lane !== e.lane),
          peaks: t.peaks.filter((c) => c.lane !== e.lane),
        },
        {
          iteration: e.iteration,
          lane: e.lane,
          itemId: e.item?.id ?? null,
          agent: null,
          tokens: zeroTokens(),
          costUsd: null,
          ended: false,
        },
      );
    case 'tokens': {
      const c = {
        lane: e.lane,
        iteration: e.iteration,
        tokens: e.contextTokens,
        window: e.contextWindow,
        warnAt: e.warnAt,
        rotateAt: e.rotateAt,
      };
      return set(
        { ...t, lastSeq: e.seq, contexts: setContext(t.contexts, c), peaks: peak(t.peaks, c) },
        e.iteration,
        e.lane,
        (i) => ({ ...i, tokens: e.totals, costUsd: e.costUsd ?? i.costUsd }),
      );
    }
    case 'warn':
    case 'rotate': {
      const prev = t.contexts.find((c) => c.lane === e.lane && c.iteration === e.iteration);
      const base = prev ?? {
        lane: e.lane,
        iteration: e.iteration,
        tokens: 0,
        window: 0,
        warnAt: e.type === 'warn' ? e.threshold : 0,
        rotateAt: e.type === 'rotate' ? e.threshold : 0,
      };
      const c = { ...base, tokens: e.contextTokens };
      return { ...t, lastSeq: e.seq, contexts: setContext(t.contexts, c), peaks: peak(t.peaks, c) };
    }
    case 'agentStarted':
      return set({ ...t, lastSeq: e.seq }, e.iteration, e.lane, (i) => ({ ...i, agent: e.agent ?? i.agent }));
    case 'iterationEnded': {
      const top = t.peaks.find((p) => p.lane === e.lane && p.iteration === e.iteration);
      const contexts = top ? setContext(t.contexts, top) : t.contexts;
      return set({ ...t, lastSeq: e.seq, contexts }, e.iteration, e.lane, (i) => ({
        ...i,
        tokens: e.totals.tokens,
        costUsd: e.totals.costUsd,
        ended: true,
      }));
    }
    default:
      return { ...t, lastSeq: e.seq };
  }
}

function peak(list: LaneContext[], c: LaneContext): LaneContext[] {
  const prev = list.find((x) => x.lane === c.lane && x.iteration === c.iteration);
  if (prev && prev.tokens >= c.tokens) return list;
  return setContext(list, prev && c.window === 0 ? { ...prev, tokens: c.tokens } : c);
}

function setContext(list: LaneContext[], c: LaneContext): LaneContext[] {
  return [...list.filter((x) => x.lane !== c.lane), c].sort((a, b) => a.lane - b.lane);
}

function push(t: RunTokens, it: IterationTokens): RunTokens {
  if (t.iterations.some((i) => i.iteration === it.iteration && i.lane === it.lane)) return t;
  let iterations = [...t.iterations, it];
  let older = t.older;
  while (iterations.length > ITERATION_TOKENS_KEPT) {
    const [first, ...rest] = iterations;
    older = {
      count: older.count + 1,
      tokens: addTokens(older.tokens, first!.tokens),
      costUsd: older.costUsd + (first!.costUsd ?? 0),
    };
    iterations = rest;
  }
  return { ...t, iterations, older };
}

function set(t: RunTokens, iteration: number, lane: number, f: (i: IterationTokens) => IterationTokens): RunTokens {
  let list = t;
  // A tokens event for an iteration never announced (a log read from its middle): list it.
  if (!t.iterations.some((i) => i.iteration === iteration && i.lane === lane))
    list = push(t, { iteration, lane, itemId: null, agent: null, tokens: zeroTokens(), costUsd: null, ended: false });
  const iterations = list.iterations.map((i) => (i.iteration === iteration && i.lane === lane ? f(i) : i));
  const total = iterations.reduce((a, i) => addTokens(a, i.tokens), list.older.tokens);
  return { ...list, iterations, total };
}
