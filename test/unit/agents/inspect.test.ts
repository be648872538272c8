import * as assert from 'node:assert/strict';
import { streamFixture } from '../../support/fixtures';
import { describeRecordedClaudeStreams, inspectFile } from '../../support/inspectChecks';

/** Session inspect on the project's own stream fixtures (test/fixtures/streams/README.md); the corpus tier reads the real captures. */
describe('session inspect on the recorded and hand-written streams', () => {
  describe('claude/recorded (the real CLI against the scripted server)', () => {
    describeRecordedClaudeStreams((name) => streamFixture('claude', 'recorded', name), {
      files: {
        success: 'tool-use-bash-success.jsonl',
        hookDeny: 'pretooluse-hook-deny.jsonl',
        maxRetries1: 'http-429-max-retries-1.jsonl',
        retrySeriesKilled: 'http-429-retry-series-killed.jsonl',
        hookStdin: 'pretooluse-hook-stdin.json',
      },
      costUsd: 0.0124,
      outputTokens: 20,
      lastRetry: { attempt: 3, maxRetries: 4 },
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

    it('a codex stream is recognised as codex, its shell call mapped and its turn a success', async () => {
      const s = await inspectFile(streamFixture('codex', 'hand-written', 'exec-json-0.66.jsonl'));
      assert.equal(s.agent, 'codex');
      assert.deepEqual(s.toolUses, { shell: 1 });
      assert.equal(s.outcome.kind, 'success');
    });

    it('a stream of an agent no adapter knows is summarised as unknown, every line unknown', async () => {
      const s = await inspectFile(streamFixture('other', 'unknown-agent.jsonl'));
      assert.equal(s.agent, 'unknown');
      assert.equal(s.events.unknown, s.lines);
    });
  });
});
