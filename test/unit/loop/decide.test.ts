import * as assert from 'node:assert/strict';
import type { IterationExit } from '../../../src/core/agents/spawn';
import { decideDeferral, defaultBackoffPolicy, type BackoffPolicy } from '../../../src/core/loop/backoff';
import { DEFAULT_MAX_ATTEMPTS, formatAttemptHistory, nextAttempt, oneLine } from '../../../src/core/loop/attempts';
import { decide } from '../../../src/core/loop/lane/decide';
import {
  initialLaneState,
  initialRunState,
  type Action,
  type LaneState,
  type Observation,
  type RunRules,
  type RunState,
} from '../../../src/core/loop/lane/phases';
import { classifyEnding } from '../../../src/core/loop/lane/agentIteration';
import type { AgentSignal } from '../../../src/core/stream/signals';

const T0 = Date.UTC(2026, 11, 1, 9, 0, 0);
const RULES: RunRules = {
  maxIterations: 10,
  maxCostUsd: 5,
  maxWallMs: 3_600_000,
  stallLimit: 3,
  backoff: defaultBackoffPolicy,
  reviewer: false,
  continueOnBlocked: false,
  questionTimeoutMs: 0,
};
const ITEM = { source: 'quantum' as const, id: 'US-001', title: 'Export slugify', risky: false };
const run = (o: Partial<RunState> = {}, rules: Partial<RunRules> = {}): RunState => ({
  ...initialRunState({ ...RULES, ...rules }, T0),
  ...o,
});
const working = (o: Partial<LaneState> = {}): LaneState => ({
  ...initialLaneState(0),
  item: ITEM,
  attempt: { number: 1, kind: 'first', max: 5 },
  ...o,
});
const types = (a: Action[]) => a.map((x) => x.type);
const endOf = (a: Action[]) => {
  const e = a.find((x) => x.type === 'end');
  return e && e.type === 'end' ? [e.end.state, e.end.completionReason] : null;
};
const before = (o: Partial<Extract<Observation, { kind: 'beforeIteration' }>> = {}): Observation => ({
  kind: 'beforeIteration',
  cancelled: false,
  stop: null,
  pause: false,
  now: T0 + 1000,
  answer: null,
  ...o,
});
const ended = (o: Partial<Extract<Observation, { kind: 'iterationEnded' }>> = {}): Observation => ({
  kind: 'iterationEnded',
  purpose: 'work',
  ending: 'natural',
  detail: 'd',
  fatal: false,
  resetsAt: null,
  costUsd: 0.25,
  now: T0 + 1000,
  iteration: 3,
  question: null,
  ...o,
});

