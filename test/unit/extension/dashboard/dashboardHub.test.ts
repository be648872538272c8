import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { answerQuestion } from '../../../../src/core/control/runControl';
import { readRunViewNow } from '../../../../src/core/control/runFollower';
import { emptyRunView } from '../../../../src/core/control/runView';
import { runLogLine, type EngineEvent } from '../../../../src/core/model/runEvent';
import { DashboardHub } from '../../../../src/extension/dashboard/dashboardHub';
import { DashboardSession } from '../../../../src/extension/dashboard/dashboardSession';
import type { StoreChange, StoreRun, StoreSnapshot } from '../../../../src/extension/runStore';
import { runFactsOf } from '../../../../src/extension/runFollowing';
import { PROTOCOL_VERSION, type HostMessage, type UpdateOp } from '../../../../src/protocol/dashboard';
import { makeTempFolder, type TempFolder } from '../../../support/tempFolder';

const RUN = '20261201T090000Z-ab12';
const AT = '2026-12-01T09:00:00.000Z';
const HOST = os.hostname();
const item = { source: 'checklist' as const, id: 'T1', title: 'Task one' };

/** A fake store: the hub reads `snapshot()` and listens to `onDidChange`, as it does on the real RunStore. */
class FakeStore {
  snap: StoreSnapshot = { version: 0, folders: [], runs: [] };
  private fns = new Set<(c: StoreChange) => void>();
  snapshot(): StoreSnapshot {
    return this.snap;
  }
  onDidChange(fn: (c: StoreChange) => void) {
    this.fns.add(fn);
    return { dispose: () => this.fns.delete(fn) };
  }
  /** The run's files changed: the store's follower re-read them (here: one read of the log) and fired. */
  follow(folder: string, runId: string, startedHere = false): void {
    const view = readRunViewNow(folder, runId, { isAlive: () => true, hostNames: [HOST] });
    const run = {
      key: `${folder}#${runId}`,
      folder,
      folderName: 'ws',
      runId,
      kind: 'ralph',
      startedHere,
      view,
      facts: runFactsOf(view),
      seenAt: 0,
    } as unknown as StoreRun;
    const known = this.snap.runs.some((r) => r.key === run.key);
    this.snap = {
      ...this.snap,
      version: this.snap.version + 1,
      runs: [run, ...this.snap.runs.filter((r) => r.key !== run.key)],
    };
    for (const fn of this.fns) fn(known ? { kind: 'run', keys: [run.key] } : { kind: 'runs', folder });
  }
  /** The store lists a finished run before reading its log (as `listedRunUpdate` does): an empty view, not active. */
  listed(folder: string, runId: string): void {
    const view = emptyRunView(runId);
    const run = {
      key: `${folder}#${runId}`,
      folder,
      folderName: 'ws',
      runId,
      kind: 'ralph',
      startedHere: false,
      view,
      facts: { ...runFactsOf(view), active: false },
      seenAt: 0,
    } as unknown as StoreRun;
    this.snap = { ...this.snap, version: this.snap.version + 1, runs: [run] };
    for (const fn of this.fns) fn({ kind: 'runs', folder });
  }
}

