import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { activate } from '../../../../src/extension/extension';
import type { DashboardHub } from '../../../../src/extension/dashboard/dashboardHub';
import { DashboardPanel, type DashboardDeps } from '../../../../src/extension/dashboard/dashboardPanel';
import { revealTarget } from '../../../../src/extension/dashboard/revealTarget';
import type { RunController } from '../../../../src/extension/runController';
import { PROTOCOL_VERSION, type PageRequest } from '../../../../src/protocol/dashboard';
import { recorded, resetFake, webviewRecord, type FakeWebviewPanel } from '../../../support/fakeVscode';

describe('Reveal in Dashboard: what a tree node or argument reveals', () => {
  const table: [string, unknown, { runId: string | null; itemId: string | null }][] = [
    ['nothing', undefined, { runId: null, itemId: null }],
    ['a string', 'T1', { runId: null, itemId: null }],
    ['{runId, itemId}', { runId: 'r1', itemId: 'T1' }, { runId: 'r1', itemId: 'T1' }],
    ['an item row (type item, id)', { type: 'item', id: 'T2' }, { runId: null, itemId: 'T2' }],
    ['a row that is not an item, by its id', { type: 'source', id: '/w#RALPH_TASK.md' }, { runId: null, itemId: null }],
    ['a run row', { runId: 'r7', contextValue: 'run' }, { runId: 'r7', itemId: null }],
    ['a lane row (run and item)', { runId: 'r7', itemId: 'US-1' }, { runId: 'r7', itemId: 'US-1' }],
    ['a node with item {id}', { item: { id: 'fn-1.2' } }, { runId: null, itemId: 'fn-1.2' }],
    ['empty and over-long strings', { runId: '', itemId: 'x'.repeat(501) }, { runId: null, itemId: null }],
  ];
  for (const [what, arg, want] of table)
    it(`reveals ${JSON.stringify(want)} for ${what}`, () => assert.deepEqual(revealTarget(arg), want));
});

