import * as assert from 'node:assert/strict';
import { qwenAdapter, qwenErrorStatus, qwenToolKind, qwenUsage } from '../../../src/core/agents/qwen';
import { detectAgent } from '../../../src/core/agents/registry';
import { TokenLedger } from '../../../src/core/stream/ledger';
import { mapLines, replayRecorded } from '../../support/recordedStreams';

const spec = { prompt: 'do the task', cwd: '/work/ws', baseEnv: { PATH: '/usr/bin', OPENAI_API_KEY: 'k' } };

describe('qwen adapter: the invocation', () => {
  it('runs qwen headless: stream-json, yolo approval, the prompt last in the = form, the environment unchanged', () => {
    const inv = qwenAdapter.invocation({ ...spec, prompt: '-dash first' });
    assert.equal(inv.file, 'qwen');
    assert.deepEqual(inv.args, ['--output-format', 'stream-json', '--approval-mode', 'yolo', '--prompt=-dash first']);
    assert.deepEqual(inv.env, { PATH: '/usr/bin', OPENAI_API_KEY: 'k' });
  });

  it('passes the model, the session to resume and extra arguments before the prompt', () => {
    const inv = qwenAdapter.invocation({
      ...spec,
      binary: '/opt/qwen',
      model: 'qwen3-coder-plus',
      resume: 's-1',
      extraArgs: ['--max-session-turns', '40'],
    });
    assert.equal(inv.file, '/opt/qwen');
    assert.deepEqual(inv.args.slice(4), [
      '--model',
      'qwen3-coder-plus',
      '--resume',
      's-1',
      '--max-session-turns',
      '40',
      '--prompt=do the task',
    ]);
  });
});

describe('qwen adapter: usage, tools and error text', () => {
  it("input_tokens includes the cached part (OpenAI's prompt count): made the uncached part, once", () => {
    assert.deepEqual(qwenUsage({ input_tokens: 1200, cache_read_input_tokens: 200, output_tokens: 50 }), {
      input_tokens: 1000,
      cache_read_input_tokens: 200,
      output_tokens: 50,
    });
    assert.deepEqual(qwenUsage({ input_tokens: 10, output_tokens: 1 }), { input_tokens: 10, output_tokens: 1 });
    assert.deepEqual(qwenUsage({ input_tokens: 10, cache_read_input_tokens: 40 }), {
      input_tokens: 0,
      cache_read_input_tokens: 40,
    });
    assert.equal(qwenUsage(null), null);
  });

  it('tool kinds and HTTP statuses of its API error text', () => {
    const kinds = ['run_shell_command', 'read_file', 'write_file', 'edit', 'glob'].map(qwenToolKind);
    assert.deepEqual(kinds, ['shell', 'read', 'write', 'edit', 'other']);
    assert.equal(qwenErrorStatus('[API Error: 401 Incorrect API key provided]'), 401);
    assert.equal(qwenErrorStatus('[API Error: Connection error. (cause: 503)]'), 503);
    assert.equal(qwenErrorStatus('the tests still fail with 500 errors'), null);
  });
});

