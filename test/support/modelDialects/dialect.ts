import type * as http from 'node:http';

/**
 * One model API dialect of the scripted model server (modelServer.ts): which requests it answers, how it reads a
 * request's prompts and tool results, and how it writes a scripted turn on the wire. The server core owns the script,
 * the routing by story and the recording; a dialect owns only its wire format. Adding an API = one file here and one
 * entry in `DIALECTS` (modelServer.ts).
 */

/** Usage figures the server reports for one reply, tokens. `input` is always the uncached input. */
export interface ScriptUsage {
  input?: number;
  output?: number;
  cacheRead?: number;
  cacheCreation?: number;
  /** Reasoning output tokens (OpenAI dialects: `reasoning_tokens`, a part of `output`). */
  reasoning?: number;
}

export interface ToolCall {
  /**
   * The tool's name as the agent offers it (`Bash`, `exec_command`, `bash`, `run_shell_command`, …), or `$shell`: the
   * dialect picks the shell tool among those the request offers and builds its arguments from `input.command`.
   */
  name: string;
  input: Record<string, unknown>;
  /** Default `<prefix>_<n>`. */
  id?: string;
}

interface TurnBase {
  /** Wait before answering, ms. */
  delayMs?: number;
  /**
   * Answer only once this settles (after `delayMs`): holds the agent in the middle of its run until something the
   * caller waits for has happened (the demo's screenshot, say), instead of hoping a pause is long enough.
   */
  after?: Promise<unknown>;
  /** Use this turn for this many requests (Infinity: every remaining request). Default 1. */
  times?: number;
}

export type Turn =
  | (TurnBase & { kind: 'text'; text: string; usage?: ScriptUsage; reasoning?: string })
  | (TurnBase & { kind: 'toolUse'; calls: ToolCall[]; text?: string; usage?: ScriptUsage; reasoning?: string })
  | (TurnBase & {
      kind: 'httpError';
      status: number;
      message?: string;
      errorType?: string;
      headers?: Record<string, string>;
      /** The whole error body, replacing the dialect's default (a usage-limit body with its reset time, say). */
      body?: unknown;
    })
  /** Starts the streamed reply (and `text` so far), then destroys the connection. */
  | (TurnBase & { kind: 'disconnect'; text?: string; usage?: ScriptUsage })
  /** Starts the streamed reply, then never finishes it (until the server closes). */
  | (TurnBase & { kind: 'hang'; usage?: ScriptUsage });

/** A request as a dialect sees it. */
export interface DialectRequest {
  method: string;
  /** Path without the query. */
  path: string;
  /** The query string without `?`, or ''. */
  query: string;
  body: unknown;
}

/** Per-server state a dialect may use for ids. */
export interface DialectContext {
  /** The model name the server reports (`opts.model`, else the request's). */
  model: string;
  /** A fresh number for message / call ids, unique within the server. */
  seq(): number;
}

export interface Dialect {
  readonly name: string;
  /** True when this dialect serves `method path`. */
  serves(req: DialectRequest): boolean;
  /**
   * True when the request is the agent's own turn (it takes the next script turn); false for side calls (titles,
   * token counts, model lists, routers), which get {@link answerSide}.
   */
  isAgentRequest(req: DialectRequest): boolean;
  /** The reply to a side call. */
  answerSide(req: DialectRequest, res: http.ServerResponse, ctx: DialectContext): void;
  /** Writes a scripted turn (not `httpError`) as this API's reply. */
  answer(req: DialectRequest, res: http.ServerResponse, turn: Turn, ctx: DialectContext): void;
  /** The error body of this API for `status`. */
  errorBody(status: number, message: string, errorType?: string): unknown;
  /** Every user-written text of a request (prompts; tool results excluded). */
  userTexts(body: unknown): string[];
  /** Every tool result of a request, in order. */
  toolResults(body: unknown): { id: string; content: string; isError?: boolean }[];
}

export function json(
  res: http.ServerResponse,
  status: number,
  value: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(value));
}

export function startSse(res: http.ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
}

/** Text of a content value: a string, or the `text` of every part that has one. */
export function partsText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content
      .map((c) =>
        c && typeof c === 'object' && typeof (c as { text?: unknown }).text === 'string'
          ? (c as { text: string }).text
          : '',
      )
      .filter(Boolean)
      .join('\n');
  return content === undefined || content === null ? '' : JSON.stringify(content);
}

/** The names of the function tools a request offers (OpenAI and Anthropic shapes). */
export function offeredTools(body: unknown): string[] {
  const tools = (body as { tools?: unknown[] })?.tools;
  if (!Array.isArray(tools)) return [];
  return tools.flatMap((t) => {
    const o = t as { name?: unknown; function?: { name?: unknown } };
    const name = typeof o?.name === 'string' ? o.name : o?.function?.name;
    return typeof name === 'string' ? [name] : [];
  });
}

/**
 * A `$shell` call made concrete for the tools a request offers: each agent's shell tool and its argument shape.
 * Other calls are returned unchanged.
 */
export function concreteCall(call: ToolCall, offered: readonly string[]): ToolCall {
  if (call.name !== '$shell') return call;
  const command = String(call.input.command ?? '');
  const has = (n: string) => offered.includes(n);
  if (has('Bash')) return { ...call, name: 'Bash', input: { command, description: 'run a command' } };
  if (has('exec_command')) return { ...call, name: 'exec_command', input: { cmd: command } };
  if (has('shell')) return { ...call, name: 'shell', input: { command: ['bash', '-lc', command] } };
  if (has('run_shell_command'))
    return { ...call, name: 'run_shell_command', input: { command, description: 'run a command' } };
  if (has('bash')) return { ...call, name: 'bash', input: { command, description: 'run a command' } };
  if (has('shell_command')) return { ...call, name: 'shell_command', input: { command } };
  return { ...call, name: offered.find((n) => /shell|bash|command/i.test(n)) ?? 'bash', input: { command } };
}
