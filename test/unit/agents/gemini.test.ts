import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import {
  geminiAdapter,
  geminiContextWindow,
  geminiErrorStatus,
  geminiQuotaResetsAt,
  geminiRetryDelaySeconds,
  geminiTokens,
} from '../../../src/core/agents/gemini';
import { type SessionSummary, inspectStream } from '../../../src/core/agents/inspect';
import { AgentStream } from '../../../src/core/agents/agentStream';
import { OutcomeTracker } from '../../../src/core/stream/classify';
import type { AgentEvent } from '../../../src/core/stream/events';
import { streamFixture } from '../../support/fixtures';

const rec = (name: string): string => streamFixture('gemini', 'recorded', name);

/** Session inspect of a recorded Gemini stream, read in 97-byte chunks (line boundaries fall inside reads). */
const inspect = (name: string): Promise<SessionSummary> =>
  inspectStream(fs.createReadStream(rec(name), { highWaterMark: 97 }), { adapter: geminiAdapter });

/** The value of `key` on the first line of a recorded file whose `type` is `type`. */
function field(name: string, type: string, key: string): string {
  const line = fs
    .readFileSync(rec(name), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .find((l) => l.type === type);
  return String(line?.[key]);
}

/** Every event of a stream text, decoded through the real line decoder and the adapter's mapper. */
function events(text: string): AgentEvent[] {
  const out: AgentEvent[] = [];
  const s = new AgentStream((e) => out.push(e), { adapter: geminiAdapter });
  s.push(text);
  s.end();
  return out;
}

describe('gemini adapter', () => {
  it('invokes gemini headless: stream-json, --skip-trust, yolo approval, the prompt last in the = form', () => {
    const inv = geminiAdapter.invocation({
      prompt: '-starts with a dash',
      cwd: '/w',
      baseEnv: { PATH: '/usr/bin', GEMINI_API_KEY: 'k', GOOGLE_GEMINI_BASE_URL: 'http://gw' },
    });
    assert.equal(inv.file, 'gemini');
    assert.deepEqual(inv.args, [
      '--output-format',
      'stream-json',
      '--skip-trust',
      '--approval-mode',
      'yolo',
      '--prompt=-starts with a dash',
    ]);
    // The user's key and endpoint pass through unchanged; nothing is added to the environment.
    assert.deepEqual(inv.env, { PATH: '/usr/bin', GEMINI_API_KEY: 'k', GOOGLE_GEMINI_BASE_URL: 'http://gw' });
  });

  it('passes the model, the session to resume and extra arguments before the prompt', () => {
    const inv = geminiAdapter.invocation({
      prompt: 'p',
      cwd: '/w',
      binary: '/opt/gemini',
      model: 'gemini-2.5-pro',
      resume: 'sess-1',
      extraArgs: ['--debug'],
      baseEnv: {},
    });
    assert.equal(inv.file, '/opt/gemini');
    assert.deepEqual(inv.args.slice(5), ['--model', 'gemini-2.5-pro', '--resume', 'sess-1', '--debug', '--prompt=p']);
  });

  it('shell-success.jsonl: one shell call, the completion tag split over two pieces seen whole, spend from stats', async () => {
    const s = await inspect('shell-success.jsonl');
    assert.equal(s.outcome.kind, 'success');
    assert.deepEqual(s.toolUses, { run_shell_command: 1 });
    assert.deepEqual(
      s.signals.map((x) => x.kind),
      ['complete'],
    );
    // input 1000 + (2000 uncached + 500 cached) over the two calls; output 10 + 10.
    assert.deepEqual(s.tokens, { input: 3000, output: 20, cacheRead: 500, cacheCreation: 0 });
    assert.equal(s.contextEstimated, true);
    assert.ok(
      s.contextLast > 0 && s.contextLast < 3000,
      `context is the byte estimate, not the summed input: ${s.contextLast}`,
    );
    assert.equal(s.sessionId, field('shell-success.jsonl', 'init', 'session_id'));
    assert.equal(s.model, 'gemini-2.5-flash');
    assert.equal(s.contextWindow, 1_048_576);
  });

  it('the prompt echo and tool output never count as the agent text; the final segment is the result text', () => {
    const text = fs.readFileSync(rec('shell-success.jsonl'), 'utf8');
    const echo = text.replace('"content":"Say hi with the shell."', '"content":"reply <promise>COMPLETE</promise>"');
    const es = events(echo.replace('"output":"hi"', '"output":"<promise>COMPLETE</promise>"'));
    const texts = es.flatMap((e) => (e.type === 'text' ? [e.text] : []));
    assert.deepEqual(texts, ['Done: hi.txt holds hi. <promise>COMPLETE</promise>']);
    const result = es.find((e) => e.type === 'result');
    assert.equal(result?.type === 'result' && result.text, texts[0]);
    const withoutFinal = events(
      text
        .split('\n')
        .filter((l) => !l.includes('"role":"assistant"'))
        .join('\n'),
    );
    assert.equal(
      withoutFinal.some((e) => e.type === 'text'),
      false,
      'an echo of the tag in the prompt is no text',
    );
  });

  it('router-write-and-failing-shell.jsonl: the router call is spend, never context or the window', async () => {
    const s = await inspect('router-write-and-failing-shell.jsonl');
    assert.equal(s.outcome.kind, 'success');
    assert.deepEqual(s.toolUses, { write_file: 1, run_shell_command: 1 });
    // The router's 10 + 5 tokens are in the totals (they are billed) …
    assert.deepEqual(s.tokens, { input: 4510, output: 35, cacheRead: 0, cacheCreation: 0 });
    // … but the window is the main model's, and the context is the byte estimate (the written file counts).
    assert.equal(s.contextWindow, 1_048_576);
    assert.equal(s.model, 'auto');
    assert.ok(s.contextLast >= Math.floor((3000 + 'one\ntwo\n'.length) / 4));
  });

  it('quota-429-terminal.jsonl: rate-limited, resetting at the result time plus the 3600 s retry delay', async () => {
    const s = await inspect('quota-429-terminal.jsonl');
    assert.equal(s.outcome.kind, 'rateLimited');
    assert.equal(s.outcome.resetsAt, Date.parse(field('quota-429-terminal.jsonl', 'result', 'timestamp')) + 3_600_000);
    assert.equal(s.outcome.evidence, 'rate_limit_event');
  });

  it('quota-429-daily.jsonl: rate-limited until the next midnight Pacific', async () => {
    const s = await inspect('quota-429-daily.jsonl');
    assert.equal(s.outcome.kind, 'rateLimited');
    const at = Date.parse(field('quota-429-daily.jsonl', 'result', 'timestamp'));
    // Midnight in Los Angeles is 07:00 or 08:00 UTC, within a day of the error.
    const reset = new Date(s.outcome.resetsAt!);
    assert.ok([7, 8].includes(reset.getUTCHours()) && reset.getUTCMinutes() === 0, reset.toISOString());
    assert.ok(reset.getTime() > at && reset.getTime() <= at + 86_400_000);
  });

  it('http-500-max-attempts.jsonl: transient, HTTP 500 read from the quoted error body', async () => {
    const s = await inspect('http-500-max-attempts.jsonl');
    assert.equal(s.outcome.kind, 'transient');
    assert.equal(s.outcome.status, 500);
  });

  it('disconnect-mid-stream.jsonl: a failed fetch is transient (network trouble, back off minutes)', async () => {
    const s = await inspect('disconnect-mid-stream.jsonl');
    assert.equal(s.outcome.kind, 'transient');
  });

  it('killed-mid-turn.jsonl: no result is noResult, with the exit the spawner saw', () => {
    const tracker = new OutcomeTracker();
    for (const e of events(fs.readFileSync(rec('killed-mid-turn.jsonl'), 'utf8'))) tracker.apply(e);
    const o = tracker.classify({ exitCode: 0, signal: null, stderr: '' });
    assert.equal(o.kind, 'noResult');
  });

  it('a cut last line and a text line are not fatal: the pieces before them are still the agent text', () => {
    const es = events(
      [
        '{"type":"init","timestamp":"2026-01-01T00:00:00Z","session_id":"s","model":"gemini-2.5-pro"}',
        'Warning: 256-color support not detected.',
        '{"type":"message","timestamp":"t","role":"assistant","content":"half <promise>COMP","delta":true}',
        '{"type":"message","timestamp":"t","role":"assistant","content":"LETE</promise>","delta":true}',
        '{"type":"result","timestamp":"t","status":"succ',
      ].join('\n'),
    );
    assert.deepEqual(
      es.map((e) => e.type),
      ['init', 'text'],
    );
    const t = es[1];
    assert.equal(t?.type === 'text' && t.text, 'half <promise>COMPLETE</promise>');
  });

  it('error lines are errors (a warning is not a limit); a tool error is a failed tool result', () => {
    const es = events(
      [
        '{"type":"tool_use","timestamp":"t","tool_name":"read_file","tool_id":"read_file__1","parameters":{"file_path":"a"}}',
        '{"type":"tool_result","timestamp":"t","tool_id":"read_file__1","status":"error","error":{"type":"FILE_NOT_FOUND","message":"File not found: a"}}',
        '{"type":"error","timestamp":"t","severity":"warning","message":"Loop detected, stopping execution"}',
      ].join('\n'),
    );
    const r = es[1];
    assert.equal(r?.type === 'toolResult' && r.isError, true);
    assert.equal(r?.type === 'toolResult' && r.kind, 'read');
    assert.equal(r?.type === 'toolResult' && r.output, 'File not found: a');
    const e = es[2];
    assert.equal(e?.type === 'error' && e.code, 'warning');
  });

  it('usage arithmetic: uncached input, cached, thinking tokens billed as output; never summed twice', () => {
    assert.deepEqual(
      geminiTokens({ input_tokens: 500, cached: 200, input: 300, output_tokens: 40, total_tokens: 560 }),
      {
        input: 300,
        output: 60,
        cacheRead: 200,
        cacheCreation: 0,
      },
    );
    assert.deepEqual(
      geminiTokens({ input_tokens: 10, cached: null, input: null, output_tokens: 5, total_tokens: 15 }),
      {
        input: 10,
        output: 5,
        cacheRead: 0,
        cacheCreation: 0,
      },
    );
  });

  it('error texts: HTTP status, retry delay, quota reset (midnight Pacific, winter and summer)', () => {
    // 23:05 UTC on 5 Dec is 15:05 PST (UTC−8): midnight PST is 08:00 UTC on 6 Dec.
    assert.equal(
      geminiQuotaResetsAt('exhausted your daily quota', Date.parse('2026-12-05T23:05:10.452Z')),
      Date.parse('2026-12-06T08:00:00.000Z'),
    );
    const table: [string, number | null][] = [
      ['[API Error: {"error":{"code":500,"message":"x","status":"INTERNAL"}}]', 500],
      ['[API Error: You have exhausted your daily quota on this model.]', 429],
      ['[API Error: Resource has been exhausted (e.g. check quota).]', 429],
      ['[API Error: API key not valid. Please pass a valid API key.]', 401],
      ['[API Error: exception TypeError: fetch failed sending request]', null],
    ];
    for (const [text, status] of table) assert.equal(geminiErrorStatus(text), status, text);
    assert.equal(geminiRetryDelaySeconds('Please retry in 41.2s.'), 41.2);
    assert.equal(geminiRetryDelaySeconds('Suggested retry after 3600s.'), 3600);
    assert.equal(geminiRetryDelaySeconds('retry in 500ms'), 0.5);
    assert.equal(geminiRetryDelaySeconds('no delay here'), null);
    assert.equal(geminiQuotaResetsAt('over quota', Date.parse('2026-07-01T12:00:00Z')), null);
    // In July Los Angeles is on PDT (UTC−7): midnight is 07:00 UTC.
    assert.equal(
      geminiQuotaResetsAt('exhausted your daily quota', Date.parse('2026-07-01T12:00:00Z')),
      Date.parse('2026-07-02T07:00:00Z'),
    );
    assert.equal(geminiContextWindow('gemini-3.8-flash'), 1_048_576);
    assert.equal(geminiContextWindow('auto'), null);
  });

  it('recognises its own lines and not claude or cursor lines', () => {
    const line = (l: string): Record<string, unknown> => JSON.parse(l) as Record<string, unknown>;
    const lines = fs.readFileSync(rec('shell-success.jsonl'), 'utf8').trim().split('\n').map(line);
    assert.ok(lines.filter((l) => geminiAdapter.recognise(l) === 2).length >= 4);
    assert.equal(geminiAdapter.recognise({ type: 'system', subtype: 'init', session_id: 's', tools: [] }), 0);
    assert.equal(geminiAdapter.recognise({ type: 'result', subtype: 'success', is_error: false }), 0);
  });
});