describe('the dashboard hub (on the run store)', () => {
  let t: TempFolder;
  let store: FakeStore;
  const events: EngineEvent[] = [];
  const warnings: string[] = [];
  beforeEach(() => {
    t = makeTempFolder('ralph-hub-');
    store = new FakeStore();
    events.length = 0;
    warnings.length = 0;
  });
  afterEach(() => t.dispose());

  /** A run started elsewhere (a terminal `ralph run`): its run.json and log, appended to as it goes. */
  function write(...more: EngineEvent[]): void {
    events.push(...more);
    t.write(
      `.ralph/runs/${RUN}/run.json`,
      JSON.stringify({
        runId: RUN,
        pid: 4242,
        host: HOST,
        startedAt: AT,
        state: 'running',
        iteration: 1,
        currentItem: null,
      }),
    );
    t.write(`.ralph/runs/${RUN}/events.jsonl`, events.map((e, i) => runLogLine(i + 1, AT, 0, e)).join(''));
  }
  const hub = () =>
    new DashboardHub({
      store,
      folders: () => [t.dir],
      log: { info: () => undefined, warn: (_c, m) => warnings.push(m) },
      listRuns: () =>
        fs.existsSync(path.join(t.dir, '.ralph', 'runs', RUN))
          ? [{ id: RUN, kind: 'ralph', state: 'running', active: true }]
          : [],
      readView: async (folder, runId, kind, onView) =>
        readRunViewNow(folder, runId, { kind, ...(onView ? { onView } : {}) }),
      answer: (folder, text, opts) =>
        answerQuestion(folder, text, { ...opts, probe: { isAlive: () => true, hostNames: [HOST] } }),
    });
  const answerFile = () => path.join(t.dir, '.ralph', 'runs', RUN, 'answers', 'q1.md');

  it("keeps the run picker's state of a run in step with the run (a run's own change, no new listing)", async () => {
    const h = hub();
    const changes: (UpdateOp[] | 'snapshot')[] = [];
    h.onChange((c) => changes.push(c));
    write({
      type: 'runStarted',
      runId: RUN,
      folder: t.dir,
      source: 'checklist',
      agent: 'claude',
      maxIterations: 5,
      gates: {},
    } as EngineEvent);
    store.follow(t.dir, RUN);
    assert.equal(changes[0], 'snapshot');
    assert.deepEqual(
      h.state().runs.map((r) => [r.runId, r.state, r.active]),
      [[RUN, 'running', true]],
    );
    changes.length = 0;
    write({
      type: 'runEnded',
      state: 'completed',
      reason: 'done',
      completionReason: 'COMPLETE',
      exitCode: 0,
      iterations: 1,
      costUsd: 0.1,
      done: 1,
      total: 1,
    } as EngineEvent);
    const listed = new Promise<UpdateOp[]>((resolve) =>
      h.onChange((c) => {
        if (c !== 'snapshot' && c.some((op) => op.op === 'runs')) resolve(c);
      }),
    );
    store.follow(t.dir, RUN);
    const ops = await listed;
    const runsOp = ops.find((op) => op.op === 'runs');
    assert.ok(runsOp && runsOp.op === 'runs');
    assert.deepEqual(
      runsOp.runs.map((r) => [r.runId, r.state]),
      [[RUN, 'completed']],
    );
    assert.equal(h.state().runs[0]!.state, 'completed');
  });

  it('shows a run started elsewhere live: attempt k of N, context gauge, cost by item, gates, activity', async () => {
    const h = hub();
    const changes: (UpdateOp[] | 'snapshot')[] = [];
    h.onChange((c) => changes.push(c));
    write({
      type: 'runStarted',
      runId: RUN,
      folder: t.dir,
      source: 'checklist',
      agent: 'claude',
      maxIterations: 5,
      gates: {},
    } as EngineEvent);
    store.follow(t.dir, RUN);
    assert.equal(changes[0], 'snapshot');
    assert.equal(h.state().run?.runId, RUN);
    assert.equal(h.state().run?.live, true);
    assert.equal(h.state().run?.ownedByThisWindow, false);
    write(
      {
        type: 'iterationStarted',
        iteration: 1,
        item,
        attempt: 2,
        maxAttempts: 5,
        attemptKind: 'fix',
        purpose: 'work',
      } as EngineEvent,
      {
        type: 'tokens',
        iteration: 1,
        contextTokens: 90_000,
        contextWindow: 200_000,
        warnAt: 120_000,
        rotateAt: 160_000,
        totals: { input: 1, output: 1, cacheRead: 0, cacheCreation: 0 },
        costUsd: 0.2,
      } as EngineEvent,
    );
    store.follow(t.dir, RUN);
    const run = h.state().run!;
    assert.equal(run.attempt, 2);
    assert.equal(run.maxAttempts, 5);
    assert.deepEqual(run.item, { id: 'T1', title: 'Task one' });
    assert.deepEqual(run.context, {
      tokens: 90_000,
      window: 200_000,
      warnAt: 120_000,
      rotateAt: 160_000,
      text: '90k/200k 45%',
    });
    const ops = changes.slice(1).flatMap((c) => (c === 'snapshot' ? ['SNAPSHOT'] : c.map((o) => o.op)));
    assert.ok(
      !ops.includes('SNAPSHOT') && ops.includes('run') && ops.includes('tokens') && ops.includes('log'),
      ops.join(','),
    );
    write(
      {
        type: 'iterationEnded',
        iteration: 1,
        ending: 'complete',
        detail: 'done',
        totals: { tokens: { input: 1, output: 1, cacheRead: 0, cacheCreation: 0 }, costUsd: 0.25 },
        exitCode: 0,
      } as EngineEvent,
      {
        type: 'gateResult',
        tier: 'basic',
        command: 'npm test',
        exitCode: 1,
        passed: false,
        durationMs: 1200,
        logPath: '.ralph/gates/1.log',
        failingLines: ['x failed'],
      } as EngineEvent,
    );
    store.follow(t.dir, RUN);
    const s = h.state();
    assert.deepEqual(
      s.tasks.map((x) => [x.itemId, x.iterations, x.costUsd]),
      [['T1', 1, 0.25]],
    );
    assert.deepEqual(
      s.gates.map((g) => [g.id, g.tier, g.passed, g.hasLog]),
      [['g1', 'basic', false, true]],
    );
    assert.equal(h.shown?.gateLogPath('g1'), '.ralph/gates/1.log');
    write({ type: 'gateStarted', tier: 'basic', command: 'npm test' } as EngineEvent);
    store.follow(t.dir, RUN);
    assert.deepEqual(
      h.state().gates.map((g) => [g.id, g.passed]),
      [
        ['g1', false],
        ['g2', null],
      ],
      'a second gate run opens a row',
    );
    write({
      type: 'gateResult',
      tier: 'basic',
      command: 'npm test',
      exitCode: 0,
      passed: true,
      durationMs: 900,
      logPath: '.ralph/gates/2.log',
      failingLines: [],
    } as EngineEvent);
    store.follow(t.dir, RUN);
    assert.deepEqual(
      h.state().gates.map((g) => [g.id, g.passed]),
      [
        ['g1', false],
        ['g2', true],
      ],
      'its result fills that row',
    );
    assert.equal(h.shown?.gateLogPath('g2'), '.ralph/gates/2.log');
    assert.deepEqual(
      s.log.map((l) => l.n),
      s.log.map((_l, i) => i + 1),
      'log lines numbered without gaps',
    );
    assert.ok(s.log.some((l) => l.kind === 'gate'));
  });

  it('answers the waiting question through the page: the answer file is written', async () => {
    const h = hub();
    const posted: HostMessage[] = [];
    const session = new DashboardSession({
      post: (m) => {
        posted.push(m);
        return true;
      },
      state: () => h.state(),
      actions: {
        handle: async (r) => {
          if (r.method === 'answer') await h.answer(r.runId, r.itemId, r.text);
        },
      },
      log: { info: () => undefined, warn: (_c, m) => warnings.push(m) },
      setTimer: () => 0,
      clearTimer: () => undefined,
    });
    write(
      {
        type: 'runStarted',
        runId: RUN,
        folder: t.dir,
        source: 'checklist',
        agent: 'claude',
        maxIterations: 5,
        gates: {},
      } as EngineEvent,
      {
        type: 'question',
        id: 'q1',
        iteration: 1,
        item,
        text: 'Which database?',
        answerFile: answerFile(),
      } as EngineEvent,
    );
    store.follow(t.dir, RUN);
    assert.equal(h.state().run?.state, 'waiting');
    assert.deepEqual(
      h.state().run?.question && { itemId: h.state().run!.question!.itemId, text: h.state().run!.question!.text },
      { itemId: 'T1', text: 'Which database?' },
    );
    await session.receive({ type: 'ready', v: PROTOCOL_VERSION });
    await session.receive({
      type: 'request',
      id: 7,
      request: { method: 'answer', runId: RUN, itemId: 'T1', text: 'SQLite' },
    });
    assert.deepEqual(posted[posted.length - 1], { type: 'reply', id: 7, ok: true });
    assert.equal(fs.readFileSync(answerFile(), 'utf8'), 'SQLite\n');
    await session.receive({
      type: 'request',
      id: 8,
      request: { method: 'answer', runId: 'other', itemId: null, text: 'x' },
    });
    assert.match(JSON.stringify(posted[posted.length - 1]), /"ok":false.*not the run shown/);
  });

  /** A whole finished run: two iterations with three token figures, two gate runs, 25 progress lines, the end. */
  function finishedRun(): void {
    const tokens = (iteration: number, contextTokens: number) =>
      ({
        type: 'tokens',
        iteration,
        contextTokens,
        contextWindow: 200_000,
        warnAt: 120_000,
        rotateAt: 160_000,
        totals: { input: 1, output: 1, cacheRead: 0, cacheCreation: 0 },
        costUsd: 0.1,
      }) as EngineEvent;
    write(
      {
        type: 'runStarted',
        runId: RUN,
        folder: t.dir,
        source: 'checklist',
        agent: 'claude',
        maxIterations: 5,
        gates: {},
      } as EngineEvent,
      {
        type: 'iterationStarted',
        iteration: 1,
        item,
        attempt: 1,
        maxAttempts: 5,
        attemptKind: 'first',
        purpose: 'work',
      } as EngineEvent,
      tokens(1, 40_000),
      tokens(1, 60_000),
      {
        type: 'iterationEnded',
        iteration: 1,
        ending: 'natural',
        detail: 'd',
        totals: { tokens: { input: 1, output: 1, cacheRead: 0, cacheCreation: 0 }, costUsd: 0.2 },
        exitCode: 0,
      } as EngineEvent,
      {
        type: 'gateResult',
        tier: 'basic',
        command: 'npm test',
        exitCode: 1,
        passed: false,
        durationMs: 1200,
        logPath: '.ralph/gates/1.log',
        failingLines: ['x failed'],
      } as EngineEvent,
      {
        type: 'iterationStarted',
        iteration: 2,
        item,
        attempt: 2,
        maxAttempts: 5,
        attemptKind: 'fix',
        purpose: 'work',
      } as EngineEvent,
      tokens(2, 30_000),
      {
        type: 'iterationEnded',
        iteration: 2,
        ending: 'natural',
        detail: 'd',
        totals: { tokens: { input: 1, output: 1, cacheRead: 0, cacheCreation: 0 }, costUsd: 0.2 },
        exitCode: 0,
      } as EngineEvent,
      { type: 'gateStarted', tier: 'basic', command: 'npm test' } as EngineEvent,
      {
        type: 'gateResult',
        tier: 'basic',
        command: 'npm test',
        exitCode: 0,
        passed: true,
        durationMs: 900,
        logPath: '.ralph/gates/2.log',
        failingLines: [],
      } as EngineEvent,
      ...Array.from({ length: 25 }, (_, i) => ({ type: 'progress', done: i % 2, total: 1, text: '' }) as EngineEvent),
      {
        type: 'runEnded',
        state: 'completed',
        reason: 'done',
        completionReason: 'COMPLETE',
        exitCode: 0,
        iterations: 2,
        costUsd: 0.4,
        done: 1,
        total: 1,
      } as EngineEvent,
    );
    t.write(
      `.ralph/runs/${RUN}/run.json`,
      JSON.stringify({
        runId: RUN,
        pid: 4242,
        host: HOST,
        startedAt: AT,
        state: 'completed',
        endState: 'completed',
        iteration: 2,
        currentItem: null,
      }),
    );
  }

  it("shows a finished run from its whole log: every token point, every gate run, more than a view's 20 lines", async () => {
    finishedRun();
    const check = (h: DashboardHub, what: string) => {
      const s = h.state();
      assert.equal(s.run?.state, 'completed', what);
      assert.deepEqual(
        s.tokens.map((p) => [p.iteration, p.contextTokens, Math.round(p.costUsd * 100) / 100]),
        [
          [1, 40_000, 0.1],
          [1, 60_000, 0.1],
          // The iteration's end moved the cost with the context standing still: a point, so the cost line goes up.
          [1, 60_000, 0.2],
          [2, 30_000, 0.3],
          [2, 30_000, 0.4],
        ],
        what,
      );
      assert.deepEqual(
        s.gates.map((g) => [g.id, g.passed]),
        [
          ['g1', false],
          ['g2', true],
        ],
        what,
      );
      assert.ok(s.log.length > 30 && s.logTotal === s.log.length, `${what}: ${s.log.length} log lines`);
      assert.match(s.log[0]!.text, /RALPH START/, what);
      assert.match(s.log.at(-1)!.text, /RALPH STOP — completed/, what);
      assert.deepEqual(
        [s.run?.context.warnAt, s.run?.context.rotateAt],
        [120_000, 160_000],
        `${what}: the chart keeps its warn and rotate lines`,
      );
    };
    // Picked from the list (the store does not follow it).
    const picked = hub();
    await picked.pick(RUN);
    check(picked, 'picked');
    // Followed by the store but already final when first shown (the window reloaded after the run).
    const reloaded = hub();
    store.follow(t.dir, RUN);
    for (let i = 0; i < 50 && !reloaded.state().run; i++) await new Promise((r) => setTimeout(r, 10));
    check(reloaded, 'after a reload');
    // Listed by the store before it read the log (the window just opened).
    store = new FakeStore();
    const listed = hub();
    store.listed(t.dir, RUN);
    for (let i = 0; i < 50 && !listed.state().run?.state.startsWith('completed'); i++)
      await new Promise((r) => setTimeout(r, 10));
    check(listed, 'listed before its log was read');
  });

  it('shows a past run the store does not follow, static, and refuses a run not in the workspace', async () => {
    write(
      {
        type: 'runStarted',
        runId: RUN,
        folder: t.dir,
        source: 'checklist',
        agent: 'claude',
        maxIterations: 5,
        gates: {},
      } as EngineEvent,
      { type: 'progress', done: 2, total: 4, text: '' } as EngineEvent,
    );
    const h = hub();
    await h.pick(RUN);
    assert.equal(h.state().pinnedRunId, RUN);
    assert.equal(h.state().run?.live, false);
    assert.deepEqual(h.state().run?.progress, { done: 2, total: 4 });
    await assert.rejects(h.pick('../../etc'), /no run \.\.\/\.\.\/etc/);
  });
});
