import * as assert from 'node:assert/strict';
import { runViewOf, type RunView } from '../../../../src/core/control/runView';
import type { EngineEvent, RunLogEntry } from '../../../../src/core/model/runEvent';
import {
  coalesceOps,
  laneRowsOf,
  liveCostOf,
  logKindOfText,
  RunTrack,
  runHeaderOf,
  taskCostsOf,
} from '../../../../src/extension/dashboard/runTrack';
import { lanes as sampleLanes } from '../../../support/dashboardSamples';

const T0 = Date.UTC(2026, 11, 1, 9, 0, 0);
const A = { source: 'quantum' as const, id: 'US-1', title: 'Login' };
const B = { source: 'quantum' as const, id: 'US-2', title: 'Signup' };
type Ev = EngineEvent | [number, EngineEvent];
function log(events: Ev[]): RunLogEntry[] {
  return events.map((e, i) => {
    const [lane, ev] = Array.isArray(e) ? e : [0, e];
    return { ...ev, seq: i + 1, at: new Date(T0 + i * 1000).toISOString(), lane } as RunLogEntry;
  });
}
const view = (...events: Ev[]): RunView => runViewOf('r1', log(events));
const started: EngineEvent = {
  type: 'runStarted',
  runId: 'r1',
  folder: '/ws',
  source: 'quantum',
  agent: 'claude',
  maxIterations: 25,
  gates: {},
  maxCostUsd: 0,
  pid: 1,
};
const at = (n: number, item: typeof A): EngineEvent => ({
  type: 'iterationStarted',
  iteration: n,
  item,
  attempt: 1,
  attemptKind: 'first',
  purpose: 'work',
  maxAttempts: 3,
});
const tok = (n: number, ctx: number, t: number[], cost: number | null): EngineEvent => ({
  type: 'tokens',
  iteration: n,
  contextTokens: ctx,
  contextWindow: 200_000,
  warnAt: 140_000,
  rotateAt: 160_000,
  totals: { input: t[0]!, output: t[1]!, cacheRead: t[2]!, cacheCreation: t[3]! },
  costUsd: cost,
});
const end = (n: number, t: number[], cost: number): EngineEvent => ({
  type: 'iterationEnded',
  iteration: n,
  ending: 'natural',
  detail: 'd',
  totals: { tokens: { input: t[0]!, output: t[1]!, cacheRead: t[2]!, cacheCreation: t[3]! }, costUsd: cost },
  exitCode: 0,
});
const tasks = (v: RunView) =>
  taskCostsOf(v).map((t) => [t.itemId, t.iterations, t.input, t.output, t.cacheRead, t.cacheCreation, t.costUsd]);

