import * as assert from 'node:assert/strict';
import { DASHBOARD_COMMAND, GAUGE_ITEM_ID, StatusBarGauge } from '../../../src/extension/gauge/statusBarGauge';
import { RunNotifications } from '../../../src/extension/runNotifications';
import { commands, messageLines, recorded, resetFake, type FakeStatusBarItem } from '../../support/fakeVscode';
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

const bg = (item: FakeStatusBarItem): string | undefined => item.backgroundColor?.id;
const tick = () => new Promise((r) => setImmediate(r));

describe('the status bar token gauge (fake vscode)', () => {
  beforeEach(() => resetFake());

  function setup() {
    const h = storeHarness();
    const gauge = new StatusBarGauge(h.store, { clock: h.clock });
    const item = recorded.statusBarItems.find((i) => i.id === GAUGE_ITEM_ID) as FakeStatusBarItem;
    return { h, gauge, item };
  }

  it('is one item with an id and a name, on the left, hidden while the workspace has no run', () => {
    const { item } = setup();
    assert.equal(recorded.statusBarItems.length, 1);
    assert.equal(item.name, 'Ralph Tokens');
    assert.equal(item.alignment, 1);
    assert.equal(item.visible, false);
  });

  it('spins at once when Start is given, before the run has written anything', () => {
    const { h, item } = setup();
    h.store.markStarting('/w');
    assert.equal(item.visible, true);
    assert.match(item.text, /^\$\(sync~spin\) Ralph · starting$/);
  });

  it('follows a run started elsewhere through a warn and a rotation, and keeps its figures after it ends', () => {
    const { h, item } = setup();
    const r = h.addRun(runInfo('t-1'));
    r.emit(started('t-1'), iteration(1), agent(1), tokensAt(1, 20_000, 0.1));
    h.clock.advance(300);
    assert.equal(item.text, '$(sync~spin) 20k/200k 10% · $0.10');
    assert.equal(bg(item), undefined);
    r.emit(tokensAt(1, 150_000, 0.8));
    h.clock.advance(300);
    assert.equal(item.text, '$(sync~spin) 150k/200k 75% · $0.80');
    assert.equal(bg(item), 'statusBarItem.warningBackground');
    r.emit(tokensAt(1, 171_000, 0.9));
    h.clock.advance(300);
    assert.equal(bg(item), 'statusBarItem.errorBackground');
    r.emit(ended(1, 0.9), iteration(2), agent(2), tokensAt(2, 30_000, 0.05));
    h.clock.advance(300);
    assert.equal(item.text, '$(sync~spin) 30k/200k 15% · $0.95', "the new iteration's context, the run's cost");
    assert.equal(bg(item), undefined);
    r.emit(ended(2, 0.1), runEnded());
    h.clock.advance(300);
    assert.equal(item.visible, true);
    assert.equal(item.text, '$(pulse) 30k/200k 15% (last) · $1.00 · completed');
    const tip = (item.tooltip as { value: string }).value;
    assert.match(tip, /\| #1 T-1 \|/);
    assert.match(tip, /\| #2 T-1 \|/);
    assert.match(tip, /Cost is an estimate/);
  });

  it('renders at most 4 times a second under a burst of token events, and ends on the last figure', () => {
    const { h, gauge, item } = setup();
    const r = h.addRun(runInfo('t-1'));
    r.emit(started('t-1'), iteration(1), agent(1));
    const before = gauge.renders;
    for (let i = 1; i <= 10_000; i++) {
      r.emit(tokensAt(1, i * 10));
      if (i % 10 === 0) h.clock.advance(1);
    }
    h.clock.advance(1000);
    const renders = gauge.renders - before;
    assert.ok(renders <= 4 * 2 + 1, `${renders} renders over 2 s`);
    assert.match(item.text, /^\$\(sync~spin\) 100k\/200k 50%/);
  });

  it('opens the dashboard on click, during a run and after it, though built before that command is registered', async () => {
    // As in activation: the gauge is made before the extension registers ralph.openDashboard.
    const { h, item } = setup();
    const clicked = () => (item.command as { command: string }).command;
    const d = commands.registerCommand(DASHBOARD_COMMAND, () => undefined);
    await tick();
    const r = h.addRun(runInfo('t-1'));
    r.emit(started('t-1'), iteration(1), agent(1), tokensAt(1, 20_000, 0.1));
    h.clock.advance(300);
    assert.equal(clicked(), DASHBOARD_COMMAND);
    r.emit(ended(1, 0.1), runEnded());
    h.clock.advance(300);
    assert.ok(item.visible);
    assert.equal(clicked(), DASHBOARD_COMMAND);
    d.dispose();
  });
});

describe('run notifications (fake vscode)', () => {
  beforeEach(() => resetFake());

  it('says "pausing…" on the gauge until the run pauses, then one notification that it is paused', async () => {
    const h = storeHarness();
    const gauge = new StatusBarGauge(h.store, { clock: h.clock });
    new RunNotifications(h.store);
    const r = h.addRun(runInfo('t-1'));
    r.emit(started('t-1'), iteration(1), agent(1), tokensAt(1, 20_000, 0.1));
    r.emit({ type: 'pauseRequested', file: '.ralph/runs/t-1/PAUSE' });
    h.clock.advance(300);
    assert.match(gauge.statusBarItem.text, /· pausing…$/);
    assert.deepEqual(messageLines(), [], 'nothing says paused before the run is');
    r.emit(ended(1, 0.1), { type: 'paused' });
    h.clock.advance(300);
    assert.match(gauge.statusBarItem.text, /· paused$/);
    assert.deepEqual(messageLines(), ['info: Ralph: run t-1 is paused. Run "Ralph: Resume" to go on. [Resume]']);
  });

  it('names Ralph: Resume when a run pauses, once per pause', async () => {
    const h = storeHarness();
    new RunNotifications(h.store);
    const r = h.addRun(runInfo('t-1'));
    r.emit(started('t-1'), iteration(1));
    r.emit({ type: 'paused' });
    r.emit(tokensAt(1, 5));
    h.clock.advance(300);
    assert.deepEqual(messageLines(), ['info: Ralph: run t-1 is paused. Run "Ralph: Resume" to go on. [Resume]']);
  });

  it('shows a waiting question with Answer…', async () => {
    const h = storeHarness();
    new RunNotifications(h.store);
    const r = h.addRun(runInfo('t-1'));
    r.emit(started('t-1'), iteration(1), {
      type: 'question',
      id: 'q1',
      iteration: 1,
      item: { source: 'checklist', id: 'T-1', title: 'T' },
      text: 'Postgres or SQLite?',
      answerFile: '/w/a',
    });
    assert.deepEqual(messageLines(), ['info: Ralph: run t-1 asks (T-1): Postgres or SQLite? [Answer…]']);
  });

  it('runs Ralph: Answer Question… for that run and item when Answer… is clicked, and Ralph: Resume for Resume', async () => {
    const h = storeHarness();
    const calls: [string, unknown][] = [];
    recorded.commands.set('ralph.answer', (a) => {
      calls.push(['ralph.answer', a]);
    });
    recorded.commands.set('ralph.resume', (f) => {
      calls.push(['ralph.resume', f]);
    });
    recorded.answers.push('Answer…', 'Resume');
    new RunNotifications(h.store);
    const r = h.addRun(runInfo('t-1'));
    r.emit(started('t-1'), iteration(1), {
      type: 'question',
      id: 'q1',
      iteration: 1,
      item: { source: 'checklist', id: 'T-1', title: 'T' },
      text: 'Postgres or SQLite?',
      answerFile: '/w/a',
    });
    await new Promise((res) => setImmediate(res));
    r.emit({ type: 'paused' });
    h.clock.advance(300);
    await new Promise((res) => setImmediate(res));
    const folder = h.store.snapshot().runs[0]!.folder;
    assert.deepEqual(calls, [
      ['ralph.answer', { folder, runId: 't-1', itemId: 'T-1' }],
      ['ralph.resume', folder],
    ]);
  });
});
