import * as vscode from 'vscode';
import { CommandIds, type CommandId, type CommandTypes, type ResetArgs } from './commandIds';
import { listRuns } from '../core/control/runs';
import { DashboardHub } from './dashboard/dashboardHub';
import { DashboardPanel, registerDashboardSerializer, type DashboardDeps } from './dashboard/dashboardPanel';
import { revealTarget } from './dashboard/revealTarget';
import { Logger } from './logger';
import { PlanTreeProvider } from './planTree';
import { REPORT_SCHEME, ReportDocuments } from './reportDocuments';
import { RunController } from './runController';
import { WorkspaceWatchers } from './workspaceWatchers';

/** Set by the bundle's first line (esbuild banner): when it started evaluating, before any dependency. */
declare const __ralphBundleStart: number | undefined;
const moduleStart = typeof __ralphBundleStart === 'number' ? __ralphBundleStart : performance.now();
/** Time spent evaluating the bundle (every dependency's top-level code), ms. */
const bundleEvalMs = performance.now() - moduleStart;

/** What `activate` returns: used by the integration tests and by other extensions. */
export interface RalphExtensionApi {
  plan: PlanTreeProvider;
  runs: RunController;
  /** What the dashboard shows (tests read it). */
  dashboard: DashboardHub;
  /** Milliseconds `activate` took (the activation benchmark reads it). */
  activationMs: number;
  /** Milliseconds spent evaluating the bundle before `activate` was called (VS Code's "code loading"). */
  bundleEvalMs: number;
}

function registerCommand<K extends CommandId>(id: K, fn: (...args: CommandTypes[K]['args']) => CommandTypes[K]['result'] | Promise<CommandTypes[K]['result']>): vscode.Disposable {
  return vscode.commands.registerCommand(id, fn as (...args: unknown[]) => unknown);
}