describe('qwen adapter: recorded streams of the real CLI (test/fixtures/streams/qwen/recorded)', () => {
  it('a shell call and a final message: Claude-shaped lines mapped with its tool names, usage not counted twice', () => {
    const { events, summary } = replayRecorded(qwenAdapter, 'tool-shell-success.jsonl');
    const init = events.find((e) => e.type === 'init');
    assert.ok(init?.type === 'init' && init.sessionId);
    assert.equal(init.agentVersion, '0.24.4');
    const use = events.find((e) => e.type === 'toolUse');
    assert.ok(use?.type === 'toolUse');
    assert.deepEqual([use.name, use.kind], ['run_shell_command', 'shell']);
    const res = events.find((e) => e.type === 'toolResult');
    assert.ok(res?.type === 'toolResult');
    assert.deepEqual([res.id, res.kind, res.isError, res.output], [use.id, 'shell', false, 'hello-from-shell']);
    // Two calls of 1000 uncached + 200 cached input and 50 output each.
    assert.deepEqual(summary.tokens, { input: 2000, output: 100, cacheRead: 400, cacheCreation: 0 });
    assert.equal(summary.outcome.kind, 'success');
    // The context of the last call: 1200 (its prompt, cached part included), live from the stream.
    assert.equal(summary.contextEstimated, false);
    assert.equal(summary.contextLast, 1200);
    assert.deepEqual(
      summary.signals.map((s) => s.kind),
      ['complete'],
    );
  });

  it('a thought-only message with zero usage is no API call: the context stays', () => {
    const { events } = replayRecorded(qwenAdapter, 'marker-outside-final-message.jsonl');
    const ledger = new TokenLedger({ agent: 'qwen' });
    const contexts: number[] = [];
    for (const e of events) {
      ledger.apply(e);
      contexts.push(ledger.snapshot().contextTokens);
    }
    assert.ok(!contexts.slice(contexts.indexOf(1200)).includes(0), contexts.join(','));
    assert.equal(ledger.snapshot().apiCalls, 2);
  });

  it('completion only from its own final message: the tag in a command, its output and a thought is no claim', () => {
    const { events, summary } = replayRecorded(qwenAdapter, 'marker-outside-final-message.jsonl');
    const tag = '<promise>COMPLETE</promise>';
    const carriers = events.filter((e) => JSON.stringify(e).includes(tag)).map((e) => e.type);
    assert.deepEqual([...new Set(carriers)].sort(), ['thinking', 'toolResult', 'toolUse']);
    assert.deepEqual(summary.signals, []);
    assert.equal(summary.outcome.kind, 'success');
  });

  it('the same stream in 7-byte chunks gives the same events', () => {
    const whole = replayRecorded(qwenAdapter, 'tool-shell-success.jsonl').events;
    const chunked = replayRecorded(qwenAdapter, 'tool-shell-success.jsonl', 7).events;
    assert.deepEqual(chunked, whole);
  });

  it('an API error after its retries: the error text is the CLI own (no claim), 500 transient, 401 fatal', () => {
    const table: [string, string, number][] = [
      ['http-500.jsonl', 'transient', 500],
      ['http-401.jsonl', 'fatal', 401],
    ];
    for (const [file, kind, status] of table) {
      const { summary, exitCode, events } = replayRecorded(qwenAdapter, file);
      assert.equal(exitCode, 1, file);
      const text = events.find((e) => e.type === 'text');
      assert.equal(text?.synthetic, true, file);
      assert.deepEqual([summary.outcome.kind, summary.outcome.status], [kind, status], file);
    }
  });

  it('killed mid-turn: the first call is counted, no result, outcome noResult', () => {
    const { events, summary } = replayRecorded(qwenAdapter, 'killed-mid-turn.jsonl');
    assert.equal(events.filter((e) => e.type === 'result').length, 0);
    assert.deepEqual(summary.tokens, { input: 1000, output: 50, cacheRead: 200, cacheCreation: 0 });
    assert.equal(summary.outcome.kind, 'noResult');
  });

  it('partial and bad lines: a warning line and a cut line are skipped, an unknown type passes as unknown', () => {
    const events = mapLines(
      qwenAdapter,
      [
        'Warning: running headless with --yolo',
        '{"type":"system","subtype":"init","session_id":"s","model":"m","tools":[],"qwen_code_version":"0.24.4"}',
        '{"type":"stream_event","session_id":"s","parent_tool_use_id":null,"event":{"type":"goal_state"}}',
        '{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"half',
      ].join('\n'),
    );
    assert.deepEqual(
      events.map((e) => e.type),
      ['init', 'unknown'],
    );
  });

  it('is detected from its init line, not as Claude Code', () => {
    const { events } = replayRecorded(qwenAdapter, 'tool-shell-success.jsonl');
    const init = events.find((e) => e.type === 'init');
    assert.ok(init);
    assert.equal(
      detectAgent([{ type: 'system', subtype: 'init', session_id: 's', tools: [], qwen_code_version: '0.24.4' }])?.name,
      'qwen',
    );
    assert.equal(
      detectAgent([{ type: 'system', subtype: 'init', session_id: 's', tools: [], claude_code_version: '2.1' }])?.name,
      'claude',
    );
  });
});
