import * as assert from 'node:assert/strict';
import {
  emptyRunTokens,
  ITERATION_TOKENS_KEPT,
  reduceRunTokens,
  type RunTokens,
} from '../../../src/core/control/runTokens';
import type { EngineEvent, RunLogEntry } from '../../../src/core/model/runEvent';

function fold(events: EngineEvent[], from: RunTokens = emptyRunTokens(), seq0 = 0): RunTokens {
  return events.reduce(
    (t, e, i) =>
      reduceRunTokens(t, { ...e, seq: seq0 + i + 1, at: '2026-12-01T09:00:00.000Z', lane: 0 } as RunLogEntry),
    from,
  );
}
const tk = (input: number, output: number, cacheRead = 0, cacheCreation = 0) => ({
  input,
  output,
  cacheRead,
  cacheCreation,
});
const start = (n: number): EngineEvent => ({
  type: 'iterationStarted',
  iteration: n,
  item: { source: 'quantum', id: `US-${n}`, title: '' },
  attempt: 1,
  attemptKind: 'first',
  purpose: 'work',
});
const tokens = (n: number, ctx: number, t = tk(10, 20, ctx)): EngineEvent => ({
  type: 'tokens',
  iteration: n,
  contextTokens: ctx,
  contextWindow: 200_000,
  rotateAt: 170_000,
  warnAt: 148_750,
  totals: t,
  costUsd: 0.1,
});
const end = (n: number, t = tk(100, 200, 1000, 50), costUsd = 0.5): EngineEvent => ({
  type: 'iterationEnded',
  iteration: n,
  ending: 'natural',
  detail: '',
  totals: { tokens: t, costUsd },
  exitCode: 0,
});

describe('token counts per iteration and per run from the run log', () => {
  it("takes an iteration's latest tokens event, then its end totals, and sums the run", () => {
    const t = fold([start(1), tokens(1, 5000), tokens(1, 9000), end(1), start(2), tokens(2, 3000, tk(1, 2, 3, 4))]);
    assert.deepEqual(
      t.iterations.map((i) => [i.iteration, i.itemId, i.tokens, i.costUsd, i.ended]),
      [
        [1, 'US-1', tk(100, 200, 1000, 50), 0.5, true],
        [2, 'US-2', tk(1, 2, 3, 4), 0.1, false],
      ],
    );
    assert.deepEqual(t.total, tk(101, 202, 1003, 54));
  });
  it('keeps the context a warn or rotate event reports (the engine rate-limits tokens events)', () => {
    const t = fold([
      start(1),
      tokens(1, 21_000),
      { type: 'warn', iteration: 1, contextTokens: 150_000, threshold: 148_750 },
    ]);
    assert.deepEqual(t.contexts, [
      { lane: 0, iteration: 1, tokens: 150_000, window: 200_000, warnAt: 148_750, rotateAt: 170_000 },
    ]);
    const r = fold([{ type: 'rotate', iteration: 1, contextTokens: 172_000, threshold: 170_000 }], t, 10);
    assert.equal(r.contexts[0]!.tokens, 172_000);
    assert.deepEqual(fold([start(2)], r, 20).contexts, [], 'a new iteration starts without figures');
  });
  it('keeps the highest context of an iteration once it ended (the closing result reports its last message only)', () => {
    const closing: EngineEvent = {
      type: 'tokens',
      iteration: 1,
      contextTokens: 100,
      contextWindow: 1_000_000,
      rotateAt: 170_000,
      warnAt: 148_750,
      totals: tk(1, 1),
      costUsd: 0.2,
    };
    const t = fold([start(1), tokens(1, 42_000), closing]);
    assert.equal(t.contexts[0]!.tokens, 100, 'live: the latest figure');
    assert.deepEqual(fold([end(1)], t, 10).contexts, [
      { lane: 0, iteration: 1, tokens: 42_000, window: 200_000, warnAt: 148_750, rotateAt: 170_000 },
    ]);
  });
  it('names the agent of each iteration from its agentStarted (a failover shows which agent ran which)', () => {
    const t = fold([
      start(1),
      { type: 'agentStarted', iteration: 1, agent: 'claude', pid: 1, command: 'claude -p' },
      start(2),
      { type: 'agentStarted', iteration: 2, agent: 'codex', pid: 2, command: 'codex exec' },
      start(3),
      { type: 'agentStarted', iteration: 3, pid: 3, command: 'an old log without the name' },
    ]);
    assert.deepEqual(
      t.iterations.map((i) => [i.iteration, i.agent]),
      [
        [1, 'claude'],
        [2, 'codex'],
        [3, null],
      ],
    );
  });
  it('ignores entries it has already applied (a replayed log)', () => {
    const t = fold([start(1), tokens(1, 5000)]);
    assert.equal(fold([start(1), tokens(1, 9000)], t), t);
  });
  it(`lists the last ${ITERATION_TOKENS_KEPT} iterations and sums older ones, the run total unchanged`, () => {
    const events = Array.from({ length: ITERATION_TOKENS_KEPT + 5 }, (_, i) => [
      start(i + 1),
      end(i + 1, tk(1, 1), 0.01),
    ]).flat();
    const t = fold(events);
    assert.equal(t.iterations.length, ITERATION_TOKENS_KEPT);
    assert.equal(t.iterations[0]!.iteration, 6);
    assert.equal(t.older.count, 5);
    assert.deepEqual(t.older.tokens, tk(5, 5));
    assert.deepEqual(t.total, tk(ITERATION_TOKENS_KEPT + 5, ITERATION_TOKENS_KEPT + 5));
  });
});
