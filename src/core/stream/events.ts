/**
 * `AgentEvent`: the one vocabulary every agent adapter maps its stream into (agent-streams.md §1–§4).
 * Consumers (the token ledger, outcome classification, the loop engine, the UI, `session inspect`) switch on
 * `type` and never see an agent's wire format.
 */

/** Token counts of one API call or a total. All values are tokens. */
export interface TokenCounts {
  /** Uncached input tokens. */
  input: number;
  output: number;
  /** Input tokens read from the prompt cache. */
  cacheRead: number;
  /** Input tokens written to the prompt cache. */
  cacheCreation: number;
}

export const zeroTokens = (): TokenCounts => ({ input: 0, output: 0, cacheRead: 0, cacheCreation: 0 });

export function addTokens(a: TokenCounts, b: TokenCounts): TokenCounts {
  return {
    input: a.input + b.input,
    output: a.output + b.output,
    cacheRead: a.cacheRead + b.cacheRead,
    cacheCreation: a.cacheCreation + b.cacheCreation,
  };
}

export function subtractTokens(a: TokenCounts, b: TokenCounts): TokenCounts {
  return {
    input: a.input - b.input,
    output: a.output - b.output,
    cacheRead: a.cacheRead - b.cacheRead,
    cacheCreation: a.cacheCreation - b.cacheCreation,
  };
}

/** The normalised kind of a tool, used by the byte estimate (seed-systems.md §3.4) and stuck detection. */
export type ToolKind = 'shell' | 'read' | 'write' | 'edit' | 'other';

/** Per-model figures of a Claude result's `modelUsage` (tokens; USD). */
export interface ModelUsage {
  tokens: TokenCounts;
  costUsd: number;
  /** The window the CLI used for this model, tokens (200 000 or 1 000 000), when reported. */
  contextWindow: number | null;
}

/** Markers every event carries. */
export interface EventMarks {
  /** Produced by a subagent (Claude: `parent_tool_use_id` set): another context, never main-context math. */
  subagent: boolean;
  /** Made by the CLI itself (Claude: `message.model === "<synthetic>"`): notices and API-error texts, zero usage. */
  synthetic: boolean;
}

export type AgentEvent = AgentEventBody & EventMarks;

export type AgentEventBody =
  | InitEvent
  | TextEvent
  | ThinkingEvent
  | ToolUseEvent
  | ToolResultEvent
  | UsageEvent
  | RateLimitEvent
  | ApiRetryEvent
  | ErrorEvent
  | ResultEvent
  | CompactBoundaryEvent
  | UnknownEvent;

/** The session started (Claude `system/init`; cursor `system/init`). */
export interface InitEvent {
  type: 'init';
  /** The id `--resume` takes. */
  sessionId: string | null;
  /** Model id (Claude, e.g. `claude-opus-4-6[1m]`) or display name (cursor, e.g. `Auto`). */
  model: string | null;
  cwd: string | null;
  tools: string[];
  permissionMode: string | null;
  /** The CLI's own version when it says (Claude `claude_code_version`). */
  agentVersion: string | null;
}

/** Assistant text (one content block or one cursor segment). */
export interface TextEvent {
  type: 'text';
  text: string;
  /** The API message id (Claude `message.id`), shared by all blocks of one response. */
  messageId: string | null;
}

export interface ThinkingEvent {
  type: 'thinking';
  text: string;
  messageId: string | null;
}

/** The agent called a tool. */
export interface ToolUseEvent {
  type: 'toolUse';
  /** Opaque id correlating the result (Claude `tool_use.id`, cursor `call_id`; may contain `\n`). */
  id: string;
  /** The agent's own tool name (`Bash`, `Write`, cursor `shell`, `read`, …). */
  name: string;
  kind: ToolKind;
  input: Record<string, unknown>;
  messageId: string | null;
}

/** A tool finished. */
export interface ToolResultEvent {
  type: 'toolResult';
  id: string;
  /** Name of the matching `toolUse`, when it was seen. */
  name: string | null;
  kind: ToolKind;
  isError: boolean;
  /** The result as text (Claude tool_result content; cursor stdout+stderr, file content, or failure reason). */
  output: string;
  /** Shell exit code when the agent reports one (cursor), else null. */
  exitCode: number | null;
}

/**
 * Token usage of one API call (`source: 'message'`, Claude assistant lines: repeated for every content block
 * of one response; the ledger counts each `messageId` once) or of a whole run (`source: 'result'`, cursor's
 * camelCase `result.usage`).
 */
