import * as assert from 'node:assert/strict';
import {
  type ModelServer,
  bash,
  disconnect,
  httpError,
  say,
  startModelServer,
  userTexts,
} from '../../support/modelServer';

/** The scripted Anthropic Messages API server itself (its contract with the tests that use it). */
describe('scripted model server', () => {
  let server: ModelServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  const agentCall = (prompt = 'hi') =>
    fetch(`${server!.url}/v1/messages?beta=true`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'claude-test',
        stream: true,
        tools: [],
        messages: [{ role: 'user', content: prompt }],
      }),
    });
  const events = (sse: string): { event: string; data: Record<string, unknown> }[] =>
    sse
      .split('\n\n')
      .filter(Boolean)
      .map((b) => ({
        event: /^event: (.*)$/m.exec(b)![1]!,
        data: JSON.parse(/^data: (.*)$/m.exec(b)![1]!) as Record<string, unknown>,
      }));

  it('answers each agent request with the next turn as Anthropic SSE events', async () => {
    server = await startModelServer([bash('ls', { usage: { input: 1234, cacheRead: 10 } }), say('done')]);
    const first = events(await (await agentCall()).text());
    assert.deepEqual(
      first.map((e) => e.event),
      [
        'message_start',
        'content_block_start',
        'content_block_delta',
        'content_block_delta',
        'content_block_stop',
        'message_delta',
        'message_stop',
      ],
    );
    assert.equal((first[0]!.data.message as { usage: { input_tokens: number } }).usage.input_tokens, 1234);
    assert.equal((first[5]!.data.delta as { stop_reason: string }).stop_reason, 'tool_use');
    const second = events(await (await agentCall()).text());
    assert.equal((second[2]!.data.delta as { text: string }).text, 'done');
  });

  it('repeats a turn the given number of times, then moves on', async () => {
    server = await startModelServer([httpError(429, { times: 2 }), say('ok')]);
    assert.deepEqual(
      [(await agentCall()).status, (await agentCall()).status, (await agentCall()).status],
      [429, 429, 200],
    );
  });

  it('sends an Anthropic error body with the status', async () => {
    server = await startModelServer([httpError(529)]);
    const r = await agentCall();
    assert.deepEqual(await r.json(), {
      type: 'error',
      error: { type: 'overloaded_error', message: 'scripted HTTP 529' },
    });
  });

  it('cuts the connection mid-stream on disconnect', async () => {
    server = await startModelServer([disconnect({ text: 'half' })]);
    await assert.rejects(async () => (await agentCall()).text());
  });

  it('answers side calls (no tools) without taking a turn, and records every request', async () => {
    server = await startModelServer([say('scripted')]);
    await (
      await fetch(`${server.url}/v1/messages`, {
        method: 'POST',
        body: JSON.stringify({ model: 'haiku', messages: [] }),
      })
    ).text();
    await (await agentCall('the prompt')).text();
    assert.equal(server.requests.length, 2);
    assert.deepEqual(
      server.agentRequests().map((r) => userTexts(r.body)),
      [['the prompt']],
    );
  });

  it('answers with a fallback text once the script is exhausted, and counts it', async () => {
    server = await startModelServer([]);
    await (await agentCall()).text();
    assert.equal(server.exhausted, 1);
  });
});
