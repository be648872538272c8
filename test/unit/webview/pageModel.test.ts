import * as assert from 'node:assert/strict';
import { PROTOCOL_VERSION, type HostMessage, type RunHeader, type RunState } from '../../../src/protocol/dashboard';
import { chartColumns, LONE_POINT_SPAN_S, rotationMarks, timeRangeOf } from '../../../webview/model/chartData';
import { enabledControls } from '../../../webview/model/controls';
import { formatDuration, formatTokens, formatUsd } from '../../../webview/model/format';
import { initialPageState, reducePage } from '../../../webview/model/pageState';
import { nextSort, sortTasks } from '../../../webview/model/tasks';
import { header, hostSamples } from '../../support/dashboardSamples';

const snapshot = hostSamples[0] as Extract<HostMessage, { type: 'snapshot' }>;
const update = (seq: number) => ({
  type: 'update' as const,
  seq,
  ops: [{ op: 'log' as const, lines: [{ n: seq, at: seq, kind: 'loop' as const, text: `u${seq}` }], total: seq }],
});

describe('the page state', () => {
  it('takes a snapshot whole and resets the log', () => {
    const { state, effects } = reducePage(initialPageState(), snapshot);
    assert.equal(state.seq, 1);
    assert.equal(state.data.run?.runId, 'r1');
    assert.deepEqual(
      effects.map((e) => e.kind),
      ['resetLog'],
    );
  });

  it('applies the next numbered update and appends its log lines', () => {
    const s1 = reducePage(initialPageState(), snapshot).state;
    const { state, effects } = reducePage(s1, update(2));
    assert.equal(state.seq, 2);
    assert.equal(state.data.logTotal, 2);
    assert.deepEqual(effects, [{ kind: 'appendLog', lines: [{ n: 2, at: 2, kind: 'loop', text: 'u2' }] }]);
  });

  it('asks once for a new snapshot on a gap and ignores updates until it comes', () => {
    const s1 = reducePage(initialPageState(), snapshot).state;
    const gap = reducePage(s1, update(4));
    assert.deepEqual(gap.effects, [{ kind: 'resync', lastSeq: 1 }]);
    assert.equal(gap.state.seq, 1);
    const after = reducePage(gap.state, update(5));
    assert.deepEqual(after.effects, []);
    const fresh = reducePage(after.state, { ...snapshot, seq: 9 });
    assert.equal(fresh.state.awaitingSnapshot, false);
    assert.equal(reducePage(fresh.state, update(10)).state.seq, 10);
  });

  it('asks for a snapshot when an update comes before any', () => {
    assert.deepEqual(reducePage(initialPageState(), update(3)).effects, [{ kind: 'resync', lastSeq: null }]);
  });

  it('ignores a stale update', () => {
    const s2 = reducePage(reducePage(initialPageState(), snapshot).state, update(2)).state;
    const r = reducePage(s2, update(2));
    assert.equal(r.state, s2);
    assert.deepEqual(r.effects, []);
  });

  it('upserts tasks and gates by their keys, and replaces the header and the run list', () => {
    let s = reducePage(initialPageState(), snapshot).state;
    const task = { ...s.data.tasks[0]!, iterations: 2 };
    const gate = { ...s.data.gates[0]!, id: 'g2' };
    s = reducePage(s, {
      type: 'update',
      seq: 2,
      ops: [
        { op: 'task', task },
        { op: 'gate', gate },
        { op: 'run', run: { ...header, iteration: 3 } },
        { op: 'runs', runs: [], pinnedRunId: 'r0' },
      ],
    }).state;
    assert.equal(s.data.tasks.length, 1);
    assert.equal(s.data.tasks[0]!.iterations, 2);
    assert.deepEqual(
      s.data.gates.map((g) => g.id),
      ['g1', 'g2'],
    );
    assert.equal(s.data.run?.iteration, 3);
    assert.equal(s.data.pinnedRunId, 'r0');
  });

  it('passes a reveal on as an effect', () => {
    assert.deepEqual(reducePage(initialPageState(), { type: 'reveal', itemId: 'T2' }).effects, [
      { kind: 'reveal', itemId: 'T2' },
    ]);
    assert.equal(snapshot.v, PROTOCOL_VERSION);
  });
});

