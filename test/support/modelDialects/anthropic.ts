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
 * Anthropic's Messages API (`POST /v1/messages`, SSE), what Claude Code calls with `ANTHROPIC_BASE_URL`. A request
 * with a `tools` array is an agent turn; one without (Claude Code's side calls) gets a short text reply.
 */

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

type Messages = { messages?: { role: string; content: unknown }[] };

export const anthropicDialect: Dialect = {
  name: 'anthropic',
  serves: (r) => r.method === 'POST' && (r.path === '/v1/messages' || r.path === '/v1/messages/count_tokens'),
  isAgentRequest: (r) => r.path === '/v1/messages' && Array.isArray((r.body as { tools?: unknown })?.tools),
  answerSide(r, res, ctx) {
    if (r.path === '/v1/messages/count_tokens') json(res, 200, { input_tokens: 1 });
    else write(res, ctx, { kind: 'text', text: 'ok' }, []);
  },
  answer: (r, res, turn, ctx) => write(res, ctx, turn, offeredTools(r.body)),
  errorBody: (status, message, errorType) => ({
    type: 'error',
    error: {
      type: errorType ?? ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error'),
      message,
    },
  }),
  userTexts(body) {
    const out: string[] = [];
    for (const m of (body as Messages)?.messages ?? []) {
      if (m.role !== 'user') continue;
      if (typeof m.content === 'string') out.push(m.content);
      else if (Array.isArray(m.content))
        for (const c of m.content) if (c?.type === 'text' && typeof c.text === 'string') out.push(c.text);
    }
    return out;
  },
  toolResults(body) {
    return ((body as Messages)?.messages ?? []).flatMap((m) =>
      Array.isArray(m.content)
        ? m.content
            .filter((c: { type?: string }) => c?.type === 'tool_result')
            .map((c: { tool_use_id: string; content: unknown; is_error?: boolean }) => ({
              id: c.tool_use_id,
              content: partsText(c.content),
              ...(c.is_error ? { isError: true } : {}),
            }))
        : [],
    );
  },
};

function write(res: http.ServerResponse, ctx: DialectContext, turn: Turn, offered: string[]): void {
  startSse(res);
  const send = (event: string, data: Record<string, unknown>): void => {
    res.write(`event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`);
  };
  const u = 'usage' in turn ? (turn.usage ?? {}) : {};
  send('message_start', {
    message: {
      id: `msg_${ctx.seq()}`,
      type: 'message',
      role: 'assistant',
      model: ctx.model,
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
    for (const c of turn.calls) {
      const call = concreteCall(c, offered);
      const body = JSON.stringify(call.input);
      const half = Math.floor(body.length / 2);
      send('content_block_start', {
        index,
        content_block: { type: 'tool_use', id: call.id ?? `toolu_${ctx.seq()}`, name: call.name, input: {} },
      });
      send('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: body.slice(0, half) } });
      send('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: body.slice(half) } });
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
