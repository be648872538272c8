import * as http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { ModelServer, RecordedRequest, ScriptUsage, Turn } from './modelServer';

/**
 * The Gemini API dialect of the scripted model server (Google's `generativelanguage` v1beta, as `@google/genai`
 * calls it), for driving the real Gemini CLI: `GOOGLE_GEMINI_BASE_URL=server.url`, `GEMINI_API_KEY=dummy` and
 * `security.auth.selectedType: "gemini-api-key"` in `$HOME/.gemini/settings.json` (more-agents.md, Gemini CLI).
 *
 * Routes: `POST /v1beta/models/<model>:streamGenerateContent?alt=sse` (SSE, one JSON chunk per `data:` frame),
 * `…:generateContent` (one JSON body) and `…:countTokens`. A request whose body offers tools
 * (`tools[].functionDeclarations`) is an agent request and takes the next turn of the script; the CLI's side calls
 * (the model router's `complexity_score`, the next-speaker check, summaries) offer none, get a short reply and take no
 * turn. Turns are the same {@link Turn}s as the Anthropic dialect; a tool call names one of the CLI's own tools
 * ({@link geminiShell}, {@link geminiWrite}). Usage goes in `usageMetadata` of the last chunk (`promptTokenCount` =
 * input + cache read, `cachedContentTokenCount` = cache read, `candidatesTokenCount` = output).
 *
 * An `httpError` turn answers with Google's error body `{error:{code,message,status,details}}`; a 429 carries a
 * `RetryInfo` detail when the turn's headers have `retry-after` (seconds), which is where the CLI reads the reset
 * from, and a `QuotaFailure` with a per-day quota id when `x-gemini-quota` is `daily` (the CLI's terminal quota).
 */

/** The Gemini CLI's shell tool (`run_shell_command`). */
export const geminiShell = (command: string, o: { usage?: ScriptUsage; text?: string } = {}): Turn => ({
  kind: 'toolUse',
  calls: [{ name: 'run_shell_command', input: { command, description: 'run a command' } }],
  ...o,
});

/** The Gemini CLI's file-writing tool (`write_file`). */
export const geminiWrite = (filePath: string, content: string, o: { usage?: ScriptUsage } = {}): Turn => ({
  kind: 'toolUse',
  calls: [{ name: 'write_file', input: { file_path: filePath, content } }],
  ...o,
});

/** A Gemini quota error: HTTP 429 whose `RetryInfo` says the quota resets in `retryAfterSeconds`. */
export const geminiQuota = (
  retryAfterSeconds: number,
  o: { times?: number; message?: string; daily?: boolean } = {},
): Turn => ({
  kind: 'httpError',
  status: 429,
  message: o.message ?? `Resource has been exhausted (e.g. check quota). Please retry in ${retryAfterSeconds}s.`,
  headers: { 'retry-after': String(retryAfterSeconds), ...(o.daily ? { 'x-gemini-quota': 'daily' } : {}) },
  ...(o.times !== undefined ? { times: o.times } : {}),
});

interface GeminiPart {
  text?: string;
  thought?: boolean;
  functionCall?: { name: string; args: Record<string, unknown>; id?: string };
  functionResponse?: { name: string; response: unknown; id?: string };
}
interface GeminiContent {
  role?: string;
  parts?: GeminiPart[];
}

/** Text of every user part of a `generateContent` body (prompts; function responses excluded). */
export function geminiUserTexts(body: unknown): string[] {
  const contents = (body as { contents?: GeminiContent[] })?.contents ?? [];
  const out: string[] = [];
  for (const c of contents) {
    if (c.role !== 'user') continue;
    for (const p of c.parts ?? []) if (typeof p.text === 'string') out.push(p.text);
  }
  return out;
}

/** Every `functionResponse` part of a body: what the CLI's tools answered. */
export function geminiToolResults(body: unknown): { name: string; response: unknown; id?: string }[] {
  const contents = (body as { contents?: GeminiContent[] })?.contents ?? [];
  return contents.flatMap((c) => (c.parts ?? []).flatMap((p) => (p.functionResponse ? [p.functionResponse] : [])));
}

