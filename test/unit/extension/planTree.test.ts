import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import type { ItemStatus, PlanItem, PlanSnapshot } from '../../../src/core/model/plan';
import type { WaveJson } from '../../../src/core/model/waves';
import { resetOfferOf } from '../../../src/core/sources/resetPolicy';
import { Logger } from '../../../src/extension/logger';
import { PlanTreeProvider, type PlanNode } from '../../../src/extension/planTree';
import { pastStaleThreshold } from '../../../src/core/model/quantumStale';
import { buildTreeModel, mdEscape, resetConfirmOf } from '../../../src/extension/planTreeModel';
import type { StoreChange, StoreSnapshot } from '../../../src/extension/runStore';
import { PlanTreeCommands } from '../../../src/extension/planTreeCommands';
import type { RunStore } from '../../../src/extension/runStore';
import { resetFake } from '../../support/fakeVscode';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { repoRoot } from '../../support/repoRoot';
import { activate } from '../../../src/extension/extension';
import { visibleText } from '../../../src/protocol/visibleText';

const F = '/ws';

function item(source: PlanItem['source'], id: string, status: ItemStatus, extra: Partial<PlanItem> = {}): PlanItem {
  const kind = source === 'flow-next' ? 'task' : source === 'quantum' ? 'story' : 'checkbox';
  const rootId = source === 'flow-next' ? 'fn-1' : source === 'quantum' ? 'quantum.json' : 'RALPH_TASK.md';
  const raw =
    source === 'quantum'
      ? (({ todo: 'pending', done: 'passed' } as Record<string, string>)[status] ?? status)
      : source === 'checklist'
        ? status === 'done'
          ? 'x'
          : ' '
        : status;
  return {
    source,
    kind,
    id,
    rootId,
    title: `title ${id}`,
    status,
    rawStatus: raw,
    dependsOn: [],
    file: source === 'flow-next' ? `.flow/tasks/${id}.json` : rootId,
    ...extra,
  };
}

/** One folder with every source and every status. */
function plan(over: Partial<Record<string, ItemStatus>> = {}): PlanSnapshot {
  const s = (id: string, d: ItemStatus) => over[id] ?? d;
  const items = [
    item('flow-next', 'fn-1.1', s('fn-1.1', 'done'), { completedAt: '2026-12-01T10:00:00Z' }),
    item('flow-next', 'fn-1.2', s('fn-1.2', 'in_progress'), { dependsOn: ['fn-1.1'], assignee: 'me' }),
    item('flow-next', 'fn-1.3', s('fn-1.3', 'blocked'), { dependsOn: ['fn-1.1'], reason: 'needs a key' }),
    item('flow-next', 'fn-1.4', s('fn-1.4', 'todo'), { dependsOn: ['fn-1.3'] }),
    item('quantum', 'US-1', s('US-1', 'done')),
    item('quantum', 'US-2', s('US-2', 'done'), { dependsOn: ['US-1'] }),
    item('quantum', 'US-3', s('US-3', 'failed'), {
      dependsOn: ['US-1'],
      attempts: 1,
      maxAttempts: 3,
      reason: 'tests red',
    }),
    item('quantum', 'US-4', s('US-4', 'todo'), { dependsOn: ['US-2'] }),
    item('quantum', 'US-5', s('US-5', 'unknown')),
    item('checklist', 'RALPH_TASK.md:3', s('RALPH_TASK.md:3', 'done'), { line: 3 }),
    item('checklist', 'RALPH_TASK.md:4', s('RALPH_TASK.md:4', 'todo'), { line: 4 }),
  ];
  return {
    folder: F,
    problems: [],
    cycles: [],
    items,
    roots: [
      {
        source: 'flow-next',
        kind: 'epic',
        id: 'fn-1',
        title: 'Epic one',
        status: 'open',
        dependsOn: [],
        file: '.flow/epics/fn-1.json',
        itemIds: ['fn-1.1', 'fn-1.2', 'fn-1.3', 'fn-1.4'],
      },
      {
        source: 'quantum',
        kind: 'project',
        id: 'quantum.json',
        title: 'Proj',
        status: 'open',
        dependsOn: [],
        file: 'quantum.json',
        itemIds: ['US-1', 'US-2', 'US-3', 'US-4', 'US-5'],
      },
      {
        source: 'checklist',
        kind: 'checklist',
        id: 'RALPH_TASK.md',
        title: 'Task',
        status: 'open',
        dependsOn: [],
        file: 'RALPH_TASK.md',
        itemIds: ['RALPH_TASK.md:3', 'RALPH_TASK.md:4'],
      },
    ],
  };
}

const WAVES: WaveJson[] = [
  {
    wave_id: 'W1',
    status: 'in_progress',
    counts: { RESOLVED: 1, RESUMED: 1, STALE: 1, ACTIVE: 1, PENDING: 1, orphans: 2 },
    subagents: [
      {
        sub_id: 'W1-A',
        disposition: 'RESOLVED',
        done_source: 'report',
        checkpoint_age_ms: 1000,
        last_activity_age_ms: 1000,
      },
      {
        sub_id: 'W1-B',
        disposition: 'RESUMED',
        checkpoint_age_ms: 900_000,
        last_activity_age_ms: 900_000,
        next_step: 'write the test',
        worktree: '../wt-b',
        checkpoint: '.ijfw/wave-W1/subagent-W1-B.checkpoint.json',
      },
      {
        sub_id: 'W1-C',
        disposition: 'STALE',
        checkpoint_age_ms: null,
        last_activity_age_ms: null,
        unreadable: 'bad JSON',
      },
      {
        sub_id: 'W1-D',
        disposition: 'ACTIVE',
        checkpoint_age_ms: 10_000,
        last_activity_age_ms: 10_000,
        orphan_in_ms: 590_000,
      },
      { sub_id: 'W1-E', disposition: 'PENDING', checkpoint_age_ms: null, last_activity_age_ms: null },
    ],
  },
];

function snap(p: PlanSnapshot | undefined, version = 1): StoreSnapshot {
  return { version, folders: [{ folder: F, name: 'ws', plan: p, starting: false }], runs: [] };
}

/** A fake store: set `current` and call `change()`. */
function fakeStore(initial: StoreSnapshot) {
  const listeners = new Set<(c: StoreChange) => unknown>();
  const s = {
    current: initial,
    snapshot: () => s.current,
    onDidChange: (l: (c: StoreChange) => unknown) => {
      listeners.add(l);
      return { dispose: () => listeners.delete(l) };
    },
    change(next: StoreSnapshot) {
      s.current = next;
      for (const l of listeners) l({ kind: 'plan', folder: F });
    },
  };
  return s;
}

function label(tree: PlanTreeProvider, id: string) {
  const n = tree.node(id);
  assert.ok(n, `row ${id}`);
  return tree.getTreeItem(n) as vscode.TreeItem & { iconPath: { id: string; color?: { id: string } } };
}

