import {
  type AgentEvent,
  type EventMarks,
  type ModelUsage,
  type ResultEvent,
  type TokenCounts,
  addTokens,
  subtractTokens,
  zeroTokens,
} from './events';
import { type ThresholdOverrides, type Thresholds, modelContextWindow, resolveThresholds } from './thresholds';

/**
 * The token ledger of one iteration (one agent process): totals, live context, and the warn / rotate signals.
 *
 * Rules (agent-streams.md §1.4–§1.5, seed-systems.md §3.4):
 * - Usage is repeated on every content block of one API response: each `message.id` counts once.
 * - Context used = the latest main-thread `input + cache_creation + cache_read`; subagent and synthetic
 *   lines never count toward it; a `compact_boundary` resets it (to `post_tokens` when given).
 * - Window: `modelUsage[model].contextWindow`, else the model name (thresholds.ts `modelContextWindow`), else config.
 * - Totals: results are cumulative per process, so several results in one process are differences, not sums;
 *   the tokens of a result are its `modelUsage` (all calls, subagents included) when given, else its `usage`.
 *   Before the first result (and after the last) the de-duplicated per-call usage stands in.
 * - Agents without live usage (cursor-agent) get the byte estimate
 *   `(3000 + bytesRead + bytesWritten + assistantChars + shellOutputChars) / 4` as context, flagged as an
 *   estimate; subagent text goes to a separate counter and is excluded.
 */

export interface LedgerOptions {
  /** Agent name (threshold row); null when unknown. */
  agent: string | null;
  /** Model as configured (`--model`), until the stream names it. */
  model?: string | null;
  /** Window when neither the stream nor the model name tells it, tokens (config `contextWindowTokens`). */
  contextWindowTokens?: number;
  /** Configured thresholds (0 or absent: the per-agent default). */
  thresholds?: ThresholdOverrides;
  /** Use the byte estimate for context (agents without live usage). */
  estimateContext?: boolean;
}

/** Emitted by {@link TokenLedger.apply}: `warn` once per iteration, `rotate` each time context crosses rotate. */
export interface LedgerSignal {
  type: 'warn' | 'rotate';
  /** Context used when the threshold was crossed, tokens. */
  contextTokens: number;
  /** The threshold crossed, tokens. */
  threshold: number;
  /** True when the context figure is the byte estimate. */
  estimated: boolean;
}

export interface LedgerSnapshot {
  /** Totals of the iteration (input, output, cache read, cache write), tokens. */
  tokens: TokenCounts;
  /** True when `tokens` come from a result (authoritative), false when from per-call usage or nothing. */
  tokensFromResult: boolean;
  /** Cost of the iteration, USD (client-side estimate from `total_cost_usd`), null when never reported. */
  costUsd: number | null;
  /** Latest context used, tokens. */
  contextTokens: number;
  /** Highest context used in this iteration, tokens. */
  contextPeak: number;
  contextEstimated: boolean;
  contextWindow: number;
  contextWindowSource: 'modelUsage' | 'model' | 'config';
  thresholds: Thresholds;
  warned: boolean;
  rotated: boolean;
  /** Model of the main thread as far as known. */
  model: string | null;
  /** Distinct main-thread API calls seen (de-duplicated message ids). */
  apiCalls: number;
  /** The last result's `num_turns`, when reported. */
  numTurns: number | null;
  results: number;
  /** Byte-estimate inputs, characters (seed-systems.md §3.4). */
  estimate: {
    bytesRead: number;
    bytesWritten: number;
    assistantChars: number;
    shellOutputChars: number;
    subagentChars: number;
  };
}

/** What `apply` returns for the many events that cause no signal: one frozen array, none allocated per event. */
const NO_SIGNALS: readonly LedgerSignal[] = Object.freeze([]);

/** Base of the byte estimate, characters (seed-systems.md §3.4: the prompt and framing). */
export const ESTIMATE_BASE_CHARS = 3000;

const SEEN_IDS_MAX = 1024;

export class TokenLedger {
  private readonly agent: string | null;
  private model: string | null;
  private readonly configWindow: number;
  private readonly overrides: ThresholdOverrides;
  private readonly estimateContext: boolean;
  private thresholds: Thresholds;

  /** Per message id: the usage counted so far (bounded: responses arrive contiguously). */
  private readonly seen = new Map<string, TokenCounts>();
  private streamSinceResult: TokenCounts = zeroTokens();
  private resultCumulative: TokenCounts | null = null;
  private costCumulative: number | null = null;
  private contextTokens = 0;
  private contextPeak = 0;
  private window: { tokens: number; source: LedgerSnapshot['contextWindowSource'] };
  private warned = false;
  private rotated = false;
  private aboveRotate = false;
  private apiCalls = 0;
  private numTurns: number | null = null;
  private results = 0;
  private readonly est = { bytesRead: 0, bytesWritten: 0, assistantChars: 0, shellOutputChars: 0, subagentChars: 0 };