describe('the header controls', () => {
  const at = (state: RunState, over: Partial<RunHeader> = {}) => enabledControls({ ...header, state, ...over });
  const on = (c: Record<string, boolean>) =>
    Object.keys(c)
      .filter((k) => c[k])
      .join(' ');
  const table: [string, Record<string, boolean>, string][] = [
    ['no run', enabledControls(null), 'start'],
    ["this window's running run", at('running'), 'pause stop cancel'],
    ['a running run started in a terminal', at('running', { ownedByThisWindow: false }), 'pause stop'],
    ['a paused run', at('paused'), 'resume stop cancel'],
    ['a run waiting for an answer', at('waiting'), 'pause stop cancel'],
    ['a deferred run', at('deferred', { ownedByThisWindow: false }), 'pause stop'],
    ['a stopping run', at('stopping'), 'cancel'],
    ['a completed run', at('completed', { live: false }), 'start'],
    ['a failed run', at('failed', { live: false }), 'start'],
    ['a past run shown from its log', at('running', { live: false }), 'start'],
  ];
  for (const [what, controls, expected] of table)
    it(`enables "${expected}" for ${what}`, () => assert.equal(on(controls), expected));
});

describe('the cost per task table', () => {
  const t = (itemId: string, costUsd: number, iterations = 1) => ({
    itemId,
    title: itemId,
    iterations,
    input: 0,
    output: 0,
    cacheRead: 0,
    cacheCreation: 0,
    costUsd,
  });
  it('sorts by a column both ways, ties by item id in natural order', () => {
    const tasks = [t('T10', 1), t('T2', 3), t('T1', 1)];
    assert.deepEqual(
      sortTasks(tasks, { key: 'costUsd', descending: true }).map((x) => x.itemId),
      ['T2', 'T1', 'T10'],
    );
    assert.deepEqual(
      sortTasks(tasks, { key: 'itemId', descending: false }).map((x) => x.itemId),
      ['T1', 'T2', 'T10'],
    );
  });
  it('flips the direction on the same column and sorts numbers largest first on another', () => {
    assert.deepEqual(nextSort({ key: 'costUsd', descending: true }, 'costUsd'), { key: 'costUsd', descending: false });
    assert.deepEqual(nextSort({ key: 'itemId', descending: false }, 'iterations'), {
      key: 'iterations',
      descending: true,
    });
  });
});

describe('the token chart data', () => {
  it('gives increasing seconds, context and cost columns, and the rotation marks', () => {
    const pts = [
      { iteration: 1, at: 1_000, contextTokens: 10, costUsd: 0.1 },
      { iteration: 1, at: 1_000, contextTokens: 20, costUsd: 0.2 },
      { iteration: 2, at: 3_000, contextTokens: 5, costUsd: 0.3, rotated: true },
    ];
    assert.deepEqual(chartColumns(pts), [
      [1, 3],
      [20, 5],
      [0.2, 0.3],
    ]);
    assert.deepEqual(rotationMarks(pts), [3]);
  });
});

describe('the token chart time range', () => {
  const table: [string, number[], [number, number]][] = [
    ["the data's own range for two points or more", [1_000, 1_200, 1_600], [1_000, 1_600]],
    ['a minute around a lone point (not years)', [1_000], [1_000 - LONE_POINT_SPAN_S, 1_000 + LONE_POINT_SPAN_S]],
    [
      'a minute around points in the same second',
      [1_000, 1_000.5],
      [1_000 - LONE_POINT_SPAN_S, 1_000.5 + LONE_POINT_SPAN_S],
    ],
    ['the last minute when there is no point', [], [5_000 - 2 * LONE_POINT_SPAN_S, 5_000]],
  ];
  for (const [what, xs, want] of table) it(what, () => assert.deepEqual(timeRangeOf(xs, 5_000), want));
});

describe('the page formats', () => {
  it('writes tokens, dollars and durations briefly', () => {
    assert.deepEqual([999, 1_500, 14_200, 142_000, 1_500_000].map(formatTokens), [
      '999',
      '1.5k',
      '14k',
      '142k',
      '1.5M',
    ]);
    assert.deepEqual([1.234, 0.0042, 0].map(formatUsd), ['$1.23', '$0.0042', '$0.00']);
    assert.deepEqual([850, 12_300, 245_000, 7_380_000].map(formatDuration), ['850 ms', '12.3 s', '4m 05s', '2h 03m']);
  });
});
