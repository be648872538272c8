import * as assert from 'node:assert/strict';
import { defaultBackoffPolicy } from '../../../src/core/loop/backoff';
import { decide, initialLaneState, initialRunState, itemKey, type Action, type LaneState, type Observation, type RunRules, type RunState } from '../../../src/core/loop/decide';

/** Issue 11 "Every item, every exit": the truth rules of decide(), as tables. */
const T0 = Date.UTC(2026, 11, 1, 9, 0, 0);
const RULES: RunRules = { maxIterations: 10, maxCostUsd: 0, maxWallMs: 0, stallLimit: 3, backoff: defaultBackoffPolicy, reviewer: false, continueOnBlocked: false, questionTimeoutMs: 0 };
const ITEM = { source: 'quantum' as const, id: 'US-001', title: 'Export slugify', risky: false };
const OTHER = { source: 'quantum' as const, id: 'US-002', title: 'Other story' };
const BOX = { source: 'checklist' as const, id: 'RALPH_TASK.md:3', title: 'Make it', risky: false };
const run = (o: Partial<RunState> = {}, rules: Partial<RunRules> = {}): RunState => ({ ...initialRunState({ ...RULES, ...rules }, T0), ...o });
const working = (o: Partial<LaneState> = {}): LaneState => ({ ...initialLaneState(0), item: ITEM, attempt: { number: 1, kind: 'first', max: 5 }, ...o });
const types = (a: Action[]) => a.map((x) => x.type);
const endOf = (a: Action[]) => { const e = a.find((x) => x.type === 'end'); return e && e.type === 'end' ? [e.end.state, e.end.completionReason] : null; };
const before = (): Observation => ({ kind: 'beforeIteration', cancelled: false, stop: null, pause: false, now: T0 + 1000, answer: null });
const claimed = (o: Partial<Extract<Observation, { kind: 'claimed' }>> = {}): Observation => ({ kind: 'claimed', done: false, completeSignal: false, storyFailed: false, lastText: '', sourceLabel: 'quantum.json', others: [], ...o });
const gate = (passed: boolean): Observation => ({ kind: 'verified', gate: { tier: 'basic', passed, reason: passed ? 'ok' : 'basic gate exit 1' }, approach: 'a' });
const work = (item: typeof ITEM | typeof BOX, failedAttempts = 0): Observation => ({ kind: 'next', next: { kind: 'work', item, failedAttempts, attemptLimit: 3, lastFailure: null }, sourceLabel: 'src' });