  constructor(opts: LedgerOptions) {
    this.agent = opts.agent;
    this.model = opts.model || null;
    this.configWindow = opts.contextWindowTokens ?? 200_000;
    this.overrides = opts.thresholds ?? {};
    this.estimateContext = opts.estimateContext ?? false;
    this.thresholds = resolveThresholds(this.agent, this.model, this.overrides);
    this.window = this.windowFromModel();
    if (this.estimateContext) this.contextTokens = this.estimateTokens();
  }

  /** Accounts one event; returns the warn / rotate signals it caused (usually none). */
  apply(e: AgentEvent): readonly LedgerSignal[] {
    switch (e.type) {
      case 'init':
        if (!e.subagent && e.model) this.setModel(e.model);
        return NO_SIGNALS;
      case 'usage':
        return e.source === 'message'
          ? this.messageUsage(e.messageId, e.model, e.tokens, e.subagent || e.synthetic)
          : [];
      case 'result':
        this.result(e);
        return NO_SIGNALS;
      case 'compactBoundary':
        if (e.subagent) return NO_SIGNALS;
        this.contextTokens = e.postTokens ?? 0;
        this.aboveRotate = this.contextTokens >= this.thresholds.rotate;
        return NO_SIGNALS;
      case 'text':
        if (!this.estimateContext || e.synthetic) return NO_SIGNALS;
        if (e.subagent) this.est.subagentChars += e.text.length;
        else this.est.assistantChars += e.text.length;
        return this.estimateChanged();
      case 'toolUse':
        if (!this.estimateContext || (e.kind !== 'write' && e.kind !== 'edit')) return NO_SIGNALS;
        this.addEstimate(e.subagent, 'bytesWritten', writtenChars(e.input));
        return this.estimateChanged();
      case 'toolResult':
        if (!this.estimateContext) return NO_SIGNALS;
        if (e.kind === 'read') this.addEstimate(e.subagent, 'bytesRead', e.output.length);
        else if (e.kind === 'shell') this.addEstimate(e.subagent, 'shellOutputChars', e.output.length);
        else if (e.kind === 'other') this.addEstimate(e.subagent, 'assistantChars', e.output.length);
        return this.estimateChanged();
      default:
        return NO_SIGNALS;
    }
  }

  snapshot(): LedgerSnapshot {
    const tokens = this.resultCumulative
      ? addTokens(this.resultCumulative, this.streamSinceResult)
      : { ...this.streamSinceResult };
    return {
      tokens,
      tokensFromResult: this.resultCumulative !== null,
      costUsd: this.costCumulative,
      contextTokens: this.contextTokens,
      contextPeak: this.contextPeak,
      contextEstimated: this.estimateContext,
      contextWindow: this.window.tokens,
      contextWindowSource: this.window.source,
      thresholds: this.thresholds,
      warned: this.warned,
      rotated: this.rotated,
      model: this.model,
      apiCalls: this.apiCalls,
      numTurns: this.numTurns,
      results: this.results,
      estimate: { ...this.est },
    };
  }

  private setModel(model: string): void {
    if (model === '<synthetic>') return;
    this.model = model;
    this.thresholds = resolveThresholds(this.agent, model, this.overrides);
    if (this.window.source !== 'modelUsage') this.window = this.windowFromModel();
  }

  private windowFromModel(): { tokens: number; source: LedgerSnapshot['contextWindowSource'] } {
    const w = modelContextWindow(this.model);
    return w !== null ? { tokens: w, source: 'model' } : { tokens: this.configWindow, source: 'config' };
  }

  private messageUsage(
    id: string | null,
    model: string | null,
    t: TokenCounts,
    offThread: boolean,
  ): readonly LedgerSignal[] {
    // De-duplicate by message id: count the growth of each field only (repeats carry the same snapshot).
    let delta = t;
    let isNew = true;
    if (id !== null) {
      const prev = this.seen.get(id);
      if (prev) {
        isNew = false;
        const merged = {
          input: Math.max(prev.input, t.input),
          output: Math.max(prev.output, t.output),
          cacheRead: Math.max(prev.cacheRead, t.cacheRead),
          cacheCreation: Math.max(prev.cacheCreation, t.cacheCreation),
        };
        delta = subtractTokens(merged, prev);
        this.seen.set(id, merged);
      } else {
        this.seen.set(id, { ...t });
        if (this.seen.size > SEEN_IDS_MAX) this.seen.delete(this.seen.keys().next().value as string);
      }
    }
    this.streamSinceResult = addTokens(this.streamSinceResult, delta);
    if (offThread) return NO_SIGNALS;
    if (isNew) this.apiCalls++;
    if (model && !this.model) this.setModel(model);
    if (this.estimateContext) return NO_SIGNALS;
    const ctx = t.input + t.cacheCreation + t.cacheRead;
    return this.setContext(isNew ? ctx : Math.max(ctx, this.contextTokens));
  }