function fileFolders(): string[] {
  return (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file').map((f) => f.uri.fsPath);
}

/** Activates Ralph Loop: the "Ralph" log, the plan tree, the watchers and the commands. No file is read until needed. */
export function activate(context: vscode.ExtensionContext): RalphExtensionApi {
  const started = performance.now();
  const log = new Logger();
  const plan = new PlanTreeProvider(log);
  const reports = new ReportDocuments();
  const runs = new RunController(log);
  const dashboard = new DashboardHub(fileFolders, (f) => listRuns(f).runs, log);
  const dashboardDeps: DashboardDeps = { extensionUri: context.extensionUri, hub: dashboard, runs, log };
  context.subscriptions.push(
    log,
    plan,
    reports,
    runs,
    vscode.window.createTreeView('ralph.plan', { treeDataProvider: plan, showCollapseAll: true }),
    vscode.workspace.registerTextDocumentContentProvider(REPORT_SCHEME, reports),
    registerCommand(CommandIds.start, (args) => runs.start(args)),
    registerCommand(CommandIds.pause, (folder) => runs.control('pause', folder)),
    registerCommand(CommandIds.resume, (folder) => runs.control('resume', folder)),
    registerCommand(CommandIds.stop, (folder) => runs.control('stop', folder)),
    registerCommand(CommandIds.cancel, (folder) => runs.cancel(folder)),
    registerCommand(CommandIds.status, async () => {
      // Core modules that commands need are loaded on first use: activation stays cheap (bench: extension.activation).
      const { buildStatus, formatStatusText } = await import('../core/control/status');
      const text = fileFolders().map((f) => `${f}\n${formatStatusText(buildStatus(f))}`).join('\n') || 'Ralph status: open a folder.\n';
      return reports.show('Ralph Status.txt', text);
    }),
    registerCommand(CommandIds.reset, (args) => resetCommand(args, log)),
    registerCommand(CommandIds.doctor, async () => {
      log.info('doctor', `running (trusted: ${vscode.workspace.isTrusted})`);
      const { buildDoctorReport, formatDoctorReport } = await import('../core/doctor/report');
      const texts = await Promise.all(fileFolders().map(async (f) => formatDoctorReport(await buildDoctorReport(f, { trusted: vscode.workspace.isTrusted }))));
      return reports.show('Ralph Doctor.txt', texts.join('\n') || 'Ralph doctor: open a folder to check it.\n');
    }),
    registerCommand(CommandIds.refresh, () => plan.refresh()),
    registerCommand(CommandIds.openDashboard, () => { DashboardPanel.createOrShow(dashboardDeps); }),
    registerCommand(CommandIds.revealInDashboard, (arg) => DashboardPanel.createOrShow(dashboardDeps).reveal(revealTarget(arg))),
    registerDashboardSerializer(dashboardDeps),
    { dispose: () => DashboardPanel.instance?.dispose() },
    runs.onEvent(({ folder, event }) => dashboard.engineEvent(folder, event)),
    new WorkspaceWatchers(log, () => plan.refresh()),
    runs.onEvent(({ event }) => {
      if (event.type === 'progress' || event.type === 'runEnded' || event.type === 'itemBlocked') plan.refresh();
    }),
    vscode.workspace.onDidChangeWorkspaceFolders(() => plan.refresh()),
    vscode.workspace.onDidGrantWorkspaceTrust(() => plan.refresh()),
  );
  const activationMs = performance.now() - started;
  log.info('activate', `Ralph Loop activated in ${activationMs.toFixed(1)} ms (VS Code ${vscode.version}, trusted: ${vscode.workspace.isTrusted})`);
  return { plan, runs, dashboard, activationMs, bundleEvalMs };
}

/**
 * **Ralph: Reset**: a done, blocked or failed flow-next task or quantum story back to todo / pending, optionally with
 * its dependents (cascade), through the same operation as `ralph task reset`.
 */
async function resetCommand(args: ResetArgs = {}, log: Logger): Promise<string[] | undefined> {
  const folder = args.folder ?? fileFolders()[0];
  if (!folder) return undefined;
  const [{ loadPlan }, { resetItem }] = await Promise.all([import('../core/sources/plan'), import('../core/sources/operations')]);
  let id = args.id;
  if (!id) {
    const planSnap = await loadPlan(folder);
    const candidates = planSnap.items.filter((i) => i.source !== 'checklist' && ['done', 'blocked', 'failed'].includes(i.status));
    if (!candidates.length) {
      void vscode.window.showInformationMessage('Ralph: nothing to reset (no done, blocked or failed task or story).');
      return undefined;
    }
    const pick = await vscode.window.showQuickPick(candidates.map((i) => ({ label: i.id, description: `${i.status} · ${i.title}`, detail: i.reason })), { title: 'Ralph: Reset — which task or story?' });
    if (!pick) return undefined;
    id = pick.label;
  }
  let cascade = args.cascade;
  if (cascade === undefined) {
    const pick = await vscode.window.showQuickPick([{ label: 'Reset', cascade: false }, { label: 'Reset with cascade', description: 'and every task that depends on it', cascade: true }], { title: `Ralph: Reset ${id}` });
    if (!pick) return undefined;
    cascade = pick.cascade;
  }
  try {
    const r = await resetItem(id, { folder, cascade });
    log.info('reset', `${id}${cascade ? ' (cascade)' : ''}: ${r.reset.join(', ') || r.message || 'nothing to do'}`);
    void vscode.window.showInformationMessage(r.reset.length ? `Ralph: reset ${r.reset.join(', ')}` : `Ralph: ${r.message ?? `${id} needed no reset`}`);
    return r.reset;
  } catch (err) {
    void vscode.window.showErrorMessage(`Ralph: ${(err as Error).message}`);
    return undefined;
  }
}

export function deactivate(): void {
  // Everything is in context.subscriptions; a running engine is cancelled by RunController.dispose.
}
