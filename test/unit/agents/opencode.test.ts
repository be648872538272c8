import * as assert from 'node:assert/strict';
import {
  opencodeAdapter,
  opencodeErrorStatus,
  opencodeToolKind,
  opencodeTokens,
} from '../../../src/core/agents/opencode';
import { detectAgent } from '../../../src/core/agents/registry';
import { TokenLedger } from '../../../src/core/stream/ledger';
import { modelContextWindow } from '../../../src/core/stream/thresholds';
import { mapLines, replayRecorded } from '../../support/recordedStreams';

const spec = { prompt: 'do the task', cwd: '/work/ws', baseEnv: { PATH: '/usr/bin', OPENCODE_CONFIG: '/u/oc.json' } };

describe('opencode adapter: the invocation', () => {
  it('runs opencode run --format json --auto, the prompt last after --, the environment unchanged', () => {
    const inv = opencodeAdapter.invocation(spec);
    assert.equal(inv.file, 'opencode');
    assert.deepEqual(inv.args, ['run', '--format', 'json', '--auto', '--', 'do the task']);
    assert.deepEqual(inv.env, { PATH: '/usr/bin', OPENCODE_CONFIG: '/u/oc.json' });
  });

  it('passes the model, the session to resume and extra arguments before the prompt', () => {
    const inv = opencodeAdapter.invocation({
      ...spec,
      prompt: '-dash first',
      binary: '/opt/opencode',
      model: 'scripted/fake-model',
      resume: 'ses_1',
      extraArgs: ['--agent', 'build'],
    });
    assert.equal(inv.file, '/opt/opencode');
    assert.deepEqual(inv.args.slice(4), [
      '--model',
      'scripted/fake-model',
      '--session',
      'ses_1',
      '--agent',
      'build',
      '--',
      '-dash first',
    ]);
  });
});

describe('opencode adapter: usage, tools and error text', () => {
  it('a step: input is already uncached, cache read and write apart, reasoning is a part of output', () => {
    assert.deepEqual(
      opencodeTokens({ input: 1000, output: 50, reasoning: 20, total: 1250, cache: { read: 200, write: 30 } }),
      { input: 1000, output: 50, cacheRead: 200, cacheCreation: 30 },
    );
    assert.deepEqual(opencodeTokens({ input: 5, output: null, reasoning: null, total: null, cache: null }), {
      input: 5,
      output: 0,
      cacheRead: 0,
      cacheCreation: 0,
    });
  });

  it('tool kinds and HTTP statuses', () => {
    const kinds = ['bash', 'read', 'write', 'edit', 'patch', 'glob', 'todowrite'].map(opencodeToolKind);
    assert.deepEqual(kinds, ['shell', 'read', 'write', 'edit', 'edit', 'other', 'other']);
    assert.equal(opencodeErrorStatus('Too Many Requests: 429'), 429);
    assert.equal(opencodeErrorStatus('fetch failed'), null);
  });
});