describe("decide(): the loop's decisions", () => {
  describe('before an iteration: sentinels and caps', () => {
    const table: {
      name: string;
      run?: RunState;
      obs: Observation;
      actions: string[];
      end?: [string, string] | null;
    }[] = [
      {
        name: 'cancel ends the run cancelled',
        obs: before({ cancelled: true }),
        actions: ['end'],
        end: ['cancelled', 'INTERRUPTED'],
      },
      {
        name: 'STOP is honoured, then ends the run stopped',
        obs: before({ stop: 'STOP' }),
        actions: ['honourStop', 'end'],
        end: ['stopped', 'STOPPED'],
      },
      {
        name: 'cancel wins over STOP',
        obs: before({ cancelled: true, stop: 'STOP' }),
        actions: ['end'],
        end: ['cancelled', 'INTERRUPTED'],
      },
      { name: 'PAUSE waits', obs: before({ pause: true }), actions: ['pause'] },
      {
        name: 'STOP wins over PAUSE',
        obs: before({ pause: true, stop: 'STOP' }),
        actions: ['honourStop', 'end'],
        end: ['stopped', 'STOPPED'],
      },
      {
        name: 'the iteration cap asks the source once more before ending capReached (truth.test.ts)',
        run: run({ workIterations: 10 }),
        obs: before(),
        actions: ['pickNext'],
      },
      {
        name: 'the cost cap (USD) asks the source once more before ending capReached',
        run: run({ costUsd: 5 }),
        obs: before(),
        actions: ['pickNext'],
      },
      {
        name: 'a cost cap of 0 is no cap',
        run: run({ costUsd: 500 }, { maxCostUsd: 0 }),
        obs: before(),
        actions: ['pickNext'],
      },
      {
        name: 'the wall-time cap asks the source once more before ending capReached',
        obs: before({ now: T0 + 3_600_000 }),
        actions: ['pickNext'],
      },
      {
        name: 'a pending final fix runs before new work',
        run: run({ pendingFix: { purpose: 'finalFix', text: 'fix it' } }),
        obs: before(),
        actions: ['runFix'],
      },
      { name: 'otherwise the source is asked what is next', obs: before(), actions: ['pickNext'] },
    ];
    for (const t of table) {
      it(t.name, () => {
        const d = decide(t.run ?? run(), initialLaneState(), t.obs);
        assert.deepEqual(types(d.actions), t.actions);
        if (t.end !== undefined) assert.deepEqual(endOf(d.actions), t.end);
      });
    }
    it('the pending fix is taken (not run twice)', () => {
      assert.equal(
        decide(run({ pendingFix: { purpose: 'finalFix', text: 'x' } }), initialLaneState(), before()).next.run
          .pendingFix,
        null,
      );
    });
  });

  describe('when a pause ends', () => {
    for (const [name, obs, want] of [
      [
        'cancel while paused ends the run cancelled',
        { kind: 'pauseEnded', cancelled: true, stop: null },
        ['cancelled', 'INTERRUPTED'],
      ],
      [
        'STOP while paused ends the run stopped',
        { kind: 'pauseEnded', cancelled: false, stop: 'STOP' },
        ['stopped', 'STOPPED'],
      ],
      ['PAUSE removed: the run goes on', { kind: 'pauseEnded', cancelled: false, stop: null }, null],
    ] as const) {
      it(name, () => assert.deepEqual(endOf(decide(run(), initialLaneState(), obs as Observation).actions), want));
    }
  });

  describe('what the source says is next', () => {
    const next = (n: Extract<Observation, { kind: 'next' }>['next']): Observation => ({
      kind: 'next',
      next: n,
      sourceLabel: 'quantum.json',
    });
    const work = (failed: number, limit: number | null = null) =>
      next({
        kind: 'work',
        item: ITEM,
        failedAttempts: failed,
        attemptLimit: limit,
        lastFailure: failed ? 'basic gate exit 1' : null,
      });
    it('no tasks: completed NO_WORK', () =>
      assert.deepEqual(endOf(decide(run(), initialLaneState(), next({ kind: 'empty' })).actions), [
        'completed',
        'NO_WORK',
      ]));
    it('nothing ready: blocked', () =>
      assert.deepEqual(
        endOf(decide(run(), initialLaneState(), next({ kind: 'blocked', reason: 'all blocked' })).actions),
        ['blocked', 'BLOCKED'],
      ));
    it('everything done: the final gate runs', () =>
      assert.deepEqual(types(decide(run(), initialLaneState(), next({ kind: 'complete' })).actions), ['runFinalGate']));
    it('work: the first attempt runs and counts against the cap', () => {
      const d = decide(run(), initialLaneState(), work(0));
      assert.deepEqual(d.actions, [
        {
          type: 'runWork',
          item: ITEM,
          attempt: { number: 1, kind: 'first', max: DEFAULT_MAX_ATTEMPTS },
          answered: null,
        },
      ]);
      assert.equal(d.next.run.workIterations, 1);
      assert.deepEqual([d.next.lane.item, d.next.lane.attempt?.number], [ITEM, 1]);
    });
    it('work after failures: the next attempt, debugging on the last', () => {
      const d = decide(run(), initialLaneState(), work(2, 3));
      assert.deepEqual(d.actions[0], {
        type: 'runWork',
        item: ITEM,
        attempt: { number: 3, kind: 'debug', max: 3 },
        answered: null,
      });
    });
    it('out of attempts: the item is blocked with its last failure, and the run pauses', () => {
      const d = decide(run(), initialLaneState(), work(5));
      assert.deepEqual(d.actions, [{ type: 'block', item: ITEM, reason: 'basic gate exit 1', pauseRun: true }]);
      assert.equal(d.next.run.workIterations, 0);
    });
    it('out of attempts with continueOnBlocked: blocked without pausing', () => {
      assert.deepEqual(decide(run({}, { continueOnBlocked: true }), initialLaneState(), work(5)).actions[0], {
        type: 'block',
        item: ITEM,
        reason: 'basic gate exit 1',
        pauseRun: false,
      });
    });
  });

  describe('how an iteration ended', () => {
    const table: {
      name: string;
      obs: Observation;
      actions: string[];
      end?: [string, string] | null;
      check?: (r: RunState) => void;
    }[] = [
      {
        name: 'cancelled ends the run cancelled',
        obs: ended({ ending: 'cancelled' }),
        actions: ['end'],
        end: ['cancelled', 'INTERRUPTED'],
      },
      {
        name: 'stuck (GUTTER) ends the run failed',
        obs: ended({ ending: 'stuck' }),
        actions: ['end'],
        end: ['failed', 'FAILED'],
      },
      {
        name: 'a fatal error ends the run failed',
        obs: ended({ ending: 'error', fatal: true }),
        actions: ['end'],
        end: ['failed', 'FAILED'],
      },
      { name: 'a non-fatal error is verified like any end', obs: ended({ ending: 'error' }), actions: ['checkClaim'] },
      { name: 'rotation goes on to the next iteration', obs: ended({ ending: 'rotation' }), actions: ['continue'] },
      {
        name: 'a natural end of a work iteration checks the claim',
        obs: ended(),
        actions: ['checkClaim'],
        check: (r) => assert.equal(r.costUsd, 0.25),
      },
      { name: 'complete and yield check the claim too', obs: ended({ ending: 'complete' }), actions: ['checkClaim'] },
      {
        name: 'a final fix iteration counts against the cap and goes on',
        obs: ended({ purpose: 'finalFix' }),
        actions: ['continue'],
        check: (r) => assert.equal(r.workIterations, 1),
      },
      {
        name: 'a review iteration goes on to its verdict',
        obs: ended({ purpose: 'review' }),
        actions: ['checkVerdict'],
      },
      {
        name: 'a deferral waits (backoff), giving the iteration back',
        obs: ended({ ending: 'deferred', detail: 'rate limited' }),
        actions: ['defer'],
        check: (r) => {
          assert.equal(r.workIterations, -1);
          assert.equal(r.deferral.inARow, 1);
        },
      },
    ];
    for (const t of table) {
      it(t.name, () => {
        const d = decide(run(), working(), t.obs);
        assert.deepEqual(types(d.actions), t.actions);
        if (t.end !== undefined) assert.deepEqual(endOf(d.actions), t.end);
        t.check?.(d.next.run);
      });
    }
    it('a deferral with a known reset time waits until it (plus the margin)', () => {
      const d = decide(run(), working(), ended({ ending: 'deferred', resetsAt: T0 + 61_000 }));
      assert.deepEqual(d.actions, [
        {
          type: 'defer',
          reason: 'd',
          waitMs: 60_000 + defaultBackoffPolicy.resetMarginMs,
          resetsAt: T0 + 61_000,
          inARow: 0,
        },
      ]);
    });
    it('too many deferrals in a row stop the run as stalled', () => {
      const d = decide(run({ deferral: { inARow: 9, quotaWaits: 0 } }), working(), ended({ ending: 'deferred' }));
      assert.deepEqual(endOf(d.actions), ['stalled', 'STALLED']);
    });
    it('an iteration that is not deferred resets the deferrals in a row', () => {
      assert.equal(
        decide(run({ deferral: { inARow: 4, quotaWaits: 1 } }), working(), ended()).next.run.deferral.inARow,
        0,
      );
    });
  });

  describe('claims, gates and stalls', () => {
    const claimed = (o: Partial<Extract<Observation, { kind: 'claimed' }>> = {}): Observation => ({
      kind: 'claimed',
      done: false,
      completeSignal: false,
      storyFailed: false,
      lastText: 'I tried.',
      sourceLabel: 'quantum.json',
      ...o,
    });
    it('a claimed item goes through the basic gate', () =>
      assert.deepEqual(decide(run(), working(), claimed({ done: true })).actions, [
        { type: 'runGate', tier: 'basic' },
      ]));
    it('a claimed risky item goes through the full gate', () =>
      assert.deepEqual(decide(run(), working({ item: { ...ITEM, risky: true } }), claimed({ done: true })).actions, [
        { type: 'runGate', tier: 'full' },
      ]));
    it('a completion signal the source does not confirm is a warning, then the progress check', () =>
      assert.deepEqual(types(decide(run(), working(), claimed({ completeSignal: true })).actions), [
        'warning',
        'checkProgress',
      ]));
    it("the agent's own STORY_FAILED is a failed attempt", () => {
      const d = decide(run(), working(), claimed({ storyFailed: true }));
      assert.deepEqual(d.actions, [
        {
          type: 'attemptFailed',
          item: ITEM,
          attempt: 1,
          approach: 'I tried.',
          reason: 'agent reported STORY_FAILED: I tried.',
        },
      ]);
      assert.equal(d.next.lane.item, null);
    });
    it('no claim: the progress check', () =>
      assert.deepEqual(types(decide(run(), working(), claimed()).actions), ['checkProgress']));
    it('a green gate accepts the item and clears the stall count', () => {
      const d = decide(run(), working({ stall: 2 }), {
        kind: 'verified',
        gate: { tier: 'basic', passed: true, reason: '' },
        approach: '',
      });
      assert.deepEqual(types(d.actions), ['accept', 'enrichHandoff']);
      assert.deepEqual([d.next.lane.item, d.next.lane.stall], [null, 0]);
    });
    it('no gate configured accepts the item', () =>
      assert.deepEqual(types(decide(run(), working(), { kind: 'verified', gate: null, approach: '' }).actions), [
        'accept',
        'enrichHandoff',
      ]));
    it('a red gate is a failed attempt', () => {
      const d = decide(run(), working(), {
        kind: 'verified',
        gate: { tier: 'basic', passed: false, reason: 'basic gate exit 1: FAIL' },
        approach: 'feat: x',
      });
      assert.deepEqual(d.actions, [
        { type: 'attemptFailed', item: ITEM, attempt: 1, approach: 'feat: x', reason: 'basic gate exit 1: FAIL' },
        { type: 'enrichHandoff' },
      ]);
    });
    it('a red gate on the last attempt also blocks the item', () => {
      const d = decide(run(), working({ attempt: { number: 5, kind: 'debug', max: 5 } }), {
        kind: 'verified',
        gate: { tier: 'basic', passed: false, reason: 'r' },
        approach: 'a',
      });
      assert.deepEqual(types(d.actions), ['attemptFailed', 'block', 'enrichHandoff']);
      assert.match(
        (d.actions[1] as Extract<Action, { type: 'block' }>).reason,
        /^verification failed 5 times; last: r$/,
      );
    });
    it('progress resets the stall count', () =>
      assert.equal(
        decide(run(), working({ stall: 2 }), { kind: 'progressChecked', progressed: true }).next.lane.stall,
        0,
      ));
    it('no progress counts a stall', () =>
      assert.equal(
        decide(run(), working({ stall: 1 }), { kind: 'progressChecked', progressed: false }).next.lane.stall,
        2,
      ));
    it('the stall limit ends the run stalled', () =>
      assert.deepEqual(
        endOf(decide(run(), working({ stall: 2 }), { kind: 'progressChecked', progressed: false }).actions),
        ['stalled', 'STALLED'],
      ));
    it('a gate cut short by cancel ends the run cancelled', () =>
      assert.deepEqual(endOf(decide(run(), working(), { kind: 'cancelledDuringGate' }).actions), [
        'cancelled',
        'INTERRUPTED',
      ]));
    it('a gate whose files changed during the run: a warning listing them, then the run ends failed with the reason (no failed attempt, a value, not a throw)', () => {
      const d = decide(run(), working(), {
        kind: 'gateFilesChanged',
        tier: 'basic',
        changed: ['- workspace file scripts/check.sh sha256:aa', '+ workspace file scripts/check.sh sha256:bb'],
        reason: 'the basic gate was not run: …',
      });
      assert.deepEqual(d.actions, [
        {
          type: 'warning',
          message:
            'gate files changed during the run:\n  - workspace file scripts/check.sh sha256:aa\n  + workspace file scripts/check.sh sha256:bb',
        },
        { type: 'end', end: { state: 'failed', reason: 'the basic gate was not run: …', completionReason: 'FAILED' } },
      ]);
      assert.deepEqual(d.next.run.failedAttempts, {});
    });
    it('a claim checked with no item open: a warning, and the run goes on', () =>
      assert.deepEqual(types(decide(run(), initialLaneState(), claimed({ done: true })).actions), [
        'warning',
        'continue',
      ]));
    it('a gate result with no item open: a warning, and the run goes on', () =>
      assert.deepEqual(
        types(
          decide(run(), initialLaneState(), {
            kind: 'verified',
            gate: { tier: 'basic', passed: true, reason: '' },
            approach: '',
          }).actions,
        ),
        ['warning', 'continue'],
      ));
  });

  describe('questions for a human', () => {
    const REF = { source: ITEM.source, id: ITEM.id, title: ITEM.title };
    const waiting = (o: Partial<LaneState> = {}) =>
      working({ waiting: { id: 'q3', text: 'Postgres or SQLite?', item: REF, askedAtMs: T0 }, ...o });
    it('an iteration that asked reports the question and the item waits (no claim, no failed attempt)', () => {
      const d = decide(run(), working(), ended({ ending: 'question', question: 'Postgres or SQLite?' }));
      assert.deepEqual(d.actions, [{ type: 'ask', id: 'q3', iteration: 3, item: REF, text: 'Postgres or SQLite?' }]);
      assert.deepEqual(d.next.lane.waiting, { id: 'q3', text: 'Postgres or SQLite?', item: REF, askedAtMs: T0 + 1000 });
      assert.equal(d.next.lane.stall, 0);
    });
    it('without an answer the lane waits, spending no iteration', () => {
      const d = decide(run(), waiting(), before());
      assert.deepEqual(d.actions, [{ type: 'waitForAnswer', id: 'q3' }]);
      assert.equal(d.next.run.workIterations, 0);
    });
    it('STOP still ends a waiting run', () =>
      assert.deepEqual(endOf(decide(run(), waiting(), before({ stop: 'STOP' })).actions), ['stopped', 'STOPPED']));
    it('PAUSE still pauses a waiting run', () =>
      assert.deepEqual(types(decide(run(), waiting(), before({ pause: true })).actions), ['pause']));
    it('the answer is reported, then the run picks its work again', () => {
      const d = decide(run(), waiting(), before({ answer: 'SQLite' }));
      assert.deepEqual(d.actions, [{ type: 'answered', id: 'q3', item: REF, text: 'SQLite' }, { type: 'pickNext' }]);
      assert.deepEqual(
        [d.next.lane.waiting, d.next.lane.answered],
        [null, { itemId: 'US-001', question: 'Postgres or SQLite?', answer: 'SQLite' }],
      );
    });
    it('the next work on that item carries the question and the answer', () => {
      const lane = { ...initialLaneState(), answered: { itemId: 'US-001', question: 'Q?', answer: 'A' } };
      const d = decide(run(), lane, {
        kind: 'next',
        next: { kind: 'work', item: ITEM, failedAttempts: 0, attemptLimit: null, lastFailure: null },
        sourceLabel: 'q',
      });
      assert.deepEqual((d.actions[0] as Extract<Action, { type: 'runWork' }>).answered, {
        question: 'Q?',
        answer: 'A',
      });
      assert.equal(d.next.lane.answered, null);
    });
    it('work on another item keeps the answer owed', () => {
      const lane = { ...initialLaneState(), answered: { itemId: 'US-009', question: 'Q?', answer: 'A' } };
      const d = decide(run(), lane, {
        kind: 'next',
        next: { kind: 'work', item: ITEM, failedAttempts: 0, attemptLimit: null, lastFailure: null },
        sourceLabel: 'q',
      });
      assert.equal((d.actions[0] as Extract<Action, { type: 'runWork' }>).answered, null);
      assert.notEqual(d.next.lane.answered, null);
    });
    it('questionTimeoutMinutes ends the wait as stalled', () => {
      const d = decide(run({}, { questionTimeoutMs: 60_000 }), waiting(), before({ now: T0 + 60_000 }));
      assert.deepEqual(types(d.actions), ['questionTimedOut', 'end']);
      assert.deepEqual(endOf(d.actions), ['stalled', 'STALLED']);
    });
    it('before the timeout it still waits', () =>
      assert.deepEqual(
        types(decide(run({}, { questionTimeoutMs: 60_000 }), waiting(), before({ now: T0 + 59_999 })).actions),
        ['waitForAnswer'],
      ));
  });

  describe('questions with continueOnBlocked: other ready work goes on', () => {
    const REF = { source: ITEM.source, id: ITEM.id, title: ITEM.title };
    const Q = { id: 'q3', text: 'Postgres or SQLite?', item: REF, askedAtMs: T0 };
    const Q2 = {
      id: 'q5',
      text: 'Which port?',
      item: { source: 'quantum' as const, id: 'US-004', title: 'Serve' },
      askedAtMs: T0 + 500,
    };
    const cob = (o: Partial<RunState> = {}, rules: Partial<RunRules> = {}) =>
      run(o, { continueOnBlocked: true, ...rules });
    const work = (id: string) => ({
      kind: 'next' as const,
      next: { kind: 'work' as const, item: { ...ITEM, id }, failedAttempts: 0, attemptLimit: null, lastFailure: null },
      sourceLabel: 'quantum.json',
    });
    const none = (kind: 'blocked' | 'complete' | 'empty') => ({
      kind: 'next' as const,
      next: kind === 'blocked' ? { kind, reason: 'nothing ready' } : { kind },
      sourceLabel: 'quantum.json',
    });

    it('an item that asks is set aside in the run state and the lane is free', () => {
      const d = decide(cob(), working(), ended({ ending: 'question', question: 'Postgres or SQLite?' }));
      assert.deepEqual(d.actions, [{ type: 'ask', id: 'q3', iteration: 3, item: REF, text: 'Postgres or SQLite?' }]);
      assert.deepEqual(d.next.run.asked, [{ ...Q, askedAtMs: T0 + 1000 }]);
      assert.deepEqual([d.next.lane.waiting, d.next.lane.item, d.next.lane.attempt], [null, null, null]);
    });
    it('a question of an iteration without an item (a final fix) still makes the run wait', () => {
      const d = decide(cob(), initialLaneState(), ended({ purpose: 'finalFix', ending: 'question', question: 'Q?' }));
      assert.deepEqual([d.next.run.asked, d.next.lane.waiting?.id], [[], 'q3']);
    });

    const table: { name: string; run: RunState; obs: Observation; actions: Action[]; asked?: string[] }[] = [
      {
        name: 'without answers the source is asked for work other than the waiting items',
        run: cob({ asked: [Q, Q2] }),
        obs: before({ answers: {} }),
        actions: [{ type: 'pickNext', skip: ['US-001', 'US-004'] }],
        asked: ['q3', 'q5'],
      },
      {
        name: 'an answer reports it and takes its item up before new work',
        run: cob({ asked: [Q, Q2] }),
        obs: before({ answers: { q5: '8080' } }),
        actions: [
          { type: 'answered', id: 'q5', item: Q2.item, text: '8080' },
          { type: 'pickNext', skip: ['US-001'], take: 'US-004' },
        ],
        asked: ['q3'],
      },
      {
        name: 'two answers at once: the first asked is taken, the other on the next iteration',
        run: cob({ asked: [Q, Q2] }),
        obs: before({ answers: { q3: 'SQLite', q5: '8080' } }),
        actions: [
          { type: 'answered', id: 'q3', item: REF, text: 'SQLite' },
          { type: 'pickNext', skip: ['US-004'], take: 'US-001' },
        ],
        asked: ['q5'],
      },
      {
        name: 'the last answer leaves nothing to skip',
        run: cob({ asked: [Q] }),
        obs: before({ answers: { q3: 'SQLite' } }),
        actions: [
          { type: 'answered', id: 'q3', item: REF, text: 'SQLite' },
          { type: 'pickNext', take: 'US-001' },
        ],
        asked: [],
      },
      {
        name: 'STOP still ends the run',
        run: cob({ asked: [Q] }),
        obs: before({ stop: 'STOP' }),
        actions: [
          { type: 'honourStop' },
          { type: 'end', end: { state: 'stopped', reason: 'stopped by STOP', completionReason: 'STOPPED' } },
        ],
        asked: ['q3'],
      },
      {
        name: 'PAUSE still pauses',
        run: cob({ asked: [Q] }),
        obs: before({ pause: true }),
        actions: [{ type: 'pause' }],
        asked: ['q3'],
      },
      {
        name: 'questionTimeoutMinutes ends the run stalled',
        run: cob({ asked: [Q, Q2] }, { questionTimeoutMs: 60_000 }),
        obs: before({ now: T0 + 60_000 }),
        actions: [
          { type: 'questionTimedOut', id: 'q3', item: REF, waitedMs: 60_000 },
          {
            type: 'end',
            end: {
              state: 'stalled',
              reason: 'stalled: the question of US-001 got no answer in 1 min',
              completionReason: 'STALLED',
            },
          },
        ],
        asked: ['q5'],
      },
      {
        name: 'an answered question does not time out',
        run: cob({ asked: [Q] }, { questionTimeoutMs: 60_000 }),
        obs: before({ now: T0 + 60_000, answers: { q3: 'SQLite' } }),
        actions: [
          { type: 'answered', id: 'q3', item: REF, text: 'SQLite' },
          { type: 'pickNext', take: 'US-001' },
        ],
        asked: [],
      },
      {
        name: 'other ready work runs while items wait',
        run: cob({ asked: [Q] }),
        obs: work('US-002'),
        actions: [
          {
            type: 'runWork',
            item: { ...ITEM, id: 'US-002' },
            attempt: { number: 1, kind: 'first', max: 5 },
            answered: null,
          },
        ],
        asked: ['q3'],
      },
      {
        name: 'nothing else ready (blocked): the run waits for an answer',
        run: cob({ asked: [Q, Q2] }),
        obs: none('blocked'),
        actions: [{ type: 'waitForAnswer', id: 'q3' }],
        asked: ['q3', 'q5'],
      },
      {
        name: 'a source that says complete while items wait: the run waits, no final gate',
        run: cob({ asked: [Q] }),
        obs: none('complete'),
        actions: [{ type: 'waitForAnswer', id: 'q3' }],
        asked: ['q3'],
      },
      {
        name: 'nothing waits and nothing is ready: blocked as before',
        run: cob(),
        obs: none('blocked'),
        actions: [{ type: 'end', end: { state: 'blocked', reason: 'nothing ready', completionReason: 'BLOCKED' } }],
        asked: [],
      },
    ];
    for (const t of table) {
      it(t.name, () => {
        const d = decide(t.run, initialLaneState(), t.obs);
        assert.deepEqual(d.actions, t.actions);
        if (t.asked)
          assert.deepEqual(
            d.next.run.asked.map((q) => q.id),
            t.asked,
          );
      });
    }
    it('the answer reaches the prompt of the taken item', () => {
      const a = decide(cob({ asked: [Q] }), initialLaneState(), before({ answers: { q3: 'SQLite' } }));
      const d = decide(a.next.run, a.next.lane, work('US-001'));
      assert.deepEqual((d.actions[0] as Extract<Action, { type: 'runWork' }>).answered, {
        question: 'Postgres or SQLite?',
        answer: 'SQLite',
      });
    });
  });

  describe('final verification and review', () => {
    const gate = (passed: boolean) => ({
      kind: 'finalGate' as const,
      hasGates: true,
      gate: { passed, command: 'make all', exitCode: passed ? 0 : 2, summary: 'FAIL x' },
    });
    it('a green final gate completes the run', () =>
      assert.deepEqual(endOf(decide(run(), initialLaneState(), gate(true)).actions), ['completed', 'DONE']));
    it('no final gate and no gates: completed', () =>
      assert.deepEqual(
        endOf(decide(run(), initialLaneState(), { kind: 'finalGate', hasGates: false, gate: null }).actions),
        ['completed', 'DONE'],
      ));
    it('a red final gate owes a fix iteration with the failure', () => {
      const d = decide(run(), initialLaneState(), gate(false));
      assert.deepEqual(types(d.actions), ['continue']);
      assert.equal(d.next.run.pendingFix?.purpose, 'finalFix');
      assert.match(d.next.run.pendingFix!.text, /final gate fails \(`make all`, exit 2\)[\s\S]*FAIL x/);
    });
    it('with the reviewer, a green final gate runs the review', () =>
      assert.deepEqual(types(decide(run({}, { reviewer: true }), initialLaneState(), gate(true)).actions), [
        'runReview',
      ]));
    it('SHIP completes the run', () =>
      assert.deepEqual(
        endOf(decide(run(), initialLaneState(), { kind: 'reviewed', verdict: 'SHIP', text: '' }).actions),
        ['completed', 'DONE'],
      ));
    it("any other verdict owes a fix with the reviewer's text", () => {
      const d = decide(run(), initialLaneState(), { kind: 'reviewed', verdict: 'NEEDS_WORK', text: 'add tests' });
      assert.match(d.next.run.pendingFix!.text, /verdict NEEDS_WORK[\s\S]*add tests/);
    });
  });

  it('is pure: the states it was given do not change', () => {
    const r = run();
    const l = working();
    const copy = JSON.stringify([r, l]);
    decide(r, l, ended({ ending: 'deferred' }));
    decide(r, l, { kind: 'progressChecked', progressed: false });
    assert.equal(JSON.stringify([r, l]), copy);
  });
});

