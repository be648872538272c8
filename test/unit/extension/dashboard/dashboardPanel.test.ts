import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import { activate } from '../../../../src/extension/extension';
import { DashboardPanel, DASHBOARD_VIEW_TYPE } from '../../../../src/extension/dashboard/dashboardPanel';
import { PROTOCOL_VERSION } from '../../../../src/protocol/dashboard';
import {
  fakeWebviewPanel,
  recorded,
  resetFake,
  webviewRecord,
  type FakeWebviewPanel,
} from '../../../support/fakeVscode';

describe('the dashboard panel (fake vscode)', () => {
  let subscriptions: { dispose(): unknown }[];
  beforeEach(() => {
    resetFake();
    webviewRecord.panels.length = 0;
    subscriptions = [];
    activate({ subscriptions, extensionUri: vscode.Uri.file('/ext') } as unknown as Parameters<typeof activate>[0]);
  });
  afterEach(() => subscriptions.forEach((d) => d.dispose()));

  const open = async (): Promise<FakeWebviewPanel> => {
    await vscode.commands.executeCommand('ralph.openDashboard');
    return webviewRecord.panels[webviewRecord.panels.length - 1]!;
  };

  it('opens one panel and reveals it on the second open', async () => {
    const a = await open();
    await vscode.commands.executeCommand('ralph.openDashboard');
    assert.equal(webviewRecord.panels.length, 1);
    assert.equal(a.viewType, DASHBOARD_VIEW_TYPE);
  });

  it('loads only dist/webview resources under a CSP with a fresh nonce each render', async () => {
    const p = await open();
    const opts = p.webview.options as {
      enableScripts: boolean;
      localResourceRoots: vscode.Uri[];
      retainContextWhenHidden?: boolean;
    };
    assert.equal(opts.enableScripts, true);
    assert.deepEqual(
      opts.localResourceRoots.map((u) => u.path),
      ['/ext/dist/webview'],
    );
    const nonce = /script-src 'nonce-([^']+)'/.exec(p.webview.html)?.[1];
    assert.ok(nonce);
    assert.match(
      p.webview.html,
      new RegExp(`<script nonce="${nonce.replace(/[+/=]/g, '\\$&')}" src="https://[^"]*/ext/dist/webview/main.js">`),
    );
    p.dispose();
    const q = await open();
    assert.notEqual(/script-src 'nonce-([^']+)'/.exec(q.webview.html)?.[1], nonce);
  });

  it("answers the page's ready with a snapshot and refuses a forged message", async () => {
    const p = await open();
    assert.equal(p.posted.length, 0, 'nothing before ready');
    await p.receive({ type: 'ready', v: PROTOCOL_VERSION });
    assert.equal((p.posted[0] as { type: string }).type, 'snapshot');
    await p.receive({ type: 'request', id: 4, request: { method: 'openGateLog', gateId: 'g1', path: '/etc/shadow' } });
    assert.deepEqual(p.posted[1], { type: 'reply', id: 4, ok: false, error: 'refused: malformed request' });
    assert.ok(
      recorded.logLines.some((l) => /warn \[dashboard\] refused request message/.test(l)),
      recorded.logLines.join('\n'),
    );
  });

  it('refuses a control for a run that is not shown', async () => {
    const p = await open();
    await p.receive({
      type: 'request',
      id: 5,
      request: { method: 'control', action: 'cancel', runId: 'someone-else' },
    });
    assert.deepEqual(p.posted[0], {
      type: 'reply',
      id: 5,
      ok: false,
      error: 'refused cancel: run someone-else is not the run shown',
    });
  });

  it('comes back after a reload through its serializer', async () => {
    const serializer = webviewRecord.serializers.get(DASHBOARD_VIEW_TYPE);
    assert.ok(serializer, 'a serializer is registered');
    const restored = fakeWebviewPanel(DASHBOARD_VIEW_TYPE);
    await serializer.deserializeWebviewPanel(restored, undefined);
    assert.match(restored.webview.html, /<ralph-dashboard>/);
    assert.equal(DashboardPanel.instance?.panel, restored as unknown as vscode.WebviewPanel);
    await restored.receive({ type: 'ready', v: PROTOCOL_VERSION });
    assert.equal((restored.posted[0] as { type: string }).type, 'snapshot');
  });

  it('sends nothing while hidden and a snapshot when shown again', async () => {
    const p = await open();
    await p.receive({ type: 'ready', v: PROTOCOL_VERSION });
    p.setVisible(false);
    p.setVisible(true);
    assert.equal(p.posted.length, 1, 'nothing changed while hidden, so no new snapshot');
  });
});
