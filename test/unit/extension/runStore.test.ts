import * as assert from 'node:assert/strict';
import { ContextKeys } from '../../../src/extension/contextKeys';
import {
  contextValuesOf,
  planSummary,
  RUN_LISTING_PATH,
  RUN_UPDATE_INTERVAL_MS,
  type StoreChange,
  type StoreRun,
  type StoreSnapshot,
} from '../../../src/extension/runStore';
import type { PlanSnapshot } from '../../../src/core/model/plan';
import {
  agent,
  ended,
  iteration,
  runEnded,
  runInfo,
  started,
  storeHarness,
  tokensAt,
} from '../../support/storeHarness';

function snap(runs: Partial<StoreRun['facts'] & { startedHere: boolean }>[], starting = false): StoreSnapshot {
  return {
    version: 1,
    folders: [{ folder: '/w', name: 'w', plan: undefined, starting }],
    runs: runs.map((f, i) => ({
      key: `/w#r${i}`,
      folder: '/w',
      folderName: 'w',
      runId: `r${i}`,
      kind: 'ralph',
      startedHere: f.startedHere ?? false,
      view: undefined as never,
      seenAt: 0,
      gauge: undefined as never,
      facts: { active: true, state: 'running', paused: false, deferred: false, startedAt: null, questions: [], ...f },
    })),
  };
}

describe('context keys from the store', () => {
  const q = [{ id: 'q1', text: 'Which DB?', itemId: 'T-1', answerFile: '/a' }];
  const table: [string, StoreSnapshot, Partial<Record<string, boolean>>][] = [
    [
      'no runs',
      snap([]),
      { [ContextKeys.running]: false, [ContextKeys.hasRuns]: false, [ContextKeys.runningHere]: false },
    ],
    [
      'a run started elsewhere (a terminal, a bot)',
      snap([{}]),
      { [ContextKeys.running]: true, [ContextKeys.runningHere]: false, [ContextKeys.hasRuns]: true },
    ],
    [
      'a run of this window',
      snap([{ startedHere: true }]),
      { [ContextKeys.running]: true, [ContextKeys.runningHere]: true },
    ],
    [
      'Start pressed, no run yet',
      snap([], true),
      { [ContextKeys.running]: true, [ContextKeys.runningHere]: true, [ContextKeys.hasRuns]: false },
    ],
    [
      'a paused run',
      snap([{ paused: true, state: 'paused' }]),
      { [ContextKeys.running]: true, [ContextKeys.paused]: true },
    ],
    [
      'a run waiting for an answer',
      snap([{ questions: q, state: 'waiting' }]),
      { [ContextKeys.waiting]: true, [ContextKeys.paused]: false },
    ],
    ['a deferred run', snap([{ deferred: true, state: 'deferred' }]), { [ContextKeys.deferred]: true }],
    [
      'only a finished run',
      snap([{ active: false, state: 'ended' }]),
      { [ContextKeys.running]: false, [ContextKeys.hasRuns]: true, [ContextKeys.paused]: false },
    ],
    [
      'a finished run that had been paused does not count as paused',
      snap([{ active: false, paused: true }]),
      { [ContextKeys.paused]: false },
    ],
  ];
  for (const [name, s, want] of table) {
    it(`${name}: ${Object.entries(want)
      .map(([k, v]) => `${k}=${v}`)
      .join(', ')}`, () => {
      const got = contextValuesOf(s);
      for (const [k, v] of Object.entries(want)) assert.equal(got[k as keyof typeof got], v, k);
    });
  }
});

describe('which file changes re-list the runs', () => {
  const table: [string, boolean][] = [
    ['.ralph/runs', true],
    ['.ralph/runs/r-1', true],
    ['.ralph/runs/r-1/run.json', true],
    ['.ralph/runs/r-1/PAUSE', true],
    ['.ralph/runs/r-1/STOP', true],
    ['scripts/ralph/runs/x/progress.txt', true],
    ['scripts/ralph/PAUSE', true],
    ['scripts/ralph/STOP', true],
    ['.ralph/stop-requested', true],
    ['.ralph/runs/r-1/events.jsonl', false],
    ['.ralph/runs/r-1/iter-001.jsonl', false],
    ['scripts/ralph/runs/x/iter-001.log', false],
    ['.ralph/activity.log', false],
    ['.flow/tasks/fn-1.1.json', false],
  ];
  for (const [p, yes] of table)
    it(`${p}: ${yes ? 're-list' : 'no'}`, () => assert.equal(RUN_LISTING_PATH.test(p), yes));
});

