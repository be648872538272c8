import * as vscode from 'vscode';
import { CommandIds, type CommandId, type CommandTypes } from './commandIds';
import { DOCTOR_SCHEME, DoctorDocumentProvider } from './doctorDocument';
import { Logger } from './logger';
import { PlanTreeProvider } from './planTree';
import { WorkspaceWatchers } from './workspaceWatchers';

/** When this bundle started evaluating (before its dependencies), for the activation benchmark. */
const moduleStart = performance.now();

/** What `activate` returns: used by the integration tests and by other extensions. */
export interface RalphExtensionApi {
  plan: PlanTreeProvider;
  /** Milliseconds `activate` took (the activation benchmark reads it). */
  activationMs: number;
  /** Milliseconds from the start of this bundle's evaluation to the end of `activate`. */
  loadAndActivateMs: number;
}

function registerCommand<K extends CommandId>(id: K, fn: (...args: CommandTypes[K]['args']) => CommandTypes[K]['result'] | Promise<CommandTypes[K]['result']>): vscode.Disposable {
  return vscode.commands.registerCommand(id, fn as (...args: unknown[]) => unknown);
}

/** Activates Ralph Loop: the "Ralph" log, the plan tree and the commands. Cheap: no file is read until the tree is shown. */
export function activate(context: vscode.ExtensionContext): RalphExtensionApi {
  const started = performance.now();
  const log = new Logger();
  const plan = new PlanTreeProvider(log);
  const doctor = new DoctorDocumentProvider();
  context.subscriptions.push(
    log,
    plan,
    doctor,
    vscode.window.createTreeView('ralph.plan', { treeDataProvider: plan, showCollapseAll: true }),
    vscode.workspace.registerTextDocumentContentProvider(DOCTOR_SCHEME, doctor),
    registerCommand(CommandIds.doctor, async () => {
      log.info('doctor', `running (trusted: ${vscode.workspace.isTrusted})`);
      return doctor.show();
    }),
    registerCommand(CommandIds.refresh, () => plan.refresh()),
    new WorkspaceWatchers(log, () => plan.refresh()),
    vscode.workspace.onDidChangeWorkspaceFolders(() => plan.refresh()),
    vscode.workspace.onDidGrantWorkspaceTrust(() => plan.refresh()),
  );
  const activationMs = performance.now() - started;
  log.info('activate', `Ralph Loop activated in ${activationMs.toFixed(1)} ms (VS Code ${vscode.version}, trusted: ${vscode.workspace.isTrusted})`);
  return { plan, activationMs, loadAndActivateMs: performance.now() - moduleStart };
}

export function deactivate(): void {
  // Everything is in context.subscriptions.
}
