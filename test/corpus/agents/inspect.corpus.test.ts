import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { AGENT_NAMES } from '../../../src/core/model/agentNames';
import { corpusFiles, describeCorpus } from '../../support/corpus';
import { describeRecordedClaudeStreams, inspectFile } from '../../support/inspectChecks';

describeCorpus('every recorded stream-json file goes through session inspect', (corpus) => {
  const dir = path.join(corpus, 'stream-json');
  for (const file of corpusFiles(dir)) {
    it(`summarises ${path.relative(dir, file)} without an exception`, async () => {
      const s = await inspectFile(file);
      assert.ok([...AGENT_NAMES, 'unknown'].includes(s.agent), s.agent);
      assert.ok(s.outcome.kind);
    });
  }

  describe('claude/recorded-2.1.328 (real CLI 2.1.328 against a scripted server)', () => {
    describeRecordedClaudeStreams((name) => path.join(dir, 'claude', 'recorded-2.1.328', name), {
      files: {
        success: 'tool-use-bash-success.jsonl',
        hookDeny: 'pretooluse-hook-deny.jsonl',
        maxRetries1: 'http-429-api-error-max-retries-1.jsonl',
        retrySeriesKilled: 'http-429-api-retry-series-killed.jsonl',
        hookStdin: 'pretooluse-hook-stdin.json',
      },
      costUsd: 0.01314,
      outputTokens: 57,
      lastRetry: { attempt: 9, maxRetries: 10 },
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
      const s = await inspectFile(
        path.join(dir, 'claude', '09-error_max_turns.json-format.v1.0.44.reporter-edited.txt'),
      );
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

    it('codex 0.66 exec --json streams: init, text, usage and the turn result, nothing unknown', async () => {
      const expected: Record<string, { tokens: [number, number, number]; toolUses: Record<string, number> }> = {
        '01-exec-json-ping.codex-cli-0.66.0.jsonl': { tokens: [451, 7, 3072], toolUses: {} },
        '02-exec-json-reasoning-message.jsonl': { tokens: [7499, 111, 0], toolUses: {} },
        '03-docs-sample-command-execution.jsonl': { tokens: [315, 122, 24448], toolUses: { shell: 1 } },
      };
      for (const [name, x] of Object.entries(expected)) {
        const s = await inspectFile(path.join(dir, 'codex', name));
        assert.equal(s.agent, 'codex', name);
        assert.equal(s.events.unknown, 0, name);
        assert.equal(s.events.result, 1, name);
        assert.equal(s.outcome.kind, 'success', name);
        assert.deepEqual([s.tokens.input, s.tokens.output, s.tokens.cacheRead], x.tokens, name);
        assert.deepEqual(s.toolUses, x.toolUses, name);
      }
    });

    it('gemini 01 (0.19.3): detected as gemini, one shell call, tokens from the result stats, success', async () => {
      const s = await inspectFile(path.join(dir, 'gemini', '01-stream-json-shell-tool.gemini-0.19.3.jsonl'));
      assert.equal(s.agent, 'gemini');
      assert.deepEqual(s.toolUses, { run_shell_command: 1 });
      // 0.19.3 had no `cached`/`input`: all 74 input tokens are uncached; total 128 − 74 counts as output (thinking).
      assert.deepEqual(s.tokens, { input: 74, output: 54, cacheRead: 0, cacheCreation: 0 });
      assert.equal(s.outcome.kind, 'success');
    });
  });
});