describe('the dashboard run track: lanes and tokens per task', () => {
  const table: { name: string; events: Ev[]; expect: (v: RunView) => unknown; want: unknown }[] = [
    {
      name: 'a task row has the tokens of its ended iterations',
      events: [started, at(1, A), end(1, [10, 20, 30, 40], 0.5), at(2, A), end(2, [1, 2, 3, 4], 0.25)],
      expect: tasks,
      want: [['US-1', 2, 11, 22, 33, 44, 0.75]],
    },
    {
      name: 'a running iteration adds its figures so far to its task (not its iteration count)',
      events: [started, at(1, A), end(1, [10, 20, 30, 40], 0.5), at(2, A), tok(2, 5000, [1, 1, 1, 1], 0.1)],
      expect: tasks,
      want: [['US-1', 1, 11, 21, 31, 41, 0.6]],
    },
    {
      name: 'a task first seen running has a row at once',
      events: [started, [1, at(1, A)], [1, tok(1, 5000, [7, 8, 9, 10], null)]],
      expect: tasks,
      want: [['US-1', 0, 7, 8, 9, 10, 0]],
    },
    {
      name: 'two lanes at two tasks put each figure on its own task',
      events: [
        started,
        [1, at(1, A)],
        [2, at(2, B)],
        [2, end(2, [2, 2, 2, 2], 0.2)],
        [1, tok(1, 9, [5, 5, 5, 5], 0.05)],
      ],
      expect: tasks,
      want: [
        ['US-2', 1, 2, 2, 2, 2, 0.2],
        ['US-1', 0, 5, 5, 5, 5, 0.05],
      ],
    },
    {
      name: "the live cost adds every working lane's iteration so far",
      events: [
        started,
        [1, at(1, A)],
        [2, at(2, B)],
        [1, tok(1, 9, [0, 0, 0, 0], 0.25)],
        [2, tok(2, 9, [0, 0, 0, 0], 0.5)],
      ],
      expect: (v) => [liveCostOf(v), runHeaderOf(v, '/ws', { startedHere: false, live: true }).costUsd],
      want: [0.75, 0.75],
    },
    {
      name: 'one lane row per lane: item, agent, attempt, iteration, context, running cost, state',
      events: [
        started,
        [1, at(1, A)],
        [2, at(2, B)],
        [1, { type: 'agentStarted', iteration: 1, agent: 'codex', pid: 7, command: 'codex exec' }],
        [1, tok(1, 150_000, [0, 0, 0, 0], 0.3)],
        [2, end(2, [0, 0, 0, 0], 0.1)],
      ],
      expect: laneRowsOf,
      want: [
        {
          lane: 1,
          activity: 'agent',
          purpose: 'work',
          item: { id: 'US-1', title: 'Login' },
          attempt: 1,
          maxAttempts: 3,
          iteration: 1,
          context: { tokens: 150_000, window: 200_000, warnAt: 140_000, rotateAt: 160_000 },
          costUsd: 0.3,
          lastEnding: null,
          agent: 'codex',
        },
        {
          lane: 2,
          activity: 'idle',
          purpose: 'work',
          item: { id: 'US-2', title: 'Signup' },
          attempt: 1,
          maxAttempts: 3,
          iteration: 2,
          context: { tokens: 0, window: 0, warnAt: 0, rotateAt: 0 },
          costUsd: 0,
          lastEnding: 'natural',
          agent: null,
        },
      ],
    },
    {
      name: 'a finished run shows no context on any lane',
      events: [
        started,
        [1, at(1, A)],
        [1, tok(1, 150_000, [0, 0, 0, 0], 0.3)],
        {
          type: 'runEnded',
          state: 'stopped',
          reason: 'STOP',
          completionReason: 'STOPPED',
          exitCode: 3,
          iterations: 1,
          costUsd: 0.3,
          done: 0,
          total: 2,
        },
      ],
      expect: (v) => laneRowsOf(v).map((l) => [l.activity, l.context.window, l.costUsd]),
      want: [['idle', 0, 0]],
    },
    { name: 'no lanes before the first iteration', events: [started], expect: laneRowsOf, want: [] },
    {
      name: "a finished run's header keeps its last context figure, marked last, with the warn and rotate lines",
      events: [
        started,
        at(1, A),
        tok(1, 150_000, [0, 0, 0, 0], 0.3),
        end(1, [0, 0, 0, 0], 0.3),
        {
          type: 'runEnded',
          state: 'completed',
          reason: 'done',
          completionReason: 'COMPLETE',
          exitCode: 0,
          iterations: 1,
          costUsd: 0.3,
          done: 2,
          total: 2,
        },
      ],
      expect: (v) => runHeaderOf(v, '/ws', { startedHere: false, live: false }).context,
      want: { tokens: 150_000, window: 200_000, warnAt: 140_000, rotateAt: 160_000, text: '150k/200k 75% (last)' },
    },
  ];
  for (const t of table) it(t.name, () => assert.deepEqual(t.expect(view(...t.events)), t.want));

  it('remote lanes: each lane row names its worker, the live header the workers alive; a local lane and a run that ended do not', () => {
    const remote = (n: number, item: typeof A, worker: string): EngineEvent =>
      ({ ...at(n, item), worker }) as EngineEvent;
    const alive: EngineEvent = {
      type: 'workers',
      alive: [
        { id: 'build1:41', host: 'build1', pid: 41 },
        { id: 'build2:7', host: 'build2', pid: 7 },
      ],
    } as EngineEvent;
    const v = view(started, alive, [1, remote(1, A, 'build1:41')], [2, at(2, B)]);
    assert.deepEqual(
      laneRowsOf(v).map((l) => [l.lane, l.worker]),
      [
        [1, 'build1:41'],
        [2, undefined],
      ],
    );
    assert.deepEqual(runHeaderOf(v, '/ws', { startedHere: false, live: true }).workers, [
      { id: 'build1:41', host: 'build1', pid: 41 },
      { id: 'build2:7', host: 'build2', pid: 7 },
    ]);
    assert.equal(
      runHeaderOf(view(started, [1, at(1, A)]), '/ws', { startedHere: false, live: true }).workers,
      undefined,
    );
    const ended = view(started, alive, [1, remote(1, A, 'build1:41')], {
      type: 'runEnded',
      state: 'completed',
      reason: 'done',
      iterations: 1,
      costUsd: 0,
    } as EngineEvent);
    assert.equal(runHeaderOf(ended, '/ws', { startedHere: false, live: false }).workers, undefined);
    // The workers reach the page as a header op when they change.
    const track = new RunTrack('/ws', view(started, [1, remote(1, A, 'build1:41')]), {
      startedHere: false,
      live: true,
    });
    const ops = track.update(v);
    assert.deepEqual(
      ops.filter((o) => o.op === 'run').map((o) => (o as { run: { workers?: unknown[] } }).run.workers?.length),
      [2],
    );
  });

  it('keeps the previous figure and its lines in the header while a new iteration has no context figure yet', () => {
    const track = new RunTrack('/ws', view(started, at(1, A), tok(1, 50_000, [0, 0, 0, 0], 0.1)), {
      startedHere: false,
      live: true,
    });
    const figure = { tokens: 50_000, window: 200_000, warnAt: 140_000, rotateAt: 160_000, text: '50k/200k 25%' };
    assert.deepEqual(track.run.context, figure);
    track.update(view(started, at(1, A), tok(1, 50_000, [0, 0, 0, 0], 0.1), end(1, [0, 0, 0, 0], 0.1), at(2, B)));
    assert.deepEqual(track.run.context, figure);
  });

  it('sends a lanes op when a lane changes, and none when nothing of the lanes did', () => {
    const e: Ev[] = [started, [1, at(1, A)], [2, at(2, B)]];
    const track = new RunTrack('/ws', view(...e), { startedHere: false, live: true });
    assert.deepEqual(
      track.state().lanes.map((l) => l.lane),
      [1, 2],
    );
    const ops = track.update(view(...e, [2, tok(2, 40_000, [1, 1, 1, 1], 0.01)]));
    const lanesOp = ops.find((o) => o.op === 'lanes');
    assert.ok(lanesOp && lanesOp.op === 'lanes');
    assert.deepEqual(
      lanesOp.lanes.map((l) => [l.lane, l.context.tokens]),
      [
        [1, 0],
        [2, 40_000],
      ],
    );
    const again = track.update(view(...e, [2, tok(2, 40_000, [1, 1, 1, 1], 0.01)], { type: 'warning', message: 'x' }));
    assert.equal(
      again.some((o) => o.op === 'lanes'),
      false,
    );
  });

  it("gives the chart a point when the run's cost moves though the context did not, so its cost line reaches the header's", () => {
    const e: Ev[] = [started, at(1, A), tok(1, 5000, [1, 1, 1, 1], 0.01)];
    const track = new RunTrack('/ws', view(...e), { startedHere: false, live: true });
    track.update(view(...e, tok(1, 5000, [2, 2, 2, 2], 0.08)));
    const points = track.state().tokens;
    assert.deepEqual(
      points.map((p) => [p.contextTokens, p.costUsd]),
      [
        [5000, 0.01],
        [5000, 0.08],
      ],
    );
    assert.equal(points.at(-1)!.costUsd, track.state().run!.costUsd);
  });

  it('marks the token points of lanes other than 0 with their lane', () => {
    const e: Ev[] = [started, [1, at(1, A)], [2, at(2, B)]];
    const track = new RunTrack('/ws', view(...e), { startedHere: false, live: true });
    track.update(view(...e, [1, tok(1, 10_000, [0, 0, 0, 0], 0)], [2, tok(2, 20_000, [0, 0, 0, 0], 0)]));
    assert.deepEqual(
      track.state().tokens.map((p) => [p.lane, p.contextTokens]),
      [
        [1, 10_000],
        [2, 20_000],
      ],
    );
  });

  it('keeps only the last lanes op of a batch, in its place', () => {
    const l1 = { op: 'lanes' as const, lanes: sampleLanes.slice(0, 1) };
    const l2 = { op: 'lanes' as const, lanes: sampleLanes };
    const log1 = { op: 'log' as const, lines: [{ n: 1, at: 1, kind: 'loop' as const, text: 'a' }], total: 1 };
    assert.deepEqual(coalesceOps([l1, log1, l2]), [log1, l2]);
  });
});

