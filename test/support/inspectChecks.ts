import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { type SessionSummary, inspectStream } from '../../src/core/agents/inspect';

/** Session inspect of a stream file, read in small chunks (so line boundaries fall inside reads). */
export const inspectFile = (file: string): Promise<SessionSummary> =>
  inspectStream(fs.createReadStream(file, { highWaterMark: 4096 }));

/** What a set of streams recorded from the real claude against the scripted server (scripts/record-streams.ts) shows. */
export interface RecordedClaudeExpectations {
  /** File names: one Bash call then text; the same with a PreToolUse hook denying Bash; every request 429 with
   * CLAUDE_CODE_MAX_RETRIES=1; a 429 retry series killed before its result; the hook's stdin. */
  files: { success: string; hookDeny: string; maxRetries1: string; retrySeriesKilled: string; hookStdin: string };
  costUsd: number;
  outputTokens: number;
  /** The last api_retry of the killed series. */
  lastRetry: { attempt: number; maxRetries: number };
}

/**
 * Declares the session-inspect checks of recorded claude streams (`rec(name)` is the path of a file): used on the
 * project's recordings (unit) and on the corpus's (corpus), whose figures differ.
 */
export function describeRecordedClaudeStreams(rec: (name: string) => string, x: RecordedClaudeExpectations): void {
  it(`${x.files.success}: one Bash call, context 2000, cost ${x.costUsd} USD, 2 turns, success`, async () => {
    const s = await inspectFile(rec(x.files.success));
    assert.equal(s.agent, 'claude');
    assert.deepEqual(s.toolUses, { Bash: 1 });
    assert.equal(s.contextLast, 2000);
    assert.equal(s.costUsd, x.costUsd);
    assert.equal(s.turns, 2);
    assert.deepEqual(s.tokens, { input: 3000, output: x.outputTokens, cacheRead: 0, cacheCreation: 0 });
    assert.equal(s.contextWindow, 1_000_000);
    assert.equal(s.outcome.kind, 'success');
    assert.equal(s.events.usage, 2);
    assert.equal(s.events.toolResult, 1);
  });

  it(`${x.files.hookDeny}: the denied Bash call is still a tool use, its result an error, the run a success`, async () => {
    const s = await inspectFile(rec(x.files.hookDeny));
    assert.deepEqual(s.toolUses, { Bash: 1 });
    assert.equal(s.contextLast, 2000);
    assert.equal(s.costUsd, x.costUsd);
    assert.equal(s.outcome.kind, 'success');
  });

  it(`${x.files.maxRetries1}: rate-limited by api_error_status 429, one retry, no tokens`, async () => {
    const s = await inspectFile(rec(x.files.maxRetries1));
    assert.deepEqual([s.outcome.kind, s.outcome.status], ['rateLimited', 429]);
    assert.ok(s.rateLimits.some((r) => r.source === 'api_retry' && r.attempts === 1 && r.maxRetries === 1));
    assert.ok(s.errors.some((e) => e.source === 'result' && e.status === 429));
    assert.equal(s.events.apiRetry, 1);
    assert.equal(s.contextLast, 0);
    assert.equal(s.costUsd, 0);
    assert.equal(s.turns, 1);
  });

  it(`${x.files.retrySeriesKilled}: ${x.lastRetry.attempt} 429 retries of ${x.lastRetry.maxRetries}, then no result`, async () => {
    const s = await inspectFile(rec(x.files.retrySeriesKilled));
    assert.equal(s.outcome.kind, 'noResult');
    assert.deepEqual(s.outcome.lastApiRetry, { ...x.lastRetry, status: 429, error: 'rate_limit' });
    assert.deepEqual(s.rateLimits, [
      {
        source: 'api_retry',
        status: 429,
        attempts: x.lastRetry.attempt,
        maxRetries: x.lastRetry.maxRetries,
        message: 'rate_limit',
      },
    ]);
    assert.equal(s.events.result, 0);
    assert.equal(s.costUsd, null);
  });

  it(`${x.files.hookStdin} (a hook input, not a stream) is summarised as unknown`, async () => {
    const s = await inspectFile(rec(x.files.hookStdin));
    assert.equal(s.agent, 'unknown');
  });
}
