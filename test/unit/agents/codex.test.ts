import * as assert from 'node:assert/strict';
import {
  codexAdapter,
  codexHookOverride,
  codexReconnect,
  codexStatus,
  codexTokens,
} from '../../../src/core/agents/codex';
import { detectAgent } from '../../../src/core/agents/registry';
import { guardSettings } from '../../../src/core/gates/guardServer';
import { mapLines, replayRecorded } from '../../support/recordedStreams';

const spec = { prompt: 'do the task', cwd: '/work/ws', baseEnv: { PATH: '/usr/bin', CODEX_HOME: '/home/u/.codex' } };

describe('codex adapter: the invocation', () => {
  it('runs codex exec --json, unsandboxed and never asking, the prompt last after --, the environment unchanged', () => {
    const inv = codexAdapter.invocation(spec);
    assert.equal(inv.file, 'codex');
    assert.deepEqual(inv.args, [
      'exec',
      '--json',
      '--skip-git-repo-check',
      '--dangerously-bypass-approvals-and-sandbox',
      '--',
      'do the task',
    ]);
    assert.deepEqual(inv.env, { PATH: '/usr/bin', CODEX_HOME: '/home/u/.codex' });
  });

  it('passes the model, resume id and extra arguments; a sandbox chosen in agentArgs replaces the bypass', () => {
    const inv = codexAdapter.invocation({
      ...spec,
      binary: '/opt/codex',
      model: 'gpt-5.5',
      resume: '01a2-thread',
      extraArgs: ['-s', 'workspace-write'],
    });
    assert.equal(inv.file, '/opt/codex');
    assert.deepEqual(inv.args, [
      'exec',
      'resume',
      '01a2-thread',
      '--json',
      '--skip-git-repo-check',
      '-m',
      'gpt-5.5',
      '-s',
      'workspace-write',
      '--',
      'do the task',
    ]);
  });

  it("hands the run's guard hook to Codex as an inline PreToolUse hook on its shell tool, trusted for this run", () => {
    const settings = guardSettings(
      { node: '/usr/bin/node', hook: '/x/dist/guard-hook.js', cli: '', guard: '', electron: false },
      '/run/g.sock',
    );
    const inv = codexAdapter.invocation({ ...spec, settings });
    const i = inv.args.indexOf('-c');
    assert.ok(i > 0);
    assert.equal(
      inv.args[i + 1],
      `hooks.PreToolUse=[{matcher="Bash",hooks=[{type="command",command="/usr/bin/node /x/dist/guard-hook.js --socket /run/g.sock",timeout=60}]}]`,
    );
    assert.equal(inv.args[i + 2], '--dangerously-bypass-hook-trust');
    assert.equal(codexHookOverride(undefined), null);
    assert.equal(codexHookOverride({ hooks: {} }), null);
  });
});

describe('codex adapter: usage and failure text', () => {
  it('input is the uncached part; cached, cache writes and output are kept apart; reasoning is not added twice', () => {
    assert.deepEqual(
      codexTokens({
        input_tokens: 2400,
        cached_input_tokens: 400,
        cache_write_input_tokens: 30,
        output_tokens: 100,
        reasoning_output_tokens: 40,
      }),
      { input: 2000, output: 100, cacheRead: 400, cacheCreation: 30 },
    );
    assert.deepEqual(
      codexTokens({
        input_tokens: 10,
        cached_input_tokens: null,
        cache_write_input_tokens: null,
        output_tokens: null,
        reasoning_output_tokens: null,
      }),
      {
        input: 10,
        output: 0,
        cacheRead: 0,
        cacheCreation: 0,
      },
    );
  });

  it('reads the HTTP status and the retry count from its messages', () => {
    assert.equal(codexStatus('unexpected status 401 Unauthorized: Incorrect API key provided, url: http://x'), 401);
    assert.equal(codexStatus('exceeded retry limit, last status: 429 Too Many Requests'), 429);
    assert.equal(codexStatus('We’re currently experiencing high demand'), null);
    assert.deepEqual(codexReconnect('Reconnecting... 2/5 (stream disconnected)'), {
      attempt: 2,
      maxRetries: 5,
      reason: 'stream disconnected',
    });
    assert.equal(codexReconnect('unexpected status 401'), null);
  });
});