describe('the dashboard run track: the kind of a log line (the log filter)', () => {
  const cases: [string, string][] = [
    ["GUARD DENY git push → pushing is the operator's job", 'guard'],
    ["GUARD REWRITE npm test → /usr/bin/node /x/dist/cli.js -C /w gate unit -- 'npm test'", 'guard'],
    ['BLOCKED US-1 — no progress', 'error'],
    ['GATE FAILED unit exit=1 2.0s', 'gate'],
    ['QUESTION US-1 — which one?', 'question'],
    ['ANSWERED US-1 — the first', 'question'],
    ['QUESTION TIMED OUT US-1', 'question'],
    ['ATTEMPT 2 FAILED US-1 — gate red', 'error'],
    ['LANE FAILED US-2 (ralph/US-2): conflict', 'error'],
    ['WARNING: notify failed (end): 500', 'error'],
    ['WARN: context 170000 ≥ 170000 tokens: handoff requested', 'tokens'],
    ['ROTATE: context 200000 ≥ 200000 tokens', 'tokens'],
    ['RALPH STOP — failed: gate red', 'error'],
    ['LOOP 1 START', 'loop'],
    ['LANE MERGED US-1 (ralph/US-1) — clean', 'loop'],
  ];
  for (const [text, kind] of cases) it(`${kind}: ${text}`, () => assert.equal(logKindOfText(text), kind));
});