describe('opencode adapter: recorded streams of the real CLI (test/fixtures/streams/opencode/recorded)', () => {
  it('a shell call and a final message: tool use and result at once, usage per step, a result made at the stop', () => {
    const { events, summary } = replayRecorded(opencodeAdapter, 'tool-shell-success.jsonl');
    const init = events.find((e) => e.type === 'init');
    assert.ok(init?.type === 'init' && init.sessionId?.startsWith('ses_'));
    const use = events.find((e) => e.type === 'toolUse');
    assert.ok(use?.type === 'toolUse');
    assert.equal(use.kind, 'shell');
    assert.match(String(use.input.command), /echo hello-from-shell/);
    const res = events.find((e) => e.type === 'toolResult');
    assert.ok(res?.type === 'toolResult');
    assert.deepEqual([res.id, res.isError, res.exitCode, res.output], [use.id, false, 0, 'hello-from-shell\n']);
    assert.deepEqual(
      events.filter((e) => e.type === 'text').map((e) => (e.type === 'text' ? e.text : '')),
      ['Done. <promise>COMPLETE</promise>'],
    );
    // Two steps of 1000 uncached + 200 cached input and 50 output each: summed once, the result carries the sum.
    assert.deepEqual(summary.tokens, { input: 2000, output: 100, cacheRead: 400, cacheCreation: 0 });
    const results = events.filter((e) => e.type === 'result');
    assert.equal(results.length, 1);
    assert.deepEqual(results[0]?.type === 'result' && results[0].usage, summary.tokens);
    assert.equal(summary.outcome.kind, 'success');
    // The context is the last call's input (uncached + cached), live from the stream: not estimated, not summed.
    assert.equal(summary.contextEstimated, false);
    assert.equal(summary.contextLast, 1200);
    assert.deepEqual(
      summary.signals.map((s) => s.kind),
      ['complete'],
    );
  });

  it('the ledger counts every step once: per-step usage, then the result replaces it with the same sum', () => {
    const { events } = replayRecorded(opencodeAdapter, 'tool-shell-success.jsonl');
    const ledger = new TokenLedger({ agent: 'opencode' });
    const seen: number[] = [];
    for (const e of events) {
      ledger.apply(e);
      seen.push(ledger.snapshot().tokens.input);
    }
    assert.deepEqual([...new Set(seen)], [0, 1000, 2000]);
    assert.equal(ledger.snapshot().apiCalls, 2);
  });

  it('completion only from its own final message: the tag in a command and its output is no claim', () => {
    const { events, summary } = replayRecorded(opencodeAdapter, 'marker-outside-final-message.jsonl');
    const tag = '<promise>COMPLETE</promise>';
    const carriers = events.filter((e) => JSON.stringify(e).includes(tag)).map((e) => e.type);
    assert.deepEqual([...new Set(carriers)].sort(), ['toolResult', 'toolUse']);
    assert.deepEqual(summary.signals, []);
    assert.equal(summary.outcome.kind, 'success');
  });

  it('the same stream in 7-byte chunks gives the same events', () => {
    const whole = replayRecorded(opencodeAdapter, 'tool-shell-success.jsonl').events;
    const chunked = replayRecorded(opencodeAdapter, 'tool-shell-success.jsonl', 7).events;
    assert.deepEqual(chunked, whole);
  });

  it('HTTP 500 after its retries: transient; 429 rate-limited; 401 fatal, each from the error line status', () => {
    const table: [string, string, number][] = [
      ['http-500.jsonl', 'transient', 500],
      ['http-429.jsonl', 'rateLimited', 429],
      ['http-401.jsonl', 'fatal', 401],
    ];
    for (const [file, kind, status] of table) {
      const { summary, exitCode, events } = replayRecorded(opencodeAdapter, file);
      assert.equal(exitCode, 1, file);
      assert.equal(events.filter((e) => e.type === 'result').length, 0, file);
      assert.deepEqual([summary.outcome.kind, summary.outcome.status], [kind, status], file);
    }
  });

  it('killed mid-turn: the finished step is counted, no result, outcome noResult', () => {
    const { events, summary } = replayRecorded(opencodeAdapter, 'killed-mid-turn.jsonl');
    assert.equal(events.filter((e) => e.type === 'result').length, 0);
    assert.equal(events.filter((e) => e.type === 'toolUse').length, 1);
    assert.deepEqual(summary.tokens, { input: 1000, output: 50, cacheRead: 200, cacheCreation: 0 });
    assert.equal(summary.outcome.kind, 'noResult');
  });

  it('partial and bad lines: a text line and a cut line are skipped, an unknown type passes as unknown, a failed tool is an error', () => {
    const l = (type: string, part: object) => JSON.stringify({ type, timestamp: 1, sessionID: 'ses_x', part });
    const events = mapLines(
      opencodeAdapter,
      [
        'opencode: warning, something printed',
        l('step_start', { type: 'step-start' }),
        l('tool_use', {
          tool: 'read',
          callID: 'c1',
          state: { status: 'error', input: { filePath: 'a' }, error: 'File not found: a' },
        }),
        l('part_delta', { delta: 'x' }),
        '{"type":"text","timestamp":2,"sessionID":"ses_x","part":{"text":"half',
      ].join('\n'),
    );
    assert.deepEqual(
      events.map((e) => e.type),
      ['init', 'toolUse', 'toolResult', 'unknown'],
    );
    const r = events[2];
    assert.ok(r?.type === 'toolResult');
    assert.deepEqual([r.kind, r.isError, r.output], ['read', true, 'File not found: a']);
  });

  it('is detected from its lines and only from its lines', () => {
    const line = { type: 'step_start', timestamp: 1, sessionID: 'ses_1', part: { type: 'step-start' } };
    assert.equal(detectAgent([line])?.name, 'opencode');
    assert.equal(opencodeAdapter.recognise({ type: 'system', subtype: 'init', session_id: 's', tools: [] }), 0);
  });
});

describe('context windows per model (thresholds.ts)', () => {
  it('reads the window from the model name, a provider prefix ignored; null when the name says nothing', () => {
    const table: [string | null, number | null][] = [
      ['claude-opus-4-6[1M]', 1_000_000],
      ['gemini-2.5-flash', 1_048_576],
      ['qwen3-coder-plus', 1_000_000],
      ['openrouter/qwen/qwen3-coder', 262_144],
      ['dashscope/qwen3-coder-flash', 1_000_000],
      ['gpt-5.5', 400_000],
      ['scripted/fake-model', null],
      ['claude-sonnet-4-5', null],
      [null, null],
    ];
    for (const [model, window] of table) assert.equal(modelContextWindow(model), window, String(model));
  });

  it("the ledger's window for an opencode model names the model's window; thresholds stay the agent's", () => {
    const ledger = new TokenLedger({ agent: 'opencode', model: 'openrouter/qwen/qwen3-coder' });
    const s = ledger.snapshot();
    assert.deepEqual([s.contextWindow, s.contextWindowSource], [262_144, 'model']);
    assert.deepEqual([s.thresholds.rotate, s.thresholds.warn], [150_000, 131_250]);
  });
});
