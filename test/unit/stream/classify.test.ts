import * as assert from 'node:assert/strict';
import { type AgentEvent, type ResultEvent, ev } from '../../../src/core/stream/events';
import { OutcomeTracker, classifyStatus, classifyText } from '../../../src/core/stream/classify';

const result = (over: Partial<ResultEvent> = {}): AgentEvent =>
  ev({
    type: 'result',
    subtype: 'success',
    isError: false,
    text: 'done',
    errors: [],
    numTurns: 1,
    durationMs: 1,
    costUsd: 0,
    usage: null,
    modelUsage: null,
    apiErrorStatus: null,
    terminalReason: null,
    stopReason: null,
    sessionId: null,
    permissionDenials: 0,
    ...over,
  });
const classify = (events: AgentEvent[], exit?: { exitCode: number | null; signal: string | null; stderr: string }) => {
  const t = new OutcomeTracker();
  for (const e of events) t.apply(e);
  return t.classify(exit);
};

describe('outcome classification', () => {
  it('a result without error is success', () => {
    assert.equal(classify([result()]).kind, 'success');
  });

  it('a rejected rate_limit_event is rate-limited, with its reset time', () => {
    const o = classify([
      ev({
        type: 'rateLimit',
        status: 'rejected',
        resetsAt: 1_778_565_600_000,
        limitType: 'five_hour',
        utilization: 1,
        overageStatus: 'rejected',
      }),
      result({ isError: true, text: "You've hit your limit · resets 2pm" }),
    ]);
    assert.deepEqual([o.kind, o.resetsAt, o.evidence], ['rateLimited', 1_778_565_600_000, 'rate_limit_event']);
  });

  it('an allowed rate_limit_event on a successful run is not a limit', () => {
    assert.equal(
      classify([
        ev({
          type: 'rateLimit',
          status: 'allowed',
          resetsAt: 1,
          limitType: 'five_hour',
          utilization: null,
          overageStatus: 'rejected',
        }),
        result({ text: '' }),
      ]).kind,
      'success',
    );
  });

  it('an error result with api_error_status 429 is rate-limited', () => {
    assert.equal(
      classify([result({ isError: true, apiErrorStatus: 429, text: 'API Error: Request rejected (429)' })]).kind,
      'rateLimited',
    );
  });

  it('an error result with api_error_status 529 is transient', () => {
    assert.equal(
      classify([result({ isError: true, apiErrorStatus: 529, text: 'API Error: Repeated 529 Overloaded errors' })])
        .kind,
      'transient',
    );
  });

  it('an error result with another 5xx status is transient', () => {
    assert.equal(classify([result({ isError: true, apiErrorStatus: 500 })]).kind, 'transient');
  });

  it('an error result with status 401 is fatal', () => {
    assert.equal(
      classify([result({ isError: true, apiErrorStatus: 401, text: 'Failed to authenticate. API Error: 401' })]).kind,
      'fatal',
    );
  });

  it('a synthetic assistant error code decides when the result has no status', () => {
    const o = classify([
      ev({ type: 'error', message: 'API Error', code: 'overloaded', status: null }, { synthetic: true }),
      result({ isError: true }),
    ]);
    assert.equal(o.kind, 'transient');
  });

  it("recognises today's limit wording in the result text", () => {
    const o = classify([result({ isError: true, text: "You've hit your limit · resets 8pm (America/New_York)" })]);
    assert.deepEqual([o.kind, o.evidence, o.spend], ['rateLimited', 'text', false]);
  });

  it('reads the epoch of the 2025 "usage limit reached|<epoch>" form as the reset time', () => {
    const o = classify([result({ isError: true, text: 'Claude AI usage limit reached|1755615600' })]);
    assert.deepEqual([o.kind, o.resetsAt], ['rateLimited', 1_755_615_600_000]);
  });

  it('marks a spend limit as one that does not resume by itself', () => {
    assert.equal(classify([result({ isError: true, text: "You've hit your monthly spend limit" })]).spend, true);
  });

  it('an invalid API key is fatal', () => {
    assert.equal(classify([result({ isError: true, text: 'Invalid API key · Fix external API key' })]).kind, 'fatal');
  });

  it('a throttle that says it is not your usage limit is transient', () => {
    assert.equal(
      classifyText('API Error: Server is temporarily limiting requests (not your usage limit)')?.kind,
      'transient',
    );
  });

  it('never reads tool results: a file mentioning "rate limit" does not stop the loop', () => {
    const toolResult = ev({
      type: 'toolResult',
      id: 't',
      name: 'Read',
      kind: 'read',
      isError: false,
      output: "You've hit your limit · rate limit 429 quota exceeded",
      exitCode: null,
    });
    assert.equal(classify([toolResult, result()]).kind, 'success');
    assert.equal(classify([toolResult], { exitCode: 143, signal: null, stderr: '' }).kind, 'noResult');
  });

  it('error_max_turns is an agent error, not a retryable failure', () => {
    const o = classify([
      result({
        subtype: 'error_max_turns',
        isError: true,
        text: null,
        errors: ['Reached maximum number of turns (1)'],
      }),
    ]);
    assert.deepEqual([o.kind, o.reason], ['error', 'Reached maximum number of turns (1)']);
  });

  it('an old error subtype with is_error false is still an error', () => {
    assert.equal(classify([result({ subtype: 'error_max_turns', isError: false })]).kind, 'error');
  });

  it('no result and nothing said is noResult, naming the exit', () => {
    const o = classify([], { exitCode: null, signal: 'SIGTERM', stderr: '' });
    assert.deepEqual([o.kind, o.reason], ['noResult', 'no result (killed by SIGTERM)']);
  });

  it('keeps the last api_retry as context: it is a heartbeat, not a failure', () => {
    const o = classify(
      [ev({ type: 'apiRetry', attempt: 9, maxRetries: 10, delayMs: 1000, status: 429, error: 'rate_limit' })],
      { exitCode: 124, signal: null, stderr: '' },
    );
    assert.equal(o.kind, 'noResult');
    assert.deepEqual(o.lastApiRetry, { attempt: 9, maxRetries: 10, status: 429, error: 'rate_limit' });
  });

  it('classifies a cursor-agent failure from stderr, skipping JSON mirrors of events', () => {
    const stderr =
      '{"type":"assistant","message":{"content":"rate limit"}}\nError: Authentication required. Please run `cursor-agent login`\n';
    assert.equal(classify([], { exitCode: 1, signal: null, stderr }).kind, 'fatal');
  });

  it("the Claude CLI's refusal to run as root (stderr, exit 1, no stream) is fatal and names the cause and the fix", () => {
    const o = classify([], {
      exitCode: 1,
      signal: null,
      stderr: '--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons\n',
    });
    assert.equal(o.kind, 'fatal');
    assert.equal(o.evidence, 'stderr');
    assert.match(o.reason, /as root/);
    assert.match(o.reason, /non-root\) user/);
    assert.match(o.reason, /IS_SANDBOX=1/);
  });

  it('other stderr on an exit 1 without a result is not taken for the root refusal', () => {
    const o = classify([], { exitCode: 1, signal: null, stderr: 'Error: something else went wrong as root\n' });
    assert.equal(o.kind, 'noResult');
    assert.doesNotMatch(o.reason, /IS_SANDBOX/);
  });

  it('maps HTTP statuses to kinds', () => {
    assert.deepEqual(
      [429, 529, 503, 401, 403, 400, null].map((s) => classifyStatus(s)),
      ['rateLimited', 'transient', 'transient', 'fatal', 'fatal', null, null],
    );
  });
});
