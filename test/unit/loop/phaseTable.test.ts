import * as assert from 'node:assert/strict';
import { defaultBackoffPolicy } from '../../../src/core/loop/backoff';
import { decide } from '../../../src/core/loop/lane/decide';
import {
  FOLLOWS,
  initialLaneState,
  initialRunState,
  MAY_ACT,
  PHASE_OF,
  type LaneState,
  type Observation,
  type RunRules,
  type RunState,
} from '../../../src/core/loop/lane/phases';

const T0 = Date.UTC(2026, 11, 1, 9, 0, 0);
const RULES: RunRules = {
  maxIterations: 10,
  maxCostUsd: 5,
  maxWallMs: 3_600_000,
  stallLimit: 3,
  backoff: defaultBackoffPolicy,
  reviewer: false,
  continueOnBlocked: false,
  questionTimeoutMs: 60_000,
};
const ITEM = { source: 'quantum' as const, id: 'US-001', title: 'Export slugify', risky: false };
const OTHER = { source: 'quantum' as const, id: 'US-002', title: 'Other' };
const run = (o: Partial<RunState> = {}, rules: Partial<RunRules> = {}): RunState => ({
  ...initialRunState({ ...RULES, ...rules }, T0),
  ...o,
});
const idle = (o: Partial<LaneState> = {}): LaneState => ({ ...initialLaneState(0), ...o });
const working = (o: Partial<LaneState> = {}): LaneState =>
  idle({ item: ITEM, attempt: { number: 1, kind: 'first', max: 3 }, ...o });
const question = { id: 'q3', text: 'Which one?', item: OTHER, askedAtMs: T0 };

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
const work = (failedAttempts = 0): Observation => ({
  kind: 'next',
  next: { kind: 'work', item: ITEM, failedAttempts, attemptLimit: 3, lastFailure: null },
  sourceLabel: 'quantum.json',
});
const claimed = (o: Partial<Extract<Observation, { kind: 'claimed' }>> = {}): Observation => ({
  kind: 'claimed',
  done: false,
  completeSignal: false,
  storyFailed: false,
  lastText: 'tried',
  sourceLabel: 'quantum.json',
  ...o,
});
const gate = (passed: boolean) => ({ tier: 'basic' as const, passed, reason: passed ? 'ok' : 'exit 1' });
const finalGate = (passed: boolean, o: Partial<Extract<Observation, { kind: 'finalGate' }>> = {}): Observation => ({
  kind: 'finalGate',
  gate: { passed, command: 'npm test', exitCode: passed ? 0 : 1, summary: '' },
  hasGates: true,
  ...o,
});