describe('decide(): every item, every exit (issue 11)', () => {
  describe('other items claimed in an iteration', () => {
    it('the item not done: every other claim is put back, naming the item, then progress is checked', () => {
      const d = decide(run(), working(), claimed({ others: [OTHER] }));
      assert.deepEqual(types(d.actions), ['putBack', 'checkProgress']);
      const p = d.actions[0] as Extract<Action, { type: 'putBack' }>;
      assert.deepEqual(p.items, [OTHER]);
      assert.match(p.reason, /did not finish US-001; no gate verified it/);
    });
    it('the agent\'s STORY_FAILED: the other claims go back and the attempt fails', () => {
      assert.deepEqual(types(decide(run(), working(), claimed({ others: [OTHER], storyFailed: true })).actions), ['putBack', 'attemptFailed']);
    });
    it('the item done: the gate runs, the claims wait on it', () => {
      const d = decide(run(), working(), claimed({ done: true, others: [OTHER] }));
      assert.deepEqual(types(d.actions), ['runGate']);
      assert.deepEqual(d.next.lane.claims, [OTHER]);
    });
    it('one green gate verifies every item the iteration finished', () => {
      const d = decide(run(), working({ claims: [OTHER] }), gate(true));
      assert.deepEqual(types(d.actions), ['accept', 'enrichHandoff']);
      assert.deepEqual((d.actions[0] as Extract<Action, { type: 'accept' }>).also, [OTHER]);
      assert.deepEqual(d.next.lane.claims, []);
    });
    it('a red gate puts the other claims back before the failed attempt', () => {
      const d = decide(run(), working({ claims: [OTHER] }), gate(false));
      assert.deepEqual(types(d.actions), ['putBack', 'attemptFailed', 'enrichHandoff']);
      assert.match((d.actions[0] as Extract<Action, { type: 'putBack' }>).reason, /with US-001; the basic gate is red/);
      assert.deepEqual(d.next.lane.claims, []);
    });
    it('no claims: nothing is put back', () => {
      assert.deepEqual(types(decide(run(), working(), claimed()).actions), ['checkProgress']);
      assert.deepEqual(types(decide(run(), working(), gate(false)).actions), ['attemptFailed', 'enrichHandoff']);
    });
  });

  describe('attempts: the run\'s own count wins when larger', () => {
    const table: { name: string; run: RunState; obs: Observation; actions: string[]; attempt?: number }[] = [
      { name: 'attempts.json deleted (0 read): the run\'s count of 2 makes this attempt 3', run: run({ failedAttempts: { [itemKey(BOX)]: 2 } }), obs: work(BOX, 0), actions: ['runWork'], attempt: 3 },
      { name: 'attempts.json deleted at the limit: the box is blocked', run: run({ failedAttempts: { [itemKey(BOX)]: 3 } }), obs: work(BOX, 0), actions: ['block'] },
      { name: 'the source\'s larger count wins too', run: run({ failedAttempts: { [itemKey(ITEM)]: 1 } }), obs: work(ITEM, 2), actions: ['runWork'], attempt: 3 },
      { name: 'an item this run blocked and offered again ends the run blocked (a removed block record never loops)', run: run({ blocked: [itemKey(BOX)] }), obs: work(BOX, 0), actions: ['end'] },
    ];
    for (const t of table) {
      it(t.name, () => {
        const d = decide(t.run, initialLaneState(), t.obs);
        assert.deepEqual(types(d.actions), t.actions);
        const w = d.actions[0];
        if (t.attempt !== undefined && w?.type === 'runWork') assert.equal(w.attempt.number, t.attempt);
      });
    }
    it('a failed attempt is counted in the run state; blocking records the item', () => {
      const d = decide(run(), working({ item: BOX, attempt: { number: 3, kind: 'debug', max: 3 } }), gate(false));
      assert.deepEqual(types(d.actions), ['attemptFailed', 'block', 'enrichHandoff']);
      assert.equal(d.next.run.failedAttempts[itemKey(BOX)], 3);
      assert.deepEqual(d.next.run.blocked, [itemKey(BOX)]);
      const s = decide(run(), working(), claimed({ storyFailed: true }));
      assert.equal(s.next.run.failedAttempts[itemKey(ITEM)], 1);
    });
    it('a checklist box is counted by its text (lines move)', () => {
      assert.equal(itemKey(BOX), 'checklist:Make it');
      assert.equal(itemKey(ITEM), 'quantum:US-001');
    });
  });

  describe('completion wins over the cap', () => {
    const capped = decide(run({ workIterations: 10 }), initialLaneState(), before());
    const atCap = capped.next.run;
    it('at the cap the source is asked once more, the cap remembered', () => {
      assert.deepEqual(types(capped.actions), ['pickNext']);
      assert.deepEqual(atCap.capEnd?.completionReason, 'MAX_ITERATIONS');
    });
    const table: { name: string; run: RunState; obs: Observation; actions: string[]; end?: [string, string] }[] = [
      { name: 'everything done: the final gate runs', run: atCap, obs: { kind: 'next', next: { kind: 'complete' }, sourceLabel: 's' }, actions: ['runFinalGate'] },
      { name: 'the final gate green: completed, not capReached', run: atCap, obs: { kind: 'finalGate', gate: { passed: true, command: 'c', exitCode: 0, summary: '' }, hasGates: true }, actions: ['end'], end: ['completed', 'DONE'] },
      { name: 'the final gate red: capReached (no fix iteration past the cap)', run: atCap, obs: { kind: 'finalGate', gate: { passed: false, command: 'c', exitCode: 1, summary: '' }, hasGates: true }, actions: ['end'], end: ['capReached', 'MAX_ITERATIONS'] },
      { name: 'a reviewer owed: capReached (no review past the cap)', run: { ...atCap, rules: { ...atCap.rules, reviewer: true } }, obs: { kind: 'finalGate', gate: { passed: true, command: 'c', exitCode: 0, summary: '' }, hasGates: true }, actions: ['end'], end: ['capReached', 'MAX_ITERATIONS'] },
      { name: 'work left: capReached', run: atCap, obs: work(ITEM), actions: ['end'], end: ['capReached', 'MAX_ITERATIONS'] },
      { name: 'nothing ready: capReached', run: atCap, obs: { kind: 'next', next: { kind: 'blocked', reason: 'r' }, sourceLabel: 's' }, actions: ['end'], end: ['capReached', 'MAX_ITERATIONS'] },
      { name: 'a pending final fix at the cap is not run: the source is asked', run: run({ workIterations: 10, pendingFix: { purpose: 'finalFix', text: 'x' } }), obs: before(), actions: ['pickNext'] },
      { name: 'the cap remembered ends the next decision point', run: atCap, obs: before(), actions: ['end'], end: ['capReached', 'MAX_ITERATIONS'] },
    ];
    for (const t of table) {
      it(t.name, () => {
        const d = decide(t.run, initialLaneState(), t.obs);
        assert.deepEqual(types(d.actions), t.actions);
        if (t.end) assert.deepEqual(endOf(d.actions), t.end);
      });
    }
  });
});

describe('decide(): the gate that verifies other claims (issue 11)', () => {
  it('a risky box among the other claims asks for the full gate', () => {
    const d = decide(run(), working({ item: BOX }), claimed({ done: true, others: [{ source: 'checklist', id: 'RALPH_TASK.md:4', title: 'Migrate', risky: true }] }));
    assert.deepEqual(d.actions, [{ type: 'runGate', tier: 'full' }]);
    assert.deepEqual(d.next.lane.claims, [{ source: 'checklist', id: 'RALPH_TASK.md:4', title: 'Migrate' }]);
  });
  it('plain claims keep the basic gate', () => {
    assert.deepEqual(decide(run(), working({ item: BOX }), claimed({ done: true, others: [OTHER] })).actions, [{ type: 'runGate', tier: 'basic' }]);
  });
});
