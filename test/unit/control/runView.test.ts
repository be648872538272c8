import * as assert from 'node:assert/strict';
import { ACTIVITY_LINES_KEPT, clockOf, emptyRunView, reduceRunView, runViewOf, withFollowEnd, type RunView } from '../../../src/core/control/runView';
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

const started: EngineEvent = { type: 'runStarted', runId: 'r1', folder: '/ws', source: 'flow-next', agent: 'claude', maxIterations: 25, gates: { basic: 'npm test' }, maxCostUsd: 5, pid: 4242 };
const iter = (n: number, attempt = 1, maxAttempts = 5): EngineEvent => ({ type: 'iterationStarted', iteration: n, item: ITEM, attempt, attemptKind: attempt === 1 ? 'first' : 'fix', purpose: 'work', ...(maxAttempts ? { maxAttempts } : {}) });
const tokens = (n: number, ctx: number, cost: number | null = 0.01): EngineEvent => ({ type: 'tokens', iteration: n, contextTokens: ctx, contextWindow: 200_000, warnAt: 140_000, rotateAt: 160_000, totals: { input: 1, output: 2, cacheRead: 3, cacheCreation: 4 }, costUsd: cost });
const ended = (n: number, cost: number, ending: 'natural' | 'question' | 'complete' = 'natural'): EngineEvent => ({ type: 'iterationEnded', iteration: n, ending, detail: 'd', totals: { tokens: { input: 1, output: 2, cacheRead: 3, cacheCreation: 4 }, costUsd: cost }, exitCode: 0 });
const view = (...events: (EngineEvent | [number, EngineEvent])[]): RunView => runViewOf('r1', log(...events));