/** A sample of every point a lane decides at, in the states that reach each of its arrows. */
const SAMPLES: { run: RunState; lane: LaneState; obs: Observation }[] = [
  { run: run(), lane: idle(), obs: before() },
  { run: run(), lane: idle(), obs: before({ cancelled: true }) },
  { run: run(), lane: idle(), obs: before({ stop: 'STOP' }) },
  { run: run(), lane: idle(), obs: before({ pause: true }) },
  { run: run(), lane: idle({ waiting: question }), obs: before() },
  { run: run(), lane: idle({ waiting: question }), obs: before({ answer: 'the first' }) },
  { run: run(), lane: idle({ waiting: question }), obs: before({ now: T0 + 120_000 }) },
  { run: run({ pendingFix: { purpose: 'finalFix', text: 'fix it' } }), lane: idle(), obs: before() },
  { run: run({ workIterations: 10 }), lane: idle(), obs: before() },
  { run: run(), lane: idle(), obs: { kind: 'pauseEnded', cancelled: true, stop: null } },
  { run: run(), lane: idle(), obs: { kind: 'pauseEnded', cancelled: false, stop: 'STOP' } },
  { run: run(), lane: idle(), obs: { kind: 'pauseEnded', cancelled: false, stop: null } },
  { run: run(), lane: idle(), obs: work() },
  { run: run(), lane: idle(), obs: work(3) },
  { run: run(), lane: idle(), obs: { ...work(), vanished: ['US-009 (Gone)'] } as Observation },
  { run: run(), lane: idle(), obs: { kind: 'next', next: { kind: 'empty' }, sourceLabel: 'quantum.json' } },
  { run: run(), lane: idle(), obs: { kind: 'next', next: { kind: 'complete' }, sourceLabel: 'quantum.json' } },
  {
    run: run(),
    lane: idle(),
    obs: { kind: 'next', next: { kind: 'complete' }, sourceLabel: 'quantum.json', unverified: [OTHER] },
  },
  {
    run: run({ asked: [question] }),
    lane: idle(),
    obs: { kind: 'next', next: { kind: 'blocked', reason: 'waiting' }, sourceLabel: 'quantum.json' },
  },
  { run: run(), lane: working(), obs: ended() },
  { run: run(), lane: working(), obs: ended({ ending: 'cancelled' }) },
  { run: run(), lane: working(), obs: ended({ ending: 'rotation' }) },
  { run: run(), lane: working(), obs: ended({ ending: 'deferred' }) },
  { run: run(), lane: working(), obs: ended({ ending: 'question', question: 'Which one?' }) },
  { run: run(), lane: idle(), obs: ended({ purpose: 'review' }) },
  { run: run(), lane: idle(), obs: ended({ purpose: 'finalFix' }) },
  { run: run(), lane: idle(), obs: claimed({ done: true }) },
  { run: run(), lane: working(), obs: claimed({ done: true }) },
  { run: run(), lane: working(), obs: claimed({ others: [OTHER], completeSignal: true }) },
  { run: run(), lane: working(), obs: claimed({ storyFailed: true }) },
  { run: run(), lane: idle(), obs: { kind: 'verified', gate: gate(true), approach: 'a' } },
  { run: run(), lane: working(), obs: { kind: 'verified', gate: gate(true), approach: 'a' } },
  { run: run(), lane: working({ claims: [OTHER] }), obs: { kind: 'verified', gate: gate(false), approach: 'a' } },
  {
    run: run(),
    lane: working({ attempt: { number: 3, kind: 'debug', max: 3 } }),
    obs: { kind: 'verified', gate: gate(false), approach: 'a' },
  },
  { run: run(), lane: working(), obs: { kind: 'cancelledDuringGate' } },
  {
    run: run(),
    lane: working(),
    obs: { kind: 'gateFilesChanged', tier: 'basic', changed: ['M check.sh'], reason: 'changed' },
  },
  { run: run(), lane: working(), obs: { kind: 'progressChecked', progressed: true } },
  { run: run(), lane: working({ stall: 2 }), obs: { kind: 'progressChecked', progressed: false } },
  { run: run(), lane: idle(), obs: finalGate(true) },
  { run: run(), lane: idle(), obs: finalGate(false) },
  { run: run({}, { reviewer: true }), lane: idle(), obs: finalGate(true) },
  { run: run(), lane: idle(), obs: finalGate(true, { claimsAfter: [OTHER] }) },
  { run: run(), lane: idle(), obs: { kind: 'reviewed', verdict: 'SHIP', text: '' } },
  { run: run(), lane: idle(), obs: { kind: 'reviewed', verdict: 'NEEDS_WORK', text: 'no' } },
];

describe('the phase table: every decision keeps to it', () => {
  const seen = new Set<string>();
  for (const [i, s] of SAMPLES.entries()) {
    const phase = PHASE_OF[s.obs.kind];
    it(`sample ${i + 1}: ${s.obs.kind} (${phase}) decides only actions the table allows there`, () => {
      const { actions } = decide(s.run, s.lane, s.obs);
      assert.ok(actions.length > 0, 'a decision always says what to do');
      for (const [k, a] of actions.entries()) {
        assert.ok(
          (MAY_ACT[phase] as readonly string[]).includes(a.type),
          `${a.type} is not an arrow of ${phase} (${JSON.stringify(actions.map((x) => x.type))})`,
        );
        seen.add(`${phase} ${a.type}`);
        // An action that observes hands the lane to its next decision: nothing after it in the same list.
        if (FOLLOWS[a.type].length) assert.equal(k, actions.length - 1, `${a.type} observes, yet is not the last`);
        if (a.type === 'end') assert.equal(k, actions.length - 1, 'the end is the last action');
      }
    });
  }

  it('the samples walk every arrow of the table (no arrow the rules never take)', () => {
    const arrows = Object.entries(MAY_ACT).flatMap(([phase, acts]) => acts.map((a) => `${phase} ${a}`));
    assert.deepEqual(
      arrows.filter((a) => !seen.has(a)),
      [],
    );
  });

  it('every observation an action names is decided in a phase, and every phase is reached by one', () => {
    const followed = new Set(Object.values(FOLLOWS).flat());
    for (const kind of followed) assert.ok(kind in PHASE_OF, kind);
    const reached = new Set([...followed].map((k) => PHASE_OF[k]));
    // BEFORE starts every turn (the lane's loop observes it itself).
    assert.deepEqual(
      Object.keys(MAY_ACT).filter((p) => p !== 'BEFORE' && !reached.has(p as never)),
      [],
    );
  });
});
