import * as assert from 'node:assert/strict';
import {
  ACTIVITY_LINES_KEPT,
  clockOf,
  emptyRunView,
  reduceRunView,
  runViewOf,
  statusLineOf,
  withFollowEnd,
  type RunView,
} from '../../../src/core/control/runView';
import type { EngineEvent, RunLogEntry, UnknownRunLogEntry } from '../../../src/core/model/runEvent';

const T0 = Date.UTC(2026, 11, 1, 9, 0, 0);
const ITEM = { source: 'flow-next' as const, id: 'fn-1.2', title: 'Add login' };

/** Entries with seq 1, 2, … one second apart, lane 0 unless given. */
function log(...events: (EngineEvent | [number, EngineEvent])[]): RunLogEntry[] {
  return events.map((e, i) => {
    const [lane, ev] = Array.isArray(e) ? e : [0, e];
    return { ...ev, seq: i + 1, at: new Date(T0 + i * 1000).toISOString(), lane } as RunLogEntry;
  });
}

const started: EngineEvent = {
  type: 'runStarted',
  runId: 'r1',
  folder: '/ws',
  source: 'flow-next',
  agent: 'claude',
  maxIterations: 25,
  gates: { basic: 'npm test' },
  maxCostUsd: 5,
  pid: 4242,
};
const iter = (n: number, attempt = 1, maxAttempts = 5): EngineEvent => ({
  type: 'iterationStarted',
  iteration: n,
  item: ITEM,
  attempt,
  attemptKind: attempt === 1 ? 'first' : 'fix',
  purpose: 'work',
  ...(maxAttempts ? { maxAttempts } : {}),
});
const tokens = (n: number, ctx: number, cost: number | null = 0.01): EngineEvent => ({
  type: 'tokens',
  iteration: n,
  contextTokens: ctx,
  contextWindow: 200_000,
  warnAt: 140_000,
  rotateAt: 160_000,
  totals: { input: 1, output: 2, cacheRead: 3, cacheCreation: 4 },
  costUsd: cost,
});
const ended = (n: number, cost: number, ending: 'natural' | 'question' | 'complete' = 'natural'): EngineEvent => ({
  type: 'iterationEnded',
  iteration: n,
  ending,
  detail: 'd',
  totals: { tokens: { input: 1, output: 2, cacheRead: 3, cacheCreation: 4 }, costUsd: cost },
  exitCode: 0,
});
const view = (...events: (EngineEvent | [number, EngineEvent])[]): RunView => runViewOf('r1', log(...events));

