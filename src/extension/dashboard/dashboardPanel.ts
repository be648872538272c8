import { existsSync } from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { PageRequest } from '../../protocol/dashboard';
import { openActivityLog } from '../activityLog';
import { Disposable } from '../lifecycle';
import type { Logger } from '../logger';
import type { RunController } from '../runController';
import type { DashboardHub } from './dashboardHub';
import { dashboardHtml, makeNonce } from './dashboardHtml';
import { DashboardSession } from './dashboardSession';

/** The dashboard panel's view type (serializer and `onWebviewPanel:` activation event). */
export const DASHBOARD_VIEW_TYPE = 'ralph.dashboard';

/** What the panel needs from the rest of the extension. */
export interface DashboardDeps {
  extensionUri: vscode.Uri;
  hub: DashboardHub;
  runs: RunController;
  log: Logger;
}

/**
 * **Ralph: Open Dashboard**: one panel per window (`createOrShow` reveals it), restored after a reload by the
 * serializer (`revive`). The page talks to the host only through the protocol: the panel's session validates every
 * message before acting. Pattern: vscode-extension-samples `webview-sample` (panel life), with a crypto nonce and
 * typed, validated messages.
 */
export class DashboardPanel extends Disposable {
  private static current: DashboardPanel | undefined;
  private readonly session: DashboardSession;

  /** The open panel, if any (tests read it). */
  static get instance(): DashboardPanel | undefined {
    return DashboardPanel.current;
  }

  /** Opens the dashboard, or reveals it when it is open. */
  static createOrShow(deps: DashboardDeps): DashboardPanel {
    const column = vscode.window.activeTextEditor ? vscode.ViewColumn.Beside : vscode.ViewColumn.One;
    if (DashboardPanel.current) {
      DashboardPanel.current.panel.reveal(column);
      return DashboardPanel.current;
    }
    const panel = vscode.window.createWebviewPanel(
      DASHBOARD_VIEW_TYPE,
      'Ralph Dashboard',
      column,
      webviewOptions(deps.extensionUri),
    );
    DashboardPanel.current = new DashboardPanel(panel, deps);
    return DashboardPanel.current;
  }

  /** Restores a panel VS Code kept over a reload (the serializer's `deserializeWebviewPanel`). */
  static revive(panel: vscode.WebviewPanel, deps: DashboardDeps): DashboardPanel {
    DashboardPanel.current?.dispose();
    DashboardPanel.current = new DashboardPanel(panel, deps);
    return DashboardPanel.current;
  }

  private constructor(
    readonly panel: vscode.WebviewPanel,
    private readonly deps: DashboardDeps,
  ) {
    super();
    panel.webview.options = webviewOptions(deps.extensionUri);
    panel.iconPath = vscode.Uri.joinPath(deps.extensionUri, 'media', 'ralph.svg');
    this.session = new DashboardSession({
      post: (msg) => panel.webview.postMessage(msg),
      state: () => deps.hub.state(),
      actions: { handle: (r) => this.handle(r) },
      log: deps.log,
    });
    this._register({ dispose: () => this.session.dispose() });
    this._register(panel.onDidDispose(() => this.dispose()));
    this._register(panel.onDidChangeViewState(() => this.session.setVisible(panel.visible)));
    this._register(panel.webview.onDidReceiveMessage((m: unknown) => this.session.receive(m)));
    this._register(
      deps.hub.onChange((change) => (change === 'snapshot' ? this.session.resend() : this.session.push(change))),
    );
    panel.webview.html = this.html();
    void deps.hub.refresh().catch((err: Error) => deps.log.warn('dashboard', err.message));
  }

  /** Shows a run and/or a work item (Reveal in Dashboard). */
  async reveal(target: { runId: string | null; itemId: string | null }): Promise<void> {
    if (target.runId) await this.deps.hub.pick(target.runId);
    if (target.itemId) void this.panel.webview.postMessage({ type: 'reveal', itemId: target.itemId });
  }

  override dispose(): void {
    if (DashboardPanel.current === this) DashboardPanel.current = undefined;
    super.dispose();
    this.panel.dispose();
  }

  private html(): string {
    const w = this.panel.webview;
    const asset = (name: string) =>
      w.asWebviewUri(vscode.Uri.joinPath(this.deps.extensionUri, 'dist', 'webview', name)).toString();
    return dashboardHtml({
      cspSource: w.cspSource,
      nonce: makeNonce(),
      scriptUri: asset('main.js'),
      styleUri: asset('main.css'),
    });
  }

  /** A validated page request. Throws (→ an error reply) when it does not fit the shown run. */
  private async handle(r: PageRequest): Promise<void> {
    const { hub, runs, log } = this.deps;
    const shown = hub.shown?.run;
    switch (r.method) {
      case 'control': {
        if (r.action === 'start') {
          await vscode.commands.executeCommand('ralph.start', shown ? { folder: shown.folder } : undefined);
          return;
        }
        if (!shown || r.runId !== shown.runId)
          throw new Error(`refused ${r.action}: run ${r.runId ?? '(none)'} is not the run shown`);
        log.info('dashboard', `${r.action} ${shown.runId} from the dashboard`);
        if (r.action === 'cancel') {
          if (!shown.ownedByThisWindow)
            throw new Error('refused cancel: this window does not run that engine (use Stop)');
          runs.cancel(shown.folder);
          return;
        }
        await vscode.commands.executeCommand(`ralph.${r.action}`, shown.folder);
        return;
      }
      case 'answer':
        await hub.answer(r.runId, r.itemId, r.text);
        return;
      case 'openGateLog': {
        const file = hub.shown?.gateLogPath(r.gateId);
        if (!file) throw new Error(`no log for gate ${r.gateId}`);
        const abs = path.isAbsolute(file) ? file : path.join(shown?.folder ?? '', file);
        if (!existsSync(abs)) throw new Error(`the gate log ${abs} no longer exists`);
        await vscode.window.showTextDocument(vscode.Uri.file(abs), {
          preview: true,
          viewColumn: vscode.ViewColumn.Active,
        });
        return;
      }
      case 'openFullLog': {
        if (!shown) throw new Error('no run shown');
        // The activity log at its end (the latest run): the same helper as Ralph: Open Log.
        await openActivityLog(shown.folder);
        return;
      }
      case 'pickRun':
        await hub.pick(r.runId);
        return;
    }
  }
}

function webviewOptions(extensionUri: vscode.Uri): vscode.WebviewPanelOptions & vscode.WebviewOptions {
  // No retainContextWhenHidden: the page keeps its UI state with setState and gets a snapshot when shown again.
  return {
    enableScripts: true,
    localResourceRoots: [vscode.Uri.joinPath(extensionUri, 'dist', 'webview')],
    enableFindWidget: true,
  };
}

/** Registers the serializer that brings the panel back after a reload. */
export function registerDashboardSerializer(deps: DashboardDeps): vscode.Disposable {
  return vscode.window.registerWebviewPanelSerializer(DASHBOARD_VIEW_TYPE, {
    async deserializeWebviewPanel(panel: vscode.WebviewPanel) {
      DashboardPanel.revive(panel, deps);
    },
  });
}