export interface UsageEvent {
  type: 'usage';
  source: 'message' | 'result';
  messageId: string | null;
  model: string | null;
  tokens: TokenCounts;
}

/** Claude `rate_limit_event` (subscription logins): the limit state changed. */
export interface RateLimitEvent {
  type: 'rateLimit';
  /** `allowed`, `allowed_warning` or `rejected` (only `rejected` means the limit was hit). */
  status: string;
  /** When the window resets, epoch **milliseconds** (the wire value is seconds), or null. */
  resetsAt: number | null;
  /** `five_hour`, `seven_day`, `overage`, … */
  limitType: string | null;
  /** 0..1 when sent. */
  utilization: number | null;
  overageStatus: string | null;
}

/** Claude `system/api_retry`: the CLI is retrying an API call by itself. A heartbeat, not a failure. */
export interface ApiRetryEvent {
  type: 'apiRetry';
  attempt: number;
  maxRetries: number;
  /** Wait before the next attempt, ms. */
  delayMs: number;
  /** HTTP status, or null for a connection error without a response. */
  status: number | null;
  /** `rate_limit`, `overloaded`, `server_error`, `authentication_failed`, … */
  error: string | null;
}

/** An error the agent reported in its stream (Claude synthetic assistant line with `error`). */
export interface ErrorEvent {
  type: 'error';
  message: string;
  /** Claude's error code (`rate_limit`, `overloaded`, `authentication_failed`, …) when given. */
  code: string | null;
  /** HTTP status when given. */
  status: number | null;
}

/** The end of one turn (Claude `result`; cursor `result`). Not necessarily the last line. */
export interface ResultEvent {
  type: 'result';
  /** `success`, `error_max_turns`, `error_during_execution`, … (`is_error` does not follow from it). */
  subtype: string;
  isError: boolean;
  /** Final text, or the error text when `isError`; null on error subtypes (no `result` key). */
  text: string | null;
  errors: string[];
  numTurns: number | null;
  durationMs: number | null;
  /** Client-side cost estimate, USD, cumulative for the process (Claude `total_cost_usd`). */
  costUsd: number | null;
  /** Main-loop usage (Claude `result.usage`), cumulative for the process. */
  usage: TokenCounts | null;
  /** Every model call incl. subagents and side calls (Claude `modelUsage`), cumulative for the process. */
  modelUsage: Record<string, ModelUsage> | null;
  apiErrorStatus: number | null;
  /** Claude `terminal_reason` (`completed`, `api_error`, `max_turns`, `prompt_too_long`, …). */
  terminalReason: string | null;
  stopReason: string | null;
  sessionId: string | null;
  permissionDenials: number;
}

/** Claude `system/compact_boundary`: the context was compacted; the context estimate resets. */
export interface CompactBoundaryEvent {
  type: 'compactBoundary';
  trigger: string | null;
  /** Context before, tokens. */
  preTokens: number | null;
  /** Context after, tokens, when reported. */
  postTokens: number | null;
}

/** A line the adapter does not model (new event kinds are normal): passed on, never dropped silently. */
export interface UnknownEvent {
  type: 'unknown';
  /** `type` of the line, with `/subtype` when it has one (e.g. `system/hook_started`), or null. */
  rawType: string | null;
  raw: Record<string, unknown>;
  /** Why a line of a known type was not mapped (failed validation), when that is the reason. */
  issue?: string;
}

export type AgentEventType = AgentEvent['type'];

/** Every event type, in a stable order (for counts and reports). */
export const AGENT_EVENT_TYPES: readonly AgentEventType[] = [
  'init',
  'text',
  'thinking',
  'toolUse',
  'toolResult',
  'usage',
  'rateLimit',
  'apiRetry',
  'error',
  'result',
  'compactBoundary',
  'unknown',
];

/** Adds the markers (default: main thread, not synthetic) to a freshly built event body, in place. */
export function ev<T extends AgentEventBody>(body: T, marks?: Partial<EventMarks>): T & EventMarks {
  // Mutates the fresh literal instead of spreading it: this runs once per event on the hot path.
  const e = body as T & EventMarks;
  e.subagent = marks?.subagent ?? false;
  e.synthetic = marks?.synthetic ?? false;
  return e;
}

/** `rawType` for an unknown line: `type` or `type/subtype`. */
export function rawTypeOf(obj: Record<string, unknown>): string | null {
  const t = typeof obj.type === 'string' ? obj.type : null;
  if (t === null) return null;
  return typeof obj.subtype === 'string' ? `${t}/${obj.subtype}` : t;
}
