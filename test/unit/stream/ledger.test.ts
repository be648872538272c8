import * as assert from 'node:assert/strict';
import { type AgentEvent, type ResultEvent, type TokenCounts, ev } from '../../../src/core/stream/events';
import { TokenLedger, TotalsRollup, iterationTotals, pickWindow } from '../../../src/core/stream/ledger';

const tokens = (input: number, cacheRead = 0, cacheCreation = 0, output = 1): TokenCounts => ({
  input,
  output,
  cacheRead,
  cacheCreation,
});
const usage = (
  id: string | null,
  t: TokenCounts,
  marks: { subagent?: boolean; synthetic?: boolean } = {},
): AgentEvent => ev({ type: 'usage', source: 'message', messageId: id, model: 'claude-sonnet-4-5', tokens: t }, marks);
const result = (over: Partial<ResultEvent> = {}): AgentEvent =>
  ev({
    type: 'result',
    subtype: 'success',
    isError: false,
    text: 'ok',
    errors: [],
    numTurns: 1,
    durationMs: 1,
    costUsd: 0.5,
    usage: tokens(10),
    modelUsage: null,
    apiErrorStatus: null,
    terminalReason: 'completed',
    stopReason: 'end_turn',
    sessionId: 's',
    permissionDenials: 0,
    ...over,
  });
const claudeLedger = (o: Partial<ConstructorParameters<typeof TokenLedger>[0]> = {}): TokenLedger =>
  new TokenLedger({ agent: 'claude', model: 'claude-sonnet-4-5', ...o });

