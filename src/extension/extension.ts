import * as vscode from 'vscode';
import { openActivityLog } from './activityLog';
import { CommandIds, type AnswerArgs, type CommandId, type CommandTypes, type ResetArgs } from './commandIds';
import { listRuns } from '../core/control/runs';
import { DashboardHub } from './dashboard/dashboardHub';
import { DashboardPanel, registerDashboardSerializer, type DashboardDeps } from './dashboard/dashboardPanel';
import { revealTarget } from './dashboard/revealTarget';
import { StatusBarGauge } from './gauge/statusBarGauge';
import { Logger } from './logger';
import { newPlanCommand } from './newPlan';
import { createLmTools, registerLmTools, type RalphLmTools } from './lmTools';
import { PlanLoader, planWorkerFile } from './planLoader';
import { PlanTreeProvider } from './planTree';
import { PlanTreeCommands } from './planTreeCommands';
import { REPORT_SCHEME, ReportDocuments } from './reportDocuments';
import { RunController } from './runController';
import { AgentChooser } from './startAgent';
import { WaveMonitors } from './waveMonitors';
import { followRun, listedRunUpdate } from './runFollowing';
import { RunNotifications } from './runNotifications';
import { RunStore } from './runStore';
import { Throttle } from './throttle';
import { WorkspaceWatchers } from './workspaceWatchers';
import * as notify from './notify';

/** Set by the bundle's first line (esbuild banner): when it started evaluating, before any dependency. */
declare const __ralphBundleStart: number | undefined;
const moduleStart = typeof __ralphBundleStart === 'number' ? __ralphBundleStart : performance.now();
/** Time spent evaluating the bundle (every dependency's top-level code), ms. */
const bundleEvalMs = performance.now() - moduleStart;

/** What `activate` returns: used by the integration tests and by other extensions. */
export interface RalphExtensionApi {
  plan: PlanTreeProvider;
  /** The tree's right-click commands (integration tests swap their dialogs, `ui`). */
  tree: PlanTreeCommands;
  /** Live wave monitors: orphan summaries per folder; `onDidChange` when a disposition changes. */
  waves: WaveMonitors;
  runs: RunController;
  /** What the dashboard shows (tests read it). */
  dashboard: DashboardHub;
  /** The one store every view reads (runs of the workspace, whoever started them, and plan snapshots). */
  store: RunStore;
  /** The status bar token gauge (tests read its item). */
  gauge: StatusBarGauge;
  /** The Language Model Tools as registered (tests read their confirmations: VS Code skips dialogs under test). */
  lmTools: RalphLmTools;
  /** Milliseconds `activate` took (the activation benchmark reads it). */
  activationMs: number;
  /** Milliseconds spent evaluating the bundle before `activate` was called (VS Code's "code loading"). */
  bundleEvalMs: number;
}

function registerCommand<K extends CommandId>(
  id: K,
  fn: (...args: CommandTypes[K]['args']) => CommandTypes[K]['result'] | Promise<CommandTypes[K]['result']>,
): vscode.Disposable {
  return vscode.commands.registerCommand(id, fn as (...args: unknown[]) => unknown);
}

