import type { AgentEvent, ApiRetryEvent, RateLimitEvent, ResultEvent } from './events';

/**
 * How an iteration ended, for the loop engine's retry policy (agent-streams.md §1.6, §2; seed-systems.md §3.5).
 *
 * - `success`: a result without error.
 * - `rateLimited`: a usage limit or HTTP 429. Wait until `resetsAt` when known; `spend` limits (credits,
 *   spend caps) do not resume by themselves.
 * - `transient`: overloaded (529), other 5xx, network trouble: back off minutes.
 * - `fatal`: bad key, not logged in, billing, a bad invocation: retrying cannot help, stop the run.
 * - `error`: the turn ended on an agent-side error that is neither (max turns, budget, prompt too long, …).
 * - `noResult`: the process ended without a result and nothing says why (killed, crashed).
 */
export type OutcomeKind = 'success' | 'rateLimited' | 'transient' | 'fatal' | 'error' | 'noResult';

export interface Outcome {
  kind: OutcomeKind;
  /** A sentence a user can act on. */
  reason: string;
  /** What decided it: `rate_limit_event`, `api_error_status`, `assistant_error`, `text`, `stderr`, `result`, `exit`. */
  evidence: string;
  /** rateLimited: when the limit resets, epoch ms, when known. */
  resetsAt?: number | null;
  /** rateLimited: a spend / credit limit (no automatic resume) rather than a time window. */
  spend?: boolean;
  /** HTTP status when one is known. */
  status?: number | null;
  /** The last `api_retry` seen, when the CLI was retrying (a heartbeat, reported for context). */
  lastApiRetry?: { attempt: number; maxRetries: number; status: number | null; error: string | null };
}

/** How the process ended, as the spawner saw it. */
export interface ProcessExit {
  exitCode: number | null;
  signal: string | null;
  /** Tail of stderr (the only error channel of cursor-agent). */
  stderr: string;
}

type TextClass =
  { kind: 'rateLimited'; spend: boolean; resetsAt: number | null } | { kind: 'transient' } | { kind: 'fatal' };

