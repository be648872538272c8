import * as http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * A scripted Anthropic Messages API server on 127.0.0.1, for driving the real Claude Code CLI (and later the
 * loop engine and the demo) with model replies decided by the test (real-vscode-and-claude.md §3).
 *
 * Point the CLI at it with `ANTHROPIC_BASE_URL=server.url`. Each agent request (`POST /v1/messages` whose body
 * has a `tools` array) takes the next turn of the script; requests without tools (side calls) get a short
 * text reply and take no turn. Every request is recorded, so tests can assert on prompts and tool results.
 *
 * ```ts
 * const server = await startModelServer([
 *   bash('echo hi > out.txt', { usage: { input: 150_000 } }),
 *   say('Done. <promise>COMPLETE</promise>'),
 * ]);
 * ```
 */

/** Usage figures the server reports for one reply (tokens). These are what the CLI reports back. */
export interface ScriptUsage {
  input?: number;
  output?: number;
  cacheRead?: number;
  cacheCreation?: number;
}

export interface ToolCall {
  name: string;
  input: Record<string, unknown>;
  /** Default `toolu_<n>`. */
  id?: string;
}

interface TurnBase {
  /** Wait before answering, ms. */
  delayMs?: number;
  /** Use this turn for this many requests (Infinity: every remaining request). Default 1. */
  times?: number;
}

export type Turn =
  | (TurnBase & { kind: 'text'; text: string; usage?: ScriptUsage })
  | (TurnBase & { kind: 'toolUse'; calls: ToolCall[]; text?: string; usage?: ScriptUsage })
  | (TurnBase & {
      kind: 'httpError';
      status: number;
      message?: string;
      errorType?: string;
      headers?: Record<string, string>;
    })
  /** Starts the SSE reply (message_start and `text` so far), then destroys the connection. */
  | (TurnBase & { kind: 'disconnect'; text?: string; usage?: ScriptUsage })
  /** Starts the SSE reply, then never finishes it (until the server closes). */
  | (TurnBase & { kind: 'hang'; usage?: ScriptUsage });

type Opts = { usage?: ScriptUsage; delayMs?: number; times?: number };

/** A text reply that ends the turn (`stop_reason: end_turn`). */
export const say = (text: string, o: Opts = {}): Turn => ({ kind: 'text', text, ...o });
/** A reply calling one tool (`stop_reason: tool_use`). */
export const toolUse = (
  name: string,
  input: Record<string, unknown>,
  o: Opts & { text?: string; id?: string } = {},
): Turn => ({ kind: 'toolUse', calls: [{ name, input, ...(o.id ? { id: o.id } : {}) }], ...o });
export const bash = (command: string, o: Opts & { text?: string } = {}): Turn =>
  toolUse('Bash', { command, description: 'run a command' }, o);
export const write = (filePath: string, content: string, o: Opts & { text?: string } = {}): Turn =>
  toolUse('Write', { file_path: filePath, content }, o);
export const edit = (filePath: string, oldString: string, newString: string, o: Opts & { text?: string } = {}): Turn =>
  toolUse('Edit', { file_path: filePath, old_string: oldString, new_string: newString }, o);
export const read = (filePath: string, o: Opts & { text?: string } = {}): Turn =>
  toolUse('Read', { file_path: filePath }, o);
/** An HTTP error with an Anthropic error body (429 rate_limit_error, 529 overloaded_error, 401 authentication_error, …). */
export const httpError = (
  status: number,
  o: { message?: string; times?: number; delayMs?: number; headers?: Record<string, string> } = {},
): Turn => ({ kind: 'httpError', status, ...o });
export const disconnect = (o: { text?: string; usage?: ScriptUsage; times?: number } = {}): Turn => ({
  kind: 'disconnect',
  ...o,
});
export const hang = (o: { usage?: ScriptUsage } = {}): Turn => ({ kind: 'hang', ...o });