describe('RunStore', () => {
  it("follows a run started elsewhere: running on, Start off, this window's Cancel off", () => {
    const h = storeHarness();
    assert.equal(h.contexts.get(ContextKeys.running), false);
    const r = h.addRun(runInfo('t-1'));
    r.emit(started('t-1'), iteration(1), agent(1));
    assert.equal(h.contexts.get(ContextKeys.running), true);
    assert.equal(h.contexts.get(ContextKeys.runningHere), false);
    assert.equal(h.store.gaugeRun()?.runId, 't-1');
    assert.equal(h.store.gaugeRun()?.gauge.agentRunning, true);
  });

  it("sets paused from the run's PAUSE sentinel before the engine honours it, and from the paused event", () => {
    const h = storeHarness();
    const r = h.addRun(runInfo('t-1'));
    r.emit(started('t-1'), iteration(1));
    h.addRun(runInfo('t-1', { paused: true }));
    assert.equal(h.contexts.get(ContextKeys.paused), true, 'sentinel seen through the listing');
    h.addRun(runInfo('t-1', { paused: false }));
    assert.equal(h.contexts.get(ContextKeys.paused), false);
    r.emit({ type: 'paused' });
    assert.equal(h.contexts.get(ContextKeys.paused), true, 'the paused event');
    assert.equal(h.store.gaugeRun()?.gauge.state, 'paused');
  });

  it('coalesces token updates to at most 4 events a second, and still shows the last figure', () => {
    const h = storeHarness();
    const r = h.addRun(runInfo('t-1'));
    r.emit(started('t-1'), iteration(1), agent(1));
    const changes: StoreChange[] = [];
    h.store.onDidChange((c) => changes.push(c));
    for (let i = 1; i <= 1000; i++) {
      r.emit(tokensAt(1, i * 100));
      h.clock.advance(1);
    }
    h.clock.advance(RUN_UPDATE_INTERVAL_MS);
    assert.ok(changes.length <= 5, `${changes.length} events for 1000 updates in 1 s`);
    assert.ok(changes.length >= 3, `${changes.length} events: updates still flow`);
    assert.equal(h.store.gaugeRun()?.gauge.context?.tokens, 100_000);
    assert.ok(changes.every((c) => c.kind === 'run'));
  });

  it("fires at once when a run's state changes (paused, waiting, ended), not after the throttle", () => {
    const h = storeHarness();
    const r = h.addRun(runInfo('t-1'));
    r.emit(started('t-1'), iteration(1), agent(1), tokensAt(1, 1000));
    r.emit(tokensAt(1, 2000)); // queued behind the throttle
    const changes: StoreChange[] = [];
    h.store.onDidChange((c) => changes.push(c));
    r.emit(ended(1), runEnded());
    assert.equal(changes.length, 1);
    assert.equal(h.contexts.get(ContextKeys.running), false);
    assert.equal(h.contexts.get(ContextKeys.hasRuns), true);
    assert.equal(h.store.gaugeRun()?.gauge.state, 'ended');
    assert.equal(h.store.gaugeRun()?.gauge.endState, 'completed');
  });

  it("marks a Start at once, and clears the mark when this window's run shows up or Start fails", () => {
    const h = storeHarness();
    h.store.markStarting('/w');
    assert.equal(h.contexts.get(ContextKeys.running), true);
    assert.equal(h.store.snapshot().folders[0]!.starting, true);
    h.store.startFailed('/w');
    assert.equal(h.contexts.get(ContextKeys.running), false);
    h.store.markStarting('/w');
    const r = h.addRun(runInfo('mine'));
    h.store.noteStartedHere('/w', 'mine');
    r.emit(started('mine'));
    assert.equal(h.store.snapshot().folders[0]!.starting, false);
    assert.equal(h.contexts.get(ContextKeys.runningHere), true);
    assert.equal(h.store.gaugeRun()?.startedHere, true);
  });

  it('keeps the latest finished run for the gauge, and prefers an active run over it', () => {
    const h = storeHarness();
    const old = h.addRun(runInfo('a', { state: 'completed', active: false, startedAt: '2026-12-01T08:00:00.000Z' }));
    old.emit(started('a'), iteration(1), tokensAt(1, 5000), ended(1), runEnded());
    assert.equal(h.store.gaugeRun()?.runId, 'a');
    assert.equal(h.store.snapshot().runs.length, 1);
    const now = h.addRun(runInfo('b', { startedAt: '2026-12-01T09:00:00.000Z' }));
    now.emit(started('b'));
    assert.equal(h.store.gaugeRun()?.runId, 'b');
  });

  it('fires one question event per question a run waits on', () => {
    const h = storeHarness();
    const asked: string[] = [];
    h.store.onQuestion((q) => asked.push(`${q.run.runId}:${q.id}:${q.itemId}:${q.text}`));
    const r = h.addRun(runInfo('t-1'));
    r.emit(started('t-1'), iteration(1));
    r.emit({
      type: 'question',
      id: 'q1',
      iteration: 1,
      item: { source: 'checklist', id: 'T-1', title: 'T' },
      text: 'Postgres or SQLite?',
      answerFile: '/w/a',
    });
    r.emit(tokensAt(1, 10));
    assert.deepEqual(asked, ['t-1:q1:T-1:Postgres or SQLite?']);
    assert.equal(h.contexts.get(ContextKeys.waiting), true);
  });

  it('logs a plan when it changes, not on every reload', async () => {
    const plan = (done: number): PlanSnapshot => ({
      folder: '/w',
      roots: [],
      problems: [],
      cycles: [],
      items: Array.from({ length: 3 }, (_, i) => ({
        source: 'checklist',
        kind: 'checkbox',
        id: `T:${i}`,
        rootId: 'T',
        title: '',
        status: i < done ? 'done' : 'todo',
        rawStatus: '',
        dependsOn: [],
        file: 'T',
      })),
    });
    const h = storeHarness();
    h.plans.set('/w', plan(1));
    for (let i = 0; i < 5; i++) await h.store.reloadPlan('/w');
    h.plans.set('/w', plan(2));
    await h.store.reloadPlan('/w');
    const planLogs = h.logs.filter((l) => l.includes('[plan]'));
    assert.deepEqual(planLogs, [
      'info [plan] w: 0 root(s), 0 item(s), 0 done',
      `info [plan] w: ${planSummary(plan(1))}`,
      `info [plan] w: ${planSummary(plan(2))}`,
    ]);
    assert.equal(h.store.snapshot().folders[0]!.plan?.items.length, 3);
  });

  it('re-reads a plan once more when a change arrives during a read, never twice at a time', async () => {
    let reads = 0;
    let inFlight = 0;
    let maxInFlight = 0;
    const h = storeHarness({
      loadPlan: async (folder) => {
        reads++;
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        await new Promise((r) => setTimeout(r, 5));
        inFlight--;
        return { folder, roots: [], items: [], problems: [], cycles: [] };
      },
    });
    await new Promise((r) => setTimeout(r, 20));
    reads = 0;
    const all = [h.store.reloadPlan('/w'), h.store.reloadPlan('/w'), h.store.reloadPlan('/w')];
    await Promise.all(all);
    await new Promise((r) => setTimeout(r, 30));
    assert.equal(maxInFlight, 1);
    assert.equal(reads, 2, 'one read, then one for the changes made during it');
  });

  it('releases followers and timers on dispose', () => {
    const h = storeHarness();
    const r = h.addRun(runInfo('t-1'));
    r.emit(started('t-1'), tokensAt(1, 100), tokensAt(1, 200));
    h.store.dispose();
    assert.equal(r.listeners.length, 0);
    assert.equal(h.clock.pending, 0);
  });
});
