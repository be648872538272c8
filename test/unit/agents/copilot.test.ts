import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { AgentStream } from '../../../src/core/agents/agentStream';
import { copilotAdapter, copilotToolKind } from '../../../src/core/agents/copilot';
import { type SessionSummary, inspectStream } from '../../../src/core/agents/inspect';
import { OutcomeTracker } from '../../../src/core/stream/classify';
import type { AgentEvent } from '../../../src/core/stream/events';
import { streamFixture } from '../../support/fixtures';

const rec = (name: string): string => streamFixture('copilot', 'recorded', name);

/** Session inspect of a recorded Copilot stream, read in 97-byte chunks (line boundaries fall inside reads). */
const inspect = (name: string): Promise<SessionSummary> =>
  inspectStream(fs.createReadStream(rec(name), { highWaterMark: 97 }), { adapter: copilotAdapter });

function events(text: string): AgentEvent[] {
  const out: AgentEvent[] = [];
  const s = new AgentStream((e) => out.push(e), { adapter: copilotAdapter });
  s.push(text);
  s.end();
  return out;
}

describe('copilot adapter', () => {
  it('invokes copilot headless: JSON lines, every tool allowed, the prompt last in the = form', () => {
    const inv = copilotAdapter.invocation({
      prompt: '--help is not an option here',
      cwd: '/w',
      baseEnv: { PATH: '/usr/bin', COPILOT_PROVIDER_BASE_URL: 'http://byok/v1', COPILOT_PROVIDER_API_KEY: 'k' },
    });
    assert.equal(inv.file, 'copilot');
    assert.deepEqual(inv.args, [
      '--output-format',
      'json',
      '--allow-all-tools',
      '--prompt=--help is not an option here',
    ]);
    assert.deepEqual(inv.env, {
      PATH: '/usr/bin',
      COPILOT_PROVIDER_BASE_URL: 'http://byok/v1',
      COPILOT_PROVIDER_API_KEY: 'k',
    });
  });

  it('passes the model, --resume=<id> (its value is optional) and extra arguments before the prompt', () => {
    const inv = copilotAdapter.invocation({
      prompt: 'p',
      cwd: '/w',
      model: 'gpt-5.4',
      resume: 'abc',
      extraArgs: ['--deny-tool', 'shell(rm)'],
      baseEnv: {},
    });
    assert.deepEqual(inv.args.slice(3), [
      '--model',
      'gpt-5.4',
      '--resume=abc',
      '--deny-tool',
      'shell(rm)',
      '--prompt=p',
    ]);
  });

  it('shell-success.jsonl: one bash call, the completion tag in the final message, context estimated, no tokens', async () => {
    const s = await inspect('shell-success.jsonl');
    assert.equal(s.outcome.kind, 'success');
    assert.deepEqual(s.toolUses, { bash: 1 });
    assert.deepEqual(
      s.signals.map((x) => x.kind),
      ['complete'],
    );
    assert.equal(s.contextEstimated, true);
    assert.ok(s.contextLast >= 750, `byte estimate: ${s.contextLast}`);
    assert.deepEqual(s.tokens, { input: 0, output: 0, cacheRead: 0, cacheCreation: 0 });
    assert.equal(s.sessionId, null, 'the session id comes with the result only');
    assert.equal(s.model, 'fake-model');
    assert.equal(s.events.unknown, 0, 'every line of a normal run is modelled or deliberately skipped');
  });

  it('the prompt echo and the message deltas never add text: one text per assistant message', () => {
    const text = fs
      .readFileSync(rec('shell-success.jsonl'), 'utf8')
      .replace('"content":"Say hi with the shell."', '"content":"<promise>COMPLETE</promise>"');
    const es = events(text);
    assert.deepEqual(
      es.flatMap((e) => (e.type === 'text' ? [e.text] : [])),
      ['Done: hi.txt holds hi. <promise>COMPLETE</promise>'],
    );
    const r = es.find((e) => e.type === 'result');
    const last = JSON.parse(text.trim().split('\n').pop()!) as { sessionId: string };
    assert.equal(r?.type === 'result' && r.sessionId, last.sessionId);
  });

  it('write-and-failing-shell.jsonl: the file write, and the shell exit code 3 as a failed tool result', async () => {
    const es = events(fs.readFileSync(rec('write-and-failing-shell.jsonl'), 'utf8'));
    const results = es.flatMap((e) => (e.type === 'toolResult' ? [e] : []));
    assert.deepEqual(
      results.map((r) => [r.name, r.kind, r.isError, r.exitCode]),
      [
        ['create', 'write', false, null],
        ['bash', 'shell', true, 3],
      ],
    );
    const s = await inspect('write-and-failing-shell.jsonl');
    assert.equal(s.outcome.kind, 'success');
    assert.ok(s.contextLast >= Math.floor((3000 + 'one\ntwo\n'.length) / 4));
  });

  it('http-429.jsonl: rate-limited (status 429 from session.error), reset unknown', async () => {
    const s = await inspect('http-429.jsonl');
    assert.equal(s.outcome.kind, 'rateLimited');
    assert.equal(s.outcome.status, 429);
    assert.equal(s.outcome.resetsAt, null);
  });

  it('http-500.jsonl: five retries as api retries, then transient', async () => {
    const s = await inspect('http-500.jsonl');
    assert.equal(s.outcome.kind, 'transient');
    assert.equal(s.outcome.status, 500);
    assert.equal(s.events.apiRetry, 6);
  });

  it('killed-mid-turn.jsonl: no result is noResult', () => {
    const tracker = new OutcomeTracker();
    for (const e of events(fs.readFileSync(rec('killed-mid-turn.jsonl'), 'utf8'))) tracker.apply(e);
    assert.equal(tracker.classify({ exitCode: null, signal: 'SIGTERM', stderr: '' }).kind, 'noResult');
  });

  it('a cut last line and a text line are counted, not fatal; unknown event kinds pass as unknown', () => {
    const es = events(
      [
        '{"type":"assistant.message","data":{"messageId":"m1","content":"partial answer"},"id":"1"}',
        'npm warn something',
        '{"type":"session.new_kind","data":{},"id":"2"}',
        '{"type":"result","sessionId":"s","exitCode":0,"us',
      ].join('\n'),
    );
    assert.deepEqual(
      es.map((e) => e.type),
      ['text', 'unknown'],
    );
  });

  it('tool kinds', () => {
    assert.deepEqual(['bash', 'view', 'create', 'edit', 'glob', 'report_intent'].map(copilotToolKind), [
      'shell',
      'read',
      'write',
      'edit',
      'other',
      'other',
    ]);
  });

  it('recognises its own lines and not claude, cursor or gemini lines', () => {
    const lines = fs
      .readFileSync(rec('shell-success.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.ok(lines.every((l) => copilotAdapter.recognise(l) === 2));
    assert.equal(copilotAdapter.recognise({ type: 'result', subtype: 'success', is_error: false }), 0);
    assert.equal(copilotAdapter.recognise({ type: 'tool_use', tool_id: 'x' }), 0);
  });
});
