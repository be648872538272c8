import * as assert from 'node:assert/strict';
import {
  contextFigure,
  contextText,
  emptyContextTrack,
  reduceContext,
  type ContextEvent,
  type ContextFigure,
} from '../../../src/core/control/contextFigure';
import { emptyRunTokens, reduceRunTokens } from '../../../src/core/control/runTokens';
import { emptyRunView, reduceRunView, statusLineOf } from '../../../src/core/control/runView';
import { formatRunViewLines } from '../../../src/core/control/statusText';
import { ActivityFormatter } from '../../../src/core/control/activityText';
import type { EngineEvent, RunLogEntry } from '../../../src/core/model/runEvent';
import { runHeaderOf } from '../../../src/extension/dashboard/runTrack';
import { gaugeText } from '../../../src/extension/gauge/gaugeText';
import { gaugeRunOf } from '../../../src/extension/runFollowing';

const tokens = (iteration: number, ctx: number, window = 200_000): ContextEvent => ({
  type: 'tokens',
  iteration,
  contextTokens: ctx,
  contextWindow: window,
  warnAt: 148_750,
  rotateAt: 170_000,
});

function reduce(events: ContextEvent[]): ContextFigure | null {
  return events.reduce(reduceContext, emptyContextTrack()).figure;
}

describe('the one context figure (core/control/contextFigure.ts)', () => {
  const table: [string, ContextEvent[], string][] = [
    ['no event: no figure', [], ''],
    ['an agent that ended before its first model call: no figure', [tokens(1, 0), { type: 'runEnded' }], ''],
    ['a tokens event: tokens of the window, whole percent', [tokens(1, 16_200)], '16k/200k 8%'],
    [
      'a window told later (the result’s modelUsage) replaces the configured fallback and is kept',
      [tokens(1, 16_200), tokens(1, 17_000, 1_000_000), { type: 'iterationStarted', iteration: 2 }, tokens(2, 5_000)],
      '5k/1M 1%',
    ],
    [
      'a warn event carries the figure that crossed the line',
      [tokens(1, 140_000), { type: 'warn', iteration: 1, contextTokens: 150_000, threshold: 148_750 }],
      '150k/200k 75%',
    ],
    [
      'an iteration that ended keeps the highest figure it reached (the result reports its last message only)',
      [tokens(1, 90_000), tokens(1, 23_000), { type: 'iterationEnded', iteration: 1 }],
      '90k/200k 45%',
    ],
    [
      'a new iteration keeps the previous figure until it reports',
      [tokens(1, 90_000), { type: 'iterationEnded', iteration: 1 }, { type: 'iterationStarted', iteration: 2 }],
      '90k/200k 45%',
    ],
    [
      'the run ended: the last figure, marked last',
      [tokens(1, 27_000), { type: 'iterationEnded', iteration: 1 }, { type: 'runEnded' }],
      '27k/200k 14% (last)',
    ],
    ['the window unknown: tokens only', [{ ...tokens(1, 1_500), contextWindow: 0 } as ContextEvent], '1.5k'],
  ];
  for (const [name, events, text] of table)
    it(`${name}: "${text}"`, () => assert.equal(contextText(reduce(events)), text));

  it('levels from the marks: ok, warn from the warn mark, rotate from the rotate mark', () => {
    const f = (t: number) => contextFigure({ tokens: t, window: 200_000, warnAt: 148_750, rotateAt: 170_000 }).level;
    assert.deepEqual([f(148_749), f(148_750), f(169_999), f(170_000)], ['ok', 'warn', 'warn', 'rotate']);
  });
});

describe('one context string on every face, at the same moment and after the end', () => {
  const T0 = Date.UTC(2026, 11, 1, 9);
  const item = { source: 'flow-next' as const, id: 'fn-1.1', title: 'Parser' };
  const tok = (ctx: number, window: number): EngineEvent => ({
    type: 'tokens',
    iteration: 1,
    contextTokens: ctx,
    contextWindow: window,
    warnAt: 148_750,
    rotateAt: 170_000,
    totals: { input: 10, output: 20, cacheRead: 30, cacheCreation: 40 },
    costUsd: 0.01,
  });
  // What the demo's log holds: the configured window (200k) during the iteration, the model's (1M) from its result.
  const during: EngineEvent[] = [
    {
      type: 'runStarted',
      runId: 'r1',
      folder: '/ws',
      source: '.flow',
      agent: 'claude',
      maxIterations: 5,
      gates: {},
      maxCostUsd: 0,
      pid: 1,
    },
    { type: 'iterationStarted', iteration: 1, item, attempt: 1, attemptKind: 'first', purpose: 'work' },
    tok(23_200, 200_000),
    tok(16_200, 1_000_000),
  ];
  const after: EngineEvent[] = [
    {
      type: 'iterationEnded',
      iteration: 1,
      ending: 'complete',
      detail: 'd',
      exitCode: 0,
      totals: { tokens: { input: 10, output: 20, cacheRead: 30, cacheCreation: 40 }, costUsd: 0.01 },
    },
    {
      type: 'runEnded',
      state: 'completed',
      reason: 'done',
      completionReason: 'DONE',
      exitCode: 0,
      iterations: 1,
      costUsd: 0.01,
      done: 1,
      total: 1,
    },
  ];

  function faces(events: EngineEvent[]): Record<string, string> {
    let view = emptyRunView('r1');
    let runTokens = emptyRunTokens();
    const formatter = new ActivityFormatter(0, () => 0);
    const activity: string[] = [];
    events.forEach((e, i) => {
      const entry = { ...e, seq: i + 1, at: new Date(T0 + i * 1000).toISOString(), lane: 0 } as RunLogEntry;
      view = reduceRunView(view, entry);
      runTokens = reduceRunTokens(runTokens, entry);
      activity.push(...formatter.format(e));
    });
    return {
      gauge: gaugeText(gaugeRunOf(view, runTokens, 'ws')),
      dashboard: runHeaderOf(view, '/ws', { startedHere: true, live: true }).context.text ?? '',
      status: formatRunViewLines(view).join('\n'),
      watch: statusLineOf(view),
      activityLog: activity.filter((l) => l.startsWith('TOKENS')).at(-1) ?? '',
    };
  }

  it('shows "16k/1M 2%" during the run on the gauge, the dashboard header, status, watch and the activity log', () => {
    for (const [face, s] of Object.entries(faces(during))) {
      assert.ok(s.includes('16k/1M 2%'), `${face}: ${s}`);
      assert.ok(!/\d+ \/ \d+ \(/.test(s), `${face} divides by the rotate mark: ${s}`);
    }
  });

  it('keeps "23k/1M 2% (last)" after the end on the gauge, the dashboard header and watch; status and the log agree', () => {
    const seen = faces([...during, ...after]);
    for (const face of ['gauge', 'dashboard', 'watch'])
      assert.ok(seen[face]!.includes('23k/1M 2% (last)'), `${face}: ${seen[face]}`);
    assert.ok(seen.activityLog!.includes('23k/1M 2%'), seen.activityLog);
  });
});
