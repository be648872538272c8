import { type AgentEvent, type AgentEventType, AGENT_EVENT_TYPES, type TokenCounts } from '../stream/events';
import { type Outcome, OutcomeTracker, type ProcessExit } from '../stream/classify';
import { TokenLedger } from '../stream/ledger';
import { type AgentSignal, findSignals } from '../stream/signals';
import type { ThresholdOverrides } from '../stream/thresholds';
import type { AgentAdapter } from './adapter';
import { AgentStream } from './agentStream';

/**
 * `ralph session inspect`: the summary of a recorded agent stream (a past iteration's log). Streams of any
 * size are summarised in bounded memory; a stream no adapter recognises is summarised as `unknown`.
 */
export interface SessionSummary {
  /** `claude`, `cursor-agent`, or `unknown`. */
  agent: string;
  /** Event counts by type. */
  events: Record<AgentEventType, number>;
  /** Iteration totals, tokens (from the result when there is one, else de-duplicated per-call usage). */
  tokens: TokenCounts;
  /** Context used at the end, tokens (byte estimate for agents without usage: see `contextEstimated`). */
  contextLast: number;
  /** Highest context used, tokens. */
  contextPeak: number;
  contextWindow: number;
  contextEstimated: boolean;
  /** USD (client-side estimate), rounded to 6 decimals; null when the agent reported none. */
  costUsd: number | null;
  /** The result's `num_turns`, else the number of distinct main-thread API calls seen. */
  turns: number;
  /** Tool calls by tool name. */
  toolUses: Record<string, number>;
  /** Completion and stuck signals in the agent's own text (distinct, in order of first appearance). */
  signals: AgentSignal[];
  rateLimits: RateLimitReport[];
  errors: ErrorReport[];
  /** Non-blank lines that were not JSON objects. */
  nonJsonLines: number;
  malformedJsonLines: number;
  droppedLongLines: number;
  lines: number;
  /** The latest non-JSON lines, for diagnostics. */
  nonJsonSamples: string[];
  thresholds: { warn: number; rotate: number; source: string };
  warned: boolean;
  rotated: boolean;
  sessionId: string | null;
  model: string | null;
  outcome: Outcome;
}

export interface RateLimitReport {
  source: 'rate_limit_event' | 'api_retry' | 'assistant_error' | 'result';
  status: string | number | null;
  /** ISO time the limit resets, when known. */
  resetsAt?: string | null;
  limitType?: string | null;
  /** api_retry: how many retries were seen, and the CLI's budget. */
  attempts?: number;
  maxRetries?: number;
  message?: string;
}

export interface ErrorReport {
  source: 'assistant_error' | 'result' | 'api_retry' | 'stdout';
  message: string;
  code?: string | null;
  status?: number | null;
  attempts?: number;
}

export interface InspectOptions {
  /** Force the agent; default: detect. */
  adapter?: AgentAdapter | null;
  maxLineBytes?: number;
  /** Window when the stream does not tell, tokens (config `contextWindowTokens`). */
  contextWindowTokens?: number;
  thresholds?: ThresholdOverrides;
}

const LIST_MAX = 100;
const WHOLE_FILE_FALLBACK_BYTES = 1024 * 1024;

/** Accumulates a summary from events; `finish` completes it. Usable live (spawn) or on a recorded stream. */
export class SessionInspector {
  readonly counts = Object.fromEntries(AGENT_EVENT_TYPES.map((t) => [t, 0])) as Record<AgentEventType, number>;
  readonly toolUses: Record<string, number> = {};
  private readonly signals: AgentSignal[] = [];
  private readonly signalKeys = new Set<string>();
  private readonly rateLimits: RateLimitReport[] = [];
  private readonly errors: ErrorReport[] = [];
  private readonly retryGroups = new Map<string, RateLimitReport | ErrorReport>();
  private readonly messageIds = new Set<string>();
  private readonly outcome = new OutcomeTracker();
  private ledger: TokenLedger;
  private sessionId: string | null = null;
  private initModel: string | null = null;