/** True when the body offers function declarations: an agent request, which takes a script turn. */
export function isGeminiAgentRequest(body: unknown): boolean {
  const tools = (body as { tools?: { functionDeclarations?: unknown[] }[] })?.tools;
  return (
    Array.isArray(tools) && tools.some((t) => Array.isArray(t.functionDeclarations) && t.functionDeclarations.length)
  );
}

/** `/v1beta/models/gemini-2.5-flash:streamGenerateContent` → model and method, or null for another path. */
export function parseGeminiPath(path: string): { model: string; method: string } | null {
  const m = /^\/v1(?:beta|alpha)?\/models\/([^/:]+):([A-Za-z]+)$/.exec(path);
  return m ? { model: decodeURIComponent(m[1]!), method: m[2]! } : null;
}

const STATUS_NAMES: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
};

/** Google's error body for a scripted `httpError` turn (google.rpc.Status with its details). */
export function geminiErrorBody(turn: Extract<Turn, { kind: 'httpError' }>): Record<string, unknown> {
  const details: Record<string, unknown>[] = [];
  const retryAfter = turn.headers?.['retry-after'];
  if (turn.status === 429 && turn.headers?.['x-gemini-quota'] === 'daily')
    details.push({
      '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
      violations: [{ quotaMetric: 'generate_content_requests', quotaId: 'GenerateRequestsPerDayPerProjectPerModel' }],
    });
  if (turn.status === 429 && retryAfter)
    details.push({ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: `${Number(retryAfter)}s` });
  return {
    error: {
      code: turn.status,
      message: turn.message ?? `scripted HTTP ${turn.status}`,
      status: turn.errorType ?? STATUS_NAMES[turn.status] ?? (turn.status >= 500 ? 'INTERNAL' : 'INVALID_ARGUMENT'),
      details,
    },
  };
}

/** `usageMetadata` of a reply (tokens). */
export function geminiUsage(u: ScriptUsage = {}): Record<string, number> {
  const input = u.input ?? 100;
  const cacheRead = u.cacheRead ?? 0;
  const output = u.output ?? 10;
  const prompt = input + cacheRead + (u.cacheCreation ?? 0);
  return {
    promptTokenCount: prompt,
    candidatesTokenCount: output,
    totalTokenCount: prompt + output,
    ...(cacheRead ? { cachedContentTokenCount: cacheRead } : {}),
  };
}

/**
 * The response chunks of one scripted turn, in order (each a `GenerateContentResponse`). The text of a text turn is
 * split in two chunks, as a real stream would; usage and `finishReason` ride on the last one.
 */
export function geminiChunks(
  turn: Turn,
  model: string,
  responseId: string,
  nextCallId: () => string,
): Record<string, unknown>[] {
  const usage = 'usage' in turn ? turn.usage : undefined;
  const chunk = (parts: GeminiPart[], last: boolean): Record<string, unknown> => ({
    candidates: [{ content: { role: 'model', parts }, index: 0, ...(last ? { finishReason: 'STOP' } : {}) }],
    ...(last ? { usageMetadata: geminiUsage(usage) } : {}),
    modelVersion: model,
    responseId,
  });
  if (turn.kind === 'text') {
    const half = Math.ceil(turn.text.length / 2);
    return turn.text.length > 1
      ? [chunk([{ text: turn.text.slice(0, half) }], false), chunk([{ text: turn.text.slice(half) }], true)]
      : [chunk([{ text: turn.text }], true)];
  }
  if (turn.kind === 'toolUse') {
    const parts: GeminiPart[] = [];
    if (turn.text) parts.push({ text: turn.text });
    for (const c of turn.calls) parts.push({ functionCall: { name: c.name, args: c.input, id: c.id ?? nextCallId() } });
    return [chunk(parts, true)];
  }
  if (turn.kind === 'disconnect') return [chunk([{ text: turn.text ?? 'partial' }], false)];
  if (turn.kind === 'hang') return [chunk([{ text: '' }], false)];
  return [];
}

/** A side call's reply: the model router wants `{complexity_reasoning, complexity_score}` as JSON text; others get "ok". */
function sideReply(body: unknown): string {
  const raw = JSON.stringify((body as { generationConfig?: unknown })?.generationConfig ?? {});
  return raw.includes('complexity_score')
    ? JSON.stringify({ complexity_reasoning: 'scripted', complexity_score: 10 })
    : 'ok';
}