describe('classifyEnding', () => {
  const exit = (o: Partial<IterationExit> = {}, outcome: Partial<IterationExit['outcome']> = {}): IterationExit => ({
    exitCode: 0,
    signal: null,
    killedBy: null,
    stderr: '',
    spawnError: null,
    leftBehind: [],
    outcome: { kind: 'success', reason: 'ok', evidence: 'result', ...outcome } as IterationExit['outcome'],
    ledger: { contextTokens: 170_000, thresholds: { rotate: 160_000, warn: 140_000 } } as IterationExit['ledger'],
    summary: {} as IterationExit['summary'],
    decoder: {} as IterationExit['decoder'],
    ...o,
  });
  const sig = (kind: AgentSignal['kind'], value: string, reason?: string): AgentSignal => ({
    kind,
    system: 'promise',
    value,
    ...(reason ? { reason } : {}),
  });
  const table: [string, IterationExit, AgentSignal[], boolean, string][] = [
    ['killed for rotation → rotation', exit({ killedBy: 'rotate' }), [], false, 'rotation'],
    ['killed by cancel → cancelled', exit({ killedBy: 'cancel' }), [sig('complete', 'COMPLETE')], false, 'cancelled'],
    ['could not start → error', exit({ spawnError: 'ENOENT' }), [], false, 'error'],
    ['rate limited → deferred', exit({}, { kind: 'rateLimited' }), [], false, 'deferred'],
    ['transient API error → deferred', exit({}, { kind: 'transient' }), [], false, 'deferred'],
    ['fatal → error', exit({}, { kind: 'fatal' }), [sig('complete', 'COMPLETE')], false, 'error'],
    ['GUTTER → stuck', exit(), [sig('stuck', 'GUTTER', 'no idea')], false, 'stuck'],
    ['a completion signal → complete', exit(), [sig('complete', 'ALL_TASKS_DONE')], false, 'complete'],
    ['STORY_PASSED → complete', exit(), [sig('storyPassed', 'STORY_PASSED')], false, 'complete'],
    ['the Working set changed → yield', exit(), [], true, 'yield'],
    ['no result → error', exit({}, { kind: 'noResult' }), [], false, 'error'],
    ['otherwise → natural', exit(), [], false, 'natural'],
  ];
  for (const [name, e, s, ws, want] of table) it(name, () => assert.equal(classifyEnding(e, s, ws).ending, want));
  it('a <question> tag → question, even with a completion signal', () =>
    assert.equal(
      classifyEnding(exit(), [sig('complete', 'COMPLETE')], false, { text: 'Q?', how: 'tag' }).ending,
      'question',
    ));
  it('a plain question → question only when nothing else was signalled', () => {
    assert.equal(classifyEnding(exit(), [], false, { text: 'Q?', how: 'plain' }).ending, 'question');
    assert.equal(
      classifyEnding(exit(), [sig('complete', 'COMPLETE')], false, { text: 'Q?', how: 'plain' }).ending,
      'complete',
    );
    assert.equal(classifyEnding(exit(), [], true, { text: 'Q?', how: 'plain' }).ending, 'yield');
  });
  it('a rate limit wins over a question', () =>
    assert.equal(
      classifyEnding(exit({}, { kind: 'rateLimited' }), [], false, { text: 'Q?', how: 'tag' }).ending,
      'deferred',
    ));
});