  constructor(
    private readonly opts: InspectOptions,
    agent: AgentAdapter | null,
  ) {
    this.ledger = this.newLedger(agent);
  }

  /** Re-creates the ledger for the detected agent (detection happens before any event is seen). */
  setAgent(agent: AgentAdapter | null): void {
    this.ledger = this.newLedger(agent);
  }

  private newLedger(agent: AgentAdapter | null): TokenLedger {
    return new TokenLedger({
      agent: agent?.name ?? null,
      contextWindowTokens: this.opts.contextWindowTokens,
      thresholds: this.opts.thresholds,
      estimateContext: agent?.estimatesContext ?? false,
    });
  }

  apply(e: AgentEvent): void {
    this.counts[e.type]++;
    this.ledger.apply(e);
    this.outcome.apply(e);
    switch (e.type) {
      case 'init':
        if (!e.subagent) {
          this.sessionId ??= e.sessionId;
          this.initModel ??= e.model;
        }
        break;
      case 'text':
        if (!e.synthetic) for (const s of findSignals(e.text)) this.addSignal(s);
        if (!e.subagent && !e.synthetic && e.messageId) this.addMessageId(e.messageId);
        break;
      case 'toolUse':
        this.toolUses[e.name] = (this.toolUses[e.name] ?? 0) + 1;
        if (!e.subagent && e.messageId) this.addMessageId(e.messageId);
        break;
      case 'rateLimit':
        push(this.rateLimits, {
          source: 'rate_limit_event',
          status: e.status,
          resetsAt: e.resetsAt !== null ? new Date(e.resetsAt).toISOString() : null,
          limitType: e.limitType,
        });
        break;
      case 'apiRetry': {
        const isLimit = e.status === 429 || e.error === 'rate_limit';
        const key = `${isLimit}:${e.status}:${e.error}`;
        const g = this.retryGroups.get(key);
        if (g) {
          g.attempts = (g.attempts ?? 0) + 1;
          if ('maxRetries' in g) g.maxRetries = e.maxRetries;
        } else if (isLimit) {
          const r: RateLimitReport = {
            source: 'api_retry',
            status: e.status,
            attempts: 1,
            maxRetries: e.maxRetries,
            message: e.error ?? 'rate_limit',
          };
          this.retryGroups.set(key, r);
          push(this.rateLimits, r);
        } else {
          const r: ErrorReport = {
            source: 'api_retry',
            message: `retrying: ${e.error ?? 'error'}`,
            code: e.error,
            status: e.status,
            attempts: 1,
          };
          this.retryGroups.set(key, r);
          push(this.errors, r);
        }
        break;
      }
      case 'error':
        push(this.errors, {
          source: e.status === null && e.code === null ? 'stdout' : 'assistant_error',
          message: e.message,
          code: e.code,
          status: e.status,
        });
        if (e.code === 'rate_limit' || e.status === 429)
          push(this.rateLimits, { source: 'assistant_error', status: e.status, message: e.message });
        break;
      case 'result':
        if (e.isError || e.subtype.startsWith('error')) {
          push(this.errors, {
            source: 'result',
            message: e.errors[0] ?? e.text ?? e.terminalReason ?? e.subtype,
            code: e.terminalReason ?? e.subtype,
            status: e.apiErrorStatus,
          });
        }
        if (e.apiErrorStatus === 429)
          push(this.rateLimits, { source: 'result', status: 429, message: e.text ?? undefined });
        break;
      default:
        break;
    }
  }

  private addSignal(s: AgentSignal): void {
    const key = `${s.system}:${s.value}:${s.reason ?? ''}`;
    if (this.signalKeys.has(key) || this.signals.length >= LIST_MAX) return;
    this.signalKeys.add(key);
    this.signals.push(s);
  }

  private addMessageId(id: string): void {
    if (this.messageIds.size < 100_000) this.messageIds.add(id);
  }