describe('RunView reducer', () => {
  it('is starting before runStarted and running after, with source, agent, caps, pid and gates', () => {
    assert.equal(emptyRunView('r1').state, 'starting');
    const v = view(started);
    assert.deepEqual(
      [v.state, v.stateText, v.source, v.agent, v.maxIterations, v.maxCostUsd, v.pid, v.gateCommands, v.startedAt],
      ['running', 'running', 'flow-next', 'claude', 25, 5, 4242, { basic: 'npm test' }, new Date(T0).toISOString()],
    );
  });

  const table: {
    name: string;
    events: (EngineEvent | [number, EngineEvent])[];
    expect: (v: RunView) => unknown;
    want: unknown;
  }[] = [
    {
      name: 'an iteration shows its lane, item and attempt "k of N"',
      events: [started, iter(3, 2, 5)],
      expect: (v) => [
        v.iteration,
        v.lanes[0]!.lane,
        v.lanes[0]!.item?.id,
        v.lanes[0]!.attempt?.text,
        v.lanes[0]!.activity,
      ],
      want: [3, 0, 'fn-1.2', '2 of 5', 'agent'],
    },
    {
      name: 'an attempt without a known limit shows just its number',
      events: [started, iter(1, 2, 0)],
      expect: (v) => v.lanes[0]!.attempt,
      want: { number: 2, max: null, kind: 'fix', text: '2' },
    },
    {
      name: 'tokens give the context gauge in tokens and percent of the window, with the warn and rotate lines',
      events: [started, iter(1), tokens(1, 50_000)],
      expect: (v) => {
        const c = v.lanes[0]!.context!;
        return [c.tokens, c.window, c.percent, c.warnPercent, c.rotatePercent, c.level];
      },
      want: [50_000, 200_000, 25, 70, 80, 'ok'],
    },
    {
      name: 'the gauge level is warn from the warn threshold and rotate from the rotate threshold',
      events: [started, iter(1), tokens(1, 150_000)],
      expect: (v) => v.lanes[0]!.context!.level,
      want: 'warn',
    },
    {
      name: 'warn and rotate events mark the gauge',
      events: [
        started,
        iter(1),
        tokens(1, 165_000),
        { type: 'warn', iteration: 1, contextTokens: 141_000, threshold: 140_000 },
        { type: 'rotate', iteration: 1, contextTokens: 165_000, threshold: 160_000 },
      ],
      expect: (v) => [v.lanes[0]!.context!.level, v.lanes[0]!.context!.warned, v.lanes[0]!.context!.rotated],
      want: ['rotate', true, true],
    },
    {
      name: 'a new iteration starts with an empty gauge',
      events: [started, iter(1), tokens(1, 150_000), ended(1, 0.5), iter(2)],
      expect: (v) => v.lanes[0]!.context,
      want: null,
    },
    {
      name: "the current iteration's cost follows its tokens events",
      events: [started, iter(1), tokens(1, 1000, 0.25)],
      expect: (v) => v.lanes[0]!.iterationCostUsd,
      want: 0.25,
    },
    {
      name: 'cost adds up per iteration, per item and per run',
      events: [
        started,
        iter(1),
        ended(1, 0.5),
        iter(2, 2),
        ended(2, 0.25),
        { type: 'iterationStarted', iteration: 3, item: null, attempt: 1, attemptKind: 'first', purpose: 'review' },
        ended(3, 1),
      ],
      expect: (v) => [
        v.cost.runUsd,
        v.cost.byItem.map((i) => [i.key, i.costUsd]),
        v.cost.byIteration.map((i) => [i.iteration, i.itemId, i.costUsd]),
      ],
      want: [
        1.75,
        [['flow-next:fn-1.2', 0.75]],
        [
          [1, 'fn-1.2', 0.5],
          [2, 'fn-1.2', 0.25],
          [3, null, 1],
        ],
      ],
    },
    {
      name: 'a gate is running after gateStarted and has its result after gateResult',
      events: [started, { type: 'gateStarted', tier: 'basic', command: 'npm test' }],
      expect: (v) => [v.gates[0]!.running, v.gates[0]!.passed, v.lanes[0]!.activity],
      want: [true, null, 'gate'],
    },
    {
      name: 'gate results are kept per tier in the order basic, full, final',
      events: [
        started,
        {
          type: 'gateResult',
          tier: 'final',
          command: 'make all',
          exitCode: 0,
          durationMs: 900,
          passed: true,
          logPath: 'l2',
          failingLines: [],
        },
        {
          type: 'gateResult',
          tier: 'basic',
          command: 'npm test',
          exitCode: 1,
          durationMs: 1200,
          passed: false,
          logPath: '.ralph/gates/basic.log',
          failingLines: ['FAIL a'],
        },
      ],
      expect: (v) => v.gates.map((g) => [g.tier, g.passed, g.exitCode, g.durationMs, g.failingLines]),
      want: [
        ['basic', false, 1, 1200, ['FAIL a']],
        ['final', true, 0, 900, []],
      ],
    },
    {
      name: 'progress keeps done over total',
      events: [started, { type: 'progress', done: 2, total: 5, text: '2/5 done' }],
      expect: (v) => v.progress,
      want: { done: 2, total: 5 },
    },
    {
      name: 'a PAUSE request is noted, then paused, then running again',
      events: [started, { type: 'pauseRequested', file: 'PAUSE' }],
      expect: (v) => [v.state, v.pauseRequested],
      want: ['running', true],
    },
    {
      name: 'paused',
      events: [started, { type: 'pauseRequested', file: 'PAUSE' }, { type: 'paused' }],
      expect: (v) => [v.state, v.pauseRequested, v.stateText],
      want: ['paused', false, 'paused'],
    },
    {
      name: 'resumed',
      events: [started, { type: 'paused' }, { type: 'resumed' }],
      expect: (v) => v.state,
      want: 'running',
    },
    {
      name: 'a STOP request makes the run stopping',
      events: [started, { type: 'stopRequested', file: 'STOP', graceful: false }],
      expect: (v) => [v.state, v.stopRequested],
      want: ['stopping', true],
    },
    {
      name: 'a deferral shows the time it ends',
      events: [started, { type: 'deferred', reason: 'rate limited', waitMs: 120_000, resetsAt: null, inARow: 1 }],
      expect: (v) => [v.state, v.deferredUntil, v.stateText],
      want: [
        'deferred',
        new Date(T0 + 1000 + 120_000).toISOString(),
        `deferred until ${clockOf(new Date(T0 + 121_000).toISOString())}`,
      ],
    },
    {
      name: 'the next iteration ends a deferral',
      events: [started, { type: 'deferred', reason: 'x', waitMs: 1000, resetsAt: null, inARow: 1 }, iter(2)],
      expect: (v) => [v.state, v.deferredUntil],
      want: ['running', null],
    },
    {
      name: 'a question makes the run wait, with the question open',
      events: [
        started,
        iter(1),
        ended(1, 0.1, 'question'),
        {
          type: 'question',
          id: 'q1',
          iteration: 1,
          item: ITEM,
          text: 'Postgres or SQLite?',
          answerFile: '/ws/.ralph/runs/r1/answers/q1.md',
        },
      ],
      expect: (v) => [
        v.state,
        v.stateText,
        v.questions.map((q) => [q.id, q.text, q.item?.id, q.answerFile]),
        v.lanes[0]!.activity,
      ],
      want: [
        'waiting',
        'waiting for an answer (fn-1.2)',
        [['q1', 'Postgres or SQLite?', 'fn-1.2', '/ws/.ralph/runs/r1/answers/q1.md']],
        'waiting',
      ],
    },
    {
      name: 'an answer closes the question and the run goes on',
      events: [
        started,
        { type: 'question', id: 'q1', iteration: 1, item: ITEM, text: '?', answerFile: 'a' },
        { type: 'answered', id: 'q1', item: ITEM, text: 'SQLite' },
      ],
      expect: (v) => [v.state, v.questions.length, v.lanes[0]!.activity],
      want: ['running', 0, 'idle'],
    },
    {
      name: 'with two lanes, one waiting on a question, the run is still running',
      events: [
        started,
        [1, iter(1)],
        [2, iter(2)],
        [1, { type: 'question', id: 'q1', iteration: 1, item: ITEM, text: '?', answerFile: 'a' }],
      ],
      expect: (v) => [v.state, v.lanes.map((l) => [l.lane, l.activity])],
      want: [
        'running',
        [
          [1, 'waiting'],
          [2, 'agent'],
        ],
      ],
    },
    {
      name: 'a question timing out closes it',
      events: [
        started,
        { type: 'question', id: 'q1', iteration: 1, item: ITEM, text: '?', answerFile: 'a' },
        { type: 'questionTimedOut', id: 'q1', item: ITEM, waitedMs: 60_000 },
      ],
      expect: (v) => v.questions.length,
      want: 0,
    },
    {
      name: 'the end is final, with state, reason and exit code',
      events: [
        started,
        iter(1),
        {
          type: 'runEnded',
          state: 'capReached',
          reason: 'max iterations (1) reached',
          completionReason: 'MAX_ITERATIONS',
          exitCode: 2,
          iterations: 1,
          costUsd: 0.5,
          done: 0,
          total: 3,
        },
      ],
      expect: (v) => [
        v.state,
        v.final,
        v.stateText,
        v.end?.exitCode,
        v.end?.completionReason,
        v.lanes[0]!.activity,
        v.cost.runUsd,
      ],
      want: ['capReached', true, 'capReached — max iterations (1) reached', 2, 'MAX_ITERATIONS', 'idle', 0.5],
    },
    {
      name: 'warnings keep the last five',
      events: [started, ...[1, 2, 3, 4, 5, 6].map((n): EngineEvent => ({ type: 'warning', message: `w${n}` }))],
      expect: (v) => v.warnings,
      want: ['w2', 'w3', 'w4', 'w5', 'w6'],
    },
  ];
  for (const t of table) {
    it(t.name, () => assert.deepEqual(t.expect(view(...t.events)), t.want));
  }

  it("names each lane's agent and the run's current one from agentStarted: a failover changes both", () => {
    const v = view(
      started,
      iter(1),
      { type: 'agentStarted', iteration: 1, agent: 'claude', pid: 11, command: 'claude -p' },
      ended(1, 0.1),
      iter(2, 2),
      { type: 'agentStarted', iteration: 2, agent: 'codex', pid: 12, command: 'codex exec' },
    );
    assert.equal(v.agent, 'codex');
    assert.equal(v.lanes[0]!.agent, 'codex');
    assert.equal(v.lanes[0]!.agentPid, 12);
    const before = view(started, iter(1));
    assert.equal(before.agent, 'claude', "the run's agent from runStarted until an iteration names its own");
    assert.equal(before.lanes[0]!.agent, null);
    const unnamed = view(started, iter(1), { type: 'agentStarted', iteration: 1, pid: 5, command: 'x' });
    assert.equal(unnamed.lanes[0]!.agent, 'claude', "an old log's agentStarted without a name: the run's agent");
  });
  it('ignores an entry it has seen (replaying a log twice changes nothing)', () => {
    const entries = log(started, iter(1), ended(1, 0.5));
    const once = runViewOf('r1', entries);
    assert.equal(runViewOf('r1', [...entries, ...entries]).cost.runUsd, once.cost.runUsd);
    assert.equal(reduceRunView(once, entries[1]!), once);
  });

  it('counts the seq numbers it skipped over', () => {
    const [a, b, c] = log(started, iter(1), ended(1, 0.1));
    assert.equal(runViewOf('r1', [a!, { ...c!, seq: 5 }]).missingSeqs, 3);
    assert.equal(runViewOf('r1', [a!, b!]).missingSeqs, 0);
  });

  it('skips an unknown event type and counts it', () => {
    const unknown: UnknownRunLogEntry = {
      seq: 2,
      at: new Date(T0).toISOString(),
      lane: 0,
      type: 'laneMerged',
      unknown: true,
      raw: {},
    };
    const v = runViewOf('r1', [log(started)[0]!, unknown]);
    assert.deepEqual([v.unknownEvents, v.lastSeq, v.state], [1, 2, 'running']);
  });

  it('does not change the view it was given', () => {
    const v0 = view(started, iter(1));
    const copy = JSON.parse(JSON.stringify(v0)) as RunView;
    reduceRunView(v0, { ...tokens(1, 9), seq: 3, at: new Date(T0).toISOString(), lane: 0 } as RunLogEntry);
    assert.deepEqual(v0, copy);
  });

  it(`keeps the last ${ACTIVITY_LINES_KEPT} activity lines, tokens events making none`, () => {
    const v = view(
      started,
      ...Array.from({ length: 30 }, (_, i): EngineEvent => ({ type: 'warning', message: `m${i}` })),
      tokens(1, 5),
    );
    assert.equal(v.activity.length, ACTIVITY_LINES_KEPT);
    assert.equal(v.activity.at(-1)!.text, 'WARNING: m29');
    assert.equal(v.activity.at(-1)!.seq, 31);
  });

  it('a crash the follower saw makes an unfinished view crashed, exit 1', () => {
    const v = withFollowEnd(view(started, iter(1)), { kind: 'crashed', reason: 'engine gone', at: null, exitCode: 1 });
    assert.deepEqual(
      [v.state, v.final, v.end?.exitCode, v.end?.completionReason, v.lanes[0]!.activity],
      ['crashed', true, 1, 'CRASHED', 'idle'],
    );
  });

  it('a crash report does not change a view that ended', () => {
    const v = view(started, {
      type: 'runEnded',
      state: 'completed',
      reason: 'done',
      completionReason: 'DONE',
      exitCode: 0,
      iterations: 1,
      costUsd: 0,
      done: 1,
      total: 1,
    });
    assert.equal(withFollowEnd(v, { kind: 'crashed', reason: 'x', at: null, exitCode: 1 }), v);
  });
});