describe('codex adapter: recorded streams of the real CLI (test/fixtures/streams/codex/recorded)', () => {
  it('a shell call and a final message: tool use and result paired, the final message is text, usage summed per turn', () => {
    const { events, summary } = replayRecorded(codexAdapter, 'tool-shell-success.jsonl');
    const init = events.find((e) => e.type === 'init');
    assert.ok(init?.type === 'init' && init.sessionId && init.sessionId.length > 10);
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
    // Two calls of 1000 uncached + 200 cached input and 50 output each: the turn's sum, counted once.
    assert.deepEqual(summary.tokens, { input: 2000, output: 100, cacheRead: 400, cacheCreation: 0 });
    assert.equal(summary.outcome.kind, 'success');
    assert.equal(summary.contextEstimated, true);
    assert.deepEqual(
      summary.signals.map((s) => s.kind),
      ['complete'],
    );
    assert.equal(summary.sessionId, init.sessionId);
  });

  it('completion only from its own final message: the tag in the prompt, a command, its output and reasoning is no claim', () => {
    const { events, summary } = replayRecorded(codexAdapter, 'marker-outside-final-message.jsonl');
    const tag = '<promise>COMPLETE</promise>';
    const carriers = events.filter((e) => JSON.stringify(e).includes(tag)).map((e) => e.type);
    assert.deepEqual([...new Set(carriers)].sort(), ['thinking', 'toolResult', 'toolUse']);
    assert.deepEqual(summary.signals, []);
    assert.equal(summary.outcome.kind, 'success');
  });

  it('the same stream in 7-byte chunks gives the same events', () => {
    const whole = replayRecorded(codexAdapter, 'tool-shell-success.jsonl').events;
    const chunked = replayRecorded(codexAdapter, 'tool-shell-success.jsonl', 7).events;
    assert.deepEqual(chunked, whole);
  });

  it('HTTP 500: the retry is a heartbeat, turn.failed an error result, the outcome transient', () => {
    const { events, summary, exitCode } = replayRecorded(codexAdapter, 'http-500.jsonl');
    assert.equal(exitCode, 1);
    assert.ok(events.some((e) => e.type === 'apiRetry' && e.attempt === 1 && e.maxRetries === 1));
    const r = events.find((e) => e.type === 'result');
    assert.ok(r?.type === 'result' && r.isError);
    assert.equal(summary.outcome.kind, 'transient');
  });

  it('HTTP 429: rate-limited; HTTP 401: fatal (a bad key), each from the status in turn.failed', () => {
    const limited = replayRecorded(codexAdapter, 'http-429.jsonl').summary.outcome;
    assert.deepEqual([limited.kind, limited.status], ['rateLimited', 429]);
    const bad = replayRecorded(codexAdapter, 'http-401.jsonl').summary.outcome;
    assert.deepEqual([bad.kind, bad.status], ['fatal', 401]);
  });

  it('killed mid-turn: the started shell call is paired, no result, outcome noResult', () => {
    const { events, summary } = replayRecorded(codexAdapter, 'killed-mid-turn.jsonl');
    assert.equal(events.filter((e) => e.type === 'result').length, 0);
    assert.equal(events.filter((e) => e.type === 'toolUse').length, 1);
    assert.equal(summary.outcome.kind, 'noResult');
  });

  it('partial and bad lines: a non-JSON line and a cut line are skipped, an unknown item type is passed on as unknown', () => {
    const events = mapLines(
      codexAdapter,
      [
        '{"type":"thread.started","thread_id":"t-1"}',
        'Reading additional input from stdin...',
        '{"type":"item.completed","item":{"id":"i9","type":"todo_list","items":[]}}',
        '{"type":"item.completed","item":{"id":"i1","type":"agent_message","text":"half',
        '{"type":"turn.completed","usage":{"input_tokens":5,"output_tokens":1}}',
      ].join('\n'),
    );
    assert.deepEqual(
      events.map((e) => e.type),
      ['init', 'unknown', 'usage', 'result'],
    );
    const r = events.at(-1);
    assert.ok(r?.type === 'result');
    assert.deepEqual(r.usage, { input: 5, output: 1, cacheRead: 0, cacheCreation: 0 });
  });

  it('two turns in one process: the result carries the running total (the ledger reads it as cumulative)', () => {
    const turn = '{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":10}}';
    const results = mapLines(codexAdapter, `${turn}\n${turn}\n`).filter((e) => e.type === 'result');
    assert.deepEqual(
      results.map((e) => (e.type === 'result' ? e.usage : null)),
      [
        { input: 60, output: 10, cacheRead: 40, cacheCreation: 0 },
        { input: 120, output: 20, cacheRead: 80, cacheCreation: 0 },
      ],
    );
  });

  it('is detected from its lines and only from its lines', () => {
    assert.equal(detectAgent([{ type: 'thread.started', thread_id: 'x' }, { type: 'turn.started' }])?.name, 'codex');
    assert.notEqual(
      detectAgent([{ type: 'system', subtype: 'init', tools: [], claude_code_version: '2' }])?.name,
      'codex',
    );
  });
});