  finish(agent: AgentAdapter | null, stats: AgentStream['stats'], exit?: ProcessExit): SessionSummary {
    const snap = this.ledger.snapshot();
    return {
      agent: agent?.name ?? 'unknown',
      events: { ...this.counts },
      tokens: snap.tokens,
      contextLast: snap.contextTokens,
      contextPeak: snap.contextPeak,
      contextWindow: snap.contextWindow,
      contextEstimated: snap.contextEstimated,
      costUsd: snap.costUsd === null ? null : Math.round(snap.costUsd * 1e6) / 1e6,
      turns: snap.numTurns ?? Math.max(snap.apiCalls, this.messageIds.size),
      toolUses: { ...this.toolUses },
      signals: [...this.signals],
      rateLimits: [...this.rateLimits],
      errors: [...this.errors],
      nonJsonLines: stats.nonJsonLines,
      malformedJsonLines: stats.malformedJsonLines,
      droppedLongLines: stats.droppedLongLines,
      lines: stats.lines,
      nonJsonSamples: [...stats.nonJsonSamples],
      thresholds: { warn: snap.thresholds.warn, rotate: snap.thresholds.rotate, source: snap.thresholds.source },
      warned: snap.warned,
      rotated: snap.rotated,
      sessionId: this.sessionId,
      model: snap.model ?? this.initModel,
      outcome: this.outcome.classify(exit),
    };
  }
}

function push<T>(list: T[], item: T): void {
  if (list.length < LIST_MAX) list.push(item);
}

/**
 * Summarises a recorded stream: bytes from a file or stdin. A file that holds no JSON lines but is one JSON
 * document (a pretty-printed event or an array of events, as some fixtures are) is read as those events.
 */
export async function inspectStream(
  input: AsyncIterable<Uint8Array> | Uint8Array | string,
  opts: InspectOptions = {},
): Promise<SessionSummary> {
  const head: Buffer[] = [];
  let headBytes = 0;
  const run = (): { stream: AgentStream; inspector: SessionInspector; agent: () => AgentAdapter | null } => {
    let agent: AgentAdapter | null = opts.adapter ?? null;
    const inspector = new SessionInspector(opts, agent);
    const stream = new AgentStream((e) => inspector.apply(e), {
      adapter: opts.adapter ?? null,
      maxLineBytes: opts.maxLineBytes,
      onAgent: (a) => {
        agent = a;
        inspector.setAgent(a);
      },
    });
    return { stream, inspector, agent: () => agent };
  };
  const first = run();
  const feed = (chunk: Uint8Array | string): void => {
    const buf =
      typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (headBytes <= WHOLE_FILE_FALLBACK_BYTES) {
      head.push(Buffer.from(buf));
      headBytes += buf.length;
    }
    first.stream.push(buf);
  };
  if (typeof input === 'string' || input instanceof Uint8Array) feed(input);
  else for await (const chunk of input) feed(chunk);
  first.stream.end();

  if (first.stream.stats.jsonLines === 0 && headBytes > 0 && headBytes <= WHOLE_FILE_FALLBACK_BYTES) {
    const docs = wholeDocument(Buffer.concat(head).toString('utf8'));
    if (docs) {
      const second = run();
      second.stream.push(docs.map((d) => JSON.stringify(d)).join('\n') + '\n');
      second.stream.end();
      return second.inspector.finish(second.agent(), second.stream.stats);
    }
  }
  return first.inspector.finish(first.agent(), first.stream.stats);
}

function wholeDocument(text: string): Record<string, unknown>[] | null {
  try {
    const v: unknown = JSON.parse(text);
    const isObj = (x: unknown): x is Record<string, unknown> =>
      x !== null && typeof x === 'object' && !Array.isArray(x);
    if (isObj(v)) return [v];
    if (Array.isArray(v) && v.length && v.every(isObj)) return v;
    return null;
  } catch {
    return null;
  }
}