export interface RecordedRequest {
  method: string;
  /** Path with query, e.g. `/v1/messages?beta=true`. */
  url: string;
  headers: http.IncomingHttpHeaders;
  /** Parsed JSON body, or the raw text when it was not JSON. */
  body: unknown;
  /** Index of the script turn that answered, or null for side calls and other paths. */
  turn: number | null;
  /** Time received, ms since the epoch. */
  at: number;
}

export interface ModelServer {
  /** `http://127.0.0.1:<port>`: the value of `ANTHROPIC_BASE_URL`. */
  readonly url: string;
  readonly requests: RecordedRequest[];
  /** Agent requests only (those that took a script turn). */
  agentRequests(): RecordedRequest[];
  /** Resolves once `n` agent requests have arrived. */
  waitForAgentRequests(n: number): Promise<void>;
  /** Requests that found the script exhausted (answered with a fallback text). */
  readonly exhausted: number;
  close(): Promise<void>;
}

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

/** Text of every user message in a request body (prompts and text blocks; tool results excluded). */
export function userTexts(body: unknown): string[] {
  const msgs = (body as { messages?: { role: string; content: unknown }[] })?.messages ?? [];
  const out: string[] = [];
  for (const m of msgs) {
    if (m.role !== 'user') continue;
    if (typeof m.content === 'string') out.push(m.content);
    else if (Array.isArray(m.content))
      for (const c of m.content) if (c?.type === 'text' && typeof c.text === 'string') out.push(c.text);
  }
  return out;
}

