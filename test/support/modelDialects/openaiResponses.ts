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
 * OpenAI's Responses API (`POST /v1/responses`, SSE), what Codex calls through a custom `model_providers` entry with
 * `wire_api = "responses"` (more-agents.md). Every request is an agent turn. Usage follows the API: `input_tokens`
 * includes the cached part (`input_tokens_details.cached_tokens`), `output_tokens` includes reasoning.
 */

type Item = { type?: string; role?: string; content?: unknown; call_id?: string; output?: unknown };

export const openaiResponsesDialect: Dialect = {
  name: 'openai-responses',
  serves: (r) => r.method === 'POST' && r.path === '/v1/responses',
  isAgentRequest: () => true,
  answerSide: (_r, res) => json(res, 404, { error: { message: 'no side calls', type: 'invalid_request_error' } }),
  answer: (r, res, turn, ctx) => write(res, ctx, turn, offeredTools(r.body)),
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
  userTexts(body) {
    const input = (body as { input?: unknown })?.input;
    if (typeof input === 'string') return [input];
    if (!Array.isArray(input)) return [];
    return (input as Item[])
      .filter((i) => (i.type === 'message' || i.type === undefined) && i.role === 'user')
      .map((i) => partsText(i.content));
  },
  toolResults(body) {
    const input = (body as { input?: unknown })?.input;
    if (!Array.isArray(input)) return [];
    return (input as Item[])
      .filter((i) => i.type === 'function_call_output' || i.type === 'custom_tool_call_output')
      .map((i) => ({
        id: i.call_id ?? '',
        content:
          typeof i.output === 'string' ? i.output : partsText((i.output as { content?: unknown })?.content ?? i.output),
      }));
  },
};

function write(res: http.ServerResponse, ctx: DialectContext, turn: Turn, offered: string[]): void {
  startSse(res);
  let seqNo = 0;
  const send = (type: string, data: Record<string, unknown>): void => {
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seqNo++, ...data })}\n\n`);
  };
  const id = `resp_${ctx.seq()}`;
  const base = { id, object: 'response', created_at: Math.floor(Date.now() / 1000), model: ctx.model };
  send('response.created', { response: { ...base, status: 'in_progress', output: [] } });
  const u = 'usage' in turn ? (turn.usage ?? {}) : {};
  if (turn.kind === 'hang') return;
  const output: Record<string, unknown>[] = [];
  const emit = (item: Record<string, unknown>): void => {
    const output_index = output.length;
    send('response.output_item.added', { output_index, item });
    output.push(item);
    send('response.output_item.done', { output_index, item });
  };
  const message = (text: string): Record<string, unknown> => ({
    type: 'message',
    id: `msg_${ctx.seq()}`,
    status: 'completed',
    role: 'assistant',
    content: [{ type: 'output_text', text, annotations: [] }],
  });
  if (turn.kind === 'disconnect') {
    const item = message('');
    send('response.output_item.added', { output_index: 0, item });
    send('response.output_text.delta', {
      item_id: item.id,
      output_index: 0,
      content_index: 0,
      delta: turn.text ?? 'partial',
    });
    res.socket?.destroy();
    return;
  }
  if (turn.kind === 'httpError') return;
  if (turn.reasoning)
    emit({ type: 'reasoning', id: `rs_${ctx.seq()}`, summary: [{ type: 'summary_text', text: turn.reasoning }] });
  const text = turn.kind === 'text' ? turn.text : turn.text;
  if (text) {
    const item = message(text);
    send('response.output_item.added', { output_index: output.length, item: { ...item, content: [] } });
    send('response.output_text.delta', {
      item_id: item.id,
      output_index: output.length,
      content_index: 0,
      delta: text,
    });
    send('response.output_item.done', { output_index: output.length, item });
    output.push(item);
  }
  if (turn.kind === 'toolUse')
    for (const c of turn.calls) {
      const call = concreteCall(c, offered);
      emit({
        type: 'function_call',
        id: `fc_${ctx.seq()}`,
        call_id: call.id ?? `call_${ctx.seq()}`,
        name: call.name,
        arguments: JSON.stringify(call.input),
        status: 'completed',
      });
    }
  const input = (u.input ?? 100) + (u.cacheRead ?? 0);
  const outputTokens = u.output ?? 10;
  send('response.completed', {
    response: {
      ...base,
      status: 'completed',
      output,
      usage: {
        input_tokens: input,
        input_tokens_details: { cached_tokens: u.cacheRead ?? 0 },
        output_tokens: outputTokens,
        output_tokens_details: { reasoning_tokens: u.reasoning ?? 0 },
        total_tokens: input + outputTokens,
      },
    },
  });
  res.end();
}
