import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { type SessionSummary, inspectStream } from '../../../src/core/agents/inspect';
import { streamFixture } from '../../support/fixtures';

const inspectFile = (file: string): Promise<SessionSummary> => inspectStream(fs.createReadStream(file, { highWaterMark: 4096 }));

/** Session inspect on the project's own stream fixtures (test/fixtures/streams/README.md); the corpus tier reads the real captures. */
describe('session inspect on the recorded and hand-written streams', () => {
  describe('claude/recorded (the real CLI against the scripted server)', () => {
    const rec = (name: string): string => streamFixture('claude', 'recorded', name);

    it('tool-use-bash-success: one Bash call, context 2000, cost 0.0124 USD, 2 turns, success', async () => {
      const s = await inspectFile(rec('tool-use-bash-success.jsonl'));
      assert.equal(s.agent, 'claude');
      assert.deepEqual(s.toolUses, { Bash: 1 });
      assert.equal(s.contextLast, 2000);
      assert.equal(s.costUsd, 0.0124);
      assert.equal(s.turns, 2);
      assert.deepEqual(s.tokens, { input: 3000, output: 20, cacheRead: 0, cacheCreation: 0 });
      assert.equal(s.contextWindow, 1_000_000);
      assert.equal(s.outcome.kind, 'success');
      assert.equal(s.events.usage, 2);
      assert.equal(s.events.toolResult, 1);
    });

    it('pretooluse-hook-deny: the denied Bash call is still a tool use, its result an error, the run a success', async () => {
      const s = await inspectFile(rec('pretooluse-hook-deny.jsonl'));
      assert.deepEqual(s.toolUses, { Bash: 1 });
      assert.equal(s.contextLast, 2000);
      assert.equal(s.outcome.kind, 'success');
    });

    it('http-429-max-retries-1: rate-limited by api_error_status 429, one retry, no tokens', async () => {
      const s = await inspectFile(rec('http-429-max-retries-1.jsonl'));
      assert.deepEqual([s.outcome.kind, s.outcome.status], ['rateLimited', 429]);
      assert.ok(s.rateLimits.some((r) => r.source === 'api_retry' && r.attempts === 1 && r.maxRetries === 1));
      assert.ok(s.errors.some((e) => e.source === 'result' && e.status === 429));
      assert.equal(s.events.apiRetry, 1);
      assert.equal(s.contextLast, 0);
      assert.equal(s.costUsd, 0);
      assert.equal(s.turns, 1);
    });

    it('http-429-retry-series-killed: three 429 retries of four, then no result', async () => {
      const s = await inspectFile(rec('http-429-retry-series-killed.jsonl'));
      assert.equal(s.outcome.kind, 'noResult');
      assert.deepEqual(s.outcome.lastApiRetry, { attempt: 3, maxRetries: 4, status: 429, error: 'rate_limit' });
      assert.deepEqual(s.rateLimits, [{ source: 'api_retry', status: 429, attempts: 3, maxRetries: 4, message: 'rate_limit' }]);
      assert.equal(s.events.result, 0);
      assert.equal(s.costUsd, null);
    });

    it('pretooluse-hook-stdin.json (a hook input, not a stream) is summarised as unknown', async () => {
      const s = await inspectFile(rec('pretooluse-hook-stdin.json'));
      assert.equal(s.agent, 'unknown');
    });
  });

  describe('hand-written lines in the documented format', () => {
    it('an allowed rate_limit_event with an empty success result is not a limit; a [1m] model has the 1M window', async () => {
      const s = await inspectFile(streamFixture('claude', 'hand-written', 'rate-limit-event-allowed.jsonl'));
      assert.equal(s.outcome.kind, 'success');
      assert.equal(s.rateLimits[0]!.status, 'allowed');
      assert.equal(s.contextWindow, 1_000_000);
      assert.deepEqual([s.thresholds.warn, s.thresholds.rotate], [250_000, 300_000]);
    });

    it('a rejected rate_limit_event alone is rate-limited with its reset time (epoch seconds → ms)', async () => {
      const s = await inspectFile(streamFixture('claude', 'hand-written', 'rate-limit-event-rejected.jsonl'));
      assert.equal(s.outcome.kind, 'rateLimited');
      assert.equal(s.outcome.resetsAt, Date.UTC(2027, 0, 3, 10, 0, 0));
    });

    it('cursor-agent parallel shell calls: results correlated by call_id, context estimated', async () => {
      const s = await inspectFile(streamFixture('cursor-agent', 'parallel-shell.jsonl'));
      assert.equal(s.agent, 'cursor-agent');
      assert.deepEqual(s.toolUses, { shell: 2 });
      assert.equal(s.events.toolResult, 2);
      assert.equal(s.contextEstimated, true);
      assert.equal(s.outcome.kind, 'success');
    });

    it('a codex stream is summarised as unknown, every line unknown', async () => {
      const s = await inspectFile(streamFixture('other', 'codex-exec-json.jsonl'));
      assert.equal(s.agent, 'unknown');
      assert.equal(s.events.unknown, s.lines);
    });
  });
});