/** Every `tool_result` block in a request body. */
export function toolResults(body: unknown): { tool_use_id: string; content: unknown; is_error?: boolean }[] {
  const msgs = (body as { messages?: { role: string; content: unknown }[] })?.messages ?? [];
  return msgs.flatMap((m) =>
    Array.isArray(m.content) ? m.content.filter((c: { type?: string }) => c?.type === 'tool_result') : [],
  );
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * The story a request is about: `Story <id>:` in its user text (the quantum prompt's task line), when `ids` has it.
 * Lanes of a parallel run (issue 19) each talk about their own story; null when none is named.
 */
export function storyOfRequest(body: unknown, ids: readonly string[]): string | null {
  for (const t of userTexts(body)) {
    for (const m of t.matchAll(/Story (\S+?):/g)) if (ids.includes(m[1]!)) return m[1]!;
  }
  return null;
}

/**
 * Starts the scripted model server. `script`: one list of turns taken in order by every agent request (the
 * sequential engine), or one list per story id (parallel lanes): each agent request takes the next turn of the
 * story its prompt names ({@link storyOfRequest}); a request naming none takes from the `'*'` list when there is one.
 * `RecordedRequest.turn` is then the index within that story's list.
 */
export async function startModelServer(
  script: Turn[] | Record<string, Turn[]>,
  opts: { model?: string } = {},
): Promise<ModelServer> {
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  const waiters: { n: number; resolve: () => void }[] = [];
  let cursor = 0;
  let usedOfCursor = 0;
  let messageSeq = 0;
  let toolSeq = 0;
  let exhausted = 0;
  let agentCount = 0;

  const routed = Array.isArray(script)
    ? null
    : new Map(Object.entries(script).map(([id, turns]) => [id, { turns, cursor: 0, used: 0 }]));
  const nextTurn = (body?: unknown): { turn: Turn; index: number } | null => {
    if (routed) {
      const id = storyOfRequest(body, [...routed.keys()]) ?? '*';
      const r = routed.get(id);
      if (!r) return null;
      while (r.cursor < r.turns.length) {
        const t = r.turns[r.cursor]!;
        if (r.used < (t.times ?? 1)) {
          r.used++;
          return { turn: t, index: r.cursor };
        }
        r.cursor++;
        r.used = 0;
      }
      return null;
    }
    const list = script as Turn[];
    while (cursor < list.length) {
      const t = list[cursor]!;
      if (usedOfCursor < (t.times ?? 1)) {
        usedOfCursor++;
        return { turn: t, index: cursor };
      }
      cursor++;
      usedOfCursor = 0;
    }
    return null;
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void handle(req, res, Buffer.concat(chunks).toString('utf8'));
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse, text: string): Promise<void> {
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      /* keep raw */
    }
    const rec: RecordedRequest = {
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
      body,
      turn: null,
      at: Date.now(),
    };
    requests.push(rec);
    const path = (req.url ?? '').split('?')[0];
    if (req.method === 'POST' && path === '/v1/messages/count_tokens') {
      json(res, 200, { input_tokens: 1 });
      return;
    }
    if (req.method !== 'POST' || path !== '/v1/messages') {
      json(res, 404, { type: 'error', error: { type: 'not_found_error', message: `no route ${req.method} ${path}` } });
      return;
    }
    const b = (body ?? {}) as { tools?: unknown; model?: string; stream?: boolean };
    const model = opts.model ?? b.model ?? 'claude-test';
    if (!Array.isArray(b.tools)) {
      sse(res, model, { kind: 'text', text: 'ok' });
      return;
    }
    const next = nextTurn(body);
    agentCount++;
    for (const w of waiters.splice(0)) {
      if (agentCount >= w.n) w.resolve();
      else waiters.push(w);
    }
    if (!next) {
      exhausted++;
      sse(res, model, { kind: 'text', text: '(script exhausted)' });
      return;
    }
    rec.turn = next.index;
    const turn = next.turn;
    if (turn.delayMs) await sleep(turn.delayMs);
    if (turn.kind === 'httpError') {
      const type = ERROR_TYPES[turn.status] ?? (turn.status >= 500 ? 'api_error' : 'invalid_request_error');
      json(
        res,
        turn.status,
        { type: 'error', error: { type, message: turn.message ?? `scripted HTTP ${turn.status}` } },
        { 'request-id': `req_${rec.at}`, ...(turn.headers ?? {}) },
      );
      return;
    }
    sse(res, model, turn);
  }

  function json(res: http.ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(value));
  }

  function sse(res: http.ServerResponse, model: string, turn: Turn): void {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const send = (event: string, data: Record<string, unknown>): void => {
      res.write(`event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`);
    };
    const u = 'usage' in turn ? (turn.usage ?? {}) : {};
    const id = `msg_${++messageSeq}`;
    send('message_start', {
      message: {
        id,
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: {
          input_tokens: u.input ?? 100,
          output_tokens: 1,
          cache_creation_input_tokens: u.cacheCreation ?? 0,
          cache_read_input_tokens: u.cacheRead ?? 0,
        },
      },
    });
    let index = 0;
    const textBlock = (text: string): void => {
      send('content_block_start', { index, content_block: { type: 'text', text: '' } });
      send('content_block_delta', { index, delta: { type: 'text_delta', text } });
      send('content_block_stop', { index });
      index++;
    };
    if (turn.kind === 'hang') return;
    if (turn.kind === 'disconnect') {
      send('content_block_start', { index, content_block: { type: 'text', text: '' } });
      send('content_block_delta', { index, delta: { type: 'text_delta', text: turn.text ?? 'partial' } });
      res.socket?.destroy();
      return;
    }
    let stop = 'end_turn';
    if (turn.kind === 'text') textBlock(turn.text);
    if (turn.kind === 'toolUse') {
      if (turn.text) textBlock(turn.text);
      for (const call of turn.calls) {
        const json = JSON.stringify(call.input);
        const half = Math.floor(json.length / 2);
        send('content_block_start', {
          index,
          content_block: { type: 'tool_use', id: call.id ?? `toolu_${++toolSeq}`, name: call.name, input: {} },
        });
        send('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: json.slice(0, half) } });
        send('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: json.slice(half) } });
        send('content_block_stop', { index });
        index++;
      }
      stop = 'tool_use';
    }
    send('message_delta', {
      delta: { stop_reason: stop, stop_sequence: null },
      usage: { output_tokens: u.output ?? 10 },
    });
    send('message_stop', {});
    res.end();
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    agentRequests: () =>
      requests.filter((r) => r.turn !== null || (r.body as { tools?: unknown })?.tools !== undefined),
    waitForAgentRequests: (n) =>
      agentCount >= n ? Promise.resolve() : new Promise((resolve) => waiters.push({ n, resolve })),
    get exhausted() {
      return exhausted;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