describe('RunView tokens per item and several lanes', () => {
  const A = { source: 'quantum' as const, id: 'US-1', title: 'Login' };
  const B = { source: 'quantum' as const, id: 'US-2', title: 'Signup' };
  const C = { source: 'quantum' as const, id: 'US-3', title: 'Reset' };
  const at = (n: number, item: typeof A | null, purpose: 'work' | 'review' = 'work'): EngineEvent => ({
    type: 'iterationStarted',
    iteration: n,
    item,
    attempt: 1,
    attemptKind: 'first',
    purpose,
    maxAttempts: 3,
  });
  const tok = (n: number, ctx: number, t: [number, number, number, number], cost: number | null): EngineEvent => ({
    type: 'tokens',
    iteration: n,
    contextTokens: ctx,
    contextWindow: 200_000,
    warnAt: 140_000,
    rotateAt: 160_000,
    totals: { input: t[0], output: t[1], cacheRead: t[2], cacheCreation: t[3] },
    costUsd: cost,
  });
  const end = (n: number, t: [number, number, number, number], cost: number): EngineEvent => ({
    type: 'iterationEnded',
    iteration: n,
    ending: 'natural',
    detail: 'd',
    totals: { tokens: { input: t[0], output: t[1], cacheRead: t[2], cacheCreation: t[3] }, costUsd: cost },
    exitCode: 0,
  });
  const items = (v: RunView) =>
    v.cost.byItem.map((c) => [
      c.item.id,
      c.iterations,
      c.tokens.input,
      c.tokens.output,
      c.tokens.cacheRead,
      c.tokens.cacheCreation,
      c.costUsd,
    ]);

  const table: {
    name: string;
    events: (EngineEvent | [number, EngineEvent])[];
    expect: (v: RunView) => unknown;
    want: unknown;
  }[] = [
    {
      name: 'an ended iteration adds its tokens (input, output, cache read, cache creation) to its item',
      events: [started, at(1, A), end(1, [10, 20, 30, 40], 0.5)],
      expect: items,
      want: [['US-1', 1, 10, 20, 30, 40, 0.5]],
    },
    {
      name: 'iterations at the same item add up, each counted once',
      events: [started, at(1, A), end(1, [10, 20, 30, 40], 0.5), at(2, A), end(2, [1, 2, 3, 4], 0.25)],
      expect: items,
      want: [['US-1', 2, 11, 22, 33, 44, 0.75]],
    },
    {
      name: 'tokens events of a running iteration are not in the item (the lane has them)',
      events: [started, at(1, A), tok(1, 900, [5, 6, 7, 8], 0.1)],
      expect: (v) => [items(v), v.lanes[0]!.iterationTokens, v.lanes[0]!.iterationCostUsd],
      want: [[], { input: 5, output: 6, cacheRead: 7, cacheCreation: 8 }, 0.1],
    },
    {
      name: 'an item whose iterations cost nothing (the agent reports no cost) still has its tokens',
      events: [started, at(1, A), end(1, [100, 200, 0, 0], 0)],
      expect: items,
      want: [['US-1', 1, 100, 200, 0, 0, 0]],
    },
    {
      name: 'a review iteration (no item) counts for the run, not for an item',
      events: [started, at(1, null, 'review'), end(1, [1, 1, 1, 1], 1)],
      expect: (v) => [items(v), v.cost.runUsd],
      want: [[], 1],
    },
    {
      name: "a new iteration clears the lane's iteration tokens; iterationEnded sets them to the iteration's totals",
      events: [started, at(1, A), tok(1, 900, [5, 6, 7, 8], 0.1), end(1, [9, 9, 9, 9], 0.2)],
      expect: (v) => v.lanes[0]!.iterationTokens,
      want: { input: 9, output: 9, cacheRead: 9, cacheCreation: 9 },
    },
    {
      name: 'after a new iteration starts the lane has no iteration tokens yet',
      events: [started, at(1, A), end(1, [9, 9, 9, 9], 0.2), at(2, A)],
      expect: (v) => v.lanes[0]!.iterationTokens,
      want: null,
    },
    {
      name: 'three lanes at three items: one row per lane, each with its item, iteration, attempt and gauge',
      events: [
        started,
        [1, at(1, A)],
        [2, at(2, B)],
        [3, at(3, C)],
        [2, tok(2, 40_000, [1, 1, 1, 1], 0.01)],
        [1, tok(1, 150_000, [1, 1, 1, 1], 0.02)],
      ],
      expect: (v) =>
        v.lanes.map((l) => [
          l.lane,
          l.item?.id,
          l.iteration,
          l.attempt?.text,
          l.activity,
          l.context?.tokens ?? null,
          l.context?.level ?? null,
        ]),
      want: [
        [1, 'US-1', 1, '1 of 3', 'agent', 150_000, 'warn'],
        [2, 'US-2', 2, '1 of 3', 'agent', 40_000, 'ok'],
        [3, 'US-3', 3, '1 of 3', 'agent', null, null],
      ],
    },
    {
      name: 'lanes ending in any order put tokens and cost on the right items',
      events: [
        started,
        [1, at(1, A)],
        [2, at(2, B)],
        [2, end(2, [2, 0, 0, 0], 0.2)],
        [1, end(1, [1, 0, 0, 0], 0.1)],
        [2, at(3, C)],
        [2, end(3, [3, 0, 0, 0], 0.3)],
      ],
      expect: (v) => [items(v), v.cost.byIteration.map((i) => [i.iteration, i.lane, i.itemId])],
      want: [
        [
          ['US-2', 1, 2, 0, 0, 0, 0.2],
          ['US-1', 1, 1, 0, 0, 0, 0.1],
          ['US-3', 1, 3, 0, 0, 0, 0.3],
        ],
        [
          [2, 2, 'US-2'],
          [1, 1, 'US-1'],
          [3, 2, 'US-3'],
        ],
      ],
    },
    {
      name: 'one lane at a gate, another working: each lane has its own activity',
      events: [
        started,
        [1, at(1, A)],
        [2, at(2, B)],
        [1, end(1, [0, 0, 0, 0], 0)],
        [1, { type: 'gateStarted', tier: 'basic', command: 'npm test' }],
      ],
      expect: (v) => v.lanes.map((l) => [l.lane, l.activity]),
      want: [
        [1, 'gate'],
        [2, 'agent'],
      ],
    },
    {
      name: 'a lane is dropped at its end (laneMerge, any outcome); its number is used again by a later lane',
      events: [
        started,
        [1, at(1, A)],
        [2, at(2, B)],
        [1, end(1, [0, 0, 0, 0], 0)],
        [1, { type: 'laneMerge', item: A, branch: 'ql-wt/US-1', outcome: 'merged', reason: 'merged', durationMs: 5 }],
        [1, { type: 'verified', item: A, tier: 'basic' }],
      ],
      expect: (v) => v.lanes.map((l) => [l.lane, l.item?.id]),
      want: [[2, 'US-2']],
    },
    {
      name: 'a failed lane goes too, and a new lane with its number shows its own story',
      events: [
        started,
        [1, at(1, A)],
        [
          1,
          {
            type: 'laneMerge',
            item: A,
            branch: 'ql-wt/US-1',
            outcome: 'conflict',
            reason: 'conflict',
            files: ['a'],
            durationMs: 5,
          },
        ],
        [1, at(2, C)],
      ],
      expect: (v) => v.lanes.map((l) => [l.lane, l.item?.id, l.iteration]),
      want: [[1, 'US-3', 2]],
    },
    {
      name: "ralph watch's status line: a lane of a parallel run says its story, attempt, iteration and activity",
      events: [
        started,
        [1, at(1, A)],
        [2, at(2, B)],
        [2, end(2, [0, 0, 0, 0], 0)],
        [2, { type: 'gateStarted', tier: 'basic', command: 'npm test' }],
      ],
      expect: (v) => statusLineOf(v).split(' · ').slice(2, 6),
      want: [
        '#1',
        'US-1 Login (attempt 1 of 3, iteration 1, agent)',
        '#2',
        'US-2 Signup (attempt 1 of 3, iteration 2, gate)',
      ],
    },
    {
      name: "the run's end makes every lane idle",
      events: [
        started,
        [1, at(1, A)],
        [2, at(2, B)],
        {
          type: 'runEnded',
          state: 'stopped',
          reason: 'STOP',
          completionReason: 'STOPPED',
          exitCode: 3,
          iterations: 2,
          costUsd: 0,
          done: 0,
          total: 3,
        },
      ],
      expect: (v) => v.lanes.map((l) => l.activity),
      want: ['idle', 'idle'],
    },
  ];
  for (const t of table) {
    it(t.name, () => assert.deepEqual(t.expect(view(...t.events)), t.want));
  }
});