describe('decideDeferral', () => {
  const p: BackoffPolicy = {
    baseMs: 15_000,
    capMs: 300_000,
    resetMarginMs: 15_000,
    maxResetWaitMs: 6 * 3600_000,
    maxQuotaWaits: 8,
    maxDeferrals: 10,
  };
  const table: [string, { inARow: number; quotaWaits: number }, number | null, string, number | undefined][] = [
    ['first backoff: 15 s', { inARow: 0, quotaWaits: 0 }, null, 'backoff', 15_000],
    ['doubles: 30 s', { inARow: 1, quotaWaits: 0 }, null, 'backoff', 30_000],
    ['capped at 300 s', { inARow: 7, quotaWaits: 0 }, null, 'backoff', 300_000],
    ['the tenth in a row stalls', { inARow: 9, quotaWaits: 0 }, null, 'stall', undefined],
    ['a known reset: until it plus 15 s', { inARow: 3, quotaWaits: 0 }, T0 + 60_000, 'waitUntilReset', 75_000],
    ['a reset far away: at most 6 h', { inARow: 0, quotaWaits: 0 }, T0 + 24 * 3600_000, 'waitUntilReset', 6 * 3600_000],
    ['after 8 quota waits: backoff instead', { inARow: 0, quotaWaits: 8 }, T0 + 60_000, 'backoff', 15_000],
    ['a reset in the past: backoff', { inARow: 0, quotaWaits: 0 }, T0 - 1, 'backoff', 15_000],
  ];
  for (const [name, state, resetsAt, action, waitMs] of table) {
    it(name, () => {
      const d = decideDeferral(state, resetsAt, T0, p);
      assert.equal(d.action, action);
      if (waitMs !== undefined) assert.equal((d as { waitMs: number }).waitMs, waitMs);
    });
  }
  it('a quota wait does not count toward the deferrals in a row', () =>
    assert.deepEqual(decideDeferral({ inARow: 3, quotaWaits: 0 }, T0 + 1000, T0, p).next, {
      inARow: 3,
      quotaWaits: 1,
    }));
});

