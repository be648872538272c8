import * as assert from 'node:assert/strict';
import { defaultBackoffPolicy } from '../../../src/core/loop/backoff';
import { carriedBaseline, type BaselineSlot } from '../../../src/core/model/claimBaseline';
import { decide, sameItem, verifiedAfterGate } from '../../../src/core/loop/lane/decide';
import {
  initialLaneState,
  initialRunState,
  itemKey,
  type Action,
  type LaneState,
  type Observation,
  type RunRules,
  type RunState,
} from '../../../src/core/loop/lane/phases';
import type { ClaimBaseline } from '../../../src/core/sources/work/workSources';

/** Issue 11 "Every item, every exit": the truth rules of decide(), as tables. */
const T0 = Date.UTC(2026, 11, 1, 9, 0, 0);
const RULES: RunRules = {
  maxIterations: 10,
  maxCostUsd: 0,
  maxWallMs: 0,
  stallLimit: 3,
  backoff: defaultBackoffPolicy,
  reviewer: false,
  continueOnBlocked: false,
  questionTimeoutMs: 0,
};
const ITEM = { source: 'quantum' as const, id: 'US-001', title: 'Export slugify', risky: false };
const OTHER = { source: 'quantum' as const, id: 'US-002', title: 'Other story' };
const BOX = { source: 'checklist' as const, id: 'RALPH_TASK.md:3', title: 'Make it', risky: false };
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
const before = (): Observation => ({
  kind: 'beforeIteration',
  cancelled: false,
  stop: null,
  pause: false,
  now: T0 + 1000,
  answer: null,
});
const claimed = (o: Partial<Extract<Observation, { kind: 'claimed' }>> = {}): Observation => ({
  kind: 'claimed',
  done: false,
  completeSignal: false,
  storyFailed: false,
  lastText: '',
  sourceLabel: 'quantum.json',
  others: [],
  ...o,
});
const gate = (passed: boolean): Observation => ({
  kind: 'verified',
  gate: { tier: 'basic', passed, reason: passed ? 'ok' : 'basic gate exit 1' },
  approach: 'a',
});
const work = (item: typeof ITEM | typeof BOX, failedAttempts = 0): Observation => ({
  kind: 'next',
  next: { kind: 'work', item, failedAttempts, attemptLimit: 3, lastFailure: null },
  sourceLabel: 'src',
});