describe('RunView of remote lanes: each lane names its worker, the run the workers alive', () => {
  const remote = (lane: number, n: number, worker: string): [number, EngineEvent] => [
    lane,
    { ...iter(n), item: { source: 'quantum', id: `S${lane}`, title: `story ${lane}` }, worker } as EngineEvent,
  ];
  const alive: EngineEvent = {
    type: 'workers',
    alive: [
      { id: 'build1:10', host: 'build1', pid: 10 },
      { id: 'build2:20', host: 'build2', pid: 20 },
    ],
  };
  const v = runViewOf('r1', log(started, alive, remote(1, 1, 'build1:10'), remote(2, 2, 'build2:20')));
  it('a lane keeps the worker of its iteration; a local lane has none', () => {
    assert.deepEqual(
      v.lanes.map((l) => l.worker),
      ['build1:10', 'build2:20'],
    );
    assert.equal(runViewOf('r1', log(started, iter(1))).lanes[0]!.worker, null);
  });
  it('the workers alive are the last event’s; none before it', () => {
    assert.deepEqual(
      v.workers?.map((w) => w.id),
      ['build1:10', 'build2:20'],
    );
    assert.equal(runViewOf('r1', log(started)).workers, null);
    const gone = runViewOf('r1', log(started, alive, { type: 'workers', alive: [alive.alive[1]!] }));
    assert.deepEqual(
      gone.workers?.map((w) => w.id),
      ['build2:20'],
    );
  });
  it('the status line and the activity say where each lane runs and who is alive', () => {
    assert.match(statusLineOf(v), /#1 · S1 story 1 \(attempt 1 of 5, iteration 1, agent, on build1:10\)/);
    const texts = v.activity.map((a) => a.text);
    assert.ok(texts.includes('WORKERS 2 alive: build1:10, build2:20'), texts.join('\n'));
    assert.ok(
      texts.some((t) => /^LOOP 2 START — S2 story 2 · attempt 1 of 5 · on build2:20$/.test(t)),
      texts.join('\n'),
    );
  });
});
