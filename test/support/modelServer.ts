import * as http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { anthropicDialect } from './modelDialects/anthropic';
import { chatCompletionsDialect } from './modelDialects/chatCompletions';
import { geminiDialect } from './modelDialects/gemini';
import type { Dialect, DialectRequest, ScriptUsage, Turn } from './modelDialects/dialect';
import { openaiResponsesDialect } from './modelDialects/openaiResponses';

export type { ScriptUsage, ToolCall, Turn } from './modelDialects/dialect';

/**
 * A scripted model server on 127.0.0.1, for driving the real agent CLIs (and the loop engine and the demo) with model
 * replies decided by the test (real-vscode-and-claude.md §3, more-agents.md). One script, several API dialects, each in
 * its own module under modelDialects/: Anthropic's Messages API (Claude Code: `ANTHROPIC_BASE_URL=server.url`), OpenAI's
 * Responses API (Codex: `server.url + '/v1'` as a custom provider's `base_url`) and Chat Completions (opencode, Qwen
 * Code, Copilot BYOK: `server.url + '/v1'`) and Google's Gemini API (Gemini CLI: `GOOGLE_GEMINI_BASE_URL=server.url`). Each agent request takes the next turn of the script; side calls (titles,
 * token counts) get a short text reply and take no turn. Every request is recorded, so tests can assert on prompts
 * and tool results.
 *
 * ```ts
 * const server = await startModelServer([
 *   bash('echo hi > out.txt', { usage: { input: 150_000 } }),
 *   say('Done. <promise>COMPLETE</promise>'),
 * ]);
 * ```
 */

/** The dialects the server speaks, tried in order (the first that serves a request answers it). */
export const DIALECTS: Dialect[] = [anthropicDialect, openaiResponsesDialect, chatCompletionsDialect, geminiDialect];

type Opts = { usage?: ScriptUsage; delayMs?: number; times?: number };

/** A text reply that ends the turn (`stop_reason: end_turn`). */
export const say = (text: string, o: Opts & { reasoning?: string } = {}): Turn => ({ kind: 'text', text, ...o });
/** A reply calling one tool (`stop_reason: tool_use`). */
export const toolUse = (
  name: string,
  input: Record<string, unknown>,
  o: Opts & { text?: string; id?: string } = {},
): Turn => ({ kind: 'toolUse', calls: [{ name, input, ...(o.id ? { id: o.id } : {}) }], ...o });
export const bash = (command: string, o: Opts & { text?: string } = {}): Turn =>
  toolUse('Bash', { command, description: 'run a command' }, o);
/** A reply calling the agent's own shell tool, whichever the request offers (`Bash`, `exec_command`, `bash`, `run_shell_command`, …). */
export const shell = (command: string, o: Opts & { text?: string } = {}): Turn => toolUse('$shell', { command }, o);
export const write = (filePath: string, content: string, o: Opts & { text?: string } = {}): Turn =>
  toolUse('Write', { file_path: filePath, content }, o);
export const edit = (filePath: string, oldString: string, newString: string, o: Opts & { text?: string } = {}): Turn =>
  toolUse('Edit', { file_path: filePath, old_string: oldString, new_string: newString }, o);
export const read = (filePath: string, o: Opts & { text?: string } = {}): Turn =>
  toolUse('Read', { file_path: filePath }, o);
/** An HTTP error with an Anthropic error body (429 rate_limit_error, 529 overloaded_error, 401 authentication_error, …). */
export const httpError = (
  status: number,
  o: {
    message?: string;
    errorType?: string;
    times?: number;
    delayMs?: number;
    headers?: Record<string, string>;
    body?: unknown;
  } = {},
): Turn => ({ kind: 'httpError', status, ...o });
/**
 * HTTP 429 on every request for a usage quota that resets an hour from now, in the shapes providers use: the message
 * names the reset time, the body has Codex's `usage_limit_reached` fields, the headers OpenAI's reset durations.
 */
export function quota429(resetInS = 3600, o: { times?: number } = {}): Turn {
  const resetsAt = Math.floor(Date.now() / 1000) + resetInS;
  return httpError(429, {
    times: o.times ?? Infinity,
    headers: { 'x-ratelimit-reset-requests': `${resetInS}s`, 'x-ratelimit-reset-tokens': `${resetInS}s` },
    body: {
      error: {
        message: `You exceeded your current quota: it will reset at ${new Date(resetsAt * 1000).toISOString()}.`,
        type: 'usage_limit_reached',
        code: 'insufficient_quota',
        param: null,
        plan_type: 'plus',
        resets_at: resetsAt,
        resets_in_seconds: resetInS,
      },
    },
  });
}

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
  /** The dialect that answered (`anthropic`, `openai-responses`, `openai-chat`, …), or null for an unknown path. */
  dialect: string | null;
  /** Time received, ms since the epoch. */
  at: number;
}

