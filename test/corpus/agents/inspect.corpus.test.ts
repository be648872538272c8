import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { type SessionSummary, inspectStream } from '../../../src/core/agents/inspect';
import { corpusFiles, describeCorpus } from '../../support/corpus';

const inspectFile = (file: string): Promise<SessionSummary> => inspectStream(fs.createReadStream(file, { highWaterMark: 4096 }));

describeCorpus('every recorded stream-json file goes through session inspect', (corpus) => {
  const dir = path.join(corpus, 'stream-json');
  for (const file of corpusFiles(dir)) {
    it(`summarises ${path.relative(dir, file)} without an exception`, async () => {
      const s = await inspectFile(file);
      assert.ok(['claude', 'cursor-agent', 'unknown'].includes(s.agent));
      assert.ok(s.outcome.kind);
    });
  }

  describe('claude/recorded-2.1.328 (real CLI 2.1.328 against a scripted server)', () => {
    const rec = (name: string): string => path.join(dir, 'claude', 'recorded-2.1.328', name);

    it('tool-use-bash-success: one Bash call, context 2000, cost 0.01314 USD, 2 turns, success', async () => {
      const s = await inspectFile(rec('tool-use-bash-success.jsonl'));
      assert.equal(s.agent, 'claude');
      assert.deepEqual(s.toolUses, { Bash: 1 });
      assert.equal(s.contextLast, 2000);
      assert.equal(s.costUsd, 0.01314);
      assert.equal(s.turns, 2);
      assert.deepEqual(s.tokens, { input: 3000, output: 57, cacheRead: 0, cacheCreation: 0 });
      assert.equal(s.contextWindow, 1_000_000);
      assert.equal(s.outcome.kind, 'success');
      assert.equal(s.events.usage, 2);
      assert.equal(s.events.toolResult, 1);
    });

    it('pretooluse-hook-deny: the denied Bash call is still a tool use, its result an error, the run a success', async () => {
      const s = await inspectFile(rec('pretooluse-hook-deny.jsonl'));
      assert.deepEqual(s.toolUses, { Bash: 1 });
      assert.equal(s.contextLast, 2000);
      assert.equal(s.costUsd, 0.01314);
      assert.equal(s.outcome.kind, 'success');
    });

    it('http-429-api-error-max-retries-1: rate-limited by api_error_status 429, one retry, no tokens', async () => {
      const s = await inspectFile(rec('http-429-api-error-max-retries-1.jsonl'));
      assert.deepEqual([s.outcome.kind, s.outcome.status], ['rateLimited', 429]);
      assert.ok(s.rateLimits.some((r) => r.source === 'api_retry' && r.attempts === 1 && r.maxRetries === 1));
      assert.ok(s.errors.some((e) => e.source === 'result' && e.status === 429));
      assert.equal(s.events.apiRetry, 1);
      assert.equal(s.contextLast, 0);
      assert.equal(s.costUsd, 0);
      assert.equal(s.turns, 1);
    });

    it('http-429-api-retry-series-killed: nine 429 retries of ten, then no result', async () => {
      const s = await inspectFile(rec('http-429-api-retry-series-killed.jsonl'));
      assert.equal(s.outcome.kind, 'noResult');
      assert.deepEqual(s.outcome.lastApiRetry, { attempt: 9, maxRetries: 10, status: 429, error: 'rate_limit' });
      assert.deepEqual(s.rateLimits, [{ source: 'api_retry', status: 429, attempts: 9, maxRetries: 10, message: 'rate_limit' }]);
      assert.equal(s.events.result, 0);
      assert.equal(s.costUsd, null);
    });

    it('pretooluse-hook-stdin.json (a hook input, not a stream) is summarised as unknown', async () => {
      const s = await inspectFile(rec('pretooluse-hook-stdin.json'));
      assert.equal(s.agent, 'unknown');
    });
  });

  describe('other captures', () => {
    it('claude 07: an allowed rate_limit_event with an empty success result is not a limit', async () => {
      const s = await inspectFile(path.join(dir, 'claude', '07-rate-limit-event-allowed-empty-result.v2.1.83.jsonl'));
      assert.equal(s.outcome.kind, 'success');
      assert.equal(s.rateLimits[0]!.status, 'allowed');
      assert.equal(s.contextWindow, 1_000_000);
      assert.deepEqual([s.thresholds.warn, s.thresholds.rotate], [250_000, 300_000]);
    });

    it('claude 08: a rejected rate_limit_event alone is rate-limited with its reset time', async () => {
      const s = await inspectFile(path.join(dir, 'claude', '08-rate-limit-event-rejected.line.jsonl'));
      assert.equal(s.outcome.kind, 'rateLimited');
      assert.equal(s.outcome.resetsAt, 1_778_565_600_000);
    });

    it('claude 09: the damaged first line is counted as non-JSON and the second still read', async () => {
      const s = await inspectFile(path.join(dir, 'claude', '09-error_max_turns.json-format.v1.0.44.reporter-edited.txt'));
      assert.equal(s.nonJsonLines, 1);
      assert.equal(s.malformedJsonLines, 1);
      assert.equal(s.events.result, 1);
    });

    it('claude 11: a typeless invalid-key result fragment is fatal', async () => {
      const s = await inspectFile(path.join(dir, 'claude', '11-invalid-api-key-result.v2.0.62.trimmed-fragment.txt'));
      assert.equal(s.outcome.kind, 'fatal');
    });

    it('claude 05 (one pretty-printed result) is read as one document', async () => {
      const s = await inspectFile(path.join(dir, 'claude', '05-result-success-modelUsage.v2.1.3.json'));
      assert.equal(s.events.result, 1);
      assert.equal(s.tokens.input, 38);
    });

    it('cursor-agent 02: two parallel shell calls, results correlated by call_id', async () => {
      const s = await inspectFile(path.join(dir, 'cursor-agent', '02-parallel-shell-calls.jsonl'));
      assert.equal(s.agent, 'cursor-agent');
      assert.deepEqual(s.toolUses, { shell: 2 });
      assert.equal(s.events.toolResult, 2);
      assert.equal(s.contextEstimated, true);
      assert.equal(s.outcome.kind, 'success');
    });

    it('codex and gemini streams are summarised as unknown', async () => {
      for (const f of ['codex/01-exec-json-ping.codex-cli-0.66.0.jsonl', 'gemini/01-stream-json-shell-tool.gemini-0.19.3.jsonl']) {
        const s = await inspectFile(path.join(dir, f));
        assert.equal(s.agent, 'unknown', f);
        assert.equal(s.events.unknown, s.lines, f);
      }
    });
  });
});