describe('decide(): every item, every exit (issue 11)', () => {
  describe('other items claimed in an iteration', () => {
    it('the item not done: every other claim is put back, naming the item, then progress is checked', () => {
      const d = decide(run(), working(), claimed({ others: [OTHER] }));
      assert.deepEqual(types(d.actions), ['putBack', 'checkProgress']);
      const p = d.actions[0] as Extract<Action, { type: 'putBack' }>;
      assert.deepEqual(p.items, [OTHER]);
      assert.match(p.reason, /did not finish US-001; no gate verified it/);
    });
    it("the agent's STORY_FAILED: the other claims go back and the attempt fails", () => {
      assert.deepEqual(types(decide(run(), working(), claimed({ others: [OTHER], storyFailed: true })).actions), [
        'putBack',
        'attemptFailed',
      ]);
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

  describe("attempts: the run's own count wins when larger", () => {
    const table: { name: string; run: RunState; obs: Observation; actions: string[]; attempt?: number }[] = [
      {
        name: "attempts.json deleted (0 read): the run's count of 2 makes this attempt 3",
        run: run({ failedAttempts: { [itemKey(BOX)]: 2 } }),
        obs: work(BOX, 0),
        actions: ['runWork'],
        attempt: 3,
      },
      {
        name: 'attempts.json deleted at the limit: the box is blocked',
        run: run({ failedAttempts: { [itemKey(BOX)]: 3 } }),
        obs: work(BOX, 0),
        actions: ['block'],
      },
      {
        name: "the source's larger count wins too",
        run: run({ failedAttempts: { [itemKey(ITEM)]: 1 } }),
        obs: work(ITEM, 2),
        actions: ['runWork'],
        attempt: 3,
      },
      {
        name: 'an item this run blocked and offered again ends the run blocked (a removed block record never loops)',
        run: run({ blocked: [itemKey(BOX)] }),
        obs: work(BOX, 0),
        actions: ['end'],
      },
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
      {
        name: 'everything done: the final gate runs',
        run: atCap,
        obs: { kind: 'next', next: { kind: 'complete' }, sourceLabel: 's' },
        actions: ['runFinalGate'],
      },
      {
        name: 'the final gate green: completed, not capReached',
        run: atCap,
        obs: { kind: 'finalGate', gate: { passed: true, command: 'c', exitCode: 0, summary: '' }, hasGates: true },
        actions: ['end'],
        end: ['completed', 'DONE'],
      },
      {
        name: 'the final gate red: capReached (no fix iteration past the cap)',
        run: atCap,
        obs: { kind: 'finalGate', gate: { passed: false, command: 'c', exitCode: 1, summary: '' }, hasGates: true },
        actions: ['end'],
        end: ['capReached', 'MAX_ITERATIONS'],
      },
      {
        name: 'a reviewer owed: capReached (no review past the cap)',
        run: { ...atCap, rules: { ...atCap.rules, reviewer: true } },
        obs: { kind: 'finalGate', gate: { passed: true, command: 'c', exitCode: 0, summary: '' }, hasGates: true },
        actions: ['end'],
        end: ['capReached', 'MAX_ITERATIONS'],
      },
      {
        name: 'work left: capReached',
        run: atCap,
        obs: work(ITEM),
        actions: ['end'],
        end: ['capReached', 'MAX_ITERATIONS'],
      },
      {
        name: 'nothing ready: capReached',
        run: atCap,
        obs: { kind: 'next', next: { kind: 'blocked', reason: 'r' }, sourceLabel: 's' },
        actions: ['end'],
        end: ['capReached', 'MAX_ITERATIONS'],
      },
      {
        name: 'a pending final fix at the cap is not run: the source is asked',
        run: run({ workIterations: 10, pendingFix: { purpose: 'finalFix', text: 'x' } }),
        obs: before(),
        actions: ['pickNext'],
      },
      {
        name: 'the cap remembered ends the next decision point',
        run: atCap,
        obs: before(),
        actions: ['end'],
        end: ['capReached', 'MAX_ITERATIONS'],
      },
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
    const d = decide(
      run(),
      working({ item: BOX }),
      claimed({ done: true, others: [{ source: 'checklist', id: 'RALPH_TASK.md:4', title: 'Migrate', risky: true }] }),
    );
    assert.deepEqual(d.actions, [{ type: 'runGate', tier: 'full' }]);
    assert.deepEqual(d.next.lane.claims, [{ source: 'checklist', id: 'RALPH_TASK.md:4', title: 'Migrate' }]);
  });
  it('plain claims keep the basic gate', () => {
    assert.deepEqual(decide(run(), working({ item: BOX }), claimed({ done: true, others: [OTHER] })).actions, [
      { type: 'runGate', tier: 'basic' },
    ]);
  });
});

describe('decide(): the carried verified baseline and the gate-start snapshot (issue 11 R1, B1v/B2, A6/C3)', () => {
  const LATE = { source: 'quantum' as const, id: 'US-003', title: 'Late story' };
  const base = (o: Partial<ClaimBaseline> = {}): ClaimBaseline => ({
    at: '2026-12-01T09:00:00.000Z',
    source: 'quantum',
    label: 'quantum.json',
    done: [],
    ...o,
  });
  describe('carriedBaseline', () => {
    const table: {
      name: string;
      prev: ClaimBaseline | null;
      now: ClaimBaseline;
      verified?: { slot: BaselineSlot; key: string }[];
      want: Partial<ClaimBaseline>;
    }[] = [
      {
        name: 'the run start: the state the run found',
        prev: null,
        now: base({ done: ['US-001'] }),
        want: { done: ['US-001'] },
      },
      {
        name: 'R1: an item made done between iterations does not join the baseline',
        prev: base(),
        now: base({ done: ['US-002'] }),
        want: { done: [] },
      },
      {
        name: 'a verified item joins it',
        prev: base(),
        now: base({ done: ['US-001', 'US-002'] }),
        verified: [{ slot: 'done', key: 'US-001' }],
        want: { done: ['US-001'] },
      },
      {
        name: 'an item undone since (put back, reset) leaves it: redone, it is a claim again',
        prev: base({ done: ['US-001'] }),
        now: base(),
        want: { done: [] },
      },
      {
        name: 'verified but not done now: not in it',
        prev: base(),
        now: base(),
        verified: [{ slot: 'done', key: 'US-001' }],
        want: { done: [] },
      },
      {
        name: 'F3/F4: an epic closed without a gate stays out; a verified one joins',
        prev: base({ epics: [] }),
        now: base({ epics: ['fn-1', 'fn-2'] }),
        verified: [{ slot: 'epics', key: 'fn-2' }],
        want: { epics: ['fn-2'] },
      },
      {
        name: "A3: other checklist files per file; a new file's boxes stay out",
        prev: base({ checklists: { 'a.md': ['x #1'] } }),
        now: base({ checklists: { 'a.md': ['x #1', 'y #1'], 'b.md': ['z #1'] } }),
        verified: [{ slot: 'checklist:a.md', key: 'y #1' }],
        want: { checklists: { 'a.md': ['x #1', 'y #1'], 'b.md': [] } },
      },
      {
        name: 'A6: every item seen is kept (one gone has vanished)',
        prev: base({ items: ['US-001', 'US-002'] }),
        now: base({ items: ['US-001', 'US-003'] }),
        want: { items: ['US-001', 'US-002', 'US-003'] },
      },
      {
        name: "person marks written while an agent ran stay the agent's (agentMarks carried)",
        prev: base({ agentMarks: ['quantum:US-002'] }),
        now: base(),
        want: { agentMarks: ['quantum:US-002'] },
      },
      {
        name: "the marks at the running agent's start are carried (a crash during it can tell)",
        prev: base({ marksAtAgentStart: { 'quantum:US-001': '2026-12-01T09:01:00.000Z' } }),
        now: base(),
        want: { marksAtAgentStart: { 'quantum:US-001': '2026-12-01T09:01:00.000Z' } },
      },
      {
        name: 'row 05: another kind of source per kind; what became done without a gate stays out, a verified one joins',
        prev: base({ source: 'checklist', sources: { quantum: ['US-001'], flow: [], flowEpics: [] } }),
        now: base({
          source: 'checklist',
          sources: { quantum: ['US-001', 'US-002', 'US-003'], flow: ['fn-1.1'], flowEpics: ['fn-1'] },
        }),
        verified: [
          { slot: 'source:quantum', key: 'US-003' },
          { slot: 'source:flowEpics', key: 'fn-1' },
        ],
        want: { sources: { quantum: ['US-001', 'US-003'], flow: [], flowEpics: ['fn-1'] } },
      },
      {
        name: 'no agent facts: none added',
        prev: base(),
        now: base(),
        want: { agentMarks: undefined, marksAtAgentStart: undefined },
      },
    ];
    for (const t of table) {
      it(t.name, () => {
        const got = carriedBaseline(t.prev, t.now, t.verified);
        for (const [k, v] of Object.entries(t.want)) assert.deepEqual(got[k as keyof ClaimBaseline], v);
        if (t.prev) assert.equal(got.at, t.prev.at, "a person's marks since the run began stay theirs");
      });
    }
  });
  describe('verifiedAfterGate and the verified decision', () => {
    it('a claim that appeared while the gate ran is late; one undone during it is not accepted', () => {
      assert.deepEqual(verifiedAfterGate(ITEM, [OTHER], [ITEM, LATE]), { also: [], late: [LATE] });
      assert.deepEqual(verifiedAfterGate(ITEM, [OTHER], [OTHER, ITEM]), { also: [OTHER], late: [] });
      assert.deepEqual(verifiedAfterGate(ITEM, [OTHER], undefined), { also: [OTHER], late: [] });
    });
    it('a checklist box is the same item when its line moved', () => {
      assert.ok(
        sameItem(
          { source: 'checklist', id: 'T.md:3', title: 'Two' },
          { source: 'checklist', id: 'T.md:5', title: 'Two' },
        ),
      );
      assert.ok(
        !sameItem(
          { source: 'checklist', id: 'T.md:3', title: 'Two' },
          { source: 'checklist', id: 'U.md:3', title: 'Two' },
        ),
      );
    });
    const table: {
      name: string;
      lane: Partial<LaneState>;
      obs: Observation;
      actions: string[];
      also?: unknown[];
      back?: string[][];
    }[] = [
      {
        name: 'B1v: green gate, a late claim goes back before the accept',
        lane: { claims: [OTHER] },
        obs: { ...gate(true), claimsAfter: [ITEM, OTHER, LATE] } as Observation,
        actions: ['putBack', 'accept', 'enrichHandoff'],
        also: [OTHER],
        back: [['US-003']],
      },
      {
        name: 'B2: red gate, the claims and the late one go back',
        lane: { claims: [OTHER] },
        obs: { ...gate(false), claimsAfter: [OTHER, LATE] } as Observation,
        actions: ['putBack', 'putBack', 'attemptFailed', 'enrichHandoff'],
        back: [['US-002'], ['US-003']],
      },
      {
        name: 'green gate, nothing late',
        lane: {},
        obs: { ...gate(true), claimsAfter: [ITEM] } as Observation,
        actions: ['accept', 'enrichHandoff'],
        also: [],
      },
    ];
    for (const t of table) {
      it(t.name, () => {
        const d = decide(run(), working(t.lane), t.obs);
        assert.deepEqual(types(d.actions), t.actions);
        const acc = d.actions.find((a) => a.type === 'accept');
        if (t.also && acc?.type === 'accept') assert.deepEqual(acc.also, t.also);
        if (t.back)
          assert.deepEqual(
            d.actions.flatMap((a) => (a.type === 'putBack' ? [a.items.map((i) => i.id)] : [])),
            t.back,
          );
      });
    }
  });
  describe('the source reads complete', () => {
    const complete = (o: Partial<Extract<Observation, { kind: 'next' }>> = {}): Observation => ({
      kind: 'next',
      next: { kind: 'complete' },
      sourceLabel: 'quantum.json',
      ...o,
    });
    const table: { name: string; run: RunState; obs: Observation; actions: string[]; end?: [string, string] }[] = [
      {
        name: 'R1: items no gate verified (made done between iterations) go back; the run goes on',
        run: run(),
        obs: complete({ unverified: [OTHER] }),
        actions: ['putBack', 'continue'],
      },
      {
        name: 'R1 at a cap: back, then the cap ends the run',
        run: run({ capEnd: { state: 'capReached', reason: 'r', completionReason: 'MAX_ITERATIONS' } }),
        obs: complete({ unverified: [OTHER] }),
        actions: ['putBack', 'end'],
        end: ['capReached', 'MAX_ITERATIONS'],
      },
      {
        name: 'A6/C3: an item vanished: reported, and the run ends blocked, not complete',
        run: run(),
        obs: complete({ vanished: ['US-002'] }),
        actions: ['itemsVanished', 'end'],
        end: ['blocked', 'BLOCKED'],
      },
      {
        name: 'A6/C3: every item deleted (empty) is not "nothing to do"',
        run: run({ vanished: ['US-001'] }),
        obs: { kind: 'next', next: { kind: 'empty' }, sourceLabel: 'quantum.json' },
        actions: ['end'],
        end: ['blocked', 'BLOCKED'],
      },
      {
        name: 'A6/C3: reported once; work goes on while items are gone',
        run: run({ vanished: ['US-002'] }),
        obs: { ...work(ITEM), vanished: ['US-002'] } as Observation,
        actions: ['runWork'],
      },
      {
        name: 'A6/C3: restored, the run may complete',
        run: run({ vanished: ['US-002'] }),
        obs: complete({ vanished: [] }),
        actions: ['runFinalGate'],
      },
      {
        name: 'B1v: an item made done while the final gate ran goes back; no completion',
        run: run(),
        obs: {
          kind: 'finalGate',
          gate: { passed: true, command: 'c', exitCode: 0, summary: '' },
          hasGates: true,
          claimsAfter: [OTHER],
        },
        actions: ['putBack', 'continue'],
      },
    ];
    for (const t of table) {
      it(t.name, () => {
        const d = decide(t.run, initialLaneState(), t.obs);
        assert.deepEqual(types(d.actions), t.actions);
        if (t.end) assert.deepEqual(endOf(d.actions), t.end);
      });
    }
    it('the vanished message names the items', () => {
      const d = decide(run(), initialLaneState(), complete({ vanished: ['US-002', 'US-003'] }));
      assert.match(
        JSON.stringify(d.actions),
        /2 items vanished from quantum.json during the run \(US-002, US-003\): not complete/,
      );
    });
  });
});