// Order matters: "temporarily limiting requests (not your usage limit)" is a throttle, not a quota.
const TRANSIENT_TEXT = [
  /temporarily limiting requests/i,
  /overloaded/i,
  /\bAPI Error:? (?:5\d\d)\b/i,
  /\b(?:500|502|503|504|529)\b.*\berror\b|\berror\b.*\b(?:500|502|503|504|529)\b/i,
  /internal server error|bad gateway|service unavailable|gateway time-?out|server busy/i,
  /\b(?:ECONNRESET|ETIMEDOUT|ENOTFOUND|ECONNREFUSED|EPIPE|EAI_AGAIN)\b|socket hang up|connection (?:refused|reset|closed|failed|error)|network error|closed unexpectedly|fetch failed/i,
  /request timed out|timed out waiting/i,
  // Codex's text for an HTTP 5xx from its provider (0.171).
  /experiencing high demand/i,
];
const FATAL_TEXT = [
  /invalid (?:x-)?api[ -]?key/i,
  /failed to authenticate|authentication[_ ]failed|authentication_error|unauthorized|\bAPI Error:? 40[13]\b/i,
  /not logged in|please (?:run )?\/?login|run `?(?:claude|cursor-agent|agent) login|login required|oauth token (?:has )?expired/i,
  /credit balance is too low|billing[_ ]error|account (?:is )?on hold|organization (?:has been )?disabled/i,
  /no conversation found with session id/i,
  /requires --verbose|unknown option|error: unknown command/i,
  /cannot use this model|invalid model|model (?:is )?not (?:available|allowed|supported|found)/i,
];
/**
 * The Claude Code CLI's refusal to bypass permissions as root (printed on stderr, exit 1, before any stream line;
 * seen in 2.1.x: "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons").
 * The CLI skips the check when `IS_SANDBOX=1` is set (read in its binary; not in its documentation, named by its
 * maintainers in anthropics/claude-code#3490) or under its bubblewrap sandbox.
 */
const ROOT_REFUSAL_TEXT = /--dangerously-skip-permissions cannot be used with root\/sudo privileges/i;

/** What a user reads when the Claude CLI refused to run as root: the cause and the two ways out. */
export const ROOT_REFUSAL_REASON =
  'the Claude CLI refuses to skip permission prompts as root (it printed "--dangerously-skip-permissions cannot be used with root/sudo privileges"): run ralph as a normal (non-root) user, or, only on a disposable sandbox or container, set IS_SANDBOX=1 in the environment';

/** True when `text` (stderr or a stream text) is the Claude CLI's refusal to bypass permissions as root. */
export function isRootRefusal(text: string): boolean {
  return ROOT_REFUSAL_TEXT.test(text);
}

const SPEND_TEXT = /spend limit|out of (?:extra usage|usage credits)|usage credits required/i;
const LIMIT_TEXT = [
  /you['’]ve hit your (?:[\w-]+ )?limit/i,
  /you['’]re out of (?:extra usage|usage credits)/i,
  /usage limit reached/i,
  SPEND_TEXT,
  /\b5-hour limit\b|limit reached.*try.*back|quota exceeded|too many requests|rate[ _-]?limit/i,
  /\b(?:API Error:? )?429\b/i,
];

/**
 * Classifies a message text (assistant, result or stderr text; never tool output). Returns null when the
 * text says nothing about limits or failures. Knows today's wording ("You've hit your limit · resets …") and
 * the 2025 form "Claude AI usage limit reached|<epoch seconds>" (agent-streams.md §2.2).
 */
export function classifyText(text: string): TextClass | null {
  if (!text) return null;
  const epoch = /usage limit reached\|(\d{9,11})/i.exec(text);
  if (epoch) return { kind: 'rateLimited', spend: false, resetsAt: Number(epoch[1]) * 1000 };
  if (TRANSIENT_TEXT[0]!.test(text)) return { kind: 'transient' };
  if (FATAL_TEXT.some((r) => r.test(text))) return { kind: 'fatal' };
  if (LIMIT_TEXT.some((r) => r.test(text)))
    return { kind: 'rateLimited', spend: SPEND_TEXT.test(text), resetsAt: null };
  if (TRANSIENT_TEXT.some((r) => r.test(text))) return { kind: 'transient' };
  return null;
}

/** Claude error codes (assistant `error`, api_retry `error`) → outcome kinds. */
function classifyCode(code: string | null): OutcomeKind | null {
  switch (code) {
    case 'rate_limit':
      return 'rateLimited';
    case 'overloaded':
    case 'server_error':
      return 'transient';
    case 'authentication_failed':
    case 'oauth_org_not_allowed':
    case 'account_on_hold':
    case 'verification_required':
    case 'billing_error':
    case 'cloud_credential_error':
    case 'model_not_found':
      return 'fatal';
    default:
      return null;
  }
}

/** HTTP status → outcome kind: 429 rate-limited; 529 and other 5xx transient; 401/403 fatal. */
export function classifyStatus(status: number | null | undefined): OutcomeKind | null {
  if (status == null) return null;
  if (status === 429) return 'rateLimited';
  if (status >= 500 && status <= 599) return 'transient';
  if (status === 401 || status === 403) return 'fatal';
  return null;
}

/**
 * Watches an iteration's events and decides its {@link Outcome} at the end. Structured signals first
 * (`rate_limit_event` rejected with `resetsAt`, `api_error_status`, the assistant `error` code), then text
 * over assistant and result text only (plus stderr lines that are not JSON, for cursor-agent).
 * `api_retry` is only remembered as context: the CLI retries by itself.
 */
export class OutcomeTracker {
  private lastResult: ResultEvent | null = null;
  private rejected: RateLimitEvent | null = null;
  private lastRateLimit: RateLimitEvent | null = null;
  private lastRetry: ApiRetryEvent | null = null;
  private errorCode: { code: string | null; status: number | null; message: string } | null = null;
  /** The last few main-thread assistant texts that are synthetic or short (error texts live there). */
  private syntheticTexts: string[] = [];

  apply(e: AgentEvent): void {
    switch (e.type) {
      case 'result':
        if (!e.subagent) this.lastResult = e;
        break;
      case 'rateLimit':
        this.lastRateLimit = e;
        if (e.status === 'rejected') this.rejected = e;
        break;
      case 'apiRetry':
        this.lastRetry = e;
        break;
      case 'error':
        if (!e.subagent) this.errorCode = { code: e.code, status: e.status, message: e.message };
        break;
      case 'text':
        if (e.synthetic && !e.subagent) {
          this.syntheticTexts.push(e.text);
          if (this.syntheticTexts.length > 5) this.syntheticTexts.shift();
        }
        break;
      default:
        break;
    }
  }

  classify(exit?: ProcessExit): Outcome {
    const retry = this.lastRetry
      ? {
          lastApiRetry: {
            attempt: this.lastRetry.attempt,
            maxRetries: this.lastRetry.maxRetries,
            status: this.lastRetry.status,
            error: this.lastRetry.error,
          },
        }
      : {};
    const r = this.lastResult;
    if (r && !r.isError) {
      if (r.subtype.startsWith('error'))
        return { kind: 'error', reason: r.errors[0] ?? r.subtype, evidence: 'result', ...retry };
      return { kind: 'success', reason: 'the agent finished its turn', evidence: 'result' };
    }
    if (this.rejected) {
      return {
        kind: 'rateLimited',
        reason: `usage limit hit (${this.rejected.limitType ?? 'rate limit'})`,
        evidence: 'rate_limit_event',
        resetsAt: this.rejected.resetsAt,
        spend: false,
        status: r?.apiErrorStatus ?? this.errorCode?.status ?? null,
        ...retry,
      };
    }
    const resetsAt = this.lastRateLimit?.resetsAt ?? null;
    const texts = [r?.text ?? '', ...(r?.errors ?? []), ...this.syntheticTexts, this.errorCode?.message ?? ''].filter(
      Boolean,
    );
    const joined = texts.join('\n');
    const reasonText = (fallback: string): string => (texts[0] ?? fallback).slice(0, 500);
    // The CLI's refusal to run as root: not retryable, and the user needs the cause and the fix, not "no result".
    const stderrPlain = exit ? plainLines(exit.stderr) : '';
    if (isRootRefusal(joined) || isRootRefusal(stderrPlain))
      return {
        kind: 'fatal',
        reason: ROOT_REFUSAL_REASON,
        evidence: isRootRefusal(joined) ? 'text' : 'stderr',
        ...retry,
      };
    const byStatus = classifyStatus(r?.apiErrorStatus ?? this.errorCode?.status);
    if (byStatus) {
      const status = r?.apiErrorStatus ?? this.errorCode?.status ?? null;
      const t = byStatus === 'rateLimited' ? classifyText(joined) : null;
      return this.outcome(byStatus, reasonText(`HTTP ${status}`), 'api_error_status', {
        status,
        resetsAt,
        spend: t?.kind === 'rateLimited' ? t.spend : false,
        ...retry,
      });
    }
    const byCode = classifyCode(this.errorCode?.code ?? null);
    if (byCode)
      return this.outcome(byCode, reasonText(this.errorCode!.code!), 'assistant_error', {
        status: this.errorCode?.status ?? null,
        resetsAt,
        spend: false,
        ...retry,
      });
    const t = classifyText(joined);
    if (t) return this.fromText(t, reasonText('limit'), 'text', resetsAt, retry);
    if (r) {
      const reason = r.errors[0] ?? r.text ?? r.terminalReason ?? r.subtype;
      return { kind: 'error', reason: reason || 'the turn ended with an error', evidence: 'result', ...retry };
    }
    // No result: cursor-agent's only error channel is stderr (JSON mirrors of events are skipped).
    const stderrText = stderrPlain;
    const st = classifyText(stderrText);
    if (st) return this.fromText(st, lastLine(stderrText), 'stderr', resetsAt, retry);
    const how = exit ? (exit.signal ? `killed by ${exit.signal}` : `exit code ${exit.exitCode}`) : 'stream ended';
    const tail = stderrText ? `: ${lastLine(stderrText)}` : '';
    const lr = this.lastRetry;
    const retrying = lr
      ? `, while the CLI was retrying ${lr.status ?? lr.error ?? 'an API error'} (attempt ${lr.attempt} of ${lr.maxRetries})`
      : '';
    return { kind: 'noResult', reason: `no result (${how})${retrying}${tail}`, evidence: 'exit', ...retry };
  }

  private fromText(t: TextClass, reason: string, evidence: string, resetsAt: number | null, retry: object): Outcome {
    if (t.kind === 'rateLimited')
      return { kind: 'rateLimited', reason, evidence, resetsAt: t.resetsAt ?? resetsAt, spend: t.spend, ...retry };
    return { kind: t.kind, reason, evidence, ...retry };
  }

  private outcome(
    kind: OutcomeKind,
    reason: string,
    evidence: string,
    extra: { status: number | null; resetsAt: number | null; spend: boolean; lastApiRetry?: Outcome['lastApiRetry'] },
  ): Outcome {
    const o: Outcome = { kind, reason, evidence, status: extra.status };
    if (kind === 'rateLimited') {
      o.resetsAt = extra.resetsAt;
      o.spend = extra.spend;
    }
    if (extra.lastApiRetry) o.lastApiRetry = extra.lastApiRetry;
    return o;
  }
}

/** stderr without lines that are JSON (cursor mirrors its events to stderr in stream-json mode). */
function plainLines(stderr: string): string {
  return stderr
    .split(/\r?\n/)
    .filter((l) => l.trim() && !l.trimStart().startsWith('{'))
    .join('\n');
}

function lastLine(text: string): string {
  const lines = text.split('\n').filter((l) => l.trim());
  return (lines[lines.length - 1] ?? '').trim().slice(0, 500);
}