function fileFolders(): string[] {
  return (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file').map((f) => f.uri.fsPath);
}

/** Core modules the store needs, loaded after activation (activation stays cheap: bench extension.activation). */
async function loadStoreCore() {
  const [runs, follower, view, tokens, plan] = await Promise.all([
    import('../core/control/runs'),
    import('../core/control/runFollower'),
    import('../core/control/runView'),
    import('../core/control/runTokens'),
    import('../core/sources/plan'),
  ]);
  return {
    listRuns: runs.listRuns,
    RunFollower: follower.RunFollower,
    emptyRunView: view.emptyRunView,
    reduceRunView: view.reduceRunView,
    withFollowEnd: view.withFollowEnd,
    emptyRunTokens: tokens.emptyRunTokens,
    reduceRunTokens: tokens.reduceRunTokens,
    loadPlan: plan.loadPlan,
  };
}
type StoreCore = Awaited<ReturnType<typeof loadStoreCore>>;

/** The run store wired to the core (run follower, plan worker) and VS Code (workspace folders, context keys, log). */
function createStore(log: Logger): { store: RunStore; planLoader: PlanLoader } {
  let core: StoreCore | undefined;
  const need = (): StoreCore => {
    if (!core) throw new Error("the store's core modules are not loaded yet");
    return core;
  };
  const planLoader = new PlanLoader(planWorkerFile(__dirname), (folder) => need().loadPlan(folder));
  const store = new RunStore({
    folders: () =>
      (vscode.workspace.workspaceFolders ?? [])
        .filter((f) => f.uri.scheme === 'file')
        .map((f) => ({ folder: f.uri.fsPath, name: f.name })),
    listRuns: (folder) => {
      const r = need().listRuns(folder);
      for (const p of r.problems) log.warn('runs', `${p.file}:${p.line}:${p.column}: ${p.message}`);
      return r.runs;
    },
    initial: (_folder, info) => listedRunUpdate(info, need().emptyRunView(info.id, info.kind), need().emptyRunTokens()),
    follow: (folder, info, onUpdate) => followRun(need(), folder, info, onUpdate, (m) => log.warn('runs', m)),
    loadPlan: (folder) => planLoader.load(folder),
    setContext: (key, value) => vscode.commands.executeCommand('setContext', key, value),
    log,
  });
  void loadStoreCore().then(
    (c) => {
      core = c;
      store.start();
    },
    (err: Error) => log.error('store', err),
  );
  return { store, planLoader };
}

/** Activates Ralph Loop: the "Ralph" log, the plan tree, the watchers and the commands. No file is read until needed. */
export function activate(context: vscode.ExtensionContext): RalphExtensionApi {
  const started = performance.now();
  const log = new Logger();
  const waves = new WaveMonitors(log);
  const reports = new ReportDocuments();
  const { store, planLoader } = createStore(log);
  const plan = new PlanTreeProvider(log, {
    snapshot: () => store.snapshot(),
    onDidChange: (l) => store.onDidChange(l),
    waves: (f) => waves.waves(f),
    onWavesChange: (l) => waves.onDidChange(l),
  });
  const treeView = vscode.window.createTreeView('ralph.plan', { treeDataProvider: plan, showCollapseAll: true });
  plan.track(treeView);
  const tree = new PlanTreeCommands(plan, store, log);
  const runs = new RunController(log, {
    starting: (folder) => store.markStarting(folder),
    started: (folder, runId) => store.noteStartedHere(folder, runId),
    failed: (folder) => store.startFailed(folder),
  });
  // Start's agent choice is remembered per workspace (startAgent.ts).
  runs.agents = new AgentChooser({ memory: context.workspaceState });
  const gauge = new StatusBarGauge(store);
  // Ralph: Status follows the store while it is open (at most every 2 s: it reads every task file).
  const statusRefresh = new Throttle(() => void reports.refresh(STATUS_DOC), 2000);
  const dashboard = new DashboardHub({
    store,
    folders: fileFolders,
    listRuns: (f) => listRuns(f).runs,
    log,
    readView: async (folder, runId, kind, onView) =>
      (await import('../core/control/runFollower')).readRunViewNow(folder, runId, {
        kind,
        ...(onView ? { onView } : {}),
      }),
    answer: async (folder, text, opts) =>
      (await import('../core/control/runControl')).answerQuestion(folder, text, opts),
  });
  // Language Model Tools: VS Code's own agents read the plan and start and steer verified loops.
  const lmTools = createLmTools({
    runs,
    log,
    folders: () =>
      (vscode.workspace.workspaceFolders ?? [])
        .filter((f) => f.uri.scheme === 'file')
        .map((f) => ({ path: f.uri.fsPath, name: f.name })),
  });
  const dashboardDeps: DashboardDeps = { extensionUri: context.extensionUri, hub: dashboard, runs, log };
  context.subscriptions.push(
    log,
    plan,
    reports,
    runs,
    store,
    planLoader,
    gauge,
    statusRefresh,
    new RunNotifications(store),
    store.onDidChange((c) => {
      if (c.kind !== 'run') statusRefresh.request();
    }),
    treeView,
    vscode.workspace.registerTextDocumentContentProvider(REPORT_SCHEME, reports),
    registerCommand(CommandIds.start, (args) => runs.start(args)),
    registerCommand(CommandIds.chooseAgent, (folder) => runs.chooseAgent(folder)),
    registerCommand(CommandIds.pause, (folder) => runs.control('pause', folder)),
    registerCommand(CommandIds.resume, (folder) => runs.control('resume', folder)),
    registerCommand(CommandIds.stop, (folder) => runs.control('stop', folder)),
    registerCommand(CommandIds.cancel, (folder) => runs.cancel(folder)),
    registerCommand(CommandIds.status, () => reports.showLive(STATUS_DOC, statusText)),
    registerCommand(CommandIds.reset, (args) => resetCommand(args, log)),
    registerCommand(CommandIds.doctor, async () => {
      log.info('doctor', `running (trusted: ${vscode.workspace.isTrusted})`);
      const [{ buildDoctorReport, formatDoctorReport }, { configKeys }, { readSettingsLayer }] = await Promise.all([
        import('../core/doctor/report'),
        import('../core/model/config'),
        import('./settings'),
      ]);
      const texts = await Promise.all(
        fileFolders().map(async (f) =>
          formatDoctorReport(
            await buildDoctorReport(f, {
              trusted: vscode.workspace.isTrusted,
              settings: readSettingsLayer(configKeys, vscode.Uri.file(f)),
            }),
          ),
        ),
      );
      return reports.show('Ralph Doctor.txt', texts.join('\n') || 'Ralph doctor: open a folder to check it.\n');
    }),
    registerCommand(CommandIds.refresh, () => plan.refresh()),
    waves,
    registerCommand(CommandIds.treeResetTask, (node) => tree.reset(node, false)),
    registerCommand(CommandIds.treeResetCascade, (node) => tree.reset(node, true)),
    registerCommand(CommandIds.treeOpenFile, (node) => tree.openFile(node)),
    registerCommand(CommandIds.treeAnswer, (node) => tree.answer(node)),
    registerCommand(CommandIds.treeStartHere, (node) => tree.startHere(node)),
    registerCommand(CommandIds.treeOpenBrief, (node) => tree.openBrief(node)),
    registerCommand(CommandIds.treeResume, (node) => tree.resume(node)),
    registerCommand(CommandIds.answer, (args) => answerCommand(args, store, log)),
    registerCommand(CommandIds.newPlan, (args) => newPlanCommand(args, log)),
    registerCommand(CommandIds.openDashboard, () => {
      DashboardPanel.createOrShow(dashboardDeps);
    }),
    // From the tree the argument is a node ({ id }): its row carries the run and item ids.
    registerCommand(CommandIds.revealInDashboard, (arg) =>
      DashboardPanel.createOrShow(dashboardDeps).reveal(
        revealTarget(
          (arg && typeof arg === 'object' && 'id' in arg ? plan.row(arg as { id: string }) : undefined) ?? arg,
        ),
      ),
    ),
    registerDashboardSerializer(dashboardDeps),
    { dispose: () => DashboardPanel.instance?.dispose() },
    { dispose: () => dashboard.dispose() },
    registerCommand(
      CommandIds.openLog,
      async (folder) => (await openActivityLog(folder ?? store.gaugeRun()?.folder ?? fileFolders()[0])) !== undefined,
    ),
    new WorkspaceWatchers(log, (c) => {
      waves.onWorkspaceChange(c);
      store.noteChange(c);
    }),
    vscode.workspace.onDidChangeWorkspaceFolders(() => store.syncFolders()),
    registerLmTools(lmTools),
  );
  const activationMs = performance.now() - started;
  log.info(
    'activate',
    `Ralph Loop activated in ${activationMs.toFixed(1)} ms (VS Code ${vscode.version}, trusted: ${vscode.workspace.isTrusted})`,
  );
  return { plan, tree, waves, runs, store, gauge, dashboard, lmTools, activationMs, bundleEvalMs };
}

/** Name of the Ralph: Status document (`ralph:/Ralph Status.txt`). */
const STATUS_DOC = 'Ralph Status.txt';

/** The Ralph: Status text of every folder, headed by the time it was built (it refreshes while open). */
async function statusText(): Promise<string> {
  // Core modules that commands need are loaded on first use: activation stays cheap (bench: extension.activation).
  const { buildStatus, formatStatusText } = await import('../core/control/status');
  const at = new Date().toLocaleTimeString();
  const body =
    fileFolders()
      .map((f) => `${f}\n${formatStatusText(buildStatus(f))}`)
      .join('\n') || 'Ralph status: open a folder.\n';
  return `Ralph status at ${at} (refreshes while this document is open)\n\n${body}`;
}

/**
 * **Ralph: Answer Question…**: answers a question a run waits on, whoever started the run, through core
 * `answerQuestion` (the path of `ralph answer`: the question's answer file, which the engine reads before its next
 * decision). Without a run, a quick pick offers the questions the store knows; without `text`, an input box asks.
 * Resolves with the id of the question answered.
 */
async function answerCommand(args: AnswerArgs = {}, store: RunStore, log: Logger): Promise<string | undefined> {
  let { folder, runId, itemId } = args;
  let prompt: string | undefined;
  if (!folder || !runId) {
    const open = store
      .snapshot()
      .runs.filter((r) => r.facts.active && (!folder || r.folder === folder))
      .flatMap((r) => r.facts.questions.map((q) => ({ r, q })));
    if (!open.length) {
      void notify.showInformationMessage('Ralph: no run waits for an answer.');
      return undefined;
    }
    const pick =
      open.length === 1
        ? open[0]
        : (
            await vscode.window.showQuickPick(
              open.map((o) => ({ label: o.q.itemId ?? o.q.id, description: o.r.runId, detail: o.q.text, o })),
              { title: 'Ralph: which question?' },
            )
          )?.o;
    if (!pick) return undefined;
    ({ folder, runId } = pick.r);
    itemId = pick.q.itemId ?? undefined;
    prompt = pick.q.text;
  }
  prompt ??= store
    .snapshot()
    .runs.find((r) => r.folder === folder && r.runId === runId)
    ?.facts.questions.find((q) => !itemId || q.itemId === itemId)?.text;
  const text =
    args.text ??
    (await vscode.window.showInputBox({
      title: `Ralph: answer${itemId ? ` (${itemId})` : ''}`,
      prompt,
      ignoreFocusOut: true,
      placeHolder: 'Your answer (the agent reads it verbatim)',
    }));
  if (!text) return undefined;
  try {
    const { answerQuestion } = await import('../core/control/runControl');
    const r = await answerQuestion(folder, text, { runId, ...(itemId ? { itemId } : {}) });
    log.info('answer', `run ${r.run}, question ${r.question}${r.item ? ` (${r.item})` : ''}: ${r.file}`);
    void notify.showInformationMessage(`Ralph: answered${r.item ? ` (${r.item})` : ''}; the run goes on.`);
    return r.question;
  } catch (err) {
    void notify.showErrorMessage(`Ralph: ${(err as Error).message}`);
    return undefined;
  }
}

/**
 * **Ralph: Reset**: a done, blocked or failed flow-next task or quantum story back to todo / pending, optionally with
 * its dependents (cascade), through the same operation as `ralph task reset`. Which items can be reset, and what the
 * cascade takes, come from core (`core/sources/resetPolicy.ts`).
 */
async function resetCommand(args: ResetArgs = {}, log: Logger): Promise<string[] | undefined> {
  const folder = args.folder ?? fileFolders()[0];
  if (!folder) return undefined;
  const [{ loadPlan }, { resetItem }, { resetOfferOf, resettableItems }] = await Promise.all([
    import('../core/sources/plan'),
    import('../core/sources/operations'),
    import('../core/sources/resetPolicy'),
  ]);
  const planSnap = await loadPlan(folder);
  let id = args.id;
  if (!id) {
    const candidates = resettableItems(planSnap);
    if (!candidates.length) {
      void notify.showInformationMessage('Ralph: nothing to reset (no done, blocked or failed task or story).');
      return undefined;
    }
    const pick = await vscode.window.showQuickPick(
      candidates.map((i) => ({ label: i.id, description: `${i.status} · ${i.title}`, detail: i.reason })),
      { title: 'Ralph: Reset — which task or story?' },
    );
    if (!pick) return undefined;
    id = pick.label;
  }
  let cascade = args.cascade;
  if (cascade === undefined) {
    const offer = resetOfferOf(planSnap, id);
    if (!offer.resettable) {
      void notify.showInformationMessage(`Ralph: ${offer.why ?? `${id} cannot be reset`}`);
      return undefined;
    }
    if (!offer.cascade.length) cascade = false;
    else {
      const pick = await vscode.window.showQuickPick(
        [
          { label: 'Reset', description: `${id} only`, cascade: false },
          { label: 'Reset with cascade', description: `also ${offer.cascade.join(', ')}`, cascade: true },
        ],
        { title: `Ralph: Reset ${id}` },
      );
      if (!pick) return undefined;
      cascade = pick.cascade;
    }
  }
  try {
    const r = await resetItem(id, { folder, cascade });
    log.info('reset', `${id}${cascade ? ' (cascade)' : ''}: ${r.reset.join(', ') || r.message || 'nothing to do'}`);
    void notify.showInformationMessage(
      r.reset.length ? `Ralph: reset ${r.reset.join(', ')}` : `Ralph: ${r.message ?? `${id} needed no reset`}`,
    );
    return r.reset;
  } catch (err) {
    void notify.showErrorMessage(`Ralph: ${(err as Error).message}`);
    return undefined;
  }
}

export function deactivate(): void {
  // Everything is in context.subscriptions; a running engine is cancelled by RunController.dispose.
}
