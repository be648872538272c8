import type * as http from 'node:http';
import {
  type Dialect,
  type DialectContext,
  type ScriptUsage,
  type Turn,
  concreteCall,
  json,
  startSse,
} from './dialect';

/**
 * Google's Gemini API (`generativelanguage` v1beta, as `@google/genai` calls it), for driving the real Gemini CLI:
 * `GOOGLE_GEMINI_BASE_URL=server.url`, `GEMINI_API_KEY=<any>` and `security.auth.selectedType: "gemini-api-key"` in
 * `$HOME/.gemini/settings.json` (more-agents.md, Gemini CLI).
 *
 * Routes: `POST /v1beta/models/<model>:streamGenerateContent?alt=sse` (SSE, one JSON chunk per `data:` frame),
 * `…:generateContent` (one JSON body) and `…:countTokens`. A request whose body offers tools
 * (`tools[].functionDeclarations`) is an agent request and takes the next script turn; the CLI's side calls (the model
 * router's `complexity_score`, the next-speaker check, summaries) offer none and get a short reply. A `$shell` call
 * becomes `run_shell_command`. Usage rides on the last chunk's `usageMetadata` (`promptTokenCount` = input + cache
 * read, `cachedContentTokenCount` = cache read, `candidatesTokenCount` = output). An `httpError` turn answers with
 * Google's error body; {@link geminiQuota} builds the 429 whose `RetryInfo` tells the CLI when the quota resets.
 */

/** The Gemini CLI's file-writing tool (`write_file`). */
export const geminiWrite = (filePath: string, content: string, o: { usage?: ScriptUsage } = {}): Turn => ({
  kind: 'toolUse',
  calls: [{ name: 'write_file', input: { file_path: filePath, content } }],
  ...o,
});

/**
 * A Gemini quota error: HTTP 429 `RESOURCE_EXHAUSTED` whose `RetryInfo` says the quota resets in `retryAfterSeconds`
 * (over 300 s the CLI gives up at once: a terminal quota error); `daily` adds a `QuotaFailure` on a per-day quota id.
 */
export const geminiQuota = (
  retryAfterSeconds: number,
  o: { times?: number; message?: string; daily?: boolean } = {},
): Turn => ({
  kind: 'httpError',
  status: 429,
  ...(o.times !== undefined ? { times: o.times } : {}),
  body: {
    error: {
      code: 429,
      message: o.message ?? `Resource has been exhausted (e.g. check quota). Please retry in ${retryAfterSeconds}s.`,
      status: 'RESOURCE_EXHAUSTED',
      details: [
        ...(o.daily
          ? [
              {
                '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
                violations: [
                  { quotaMetric: 'generate_content_requests', quotaId: 'GenerateRequestsPerDayPerProjectPerModel' },
                ],
              },
            ]
          : []),
        { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: `${retryAfterSeconds}s` },
      ],
    },
  },
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

/** The function names a body offers (`tools[].functionDeclarations[].name`). */
export function geminiOfferedTools(body: unknown): string[] {
  const tools = (body as { tools?: { functionDeclarations?: { name?: unknown }[] }[] })?.tools;
  if (!Array.isArray(tools)) return [];
  return tools.flatMap((t) =>
    (t.functionDeclarations ?? []).flatMap((f) => (typeof f?.name === 'string' ? [f.name] : [])),
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

/** Google's error body (google.rpc.Status) for a status. */
export function geminiErrorBody(status: number, message: string, errorType?: string): Record<string, unknown> {
  return {
    error: {
      code: status,
      message,
      status: errorType ?? STATUS_NAMES[status] ?? (status >= 500 ? 'INTERNAL' : 'INVALID_ARGUMENT'),
      details: [],
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
  offered: readonly string[] = [],
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
    for (const c of turn.calls) {
      const call = concreteCall(c, offered);
      parts.push({ functionCall: { name: call.name, args: call.input, id: call.id ?? nextCallId() } });
    }
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

const pathOf = (r: { path: string }) => parseGeminiPath(r.path);

function reply(r: { path: string; body: unknown }, res: http.ServerResponse, turn: Turn, ctx: DialectContext): void {
  const route = pathOf(r);
  const model = ctx.model === 'test-model' && route ? route.model : ctx.model;
  const chunks = geminiChunks(turn, model, `resp_${ctx.seq()}`, () => `call_${ctx.seq()}`, geminiOfferedTools(r.body));
  if (route?.method !== 'streamGenerateContent') {
    // generateContent: the chunks folded into one response (their parts joined; the last chunk's usage).
    const parts = chunks.flatMap((c) => (c.candidates as { content: GeminiContent }[])[0]!.content.parts ?? []);
    const last = chunks[chunks.length - 1] ?? {};
    json(res, 200, { ...last, candidates: [{ content: { role: 'model', parts }, index: 0, finishReason: 'STOP' }] });
    return;
  }
  startSse(res);
  for (const c of chunks) res.write(`data: ${JSON.stringify(c)}\r\n\r\n`);
  if (turn.kind === 'disconnect') res.socket?.destroy();
  else if (turn.kind !== 'hang') res.end();
}

export const geminiDialect: Dialect = {
  name: 'gemini',
  serves: (r) => r.method === 'POST' && pathOf(r) !== null,
  isAgentRequest: (r) => {
    const m = pathOf(r)?.method;
    return (m === 'streamGenerateContent' || m === 'generateContent') && geminiOfferedTools(r.body).length > 0;
  },
  answerSide(r, res, ctx) {
    if (pathOf(r)?.method === 'countTokens') {
      json(res, 200, { totalTokens: Math.ceil(JSON.stringify(r.body ?? '').length / 4) });
      return;
    }
    reply(r, res, { kind: 'text', text: sideReply(r.body), usage: { input: 10, output: 5 } }, ctx);
  },
  answer: (r, res, turn, ctx) => reply(r, res, turn, ctx),
  errorBody: geminiErrorBody,
  userTexts: geminiUserTexts,
  toolResults: (body) =>
    geminiToolResults(body).map((f) => ({
      id: f.id ?? f.name,
      content: typeof f.response === 'string' ? f.response : JSON.stringify(f.response),
    })),
};