describe('nextAttempt', () => {
  const table: [number, number | null, ReturnType<typeof nextAttempt>][] = [
    [0, null, { number: 1, kind: 'first', max: 5 }],
    [1, null, { number: 2, kind: 'fix', max: 5 }],
    [3, null, { number: 4, kind: 'fix', max: 5 }],
    [4, null, { number: 5, kind: 'debug', max: 5 }],
    [5, null, 'exhausted'],
    [0, 3, { number: 1, kind: 'first', max: 3 }],
    [2, 3, { number: 3, kind: 'debug', max: 3 }],
    [3, 3, 'exhausted'],
    [0, 1, { number: 1, kind: 'first', max: 1 }],
    [0, 0, { number: 1, kind: 'first', max: 1 }],
    [0, 9, { number: 1, kind: 'first', max: 5 }],
  ];
  for (const [failed, limit, want] of table)
    it(`${failed} failed, source limit ${limit} → ${JSON.stringify(want)}`, () =>
      assert.deepEqual(nextAttempt(failed, limit), want));
});

describe('the attempt-history text', () => {
  const rec = (n: number) => ({
    number: n,
    approach: `approach ${n}`,
    reason: `basic gate exit 1: fail ${n}`,
    at: '2026-12-01T09:00:00Z',
  });
  it('is empty without earlier attempts', () => assert.equal(formatAttemptHistory([], 'first'), ''));
  it('lists every earlier attempt, forbids repeating it, and asks for another approach', () => {
    assert.equal(
      formatAttemptHistory([rec(1), rec(2)], 'fix'),
      [
        '## Earlier attempts at this task (all failed verification)',
        '',
        '### Previous attempt #1',
        '- Approach: approach 1',
        '- Failure cause: basic gate exit 1: fail 1',
        '- Forbidden: retrying the approach above.',
        '',
        '### Previous attempt #2',
        '- Approach: approach 2',
        '- Failure cause: basic gate exit 1: fail 2',
        '- Forbidden: retrying the approach above.',
        '',
        'Take a different approach from every attempt above.',
        '',
      ].join('\n'),
    );
  });
  it('on the debugging attempt asks for the root cause first', () =>
    assert.match(
      formatAttemptHistory([rec(1)], 'debug'),
      /## This is the debugging attempt \(the last one\)\nDo not try another quick fix\. Find the root cause first/,
    ));
  it('names an unknown approach', () =>
    assert.match(formatAttemptHistory([{ ...rec(1), approach: '' }], 'fix'), /- Approach: \(unknown\)/));
  for (const [text, want] of [
    ['Done. I fixed it!', 'I fixed it!'],
    ['<promise>COMPLETE</promise>', ''],
    ['one\ntwo three.', 'one two three.'],
  ] as const) {
    it(`oneLine(${JSON.stringify(text)}) = ${JSON.stringify(want)}`, () => assert.equal(oneLine(text), want));
  }
});