describe('RunView reducer', () => {
  it('is starting before runStarted and running after, with source, agent, caps, pid and gates', () => {
    assert.equal(emptyRunView('r1').state, 'starting');
    const v = view(started);
    assert.deepEqual([v.state, v.stateText, v.source, v.agent, v.maxIterations, v.maxCostUsd, v.pid, v.gateCommands, v.startedAt], ['running', 'running', 'flow-next', 'claude', 25, 5, 4242, { basic: 'npm test' }, new Date(T0).toISOString()]);
  });

  const table: { name: string; events: (EngineEvent | [number, EngineEvent])[]; expect: (v: RunView) => unknown; want: unknown }[] = [
    { name: 'an iteration shows its lane, item and attempt "k of N"', events: [started, iter(3, 2, 5)], expect: (v) => [v.iteration, v.lanes[0]!.lane, v.lanes[0]!.item?.id, v.lanes[0]!.attempt?.text, v.lanes[0]!.activity], want: [3, 0, 'fn-1.2', '2 of 5', 'agent'] },
    { name: 'an attempt without a known limit shows just its number', events: [started, iter(1, 2, 0)], expect: (v) => v.lanes[0]!.attempt, want: { number: 2, max: null, kind: 'fix', text: '2' } },
    { name: 'tokens give the context gauge in tokens and percent of the window, with the warn and rotate lines', events: [started, iter(1), tokens(1, 50_000)], expect: (v) => { const c = v.lanes[0]!.context!; return [c.tokens, c.window, c.percent, c.warnPercent, c.rotatePercent, c.level]; }, want: [50_000, 200_000, 25, 70, 80, 'ok'] },
    { name: 'the gauge level is warn from the warn threshold and rotate from the rotate threshold', events: [started, iter(1), tokens(1, 150_000)], expect: (v) => v.lanes[0]!.context!.level, want: 'warn' },
    { name: 'warn and rotate events mark the gauge', events: [started, iter(1), tokens(1, 165_000), { type: 'warn', iteration: 1, contextTokens: 141_000, threshold: 140_000 }, { type: 'rotate', iteration: 1, contextTokens: 165_000, threshold: 160_000 }], expect: (v) => [v.lanes[0]!.context!.level, v.lanes[0]!.context!.warned, v.lanes[0]!.context!.rotated], want: ['rotate', true, true] },
    { name: 'a new iteration starts with an empty gauge', events: [started, iter(1), tokens(1, 150_000), ended(1, 0.5), iter(2)], expect: (v) => v.lanes[0]!.context, want: null },
    { name: 'the current iteration\'s cost follows its tokens events', events: [started, iter(1), tokens(1, 1000, 0.25)], expect: (v) => v.lanes[0]!.iterationCostUsd, want: 0.25 },
    { name: 'cost adds up per iteration, per item and per run', events: [started, iter(1), ended(1, 0.5), iter(2, 2), ended(2, 0.25), { type: 'iterationStarted', iteration: 3, item: null, attempt: 1, attemptKind: 'first', purpose: 'review' }, ended(3, 1)], expect: (v) => [v.cost.runUsd, v.cost.byItem.map((i) => [i.key, i.costUsd]), v.cost.byIteration.map((i) => [i.iteration, i.itemId, i.costUsd])], want: [1.75, [['flow-next:fn-1.2', 0.75]], [[1, 'fn-1.2', 0.5], [2, 'fn-1.2', 0.25], [3, null, 1]]] },
    { name: 'a gate is running after gateStarted and has its result after gateResult', events: [started, { type: 'gateStarted', tier: 'basic', command: 'npm test' }], expect: (v) => [v.gates[0]!.running, v.gates[0]!.passed, v.lanes[0]!.activity], want: [true, null, 'gate'] },
    { name: 'gate results are kept per tier in the order basic, full, final', events: [started, { type: 'gateResult', tier: 'final', command: 'make all', exitCode: 0, durationMs: 900, passed: true, logPath: 'l2', failingLines: [] }, { type: 'gateResult', tier: 'basic', command: 'npm test', exitCode: 1, durationMs: 1200, passed: false, logPath: '.ralph/gates/basic.log', failingLines: ['FAIL a'] }], expect: (v) => v.gates.map((g) => [g.tier, g.passed, g.exitCode, g.durationMs, g.failingLines]), want: [['basic', false, 1, 1200, ['FAIL a']], ['final', true, 0, 900, []]] },
    { name: 'progress keeps done over total', events: [started, { type: 'progress', done: 2, total: 5, text: '2/5 done' }], expect: (v) => v.progress, want: { done: 2, total: 5 } },
    { name: 'a PAUSE request is noted, then paused, then running again', events: [started, { type: 'pauseRequested', file: 'PAUSE' }], expect: (v) => [v.state, v.pauseRequested], want: ['running', true] },
    { name: 'paused', events: [started, { type: 'pauseRequested', file: 'PAUSE' }, { type: 'paused' }], expect: (v) => [v.state, v.pauseRequested, v.stateText], want: ['paused', false, 'paused'] },
    { name: 'resumed', events: [started, { type: 'paused' }, { type: 'resumed' }], expect: (v) => v.state, want: 'running' },
    { name: 'a STOP request makes the run stopping', events: [started, { type: 'stopRequested', file: 'STOP', graceful: false }], expect: (v) => [v.state, v.stopRequested], want: ['stopping', true] },
    { name: 'a deferral shows the time it ends', events: [started, { type: 'deferred', reason: 'rate limited', waitMs: 120_000, resetsAt: null, inARow: 1 }], expect: (v) => [v.state, v.deferredUntil, v.stateText], want: ['deferred', new Date(T0 + 1000 + 120_000).toISOString(), `deferred until ${clockOf(new Date(T0 + 121_000).toISOString())}`] },
    { name: 'the next iteration ends a deferral', events: [started, { type: 'deferred', reason: 'x', waitMs: 1000, resetsAt: null, inARow: 1 }, iter(2)], expect: (v) => [v.state, v.deferredUntil], want: ['running', null] },
    { name: 'a question makes the run wait, with the question open', events: [started, iter(1), ended(1, 0.1, 'question'), { type: 'question', id: 'q1', iteration: 1, item: ITEM, text: 'Postgres or SQLite?', answerFile: '/ws/.ralph/runs/r1/answers/q1.md' }], expect: (v) => [v.state, v.stateText, v.questions.map((q) => [q.id, q.text, q.item?.id, q.answerFile]), v.lanes[0]!.activity], want: ['waiting', 'waiting for an answer (fn-1.2)', [['q1', 'Postgres or SQLite?', 'fn-1.2', '/ws/.ralph/runs/r1/answers/q1.md']], 'waiting'] },
    { name: 'an answer closes the question and the run goes on', events: [started, { type: 'question', id: 'q1', iteration: 1, item: ITEM, text: '?', answerFile: 'a' }, { type: 'answered', id: 'q1', item: ITEM, text: 'SQLite' }], expect: (v) => [v.state, v.questions.length, v.lanes[0]!.activity], want: ['running', 0, 'idle'] },
    { name: 'with two lanes, one waiting on a question, the run is still running', events: [started, [1, iter(1)], [2, iter(2)], [1, { type: 'question', id: 'q1', iteration: 1, item: ITEM, text: '?', answerFile: 'a' }]], expect: (v) => [v.state, v.lanes.map((l) => [l.lane, l.activity])], want: ['running', [[1, 'waiting'], [2, 'agent']]] },
    { name: 'a question timing out closes it', events: [started, { type: 'question', id: 'q1', iteration: 1, item: ITEM, text: '?', answerFile: 'a' }, { type: 'questionTimedOut', id: 'q1', item: ITEM, waitedMs: 60_000 }], expect: (v) => v.questions.length, want: 0 },
    { name: 'the end is final, with state, reason and exit code', events: [started, iter(1), { type: 'runEnded', state: 'capReached', reason: 'max iterations (1) reached', completionReason: 'MAX_ITERATIONS', exitCode: 2, iterations: 1, costUsd: 0.5, done: 0, total: 3 }], expect: (v) => [v.state, v.final, v.stateText, v.end?.exitCode, v.end?.completionReason, v.lanes[0]!.activity], want: ['capReached', true, 'capReached — max iterations (1) reached', 2, 'MAX_ITERATIONS', 'idle'] },
    { name: 'warnings keep the last five', events: [started, ...[1, 2, 3, 4, 5, 6].map((n): EngineEvent => ({ type: 'warning', message: `w${n}` }))], expect: (v) => v.warnings, want: ['w2', 'w3', 'w4', 'w5', 'w6'] },
  ];
  for (const t of table) {
    it(t.name, () => assert.deepEqual(t.expect(view(...t.events)), t.want));
  }

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
    const unknown: UnknownRunLogEntry = { seq: 2, at: new Date(T0).toISOString(), lane: 0, type: 'laneMerged', unknown: true, raw: {} };
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
    const v = view(started, ...Array.from({ length: 30 }, (_, i): EngineEvent => ({ type: 'warning', message: `m${i}` })), tokens(1, 5));
    assert.equal(v.activity.length, ACTIVITY_LINES_KEPT);
    assert.equal(v.activity.at(-1)!.text, '⚠️ m29');
    assert.equal(v.activity.at(-1)!.seq, 31);
  });

  it('a crash the follower saw makes an unfinished view crashed, exit 1', () => {
    const v = withFollowEnd(view(started, iter(1)), { kind: 'crashed', reason: 'engine gone', at: null, exitCode: 1 });
    assert.deepEqual([v.state, v.final, v.end?.exitCode, v.end?.completionReason, v.lanes[0]!.activity], ['crashed', true, 1, 'CRASHED', 'idle']);
  });

  it('a crash report does not change a view that ended', () => {
    const v = view(started, { type: 'runEnded', state: 'completed', reason: 'done', completionReason: 'DONE', exitCode: 0, iterations: 1, costUsd: 0, done: 1, total: 1 });
    assert.equal(withFollowEnd(v, { kind: 'crashed', reason: 'x', at: null, exitCode: 1 }), v);
  });
});