  private result(r: ResultEvent & EventMarks): void {
    if (r.subagent) return;
    this.results++;
    if (r.numTurns !== null) this.numTurns = r.numTurns;
    const cumulative = r.modelUsage && Object.keys(r.modelUsage).length ? sumModelUsage(r.modelUsage) : r.usage;
    if (cumulative) {
      this.resultCumulative = cumulative;
      this.streamSinceResult = zeroTokens();
    }
    if (r.costUsd !== null) this.costCumulative = r.costUsd;
    const w = pickWindow(r.modelUsage, this.model);
    if (w !== null) this.window = { tokens: w, source: 'modelUsage' };
  }

  private addEstimate(
    subagent: boolean,
    field: 'bytesRead' | 'bytesWritten' | 'shellOutputChars' | 'assistantChars',
    chars: number,
  ): void {
    if (subagent) this.est.subagentChars += chars;
    else this.est[field] += chars;
  }

  private estimateTokens(): number {
    const e = this.est;
    return Math.floor((ESTIMATE_BASE_CHARS + e.bytesRead + e.bytesWritten + e.assistantChars + e.shellOutputChars) / 4);
  }

  private estimateChanged(): readonly LedgerSignal[] {
    return this.setContext(this.estimateTokens());
  }

  private setContext(ctx: number): readonly LedgerSignal[] {
    this.contextTokens = ctx;
    if (ctx > this.contextPeak) this.contextPeak = ctx;
    // The list is made only when a signal fires: most events cause none.
    let out: LedgerSignal[] | null = null;
    const estimated = this.estimateContext;
    if (!this.warned && ctx >= this.thresholds.warn) {
      this.warned = true;
      (out ??= []).push({ type: 'warn', contextTokens: ctx, threshold: this.thresholds.warn, estimated });
    }
    const above = ctx >= this.thresholds.rotate;
    if (above && !this.aboveRotate) {
      this.rotated = true;
      (out ??= []).push({ type: 'rotate', contextTokens: ctx, threshold: this.thresholds.rotate, estimated });
    }
    this.aboveRotate = above;
    return out ?? NO_SIGNALS;
  }
}

/** Characters a write or edit puts into the file (cursor `fileText` / `streamContent`, Claude `content` / `new_string`). */
function writtenChars(input: Record<string, unknown>): number {
  for (const k of ['fileText', 'streamContent', 'content', 'new_string', 'newString', 'new_source']) {
    const v = input[k];
    if (typeof v === 'string') return v.length;
  }
  return 0;
}

export function sumModelUsage(mu: Record<string, ModelUsage>): TokenCounts {
  let t = zeroTokens();
  for (const m of Object.values(mu)) t = addTokens(t, m.tokens);
  return t;
}

/**
 * The window of the main model in `modelUsage`: the entry named like the model (ignoring a `[1m]` suffix and
 * case), else the entry with the most input (side calls such as haiku titles are small), else null.
 */
export function pickWindow(mu: Record<string, ModelUsage> | null, model: string | null): number | null {
  if (!mu) return null;
  const entries = Object.entries(mu).filter(([, m]) => m.contextWindow !== null && m.contextWindow > 0);
  if (!entries.length) return null;
  const base = model?.toLowerCase().replace('[1m]', '');
  const named = entries.find(([k]) => k.toLowerCase().replace('[1m]', '') === base);
  if (named) return named[1].contextWindow;
  const size = (m: ModelUsage): number => m.tokens.input + m.tokens.cacheRead + m.tokens.cacheCreation;
  entries.sort((a, b) => size(b[1]) - size(a[1]));
  return entries[0]![1].contextWindow;
}

/** Totals of one iteration as rolled up into task and run totals. */
export interface IterationTotals {
  tokens: TokenCounts;
  /** USD; 0 when the agent reports no cost. */
  costUsd: number;
}

/** Rolls iteration totals up per task and per run (plain sums: each iteration is its own process). */
export class TotalsRollup {
  private readonly perTask = new Map<string, IterationTotals>();
  private total: IterationTotals = { tokens: zeroTokens(), costUsd: 0 };

  add(taskId: string | null, t: IterationTotals): void {
    this.total = { tokens: addTokens(this.total.tokens, t.tokens), costUsd: this.total.costUsd + t.costUsd };
    if (taskId === null) return;
    const prev = this.perTask.get(taskId) ?? { tokens: zeroTokens(), costUsd: 0 };
    this.perTask.set(taskId, { tokens: addTokens(prev.tokens, t.tokens), costUsd: prev.costUsd + t.costUsd });
  }

  task(taskId: string): IterationTotals {
    return this.perTask.get(taskId) ?? { tokens: zeroTokens(), costUsd: 0 };
  }

  run(): IterationTotals {
    return this.total;
  }
}

/** The totals of a ledger snapshot for {@link TotalsRollup.add}. */
export function iterationTotals(s: LedgerSnapshot): IterationTotals {
  return { tokens: s.tokens, costUsd: s.costUsd ?? 0 };
}