export interface ModelServer {
  /** `http://127.0.0.1:<port>`: the value of `ANTHROPIC_BASE_URL`. */
  readonly url: string;
  /** `url + '/v1'`: the base URL of the OpenAI dialects (Codex's provider `base_url`, `OPENAI_BASE_URL`, …). */
  readonly openaiUrl: string;
  readonly requests: RecordedRequest[];
  /** Agent requests only (those that took a script turn). */
  agentRequests(): RecordedRequest[];
  /** Resolves once `n` agent requests have arrived. */
  waitForAgentRequests(n: number): Promise<void>;
  /** Requests that found the script exhausted (answered with a fallback text). */
  readonly exhausted: number;
  close(): Promise<void>;
}

/**
 * Text of every user message in a request body of any dialect (prompts and text parts; tool results excluded).
 */
export function userTexts(body: unknown): string[] {
  const b = body as { input?: unknown; contents?: unknown };
  if (b && typeof b === 'object' && 'input' in b) return openaiResponsesDialect.userTexts(body);
  const extra = DIALECTS.find(
    (d) => d.name !== 'anthropic' && d.name !== 'openai-chat' && d.name !== 'openai-responses',
  );
  if (b && typeof b === 'object' && 'contents' in b && extra) return extra.userTexts(body);
  return anthropicDialect.userTexts(body);
}

/** Every `tool_result` block in an Anthropic request body. */
export function toolResults(body: unknown): { tool_use_id: string; content: unknown; is_error?: boolean }[] {
  const msgs = (body as { messages?: { role: string; content: unknown }[] })?.messages ?? [];
  return msgs.flatMap((m) =>
    Array.isArray(m.content) ? m.content.filter((c: { type?: string }) => c?.type === 'tool_result') : [],
  );
}

/** Every tool result of a recorded request, in its dialect's terms (`id`, the output as text). */
export function requestToolResults(rec: RecordedRequest): { id: string; content: string; isError?: boolean }[] {
  return DIALECTS.find((d) => d.name === rec.dialect)?.toolResults(rec.body) ?? [];
}

/** Every user text of a recorded request, in its dialect's terms. */
export function requestUserTexts(rec: RecordedRequest): string[] {
  return DIALECTS.find((d) => d.name === rec.dialect)?.userTexts(rec.body) ?? [];
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * The story a request is about: `Story <id>:` in its user text (the quantum prompt's task line), when `ids` has it.
 * Lanes of a parallel run (issue 19) each talk about their own story; null when none is named.
 */
export function storyOfRequest(body: unknown, ids: readonly string[], texts?: readonly string[]): string | null {
  for (const t of texts ?? userTexts(body)) {
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
  let seq = 0;
  let exhausted = 0;
  let agentCount = 0;

  const routed = Array.isArray(script)
    ? null
    : new Map(Object.entries(script).map(([id, turns]) => [id, { turns, cursor: 0, used: 0 }]));
  const nextTurn = (body: unknown, texts: readonly string[]): { turn: Turn; index: number } | null => {
    if (routed) {
      const id = storyOfRequest(body, [...routed.keys()], texts) ?? '*';
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
      dialect: null,
      at: Date.now(),
    };
    requests.push(rec);
    const [path = '', query = ''] = (req.url ?? '').split('?');
    const dreq: DialectRequest = { method: rec.method, path, query, body };
    const dialect = DIALECTS.find((d) => d.serves(dreq));
    if (!dialect) {
      json(res, 404, { type: 'error', error: { type: 'not_found_error', message: `no route ${req.method} ${path}` } });
      return;
    }
    rec.dialect = dialect.name;
    const requested = (body as { model?: unknown })?.model;
    const ctx = {
      model: opts.model ?? (typeof requested === 'string' ? requested : 'test-model'),
      seq: () => ++seq,
    };
    if (!dialect.isAgentRequest(dreq)) {
      dialect.answerSide(dreq, res, ctx);
      return;
    }
    const next = nextTurn(body, dialect.userTexts(body));
    agentCount++;
    for (const w of waiters.splice(0)) {
      if (agentCount >= w.n) w.resolve();
      else waiters.push(w);
    }
    if (!next) {
      exhausted++;
      dialect.answer(dreq, res, { kind: 'text', text: '(script exhausted)' }, ctx);
      return;
    }
    rec.turn = next.index;
    const turn = next.turn;
    if (turn.delayMs) await sleep(turn.delayMs);
    if (turn.after) await turn.after.catch(() => undefined);
    if (turn.kind === 'httpError') {
      json(
        res,
        turn.status,
        turn.body ?? dialect.errorBody(turn.status, turn.message ?? `scripted HTTP ${turn.status}`, turn.errorType),
        { 'request-id': `req_${rec.at}`, ...(turn.headers ?? {}) },
      );
      return;
    }
    dialect.answer(dreq, res, turn, ctx);
  }

  function json(res: http.ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(value));
  }

  const isAgent = (r: RecordedRequest): boolean => {
    const [path = '', query = ''] = r.url.split('?');
    const d = DIALECTS.find((x) => x.name === r.dialect);
    return !!d && d.isAgentRequest({ method: r.method, path, query, body: r.body });
  };

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    openaiUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    agentRequests: () => requests.filter((r) => r.turn !== null || isAgent(r)),
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