describe('the plan tree (rows from store snapshots, fake vscode)', () => {
  beforeEach(() => resetFake());

  it('shows every source as a row with its items, "k/N" counts and no file decorations', () => {
    const store = fakeStore(snap(plan()));
    const tree = new PlanTreeProvider(new Logger(), { ...store, waves: () => WAVES });
    const roots = tree.children().map((n) => n.id);
    assert.deepEqual(roots, [`${F}#flow-next`, `${F}#quantum`, `${F}#checklist/RALPH_TASK.md`, `${F}#waves`]);
    assert.equal(label(tree, `${F}#flow-next`).label, 'flow-next (1 epic)');
    assert.equal(label(tree, `${F}#flow-next`).description, '1/4 tasks');
    assert.equal(label(tree, `${F}#quantum`).label, 'quantum.json — Proj');
    assert.equal(label(tree, `${F}#quantum`).description, '2/5 stories');
    assert.equal(label(tree, `${F}#checklist/RALPH_TASK.md`).description, '1/2 tasks');
    assert.equal(label(tree, `${F}#waves`).description, '1 wave · 2 orphans');
    const epic = tree.children(tree.node(`${F}#flow-next`));
    assert.deepEqual(
      epic.map((n) => n.id),
      [`${F}#flow-next/epic/fn-1`],
    );
    assert.deepEqual(
      tree.children(epic[0]).map((n) => n.id.split('/').at(-1)),
      ['fn-1.1', 'fn-1.2', 'fn-1.3', 'fn-1.4'],
    );
    assert.deepEqual(
      tree.children(tree.node(`${F}#checklist/RALPH_TASK.md`)).map((n) => tree.getTreeItem(n).label),
      ['title RALPH_TASK.md:3', 'title RALPH_TASK.md:4'],
    );
    for (const row of tree.rows().rows.values())
      assert.equal(tree.getTreeItem(tree.node(row.id)!).resourceUri, undefined, `${row.id} has no resourceUri`);
  });

  it('gives each status its icon, theme colour, description and menu tokens', () => {
    const tree = new PlanTreeProvider(new Logger(), { ...fakeStore(snap(plan())), waves: () => WAVES });
    const cases: [string, string, string | undefined, RegExp, string[], string[]][] = [
      // row id, icon, colour, description, tokens present, tokens absent
      [
        'flow-next/task/fn-1.1',
        'pass-filled',
        'testing.iconPassed',
        /^done$/,
        ['item', 'resettable', 'file'],
        ['startable'],
      ],
      ['flow-next/task/fn-1.2', 'sync~spin', 'charts.blue', /^in progress$/, ['startable'], ['resettable']],
      ['flow-next/task/fn-1.3', 'circle-slash', 'charts.red', /^blocked$/, ['resettable', 'startable'], []],
      ['flow-next/task/fn-1.4', 'circle-large-outline', undefined, /^to do$/, ['startable'], ['resettable']],
      ['quantum/story/US-3', 'error', 'testing.iconFailed', /^failed · attempt 1\/3$/, ['resettable', 'quantum'], []],
      ['quantum/story/US-5', 'question', 'charts.yellow', /^unknown$/, [], ['resettable']],
      [
        'checklist/checkbox/RALPH_TASK.md:3',
        'pass-filled',
        'testing.iconPassed',
        /^$/,
        ['file', 'checklist'],
        ['resettable', 'startable'],
      ],
      ['waves/W1/W1-A', 'pass-filled', 'testing.iconPassed', /^resolved/, ['subagent'], ['orphan']],
      [
        'waves/W1/W1-B',
        'debug-disconnect',
        'charts.orange',
        /^resumed · 15m ago · next: write the test$/,
        ['subagent', 'orphan', 'file'],
        [],
      ],
      ['waves/W1/W1-C', 'history', 'charts.yellow', /^stale$/, ['orphan'], []],
      ['waves/W1/W1-D', 'sync~spin', 'charts.blue', /^active · 10s ago$/, [], ['orphan']],
      ['waves/W1/W1-E', 'clock', undefined, /^pending$/, [], ['orphan']],
    ];
    for (const [id, icon, color, desc, yes, no] of cases) {
      const it = label(tree, `${F}#${id}`);
      assert.equal(it.iconPath.id, icon, id);
      assert.equal(it.iconPath.color?.id, color, id);
      assert.match(String(it.description), desc, id);
      const tokens = String(it.contextValue).split(' ');
      for (const t of yes) assert.ok(tokens.includes(t), `${id} has ${t}`);
      for (const t of no) assert.ok(!tokens.includes(t), `${id} lacks ${t}`);
    }
  });

  it('writes markdown tooltips: where the status comes from, dependencies, dependents, last failure, timestamps', () => {
    const tree = new PlanTreeProvider(new Logger(), fakeStore(snap(plan())));
    // Item tooltips are built on hover (resolveTreeItem), source rows' at once.
    const tip = (id: string) =>
      String(
        (tree.resolveTreeItem(label(tree, `${F}#${id}`), tree.node(`${F}#${id}`)!).tooltip as vscode.MarkdownString)
          .value,
      );
    assert.equal(label(tree, `${F}#flow-next/task/fn-1.1`).tooltip, undefined);
    assert.match(tip('quantum'), /quantum-loop project/);
    assert.match(tip('flow-next/task/fn-1.1'), /from `\.flow\/tasks\/fn-1\.1\.json` \(`status`\)/);
    assert.match(tip('flow-next/task/fn-1.1'), /Dependents: fn\\-1\\\.2 \(in\\_progress\), fn\\-1\\\.3 \(blocked\)/);
    assert.match(tip('flow-next/task/fn-1.1'), /completed 2026\\-12\\-01T10&#58;00&#58;00Z/);
    assert.match(tip('flow-next/task/fn-1.3'), /Depends on: fn\\-1\\\.1 \(done\)/);
    assert.match(tip('flow-next/task/fn-1.3'), /Last failure: needs a key/);
    assert.match(tip('quantum/story/US-3'), /`quantum\.json` \(`stories\[\]\.status`\)/);
    assert.match(tip('checklist/checkbox/RALPH_TASK.md:4'), /`RALPH_TASK\.md` line 4/);
  });

  it('shows repository text plainly: hidden characters marked in labels and tooltips, no link, no icon', () => {
    const evil =
      'Evil\x1b]0;PWNED\x07 ev\u202eil-bidi ad\u200bmin see https://evil.example/x?a=1 www.evil.com a@b.co $(alert) **b** [l](http://x)';
    const p = plan();
    p.items = p.items.map((i) =>
      i.id === 'US-3' ? { ...i, title: evil, reason: evil, dependsOn: [`US\u202e1`], assignee: evil } : i,
    );
    const tree = new PlanTreeProvider(new Logger(), fakeStore(snap(p)));
    const id = `${F}#quantum/story/US-3`;
    const it = label(tree, id);
    const shown = visibleText(evil, { singleLine: true });
    assert.equal(it.label, `US-3 ${shown}`);
    const tip = String((tree.resolveTreeItem(it, tree.node(id)!).tooltip as vscode.MarkdownString).value);
    assert.equal(visibleText(tip), tip, 'no hidden character in the tooltip');
    for (const trigger of ['://', 'www.', '@', '$(', '**b**', '[l]', '\u202e1'])
      assert.ok(!tip.replace(/\\u202e/g, '').includes(trigger), `${trigger} in ${tip}`);
    // What markdown shows: backslash escapes and character references resolved, the title exactly (escaped).
    const rendered = tip.replace(/&#(\d+);/g, (_, n: string) => String.fromCharCode(Number(n))).replace(/\\(.)/g, '$1');
    assert.ok(rendered.includes(`**US-3** ${visibleText(evil)}`), rendered);
    assert.ok(rendered.includes(`Last failure: ${visibleText(evil)}`), rendered);
  });

  it('shows an item a run waits on as waiting, with Answer Question… and the run id', () => {
    const s = snap(plan());
    const run = {
      key: `${F}#r1`,
      folder: F,
      folderName: 'ws',
      runId: 'r1',
      kind: 'ralph',
      startedHere: false,
      seenAt: 0,
      facts: {
        active: true,
        state: 'waiting',
        paused: false,
        deferred: false,
        startedAt: null,
        questions: [{ id: 'q1', text: 'which key?', itemId: 'fn-1.2', answerFile: '/x' }],
      },
      view: {
        stateText: 'waiting for an answer (fn-1.2)',
        progress: { done: 1, total: 4 },
        iteration: 2,
        lanes: [
          {
            lane: 0,
            activity: 'waiting',
            iteration: 2,
            purpose: 'work',
            item: { source: 'flow-next', id: 'fn-1.2', title: 'title fn-1.2' },
            attempt: null,
            agentPid: null,
            agent: 'codex',
            context: null,
            iterationCostUsd: 0.05,
            lastEnding: null,
          },
        ],
        cost: {
          runUsd: 0.25,
          byItem: [{ key: 'flow-next:fn-1.2', item: { source: 'flow-next', id: 'fn-1.2', title: 't' }, costUsd: 0.2 }],
          byIteration: [],
        },
        warnings: [],
        source: '.flow',
        agent: 'claude',
        startedAt: null,
      },
    } as unknown as StoreSnapshot['runs'][number];
    const tree = new PlanTreeProvider(new Logger(), fakeStore({ ...s, runs: [run] }));
    const it = label(tree, `${F}#flow-next/task/fn-1.2`);
    assert.equal(it.iconPath.id, 'comment-discussion');
    assert.match(String(it.contextValue), /\bwaiting\b/);
    assert.equal(it.description, 'waiting for an answer · $0.20 · current');
    assert.equal(tree.row(`${F}#flow-next/task/fn-1.2`)?.runId, 'r1');
    assert.equal(
      label(tree, `${F}#runs/r1`).description,
      'waiting for an answer (fn-1.2) · claude · 1/4 · iteration 2 · $0.25',
    );
    assert.equal(label(tree, `${F}#runs/r1/lane/0`).label, 'fn-1.2 title fn-1.2');
    assert.equal(
      label(tree, `${F}#runs/r1/lane/0`).description,
      'waiting · codex · iteration 2 · $0.05',
      "a lane names its agent when it is not the run's (a failover)",
    );
  });

  it('a run of remote lanes: its row says how many workers are alive (ids in the tooltip), a lane row its worker', () => {
    const s = snap(plan());
    const run = {
      key: `${F}#r2`,
      folder: F,
      folderName: 'ws',
      runId: 'r2',
      kind: 'ralph',
      startedHere: false,
      seenAt: 0,
      facts: { active: true, state: 'running', paused: false, deferred: false, startedAt: null, questions: [] },
      view: {
        stateText: 'running',
        agent: 'claude',
        progress: { done: 0, total: 2 },
        iteration: 2,
        workers: [
          { id: 'build1:41', host: 'build1', pid: 41 },
          { id: 'build2:7', host: 'build2', pid: 7 },
        ],
        lanes: [
          {
            lane: 1,
            activity: 'agent',
            purpose: 'work',
            item: { source: 'quantum', id: 'US-1', title: 'one' },
            attempt: null,
            iteration: 1,
            agent: 'claude',
            worker: 'build1:41',
            context: null,
            iterationCostUsd: 0,
            lastEnding: null,
          },
          {
            lane: 2,
            activity: 'agent',
            purpose: 'work',
            item: { source: 'quantum', id: 'US-2', title: 'two' },
            attempt: null,
            iteration: 2,
            agent: 'claude',
            worker: null,
            context: null,
            iterationCostUsd: 0,
            lastEnding: null,
          },
        ],
        cost: { runUsd: 0, byItem: [], byIteration: [] },
        warnings: [],
        source: 'quantum',
        startedAt: null,
      },
    } as unknown as StoreSnapshot['runs'][number];
    const tree = new PlanTreeProvider(new Logger(), fakeStore({ ...s, runs: [run] }));
    assert.equal(label(tree, `${F}#runs/r2`).description, 'running · claude · 0/2 · iteration 2 · 2 workers alive');
    const tip = (id: string) =>
      String(
        (tree.resolveTreeItem(label(tree, `${F}#${id}`), tree.node(`${F}#${id}`)!).tooltip as vscode.MarkdownString)
          .value,
      );
    assert.ok(tip('runs/r2').includes(mdEscape('Workers alive: build1:41, build2:7 (remote lanes)')), tip('runs/r2'));
    assert.equal(label(tree, `${F}#runs/r2/lane/1`).description, 'lane 1 · agent · on build1:41 · iteration 1');
    assert.ok(
      tip('runs/r2/lane/1').includes(mdEscape('Runs on worker build1:41 (remote lane)')),
      tip('runs/r2/lane/1'),
    );
    assert.equal(label(tree, `${F}#runs/r2/lane/2`).description, 'lane 2 · agent · iteration 2');
  });

  it('fires the changed row only (not the root) when one file changed one item', () => {
    const store = fakeStore(snap(plan()));
    const tree = new PlanTreeProvider(new Logger(), store);
    const fired: (PlanNode | PlanNode[] | undefined)[] = [];
    tree.onDidChangeTreeData((e) => fired.push(e));
    const before = tree.node(`${F}#quantum/story/US-4`);
    store.change(snap(plan({ 'US-4': 'in_progress' }), 2));
    assert.equal(fired.length, 1);
    const ids = (fired[0] as PlanNode[]).map((n) => n.id);
    // The story and the rows whose text names its status (its source's count does not change; US-2's dependents tooltip does not name US-4's status).
    assert.ok(ids.includes(`${F}#quantum/story/US-4`), ids.join(', '));
    assert.ok(!ids.includes(`${F}#flow-next/task/fn-1.1`));
    assert.ok(fired[0] !== undefined, 'not the root');
    assert.equal(tree.node(`${F}#quantum/story/US-4`), before, 'the same node object (VS Code finds it by identity)');
    assert.equal(label(tree, `${F}#quantum/story/US-4`).iconPath.id, 'sync~spin');
    fired.length = 0;
    store.change(snap(plan({ 'US-4': 'in_progress' }), 3));
    assert.deepEqual(fired, [], 'nothing fires when nothing shown changed');
  });

  it('fires the parent when an item is added and the root when a source appears', () => {
    const store = fakeStore(snap(plan()));
    const tree = new PlanTreeProvider(new Logger(), store);
    const fired: (PlanNode | PlanNode[] | undefined)[] = [];
    tree.onDidChangeTreeData((e) => fired.push(e));
    const p = plan();
    p.items.push(item('checklist', 'RALPH_TASK.md:5', 'todo', { line: 5 }));
    p.roots[2]!.itemIds.push('RALPH_TASK.md:5');
    store.change(snap(p, 2));
    assert.deepEqual(
      (fired[0] as PlanNode[]).map((n) => n.id),
      [`${F}#checklist/RALPH_TASK.md`],
    );
    fired.length = 0;
    store.change(snap(undefined, 3));
    assert.deepEqual(fired, [undefined]);
  });

  it('keeps a row expanded across refreshes (stable ids, remembered expansion)', () => {
    const store = fakeStore(snap(plan()));
    const tree = new PlanTreeProvider(new Logger(), store);
    const id = `${F}#flow-next/epic/fn-1`;
    assert.equal(label(tree, id).collapsibleState, vscode.TreeItemCollapsibleState.Collapsed);
    tree.setExpanded(id, true);
    store.change(snap(plan({ 'fn-1.4': 'in_progress' }), 2));
    tree.refresh();
    assert.equal(label(tree, id).id, id);
    assert.equal(label(tree, id).collapsibleState, vscode.TreeItemCollapsibleState.Expanded);
    tree.setExpanded(id, false);
    assert.equal(label(tree, id).collapsibleState, vscode.TreeItemCollapsibleState.Collapsed);
  });

  it('lets the top level wait for the first plan read (no welcome flash), then lists the sources', async () => {
    const store = fakeStore(snap(undefined));
    const tree = new PlanTreeProvider(new Logger(), store);
    const pending = tree.getChildren();
    assert.ok(pending instanceof Promise);
    store.change(snap(plan(), 2));
    assert.equal((await pending).length, 3);
    assert.ok(Array.isArray(tree.getChildren()));
  });

  it("falls back to the plan snapshot's waves before the monitor evaluated", () => {
    const p = { ...plan(), waves: WAVES };
    const m = buildTreeModel(snap(p), () => []);
    assert.ok(m.rows.has(`${F}#waves/W1/W1-B`));
    assert.equal(m.rows.get(`${F}#waves/W1/W1-B`)?.worktree, '../wt-b');
  });
});

describe('a quantum story left in progress (the stale rule, core pastStaleThreshold)', () => {
  const now = Date.now(); // the provider dates the rule with the real clock
  const started = (min: number) => new Date(now - min * 60_000).toISOString();
  const table: [string, { status: string; startedAt?: string | null }, number | undefined, boolean][] = [
    ['in_progress 21 min, default 20', { status: 'in_progress', startedAt: started(21) }, undefined, true],
    ['in_progress 19 min, default 20', { status: 'in_progress', startedAt: started(19) }, undefined, false],
    ['in_progress 20 min exactly (not more)', { status: 'in_progress', startedAt: started(20) }, undefined, false],
    ['in_progress 11 min, file threshold 10', { status: 'in_progress', startedAt: started(11) }, 10, true],
    ['in_progress without startedAt (core only warns)', { status: 'in_progress' }, undefined, false],
    ['in_progress with an unreadable startedAt', { status: 'in_progress', startedAt: 'yesterday' }, undefined, false],
    ['pending with an old startedAt', { status: 'pending', startedAt: started(90) }, undefined, false],
  ];
  for (const [name, story, threshold, want] of table) {
    it(`${name}: ${want ? 'stale' : 'not stale'}`, () => assert.equal(pastStaleThreshold(story, now, threshold), want));
  }

  const stalePlan = (min: number, threshold?: number): PlanSnapshot => {
    const p = plan({ 'US-4': 'in_progress' });
    p.items = p.items.map((i) => (i.id === 'US-4' ? { ...i, rawStatus: 'in_progress', startedAt: started(min) } : i));
    if (threshold !== undefined)
      p.roots = p.roots.map((r) => (r.source === 'quantum' ? { ...r, staleThresholdMinutes: threshold } : r));
    return p;
  };
  const activeRun = {
    key: `${F}#r1`,
    folder: F,
    folderName: 'ws',
    runId: 'r1',
    kind: 'ralph',
    startedHere: false,
    seenAt: 0,
    facts: { active: true, state: 'running', paused: false, deferred: false, startedAt: null, questions: [] },
    view: {
      stateText: 'running',
      progress: null,
      iteration: 1,
      lanes: [],
      cost: { runUsd: 0, byItem: [], byIteration: [] },
      warnings: [],
      source: 'quantum.json',
      agent: 'claude',
      startedAt: null,
    },
  } as unknown as StoreSnapshot['runs'][number];

  it('shows a story in progress past its threshold with no run active as stale (history icon, no spinner), with ralph stale in its tooltip', () => {
    const m = buildTreeModel(snap(stalePlan(45)), () => [], undefined, now);
    const row = m.rows.get(`${F}#quantum/story/US-4`)!;
    assert.equal(row.status, 'stale');
    assert.equal(row.description, 'stale');
    const tip = typeof row.tooltip === 'function' ? row.tooltip() : row.tooltip;
    assert.match(tip, /more than 20 minutes ago \(the stale threshold\); `ralph stale --apply`/);
    const tree = new PlanTreeProvider(new Logger(), fakeStore(snap(stalePlan(45))));
    assert.deepEqual(
      [label(tree, `${F}#quantum/story/US-4`).iconPath.id, label(tree, `${F}#quantum/story/US-4`).iconPath.color?.id],
      ['history', 'charts.yellow'],
    );
  });

  it("keeps the spinner while a run of the folder is active, before the threshold, and reads the file's own threshold", () => {
    assert.equal(
      buildTreeModel({ ...snap(stalePlan(45)), runs: [activeRun] }, () => [], undefined, now).rows.get(
        `${F}#quantum/story/US-4`,
      )!.status,
      'in_progress',
    );
    assert.equal(
      buildTreeModel(snap(stalePlan(5)), () => [], undefined, now).rows.get(`${F}#quantum/story/US-4`)!.status,
      'in_progress',
    );
    assert.equal(
      buildTreeModel(snap(stalePlan(5, 4)), () => [], undefined, now).rows.get(`${F}#quantum/story/US-4`)!.status,
      'stale',
    );
    assert.equal(
      buildTreeModel(snap(stalePlan(45)), () => [], undefined, now).rows.get(`${F}#flow-next/task/fn-1.2`)!.status,
      'in_progress',
      'flow-next tasks have no stale rule',
    );
  });

  it('redraws the story when the run that held it ends (the row is rebuilt, not reused)', () => {
    const running = buildTreeModel({ ...snap(stalePlan(45)), runs: [activeRun] }, () => [], undefined, now);
    const ended = { ...activeRun, facts: { ...activeRun.facts, active: false } } as StoreSnapshot['runs'][number];
    const after = buildTreeModel({ ...snap(stalePlan(45)), runs: [ended] }, () => [], running, now);
    assert.notEqual(after.rows.get(`${F}#quantum/story/US-4`), running.rows.get(`${F}#quantum/story/US-4`));
    assert.equal(after.rows.get(`${F}#quantum/story/US-4`)!.status, 'stale');
    assert.equal(
      after.rows.get(`${F}#quantum/story/US-1`),
      running.rows.get(`${F}#quantum/story/US-1`),
      'the others are reused',
    );
  });
});

describe("the plan tree's incremental rebuild (rows reused, diffed by fields)", () => {
  beforeEach(() => resetFake());

  it('keeps the row objects of unchanged items and fires the changed item and the neighbours whose tooltip names its status', () => {
    const store = fakeStore(snap(plan()));
    const tree = new PlanTreeProvider(new Logger(), store);
    const before = new Map(tree.rows().rows);
    const fired: (PlanNode | PlanNode[] | undefined)[] = [];
    tree.onDidChangeTreeData((e) => fired.push(e));
    store.change(snap(plan({ 'US-2': 'failed' }), 2));
    // US-2 itself; US-1 (its Dependents list names US-2's status); US-4 (depends on US-2); the source (2/5 → 1/5).
    assert.deepEqual(
      (fired[0] as PlanNode[]).map((n) => n.id).sort(),
      [`${F}#quantum`, `${F}#quantum/story/US-1`, `${F}#quantum/story/US-2`, `${F}#quantum/story/US-4`].sort(),
    );
    const rows = tree.rows().rows;
    for (const id of [
      'flow-next/task/fn-1.1',
      'quantum/story/US-1',
      'quantum/story/US-3',
      'quantum/story/US-4',
      'checklist/checkbox/RALPH_TASK.md:3',
    ])
      assert.equal(rows.get(`${F}#${id}`), before.get(`${F}#${id}`), `${id} reused`);
    assert.notEqual(rows.get(`${F}#quantum/story/US-2`), before.get(`${F}#quantum/story/US-2`), 'US-2 rebuilt');
    // A reused row's tooltip reads the newest plan.
    const tip = (id: string) =>
      String(
        (tree.resolveTreeItem(tree.getTreeItem(tree.node(id)!), tree.node(id)!).tooltip as vscode.MarkdownString).value,
      );
    assert.match(tip(`${F}#quantum/story/US-1`), /Dependents: US\\-2 \(failed\), US\\-3 \(failed\)/);
    assert.match(tip(`${F}#quantum/story/US-4`), /Depends on: US\\-2 \(failed\)/);
  });

  it('fires a row whose only change is in its tooltip (a timestamp), and the parent (with its subtree) of an item that went', () => {
    const store = fakeStore(snap(plan()));
    const tree = new PlanTreeProvider(new Logger(), store);
    const fired: string[][] = [];
    tree.onDidChangeTreeData((e) => fired.push(Array.isArray(e) ? e.map((n) => n.id) : ['root']));
    const p = plan();
    p.items[0] = { ...p.items[0]!, updatedAt: '2026-12-01T11:00:00Z' };
    store.change(snap(p, 2));
    assert.deepEqual(fired.at(-1), [`${F}#flow-next/task/fn-1.1`]);
    const q = plan();
    q.items = q.items.filter((i) => i.id !== 'fn-1.4');
    q.roots[0]!.itemIds.pop();
    store.change(snap(q, 3));
    // The epic's children changed (a redrawn row re-reads its subtree, so fn-1.3, whose Dependents lost fn-1.4, is
    // covered) and the source's count.
    assert.deepEqual(fired.at(-1)!.sort(), [`${F}#flow-next`, `${F}#flow-next/epic/fn-1`].sort());
    assert.doesNotMatch(
      String(
        (
          tree.resolveTreeItem(label(tree, `${F}#flow-next/task/fn-1.3`), tree.node(`${F}#flow-next/task/fn-1.3`)!)
            .tooltip as vscode.MarkdownString
        ).value,
      ),
      /Dependents/,
    );
    assert.equal(tree.node(`${F}#flow-next/task/fn-1.4`), undefined);
    // US-4 went: its source redraws its subtree (US-2's Dependents list with it).
    const u = plan();
    u.items = u.items.filter((i) => i.id !== 'US-4');
    u.roots[1]!.itemIds = u.roots[1]!.itemIds.filter((i) => i !== 'US-4');
    store.change(snap(u, 4));
    assert.deepEqual(
      fired.at(-1)!.sort(),
      [`${F}#flow-next`, `${F}#flow-next/epic/fn-1`, `${F}#quantum`].sort(),
      'fn-1.4 is back (its epic), US-4 went (its source)',
    );
  });

  it("fires the item rows whose run facts changed (cost, current) and the run's rows, nothing else", () => {
    const s = snap(plan());
    const store = fakeStore(s);
    const tree = new PlanTreeProvider(new Logger(), store);
    const fired: string[][] = [];
    tree.onDidChangeTreeData((e) => fired.push(Array.isArray(e) ? e.map((n) => n.id) : ['root']));
    const run = (cost: number) =>
      ({
        key: `${F}#r1`,
        folder: F,
        folderName: 'ws',
        runId: 'r1',
        kind: 'ralph',
        startedHere: false,
        seenAt: 0,
        facts: { active: true, state: 'running', paused: false, deferred: false, startedAt: null, questions: [] },
        view: {
          stateText: 'running',
          progress: null,
          iteration: 1,
          lanes: [
            {
              lane: 0,
              activity: 'agent',
              iteration: 1,
              purpose: 'work',
              item: { source: 'quantum', id: 'US-4', title: 't' },
              attempt: null,
              agentPid: null,
              context: null,
              iterationCostUsd: cost,
              lastEnding: null,
            },
          ],
          cost: {
            runUsd: cost,
            byItem: [{ key: 'quantum:US-4', item: { source: 'quantum', id: 'US-4', title: 't' }, costUsd: cost }],
            byIteration: [],
          },
          warnings: [],
          source: 'quantum',
          agent: 'claude',
          startedAt: null,
        },
      }) as unknown as StoreSnapshot['runs'][number];
    store.change({ ...s, version: 2, runs: [run(0.1)] });
    assert.equal(label(tree, `${F}#quantum/story/US-4`).description, 'to do · $0.10 · current');
    assert.deepEqual(fired.at(-1), ['root'], 'the runs source appeared');
    store.change({ ...s, version: 3, runs: [run(0.3)] });
    assert.deepEqual(fired.at(-1)!.sort(), [`${F}#quantum/story/US-4`, `${F}#runs/r1`, `${F}#runs/r1/lane/0`].sort());
    assert.equal(label(tree, `${F}#quantum/story/US-4`).description, 'to do · $0.30 · current');
  });
});

describe("an epic's icon says how far it is", () => {
  it('is the to-do circle before any task, a blue pie once one is done or under way (3/4), and done when closed', () => {
    const epicIcon = (p: PlanSnapshot) => {
      const tree = new PlanTreeProvider(new Logger(), fakeStore(snap(p)));
      const i = label(tree, `${F}#flow-next/epic/fn-1`).iconPath;
      return [i.id, i.color?.id];
    };
    assert.deepEqual(epicIcon(plan()), ['pie-chart', 'charts.blue']);
    assert.deepEqual(
      epicIcon(plan({ 'fn-1.1': 'done', 'fn-1.2': 'done', 'fn-1.3': 'done', 'fn-1.4': 'todo' })),
      ['pie-chart', 'charts.blue'],
      'an epic at 3/4',
    );
    assert.deepEqual(epicIcon(plan({ 'fn-1.1': 'todo', 'fn-1.2': 'todo', 'fn-1.3': 'todo' })), [
      'circle-large-outline',
      undefined,
    ]);
    const closed = plan();
    closed.roots = closed.roots.map((r) => (r.id === 'fn-1' ? { ...r, status: 'done' } : r));
    assert.deepEqual(epicIcon(closed), ['pass-filled', 'testing.iconPassed']);
  });
});

describe("an item's tooltip names where its status is read from", () => {
  it("names a flow-next task's state file by its real path, never a <git-common-dir> placeholder", () => {
    const t = makeTempFolder('ralph-tree-tip-');
    try {
      fs.mkdirSync(path.join(t.dir, '.git'));
      const p = plan();
      p.folder = t.dir;
      p.items = p.items.map((i) => (i.id === 'fn-1.2' ? { ...i, statusSource: 'flow-state' as const } : i));
      const m = buildTreeModel({
        version: 1,
        folders: [{ folder: t.dir, name: 'ws', plan: p, starting: false }],
        runs: [],
      });
      const row = m.rows.get(`${t.dir}#flow-next/task/fn-1.2`)!;
      const tip = typeof row.tooltip === 'function' ? row.tooltip() : row.tooltip;
      assert.match(
        tip,
        /from the flow state file `\.git\/flow-state\/tasks\/fn-1\.2\.state\.json` \(over task `\.flow\/tasks\/fn-1\.2\.json`\)/,
      );
      assert.doesNotMatch(tip, /<git-common-dir>/);
    } finally {
      t.dispose();
    }
  });
});

describe('the reset confirm (core resetOfferOf, as ralph task reset --cascade)', () => {
  it('lists exactly the items the cascade resets', () => {
    const p = plan();
    const c = resetConfirmOf(p, resetOfferOf(p, 'US-1'), true);
    assert.deepEqual(c, {
      ok: true,
      ids: ['US-1', 'US-2', 'US-3'],
      message: 'Reset US-1 and its dependents (3 items) to "to do"?',
      detail: '• US-1 title US-1 (done → to do)\n• US-2 title US-2 (done → to do)\n• US-3 title US-3 (failed → to do)',
    });
    assert.deepEqual(resetConfirmOf(p, resetOfferOf(p, 'US-1'), false), {
      ok: true,
      ids: ['US-1'],
      message: 'Reset US-1 to "to do"?',
      detail: '• US-1 title US-1 (done → to do)',
    });
  });

  it('says why when core refuses, and when nothing depends on the item', () => {
    const p = plan();
    assert.deepEqual(resetConfirmOf(p, resetOfferOf(p, 'fn-1.2'), true), {
      ok: false,
      message: 'Ralph: cannot reset fn-1.2: fn-1.2 is in progress: wait for it to finish or block it first.',
    });
    assert.deepEqual(resetConfirmOf(p, resetOfferOf(p, 'RALPH_TASK.md:3'), true), {
      ok: false,
      message: 'Ralph: cannot reset RALPH_TASK.md:3: a checkbox is reset by unticking it in its file.',
    });
    const c = resetConfirmOf(p, resetOfferOf(p, 'US-3'), true);
    assert.ok(c.ok && c.detail.endsWith('Nothing done, blocked or failed depends on it: only this item is reset.'));
  });

  it("names the dependents in progress it leaves alone, in the tree's words", () => {
    const p = plan();
    const c = resetConfirmOf(p, resetOfferOf(p, 'fn-1.1'), true);
    assert.deepEqual(c, {
      ok: true,
      ids: ['fn-1.1', 'fn-1.3'],
      message: 'Reset fn-1.1 and its dependents (2 items) to "to do"?',
      detail:
        '• fn-1.1 title fn-1.1 (done → to do)\n• fn-1.3 title fn-1.3 (blocked → to do)\n\nLeft alone (in progress; reset them once they finish):\n• fn-1.2 title fn-1.2 (in progress)',
    });
  });
});

describe("the tree's commands on the fake vscode (resume briefs, Start Here)", () => {
  let t: TempFolder;
  beforeEach(() => {
    resetFake();
    t = makeTempFolder('ralph-tree-cmd-');
  });
  afterEach(() => t.dispose());

  function setup(p: PlanSnapshot | undefined, waves: WaveJson[] = []) {
    const s: StoreSnapshot = {
      version: 1,
      folders: [{ folder: t.dir, name: 'ws', plan: p && { ...p, folder: t.dir }, starting: false }],
      runs: [],
    };
    const store = fakeStore(s);
    const tree = new PlanTreeProvider(new Logger(), { ...store, waves: () => waves });
    const started: unknown[] = [];
    const answered: unknown[] = [];
    vscode.commands.registerCommand('ralph.start', (a: unknown) => {
      started.push(a);
      return 'run-1';
    });
    vscode.commands.registerCommand('ralph.answer', (a: unknown) => {
      answered.push(a);
      return 'q1';
    });
    const cmds = new PlanTreeCommands(tree, store as unknown as RunStore, new Logger());
    const ui: string[] = [];
    const replies: (string | undefined)[] = [];
    cmds.ui = {
      confirm: async (m, d) => {
        ui.push(`confirm: ${m} | ${d}`);
        return true;
      },
      offer: async (m, a) => {
        ui.push(`offer: ${m} [${a}]`);
        return true;
      },
      info: (m) => void ui.push(`info: ${m}`),
      ask: async (title, prompt) => {
        ui.push(`ask: ${title} | ${prompt}`);
        return replies.shift();
      },
    };
    return { tree, cmds, started, answered, ui, replies, store };
  }

  /** A run of `folder` waiting on question q1 for item fn-1.2. */
  function waitingRun(
    folder: string,
    questions = [{ id: 'q1', text: 'which key?', itemId: 'fn-1.2', answerFile: '/x' }],
  ) {
    return {
      key: `${folder}#r1`,
      folder,
      folderName: 'ws',
      runId: 'r1',
      kind: 'ralph',
      startedHere: false,
      seenAt: 0,
      facts: { active: true, state: 'waiting', paused: false, deferred: false, startedAt: null, questions },
      view: {
        stateText: 'waiting for an answer (fn-1.2)',
        progress: null,
        iteration: 2,
        lanes: [
          {
            lane: 0,
            activity: 'waiting',
            iteration: 2,
            purpose: 'work',
            item: { source: 'flow-next', id: 'fn-1.2', title: 'title fn-1.2' },
            attempt: null,
            agentPid: null,
            context: null,
            iterationCostUsd: 0,
            lastEnding: null,
          },
        ],
        cost: { runUsd: 0, byItem: [], byIteration: [] },
        warnings: [],
        source: '.flow',
        agent: 'claude',
        startedAt: null,
      },
    } as unknown as StoreSnapshot['runs'][number];
  }

  it("Answer Question… on a waiting item asks with the question's text, then answers its run and item (ralph.answer with the text)", async () => {
    const { tree, cmds, answered, ui, replies, store } = setup(plan());
    store.change({ ...store.current, version: 2, runs: [waitingRun(t.dir)] });
    const node = tree.node(`${t.dir}#flow-next/task/fn-1.2`)!;
    assert.match(String(tree.getTreeItem(node).contextValue), /\bwaiting\b/);
    replies.push('the staging key');
    assert.equal(await cmds.answer(node), 'q1');
    assert.deepEqual(answered, [{ folder: t.dir, runId: 'r1', itemId: 'fn-1.2', text: 'the staging key' }]);
    assert.deepEqual(ui, ['ask: Ralph: answer (fn-1.2) | which key?']);
    // Dismissed: nothing is answered.
    replies.push(undefined);
    assert.equal(await cmds.answer(node), undefined);
    assert.equal(answered.length, 1);
    // On the run's row: the run's question, no item named.
    replies.push('yes');
    assert.equal(await cmds.answer(tree.node(`${t.dir}#runs/r1`)!), 'q1');
    assert.deepEqual(answered[1], { folder: t.dir, runId: 'r1', text: 'yes' });
    // The question was answered meanwhile (the run goes on): the item is no longer waiting; the run's row says so, asks nothing.
    store.change({ ...store.current, version: 3, runs: [waitingRun(t.dir, [])] });
    assert.doesNotMatch(String(tree.getTreeItem(node).contextValue), /\bwaiting\b/);
    const asked = ui.length;
    assert.equal(await cmds.answer(tree.node(`${t.dir}#runs/r1`)!), undefined);
    assert.equal(ui.length, asked + 1);
    assert.equal(ui.at(-1), 'info: Ralph: run r1 waits on no question now.');
    assert.equal(answered.length, 2);
  });

  it("Open Task File opens a checklist box's file at its line, a task's JSON file at its start", async () => {
    const { tree, cmds } = setup(plan());
    const shown: { path: string; line: number | undefined; preview: boolean | undefined }[] = [];
    const real = vscode.window.showTextDocument;
    (vscode.window as { showTextDocument: unknown }).showTextDocument = async (
      uri: vscode.Uri,
      o?: { preview?: boolean; selection?: vscode.Range },
    ) => {
      shown.push({ path: uri.fsPath, line: o?.selection?.start.line, preview: o?.preview });
    };
    try {
      assert.equal(await cmds.openFile(tree.node(`${t.dir}#checklist/checkbox/RALPH_TASK.md:4`)!), true);
      assert.equal(await cmds.openFile(tree.node(`${t.dir}#flow-next/task/fn-1.3`)!), true);
      assert.equal(await cmds.openFile(tree.node(`${t.dir}#checklist/RALPH_TASK.md`)!), true);
      assert.equal(await cmds.openFile(undefined), false);
    } finally {
      (vscode.window as { showTextDocument: unknown }).showTextDocument = real;
    }
    assert.deepEqual(shown, [
      { path: path.join(t.dir, 'RALPH_TASK.md'), line: 3, preview: true },
      { path: path.join(t.dir, '.flow/tasks/fn-1.3.json'), line: 0, preview: true },
      { path: path.join(t.dir, 'RALPH_TASK.md'), line: 0, preview: true },
    ]);
  });

  it("Resume with Ralph runs `ralph run --source <brief>` in the sub's worktree after a confirm; Open Resume Brief finds it", async () => {
    const wt = makeTempFolder('ralph-tree-wt-');
    try {
      const brief = wt.write('.planning/1.5/resume-W1-B.md', '- [ ] write the test\n');
      const waves = structuredClone(WAVES);
      waves[0]!.subagents[1]!.worktree = wt.dir;
      const { tree, cmds, started, ui } = setup(undefined, waves);
      const node = tree.node(`${t.dir}#waves/W1/W1-B`)!;
      assert.equal(await cmds.openBrief(node), brief);
      assert.equal(await cmds.resume(node), 'run-1');
      assert.deepEqual(started, [{ folder: wt.dir, source: brief }]);
      assert.deepEqual(ui, [`confirm: Resume W1-B with Ralph? | Runs ralph run --source ${brief}\nin ${wt.dir}`]);
      // No brief yet: says how to get one, starts nothing.
      assert.equal(await cmds.resume(tree.node(`${t.dir}#waves/W1/W1-C`)!), undefined);
      assert.match(ui.at(-1)!, /^info: Ralph: no resume brief for W1-C yet .*`ralph waves check` writes it\.$/);
      assert.equal(started.length, 1);
    } finally {
      wt.dispose();
    }
  });

  it('Start Here starts a ready item, and offers the next ready one for a waiting item', async () => {
    const { tree, cmds, started, ui } = setup(plan({ 'US-2': 'todo' }));
    assert.equal(await cmds.startHere(tree.node(`${t.dir}#checklist/checkbox/RALPH_TASK.md:4`)!), 'run-1');
    assert.deepEqual(started[0], { folder: t.dir, item: 'RALPH_TASK.md:4', source: 'RALPH_TASK.md' });
    assert.equal(await cmds.startHere(tree.node(`${t.dir}#quantum/story/US-4`)!), 'run-1');
    assert.deepEqual(ui, [
      'offer: Ralph: cannot start with US-4: US-4 waits on US-2 (pending). The next ready item of its source is US-2. [Start with US-2]',
    ]);
    assert.deepEqual(started[1], { folder: t.dir, item: 'US-2', source: 'quantum' });
    // Nothing else ready: says why, offers nothing, starts nothing.
    assert.equal(await cmds.startHere(tree.node(`${t.dir}#flow-next/task/fn-1.4`)!), undefined);
    assert.equal(
      ui.at(-1),
      'offer: Ralph: cannot start with fn-1.4: fn-1.4 waits on fn-1.3 (blocked). No other item of its source is ready. [undefined]',
    );
    assert.equal(started.length, 2);
  });
});

describe("the tree's menus and view (package.json against the rows' contextValue tokens)", () => {
  beforeEach(() => resetFake());
  const manifest = JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as {
    contributes: {
      commands: { command: string; title: string }[];
      menus: Record<string, { command: string; when?: string; group?: string }[]>;
    };
  };
  const title = (c: string) => manifest.contributes.commands.find((x) => x.command === c)!.title;

  /** The titles of the right-click menu (not inline) a row's contextValue shows, evaluating `viewItem =~ /re/` as VS Code does. */
  function menuOf(contextValue: string): string[] {
    const out: string[] = [];
    for (const m of manifest.contributes.menus['view/item/context']!) {
      if (m.group === 'inline' || !m.when) continue;
      const parts = m.when.split('&&').map((x) => x.trim());
      if (!parts.includes('view == ralph.plan')) continue;
      const ok = parts
        .filter((x) => x.startsWith('viewItem'))
        .every((x) => new RegExp(/=~ \/(.*)\/$/.exec(x)![1]!).test(contextValue));
      if (ok && m.command.startsWith('ralph.tree.')) out.push(title(m.command));
    }
    return out.sort();
  }

  it('shows on each kind of row exactly the commands that apply to it', () => {
    const s = snap(plan());
    const run = {
      key: `${F}#r1`,
      folder: F,
      folderName: 'ws',
      runId: 'r1',
      kind: 'ralph',
      startedHere: false,
      seenAt: 0,
      facts: {
        active: true,
        state: 'waiting',
        paused: false,
        deferred: false,
        startedAt: null,
        questions: [{ id: 'q1', text: '?', itemId: 'US-4', answerFile: '/x' }],
      },
      view: {
        stateText: 'waiting',
        progress: null,
        iteration: 1,
        lanes: [],
        cost: { runUsd: 0, byItem: [], byIteration: [] },
        warnings: [],
        source: 'quantum',
        agent: 'claude',
        startedAt: null,
      },
    } as unknown as StoreSnapshot['runs'][number];
    const tree = new PlanTreeProvider(new Logger(), { ...fakeStore({ ...s, runs: [run] }), waves: () => WAVES });
    const cv = (id: string) => String(tree.getTreeItem(tree.node(`${F}#${id}`)!).contextValue);
    const cases: [string, string[]][] = [
      ['quantum/story/US-1', ['Open Task File', 'Reset Task', 'Reset Task and Dependents']],
      ['quantum/story/US-3', ['Open Task File', 'Reset Task', 'Reset Task and Dependents', 'Start Here']],
      ['quantum/story/US-4', ['Answer Question…', 'Open Task File', 'Start Here']],
      ['flow-next/task/fn-1.2', ['Open Task File', 'Start Here']],
      ['checklist/checkbox/RALPH_TASK.md:3', ['Open Task File']],
      ['checklist/checkbox/RALPH_TASK.md:4', ['Open Task File', 'Start Here']],
      ['flow-next/epic/fn-1', ['Open Task File']],
      ['quantum', ['Open Task File']],
      ['flow-next', []],
      ['waves/W1/W1-B', ['Open Resume Brief', 'Open Task File', 'Resume with Ralph']],
      ['waves/W1/W1-A', []],
      ['runs/r1', ['Answer Question…']],
    ];
    for (const [id, want] of cases) assert.deepEqual(menuOf(cv(id)), [...want].sort(), `${id} (${cv(id)})`);
  });

  it('hides every tree-only command from the Command Palette', () => {
    const tree = manifest.contributes.commands.filter((c) => c.command.startsWith('ralph.tree.')).map((c) => c.command);
    assert.equal(tree.length, 7);
    const palette = manifest.contributes.menus['commandPalette']!;
    for (const c of tree) assert.equal(palette.find((m) => m.command === c)?.when, 'false', c);
  });

  it('creates the view with Collapse All, and forgets collapsed rows so a redraw does not re-expand them', () => {
    const real = vscode.window.createTreeView;
    const options: unknown[] = [];
    (vscode.window as { createTreeView: unknown }).createTreeView = (id: string, o: unknown) => {
      options.push(o);
      return real(id, o as vscode.TreeViewOptions<unknown>);
    };
    const subscriptions: { dispose(): unknown }[] = [];
    try {
      activate({ subscriptions } as unknown as Parameters<typeof activate>[0]);
    } finally {
      (vscode.window as { createTreeView: unknown }).createTreeView = real;
      subscriptions.forEach((d) => d.dispose());
    }
    assert.equal((options[0] as { showCollapseAll?: boolean }).showCollapseAll, true);
    const store = fakeStore(snap(plan()));
    const tree = new PlanTreeProvider(new Logger(), store);
    const expand = new vscode.EventEmitter<{ element: PlanNode }>();
    const collapse = new vscode.EventEmitter<{ element: PlanNode }>();
    tree.track({
      onDidExpandElement: expand.event,
      onDidCollapseElement: collapse.event,
    } as unknown as vscode.TreeView<PlanNode>);
    const ids = [`${F}#flow-next`, `${F}#flow-next/epic/fn-1`];
    for (const id of ids) expand.fire({ element: tree.node(id)! });
    store.change(snap(plan({ 'fn-1.4': 'in_progress' }), 2));
    for (const id of ids) assert.equal(label(tree, id).collapsibleState, vscode.TreeItemCollapsibleState.Expanded, id);
    for (const id of ids) collapse.fire({ element: tree.node(id)! });
    store.change(snap(plan({ 'fn-1.4': 'done' }), 3));
    for (const id of ids) assert.equal(label(tree, id).collapsibleState, vscode.TreeItemCollapsibleState.Collapsed, id);
  });
});
