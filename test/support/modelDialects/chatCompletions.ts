import type * as http from 'node:http';
import {
  type Dialect,
  type DialectContext,
  type Turn,
  concreteCall,
  json,
  offeredTools,
  partsText,
  startSse,
} from './dialect';

/**
 * OpenAI's Chat Completions API (`POST /v1/chat/completions`, SSE or JSON), what opencode (`@ai-sdk/openai-compatible`),
 * Qwen Code (`--auth-type openai`) and Copilot CLI (bring-your-own-key) call. A request offering tools is an agent
 * turn; one without (opencode's title, Qwen's side questions) gets a short text reply. `GET /v1/models` lists the
 * server's model. Usage follows the API: `prompt_tokens` includes the cached part.
 */

type Message = { role?: string; content?: unknown; tool_call_id?: string };

export const chatCompletionsDialect: Dialect = {
  name: 'openai-chat',
  serves: (r) =>
    (r.method === 'POST' && r.path === '/v1/chat/completions') || (r.method === 'GET' && r.path === '/v1/models'),
  isAgentRequest: (r) => r.path === '/v1/chat/completions' && offeredTools(r.body).length > 0,
  answerSide(r, res, ctx) {
    if (r.path === '/v1/models') {
      json(res, 200, {
        object: 'list',
        data: [{ id: ctx.model, object: 'model', created: 0, owned_by: 'ralph-test' }],
      });
      return;
    }
    write(r, res, ctx, { kind: 'text', text: 'ok' }, []);
  },
  answer: (r, res, turn, ctx) => write(r, res, ctx, turn, offeredTools(r.body)),
  errorBody: (status, message, errorType) => ({
    error: {
      message,
      type:
        errorType ??
        (status === 429 ? 'rate_limit_exceeded' : status >= 500 ? 'server_error' : 'invalid_request_error'),
      code: null,
      param: null,
    },
  }),
  userTexts: (body) =>
    ((body as { messages?: Message[] })?.messages ?? [])
      .filter((m) => m.role === 'user')
      .map((m) => partsText(m.content)),
  toolResults: (body) =>
    ((body as { messages?: Message[] })?.messages ?? [])
      .filter((m) => m.role === 'tool')
      .map((m) => ({ id: m.tool_call_id ?? '', content: partsText(m.content) })),
};

function write(
  r: { body: unknown },
  res: http.ServerResponse,
  ctx: DialectContext,
  turn: Turn,
  offered: string[],
): void {
  const id = `chatcmpl-${ctx.seq()}`;
  const created = Math.floor(Date.now() / 1000);
  const u = 'usage' in turn ? (turn.usage ?? {}) : {};
  const prompt = (u.input ?? 100) + (u.cacheRead ?? 0);
  const completion = u.output ?? 10;
  const usage = {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: u.cacheRead ?? 0 },
    completion_tokens_details: { reasoning_tokens: u.reasoning ?? 0 },
  };
  const text = turn.kind === 'text' || turn.kind === 'toolUse' || turn.kind === 'disconnect' ? (turn.text ?? '') : '';
  const calls =
    turn.kind === 'toolUse'
      ? turn.calls.map((c) => {
          const call = concreteCall(c, offered);
          return {
            id: call.id ?? `call_${ctx.seq()}`,
            type: 'function',
            function: { name: call.name, arguments: JSON.stringify(call.input) },
          };
        })
      : [];
  const finish = calls.length ? 'tool_calls' : 'stop';
  if ((r.body as { stream?: boolean })?.stream !== true) {
    json(res, 200, {
      id,
      object: 'chat.completion',
      created,
      model: ctx.model,
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: text || null, ...(calls.length ? { tool_calls: calls } : {}) },
          finish_reason: finish,
        },
      ],
      usage,
    });
    return;
  }
  startSse(res);
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}): void => {
    res.write(
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: ctx.model, choices, ...extra })}\n\n`,
    );
  };
  chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]);
  if (turn.kind === 'hang') return;
  if (turn.kind === 'disconnect') {
    chunk([{ index: 0, delta: { content: turn.text ?? 'partial' }, finish_reason: null }]);
    res.socket?.destroy();
    return;
  }
  if (turn.kind === 'text' && turn.reasoning)
    chunk([{ index: 0, delta: { reasoning_content: turn.reasoning }, finish_reason: null }]);
  if (text) chunk([{ index: 0, delta: { content: text }, finish_reason: null }]);
  calls.forEach((c, index) => {
    const args = c.function.arguments;
    const half = Math.floor(args.length / 2);
    chunk([
      {
        index: 0,
        delta: {
          tool_calls: [
            { index, id: c.id, type: 'function', function: { name: c.function.name, arguments: args.slice(0, half) } },
          ],
        },
        finish_reason: null,
      },
    ]);
    chunk([
      { index: 0, delta: { tool_calls: [{ index, function: { arguments: args.slice(half) } }] }, finish_reason: null },
    ]);
  });
  chunk([{ index: 0, delta: {}, finish_reason: finish }]);
  chunk([], { usage });
  res.write('data: [DONE]\n\n');
  res.end();
}