describe('token ledger', () => {
  it('counts the usage of one message id once however many content blocks repeat it', () => {
    const l = claudeLedger();
    for (let i = 0; i < 3; i++) l.apply(usage('msg_1', tokens(1000, 500, 200)));
    assert.deepEqual(l.snapshot().tokens, tokens(1000, 500, 200));
    assert.equal(l.snapshot().apiCalls, 1);
  });

  it('takes context as input + cache creation + cache read of the latest main-thread call', () => {
    const l = claudeLedger();
    l.apply(usage('msg_1', tokens(10, 20_000, 3_000)));
    l.apply(usage('msg_2', tokens(5, 23_000, 1_000)));
    assert.equal(l.snapshot().contextTokens, 24_005);
  });

  it('does not add the input side of successive calls into the context', () => {
    const l = claudeLedger();
    l.apply(usage('msg_1', tokens(1000)));
    l.apply(usage('msg_2', tokens(2000)));
    assert.equal(l.snapshot().contextTokens, 2000);
    assert.equal(l.snapshot().contextPeak, 2000);
  });

  it('never counts subagent usage toward the context, but does count it in the totals', () => {
    const l = claudeLedger();
    l.apply(usage('msg_1', tokens(1000)));
    l.apply(usage('msg_sub', tokens(90_000), { subagent: true }));
    assert.equal(l.snapshot().contextTokens, 1000);
    assert.equal(l.snapshot().tokens.input, 91_000);
  });

  it('never counts synthetic lines toward the context', () => {
    const l = claudeLedger();
    l.apply(usage('msg_1', tokens(1000)));
    l.apply(usage('syn', tokens(0), { synthetic: true }));
    assert.equal(l.snapshot().contextTokens, 1000);
  });

  it('resets the context after a compact boundary, to post_tokens when given', () => {
    const l = claudeLedger();
    l.apply(usage('msg_1', tokens(150_000)));
    l.apply(ev({ type: 'compactBoundary', trigger: 'auto', preTokens: 150_000, postTokens: 12_000 }));
    assert.equal(l.snapshot().contextTokens, 12_000);
    assert.equal(l.snapshot().contextPeak, 150_000);
  });

  it('resets the context to zero after a compact boundary without post_tokens', () => {
    const l = claudeLedger();
    l.apply(usage('msg_1', tokens(150_000)));
    l.apply(ev({ type: 'compactBoundary', trigger: 'manual', preTokens: 150_000, postTokens: null }));
    assert.equal(l.snapshot().contextTokens, 0);
  });

  it('emits warn once per iteration when the context crosses the warn threshold', () => {
    const l = claudeLedger();
    const a = l.apply(usage('msg_1', tokens(149_000)));
    const b = l.apply(usage('msg_2', tokens(150_000)));
    assert.deepEqual(
      a.map((s) => s.type),
      ['warn'],
    );
    assert.deepEqual(b, []);
  });

  it('emits rotate when the context crosses the rotate threshold', () => {
    const l = claudeLedger();
    const s = l.apply(usage('msg_1', tokens(171_000)));
    assert.deepEqual(
      s.map((x) => [x.type, x.threshold]),
      [
        ['warn', 148_750],
        ['rotate', 170_000],
      ],
    );
    assert.equal(l.snapshot().rotated, true);
  });

  it('emits rotate again only after the context fell below it and crossed again', () => {
    const l = claudeLedger();
    l.apply(usage('msg_1', tokens(171_000)));
    assert.deepEqual(l.apply(usage('msg_2', tokens(172_000))), []);
    l.apply(ev({ type: 'compactBoundary', trigger: 'auto', preTokens: 172_000, postTokens: 10_000 }));
    assert.deepEqual(
      l.apply(usage('msg_3', tokens(175_000))).map((x) => x.type),
      ['rotate'],
    );
  });

  it('uses the pinned warn of a [1m] model named by init', () => {
    const l = new TokenLedger({ agent: 'claude' });
    l.apply(
      ev({
        type: 'init',
        sessionId: 's',
        model: 'claude-opus-4-6[1M]',
        cwd: null,
        tools: [],
        permissionMode: null,
        agentVersion: null,
      }),
    );
    assert.deepEqual([l.snapshot().thresholds.warn, l.snapshot().thresholds.rotate], [250_000, 300_000]);
  });

  it('takes the window from the model name when it carries [1m], in any case', () => {
    const l = new TokenLedger({ agent: 'claude', model: 'opus[1M]', contextWindowTokens: 200_000 });
    assert.deepEqual([l.snapshot().contextWindow, l.snapshot().contextWindowSource], [1_000_000, 'model']);
  });

  it('takes the window from the configuration when neither stream nor model tells', () => {
    const l = new TokenLedger({ agent: 'claude', model: 'gateway-model', contextWindowTokens: 128_000 });
    assert.deepEqual([l.snapshot().contextWindow, l.snapshot().contextWindowSource], [128_000, 'config']);
  });

  it('takes the window from the result modelUsage over the model name', () => {
    const l = new TokenLedger({ agent: 'claude', model: 'opus[1m]' });
    l.apply(result({ modelUsage: { opus: { tokens: tokens(5), costUsd: 0.1, contextWindow: 200_000 } } }));
    assert.deepEqual([l.snapshot().contextWindow, l.snapshot().contextWindowSource], [200_000, 'modelUsage']);
  });

  it('picks the main model window in modelUsage, not a side-call model', () => {
    const mu = {
      'claude-haiku-4-5': { tokens: tokens(300), costUsd: 0.001, contextWindow: 200_000 },
      'claude-opus-4-6': { tokens: tokens(90_000), costUsd: 1, contextWindow: 1_000_000 },
    };
    assert.equal(pickWindow(mu, 'claude-opus-4-6[1m]'), 1_000_000);
    assert.equal(pickWindow(mu, null), 1_000_000);
  });

  it('takes iteration totals from the result modelUsage (all calls) once a result arrives', () => {
    const l = claudeLedger();
    l.apply(usage('msg_1', tokens(1000)));
    l.apply(
      result({
        usage: tokens(1000, 0, 0, 50),
        modelUsage: {
          a: { tokens: tokens(1000, 0, 0, 50), costUsd: 0.4, contextWindow: 200_000 },
          b: { tokens: tokens(300, 0, 0, 5), costUsd: 0.1, contextWindow: 200_000 },
        },
      }),
    );
    assert.deepEqual(l.snapshot().tokens, tokens(1300, 0, 0, 55));
    assert.equal(l.snapshot().tokensFromResult, true);
  });

  it('treats several results of one process as cumulative, not as sums', () => {
    const l = claudeLedger();
    l.apply(result({ costUsd: 0.5, usage: tokens(100) }));
    l.apply(result({ costUsd: 0.8, usage: tokens(250) }));
    assert.equal(l.snapshot().costUsd, 0.8);
    assert.equal(l.snapshot().tokens.input, 250);
  });

  it('adds per-call usage seen after the last result to that result', () => {
    const l = claudeLedger();
    l.apply(result({ usage: tokens(100), modelUsage: null }));
    l.apply(usage('msg_9', tokens(40)));
    assert.equal(l.snapshot().tokens.input, 140);
  });

  it('estimates cursor-agent context from bytes: (3000 + read + written + assistant + shell) / 4', () => {
    const l = new TokenLedger({ agent: 'cursor-agent', estimateContext: true });
    l.apply(ev({ type: 'text', text: 'a'.repeat(1000), messageId: null }));
    l.apply(
      ev({
        type: 'toolResult',
        id: '1',
        name: 'read',
        kind: 'read',
        isError: false,
        output: 'r'.repeat(2000),
        exitCode: null,
      }),
    );
    l.apply(
      ev({
        type: 'toolUse',
        id: '2',
        name: 'write',
        kind: 'write',
        input: { path: 'x', fileText: 'w'.repeat(3000) },
        messageId: null,
      }),
    );
    l.apply(
      ev({
        type: 'toolResult',
        id: '3',
        name: 'shell',
        kind: 'shell',
        isError: false,
        output: 's'.repeat(4000),
        exitCode: 0,
      }),
    );
    assert.equal(l.snapshot().contextTokens, (3000 + 1000 + 2000 + 3000 + 4000) / 4);
    assert.equal(l.snapshot().contextEstimated, true);
  });

  it('keeps subagent bytes out of the cursor-agent estimate', () => {
    const l = new TokenLedger({ agent: 'cursor-agent', estimateContext: true });
    l.apply(ev({ type: 'text', text: 'a'.repeat(4000), messageId: null }, { subagent: true }));
    assert.equal(l.snapshot().contextTokens, 750);
    assert.equal(l.snapshot().estimate.subagentChars, 4000);
  });

  it('emits warn and rotate from the byte estimate', () => {
    const l = new TokenLedger({
      agent: 'cursor-agent',
      estimateContext: true,
      thresholds: { rotateThresholdTokens: 1000 },
    });
    const s = l.apply(
      ev({
        type: 'toolResult',
        id: '1',
        name: 'shell',
        kind: 'shell',
        isError: false,
        output: 'x'.repeat(4000),
        exitCode: 0,
      }),
    );
    assert.deepEqual(
      s.map((x) => [x.type, x.estimated]),
      [
        ['warn', true],
        ['rotate', true],
      ],
    );
  });

  it('rolls iteration totals up per task and per run', () => {
    const r = new TotalsRollup();
    r.add('T1', { tokens: tokens(100), costUsd: 0.5 });
    r.add('T1', { tokens: tokens(50), costUsd: 0.25 });
    r.add('T2', iterationTotals(claudeLedger().snapshot()));
    assert.deepEqual([r.task('T1').tokens.input, r.task('T1').costUsd], [150, 0.75]);
    assert.deepEqual([r.run().tokens.input, r.run().costUsd], [150, 0.75]);
  });
});
