/**
 * Rate-limit deferral policy (pure). Source: seed-systems.md §3.6 step 6 "DEFER": with a known reset time sleep
 * until it plus 15 s (at most 6 h, at most 8 such quota waits); otherwise back off 15·2^(k−1) s capped at 300 s
 * (15, 30, 60, 120, 240, 300, …) where k counts deferrals in a row; after 10 deferrals in a row the run stops as
 * stalled. Every figure is configurable so tests take seconds.
 */
export interface BackoffPolicy {
  /** First backoff step, ms (seed: 15 000). */
  baseMs: number;
  /** Backoff cap, ms (seed: 300 000). */
  capMs: number;
  /** Margin added to a known reset time, ms (seed: 15 000). */
  resetMarginMs: number;
  /** Longest wait for a reset time, ms (seed RALPH_RATE_LIMIT_MAX_WAIT: 21 600 000 = 6 h). */
  maxResetWaitMs: number;
  /** Quota waits (until a reset time) per run (seed RALPH_QUOTA_WAIT_MAX: 8). */
  maxQuotaWaits: number;
  /** Deferrals in a row that stop the run as stalled (seed: 10). */
  maxDeferrals: number;
}

export const defaultBackoffPolicy: BackoffPolicy = {
  baseMs: 15_000,
  capMs: 300_000,
  resetMarginMs: 15_000,
  maxResetWaitMs: 6 * 3600_000,
  maxQuotaWaits: 8,
  maxDeferrals: 10,
};

/** State carried between deferrals of one run. */
export interface DeferralState {
  /** Deferrals in a row that were not quota waits (reset by any iteration that is not deferred). */
  inARow: number;
  /** Quota waits taken in this run. */
  quotaWaits: number;
}

export type DeferralDecision =
  | { action: 'waitUntilReset'; waitMs: number; resetsAt: number; next: DeferralState }
  | { action: 'backoff'; waitMs: number; attempt: number; next: DeferralState }
  | { action: 'stall'; reason: string; next: DeferralState };

/**
 * Decides what to do after an iteration was deferred by a rate limit or a transient API error.
 * @param resetsAt epoch ms when the limit resets, or null when unknown.
 * @param now epoch ms.
 */
export function decideDeferral(
  state: DeferralState,
  resetsAt: number | null,
  now: number,
  p: BackoffPolicy = defaultBackoffPolicy,
): DeferralDecision {
  if (resetsAt !== null && resetsAt > now && state.quotaWaits < p.maxQuotaWaits) {
    const waitMs = Math.min(resetsAt - now + p.resetMarginMs, p.maxResetWaitMs);
    // A quota wait is expected, not a stall: it does not count toward maxDeferrals (seed §3.6).
    return {
      action: 'waitUntilReset',
      waitMs,
      resetsAt,
      next: { inARow: state.inARow, quotaWaits: state.quotaWaits + 1 },
    };
  }
  const k = state.inARow + 1;
  if (k >= p.maxDeferrals)
    return { action: 'stall', reason: `stalled: ${k} rate-limit deferrals in a row`, next: { ...state, inARow: k } };
  const waitMs = Math.min(p.capMs, p.baseMs * 2 ** (k - 1));
  return { action: 'backoff', waitMs, attempt: k, next: { ...state, inARow: k } };
}