/**
 * Starts a Gemini API server. `script` as for `startModelServer`: one list taken in order, or one list per story id
 * (the request's user text names `Story <id>:`; `'*'` takes the rest).
 */
export async function startGeminiModelServer(
  script: Turn[] | Record<string, Turn[]>,
  opts: { model?: string } = {},
): Promise<ModelServer> {
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  const waiters: { n: number; resolve: () => void }[] = [];
  const lists = Array.isArray(script) ? { '*': script } : script;
  const state = new Map(Object.entries(lists).map(([id, turns]) => [id, { turns, cursor: 0, used: 0 }]));
  let responseSeq = 0;
  let callSeq = 0;
  let exhausted = 0;
  let agentCount = 0;

  const storyOf = (body: unknown): string => {
    if (Array.isArray(script)) return '*';
    for (const t of geminiUserTexts(body))
      for (const m of t.matchAll(/Story (\S+?):/g)) if (state.has(m[1]!) && m[1] !== '*') return m[1]!;
    return '*';
  };
  const nextTurn = (body: unknown): { turn: Turn; index: number } | null => {
    const r = state.get(storyOf(body));
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
  };

  const json = (res: http.ServerResponse, status: number, value: unknown): void => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(value));
  };

  const reply = (res: http.ServerResponse, stream: boolean, turn: Turn, model: string): void => {
    const chunks = geminiChunks(turn, model, `resp_${++responseSeq}`, () => `call_${++callSeq}`);
    if (!stream) {
      // generateContent: the chunks folded into one response (their parts joined; the last chunk's usage).
      const parts = chunks.flatMap((c) => (c.candidates as { content: GeminiContent }[])[0]!.content.parts ?? []);
      const last = chunks[chunks.length - 1] ?? {};
      json(res, 200, {
        ...last,
        candidates: [{ content: { role: 'model', parts }, index: 0, finishReason: 'STOP' }],
      });
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    for (const c of chunks) res.write(`data: ${JSON.stringify(c)}\r\n\r\n`);
    if (turn.kind === 'disconnect') res.socket?.destroy();
    else if (turn.kind !== 'hang') res.end();
  };

  async function handle(req: http.IncomingMessage, res: http.ServerResponse, text: string): Promise<void> {
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      /* keep the raw text */
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
    const route = parseGeminiPath((req.url ?? '').split('?')[0]!);
    if (req.method !== 'POST' || !route) {
      json(res, 404, { error: { code: 404, message: `no route ${req.method} ${req.url}`, status: 'NOT_FOUND' } });
      return;
    }
    const model = opts.model ?? route.model;
    if (route.method === 'countTokens') {
      json(res, 200, { totalTokens: Math.ceil(text.length / 4) });
      return;
    }
    if (route.method !== 'streamGenerateContent' && route.method !== 'generateContent') {
      json(res, 404, { error: { code: 404, message: `no method ${route.method}`, status: 'NOT_FOUND' } });
      return;
    }
    const stream = route.method === 'streamGenerateContent';
    if (!isGeminiAgentRequest(body)) {
      reply(res, stream, { kind: 'text', text: sideReply(body), usage: { input: 10, output: 5 } }, model);
      return;
    }
    agentCount++;
    for (const w of waiters.splice(0)) {
      if (agentCount >= w.n) w.resolve();
      else waiters.push(w);
    }
    const next = nextTurn(body);
    if (!next) {
      exhausted++;
      reply(res, stream, { kind: 'text', text: '(script exhausted)' }, model);
      return;
    }
    rec.turn = next.index;
    const turn = next.turn;
    if (turn.delayMs) await new Promise((r) => setTimeout(r, turn.delayMs));
    if (turn.kind === 'httpError') {
      res.writeHead(turn.status, { 'content-type': 'application/json', ...(turn.headers ?? {}) });
      res.end(JSON.stringify(geminiErrorBody(turn)));
      return;
    }
    reply(res, stream, turn, model);
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => void handle(req, res, Buffer.concat(chunks).toString('utf8')));
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    agentRequests: () => requests.filter((r) => r.turn !== null || isGeminiAgentRequest(r.body)),
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
