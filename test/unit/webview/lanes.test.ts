import * as assert from 'node:assert/strict';
import type { LaneRow } from '../../../src/protocol/dashboard';
import { chartColumns, laneChartData, tokenAxisMax } from '../../../webview/model/chartData';
import {
  hasRemoteLanes,
  laneColorVar,
  laneDisplayOf,
  lanesSummaryOf,
  workersTextOf,
} from '../../../webview/model/lanes';
import { initialPageState, reducePage } from '../../../webview/model/pageState';
import { hostSamples, lanes } from '../../support/dashboardSamples';

const row = (over: Partial<LaneRow>): LaneRow => ({ ...lanes[0]!, ...over });
const ctx = (tokens: number) => ({ tokens, window: 200_000, warnAt: 140_000, rotateAt: 160_000 });

describe('the page lanes', () => {
  const table: { name: string; lane: LaneRow; want: Partial<ReturnType<typeof laneDisplayOf>> }[] = [
    {
      name: 'a working lane below warn',
      lane: row({ context: ctx(50_000) }),
      want: {
        item: 'US-1 Login form',
        attempt: '1 of 3',
        iteration: '4',
        state: 'working',
        percent: 25,
        warnPercent: 70,
        rotatePercent: 80,
        level: 'ok',
        contextText: '50k / 200k (25%)',
      },
    },
    {
      // A 1M-token window with the marks at 7/8 and all of it: drawn at 87.5 % and 100 % of the bar, not of 200k.
      name: 'a 1M window: warn at 87.5 %, rotate at 100 % of its bar',
      lane: row({ context: { tokens: 16_000, window: 1_000_000, warnAt: 875_000, rotateAt: 1_000_000 } }),
      want: { percent: 1.6, warnPercent: 87.5, rotatePercent: 100, level: 'ok', contextText: '16k / 1M (2%)' },
    },
    {
      name: "a 1M window with Claude's [1m] marks (warn 250k, rotate 300k)",
      lane: row({ context: { tokens: 260_000, window: 1_000_000, warnAt: 250_000, rotateAt: 300_000 } }),
      want: { percent: 26, warnPercent: 25, rotatePercent: 30, level: 'warn', contextText: '260k / 1M (26%)' },
    },
    { name: 'the agent of its iteration', lane: row({ agent: 'gemini' }), want: { agent: 'gemini' } },
    { name: 'no agent started yet', lane: row({ agent: null }), want: { agent: '—' } },
    { name: 'a remote lane names its worker', lane: row({ worker: 'build1:41' }), want: { worker: 'build1:41' } },
    { name: 'a lane on this machine has no worker', lane: row({}), want: { worker: '—' } },
    { name: 'from the warn line', lane: row({ context: ctx(140_000) }), want: { level: 'warn' } },
    { name: 'from the rotate line', lane: row({ context: ctx(160_000) }), want: { level: 'rotate' } },
    { name: 'over the window the bar stops at 100', lane: row({ context: ctx(260_000) }), want: { percent: 100 } },
    {
      name: 'no context figure: no gauge',
      lane: row({ context: { tokens: 0, window: 0, warnAt: 0, rotateAt: 0 } }),
      want: { percent: 0, level: 'none', contextText: '—' },
    },
    {
      name: 'an idle lane says how its last iteration ended',
      lane: row({ activity: 'idle', lastEnding: 'rotation' }),
      want: { state: 'idle (last: rotation)' },
    },
    { name: 'a lane at a gate', lane: row({ activity: 'gate' }), want: { state: 'at a gate' } },
    {
      name: 'a lane waiting on its question',
      lane: row({ activity: 'waiting' }),
      want: { state: 'waiting for an answer' },
    },
    {
      name: 'a review lane has no item and no attempt',
      lane: row({ item: null, purpose: 'review', attempt: 0, maxAttempts: null }),
      want: { item: 'final review', attempt: '—' },
    },
    { name: 'an attempt without a known limit', lane: row({ attempt: 2, maxAttempts: null }), want: { attempt: '2' } },
    {
      name: 'a lane before its first iteration',
      lane: row({ item: null, purpose: null, attempt: 0, iteration: null, activity: 'idle', lastEnding: null }),
      want: { item: '—', iteration: '—', state: 'idle' },
    },
  ];
  for (const t of table) {
    it(t.name, () => {
      const d = laneDisplayOf(t.lane);
      assert.deepEqual(Object.fromEntries(Object.keys(t.want).map((k) => [k, d[k as keyof typeof d]])), t.want);
    });
  }

  it('has a Worker column only when a lane runs on a worker; says the workers alive', () => {
    assert.equal(hasRemoteLanes(lanes), false);
    assert.equal(hasRemoteLanes([...lanes, row({ lane: 4, worker: 'build2:7' })]), true);
    assert.equal(workersTextOf([{ id: 'build1:41' }, { id: 'build2:7' }]), '2 alive: build1:41, build2:7');
    assert.equal(workersTextOf([]), 'none alive');
  });

  it("tops the chart's context axis above both marks, for a 200k and a 1M window", () => {
    assert.equal(tokenAxisMax(16_000, 148_750, 170_000), 178_500);
    assert.equal(tokenAxisMax(16_000, 875_000, 1_000_000), 1_050_000);
    assert.equal(tokenAxisMax(1_200_000, 875_000, 1_000_000), 1_200_000);
    assert.equal(tokenAxisMax(0, 875_000, 0), 918_750, 'a warn mark alone is drawn too');
    assert.equal(tokenAxisMax(0, 0, 0), 1);
  });

  it('sums the lanes up by what they do', () => {
    assert.equal(lanesSummaryOf(lanes), '3 lanes: 1 working, 1 at a gate, 1 waiting');
    assert.equal(lanesSummaryOf([row({ activity: 'idle' })]), '1 lane: 1 idle');
    assert.equal(lanesSummaryOf([]), '0 lanes');
  });

  it("charts one context line per lane, null where a point is another lane's, one cost line", () => {
    const pts = [
      { iteration: 1, at: 1_000, contextTokens: 10, costUsd: 0.1, lane: 1 },
      { iteration: 2, at: 2_000, contextTokens: 20, costUsd: 0.2, lane: 2 },
      { iteration: 2, at: 2_000, contextTokens: 25, costUsd: 0.25, lane: 1 },
      { iteration: 3, at: 3_000, contextTokens: 30, costUsd: 0.3, lane: 2 },
    ];
    assert.deepEqual(laneChartData(pts), {
      lanes: [1, 2],
      data: [
        [1, 2, 3],
        [10, 25, null],
        [null, 20, 30],
        [0.1, 0.25, 0.3],
      ],
    });
  });

  it('charts the sequential run (lane 0, no lane field) exactly as before', () => {
    const pts = [
      { iteration: 1, at: 1_000, contextTokens: 10, costUsd: 0.1 },
      { iteration: 1, at: 1_000, contextTokens: 12, costUsd: 0.1 },
      { iteration: 2, at: 3_000, contextTokens: 5, costUsd: 0.3, rotated: true },
    ];
    const { lanes, data } = laneChartData(pts);
    assert.deepEqual([lanes, data], [[0], chartColumns(pts)]);
    assert.deepEqual(laneChartData([]), { lanes: [], data: [[], []] });
  });

  it("gives each lane the colour of its chart line, never the cost line's green", () => {
    assert.deepEqual([0, 1, 2, 3, 4, 5].map(laneColorVar), [
      '--vscode-charts-blue',
      '--vscode-charts-blue',
      '--vscode-charts-purple',
      '--vscode-charts-orange',
      '--vscode-foreground',
      '--vscode-charts-blue',
    ]);
  });

  it('takes the lanes of a snapshot and replaces them with a lanes op', () => {
    let s = reducePage(initialPageState(), hostSamples[0]!).state;
    assert.deepEqual(
      s.data.lanes.map((l) => l.lane),
      [1, 2, 3],
    );
    s = reducePage(s, { type: 'update', seq: 2, ops: [{ op: 'lanes', lanes: [row({ lane: 7 })] }] }).state;
    assert.deepEqual(
      s.data.lanes.map((l) => l.lane),
      [7],
    );
    s = reducePage(s, { type: 'update', seq: 3, ops: [{ op: 'lanes', lanes: [] }] }).state;
    assert.deepEqual(s.data.lanes, []);
  });
});