describe('the dashboard panel acting on page requests (fake vscode, fake hub)', () => {
  let tmp: string;
  let panel: FakeWebviewPanel;
  let picks: (string | null)[];
  let executed: { id: string; args: unknown[] }[];
  let opened: string[];
  let cancelled: string[];
  let saved: { showTextDocument: unknown; openTextDocument: unknown; executeCommand: unknown };
  let shown: { runId: string; folder: string; ownedByThisWindow: boolean } | undefined;
  let gateLogs: Map<string, string>;

  beforeEach(() => {
    resetFake();
    webviewRecord.panels.length = 0;
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ralph-dash-req-'));
    picks = [];
    executed = [];
    opened = [];
    cancelled = [];
    gateLogs = new Map();
    shown = { runId: 'r1', folder: tmp, ownedByThisWindow: false };
    saved = {
      showTextDocument: vscode.window.showTextDocument,
      openTextDocument: vscode.workspace.openTextDocument,
      executeCommand: vscode.commands.executeCommand,
    };
    const w = vscode.window as unknown as Record<string, unknown>;
    w.showTextDocument = async (doc: { uri?: vscode.Uri; path?: string }) => {
      opened.push((doc.uri ?? doc).path!);
      return { revealRange() {} };
    };
    (vscode.workspace as unknown as Record<string, unknown>).openTextDocument = async (uri: vscode.Uri) => {
      if (!fs.existsSync(uri.path)) throw new Error(`no file ${uri.path}`);
      return { uri, lineCount: fs.readFileSync(uri.path, 'utf8').split('\n').length };
    };
    (vscode.commands as unknown as Record<string, unknown>).executeCommand = async (id: string, ...args: unknown[]) => {
      executed.push({ id, args });
    };
    const hub = {
      get shown() {
        return shown ? { run: shown, gateLogPath: (id: string) => gateLogs.get(id) } : undefined;
      },
      state: () => ({
        run: null,
        lanes: [],
        tokens: [],
        tasks: [],
        gates: [],
        log: [],
        logTotal: 0,
        runs: [],
        pinnedRunId: null,
      }),
      onChange: () => ({ dispose() {} }),
      refresh: async () => undefined,
      pick: async (runId: string | null) => {
        picks.push(runId);
      },
      answer: async () => undefined,
    } as unknown as DashboardHub;
    const runs = {
      cancel: (folder: string) => {
        cancelled.push(folder);
        return true;
      },
    } as unknown as RunController;
    const log = {
      info() {},
      warn(c: string, m: string) {
        recorded.logLines.push(`warn [${c}] ${m}`);
      },
    } as unknown as DashboardDeps['log'];
    DashboardPanel.createOrShow({ extensionUri: vscode.Uri.file('/ext'), hub, runs, log });
    panel = webviewRecord.panels.at(-1)!;
  });

  afterEach(() => {
    DashboardPanel.instance?.dispose();
    Object.assign(vscode.window, { showTextDocument: saved.showTextDocument });
    Object.assign(vscode.workspace, { openTextDocument: saved.openTextDocument });
    Object.assign(vscode.commands, { executeCommand: saved.executeCommand });
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  const ask = async (id: number, request: PageRequest) => {
    await panel.receive({ type: 'ready', v: PROTOCOL_VERSION });
    panel.posted.length = 0;
    await panel.receive({ type: 'request', id, request });
    return panel.posted.find((m) => (m as { type: string }).type === 'reply');
  };

  it("opens a gate's log in an editor by its row id (the path is the host's, relative to the run's folder)", async () => {
    fs.mkdirSync(path.join(tmp, '.ralph', 'gates'), { recursive: true });
    fs.writeFileSync(path.join(tmp, '.ralph', 'gates', 'basic-1.log'), 'FAIL x\n');
    gateLogs.set('g1', '.ralph/gates/basic-1.log');
    assert.deepEqual(await ask(1, { method: 'openGateLog', gateId: 'g1' }), { type: 'reply', id: 1, ok: true });
    assert.deepEqual(opened, [path.join(tmp, '.ralph', 'gates', 'basic-1.log')]);
  });

  it('says so when a gate has no log, or its log is gone', async () => {
    assert.deepEqual(await ask(2, { method: 'openGateLog', gateId: 'g9' }), {
      type: 'reply',
      id: 2,
      ok: false,
      error: 'no log for gate g9',
    });
    gateLogs.set('g2', path.join(tmp, 'gone.log'));
    assert.deepEqual(await ask(3, { method: 'openGateLog', gateId: 'g2' }), {
      type: 'reply',
      id: 3,
      ok: false,
      error: `the gate log ${path.join(tmp, 'gone.log')} no longer exists`,
    });
    assert.deepEqual(opened, []);
  });

  it("opens the full log (the folder's activity log) in an editor", async () => {
    fs.mkdirSync(path.join(tmp, '.ralph'), { recursive: true });
    fs.writeFileSync(path.join(tmp, '.ralph', 'activity.log'), 'RALPH START\nITERATION 1\n');
    assert.deepEqual(await ask(4, { method: 'openFullLog' }), { type: 'reply', id: 4, ok: true });
    assert.deepEqual(opened, [path.join(tmp, '.ralph', 'activity.log')]);
    shown = undefined;
    assert.deepEqual(await ask(5, { method: 'openFullLog' }), {
      type: 'reply',
      id: 5,
      ok: false,
      error: 'no run shown',
    });
  });

  it('picks a past run, or goes back to following the live run', async () => {
    await ask(6, { method: 'pickRun', runId: 'r0' });
    await ask(7, { method: 'pickRun', runId: null });
    assert.deepEqual(picks, ['r0', null]);
  });

  it("runs Pause, Resume and Stop on the shown run's folder; Cancel only when this window owns the run", async () => {
    for (const [i, action] of (['pause', 'resume', 'stop'] as const).entries()) {
      assert.deepEqual(await ask(10 + i, { method: 'control', action, runId: 'r1' }), {
        type: 'reply',
        id: 10 + i,
        ok: true,
      });
    }
    assert.deepEqual(
      executed.map((e) => [e.id, e.args[0]]),
      [
        ['ralph.pause', tmp],
        ['ralph.resume', tmp],
        ['ralph.stop', tmp],
      ],
    );
    assert.deepEqual(await ask(13, { method: 'control', action: 'cancel', runId: 'r1' }), {
      type: 'reply',
      id: 13,
      ok: false,
      error: 'refused cancel: this window does not run that engine (use Stop)',
    });
    assert.deepEqual(cancelled, []);
    shown = { runId: 'r1', folder: tmp, ownedByThisWindow: true };
    assert.deepEqual(await ask(14, { method: 'control', action: 'cancel', runId: 'r1' }), {
      type: 'reply',
      id: 14,
      ok: true,
    });
    assert.deepEqual(cancelled, [tmp]);
    assert.deepEqual(await ask(15, { method: 'control', action: 'start', runId: null }), {
      type: 'reply',
      id: 15,
      ok: true,
    });
    assert.deepEqual(executed.at(-1), { id: 'ralph.start', args: [{ folder: tmp }] });
  });

  it('shows a run and an item when revealed', async () => {
    await panel.receive({ type: 'ready', v: PROTOCOL_VERSION });
    await DashboardPanel.instance!.reveal({ runId: 'r7', itemId: 'US-1' });
    assert.deepEqual(picks, ['r7']);
    assert.deepEqual(panel.posted.at(-1), { type: 'reveal', itemId: 'US-1' });
  });
});

describe('the Reveal in Dashboard command (fake vscode)', () => {
  let subscriptions: { dispose(): unknown }[];
  beforeEach(() => {
    resetFake();
    webviewRecord.panels.length = 0;
    subscriptions = [];
    activate({ subscriptions, extensionUri: vscode.Uri.file('/ext') } as unknown as Parameters<typeof activate>[0]);
  });
  afterEach(() => subscriptions.forEach((d) => d.dispose()));

  it('opens the dashboard and posts the item to reveal', async () => {
    await vscode.commands.executeCommand('ralph.revealInDashboard', { itemId: 'T1' });
    assert.equal(webviewRecord.panels.length, 1);
    const p = webviewRecord.panels[0]!;
    assert.deepEqual(
      p.posted.filter((m) => (m as { type: string }).type === 'reveal'),
      [{ type: 'reveal', itemId: 'T1' }],
    );
  });
});
