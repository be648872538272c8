import * as path from 'node:path';
import * as vscode from 'vscode';
import type { EngineOptions, LoopEngine, RunResult } from '../core/loop/startRun';
import type { EngineEvent } from '../core/loop/events';
import { endReasonText } from '../core/control/endReason';
import { ralphFile } from '../core/model/ralphPaths';
import type { AgentName } from '../core/model/agentNames';
import { openActivityLog } from './activityLog';
import { fileProblemOf, showFileProblem } from './fileProblems';
import { ensureContentTrusted, vscodeTrustUi, type TrustUi } from './contentTrust';
import { Disposable } from './lifecycle';
import type { Logger } from './logger';
import { readSettingsLayer } from './settings';
import { parallelOfferOf, parallelPickItems, type ParallelChoice } from './startChoices';
import { AgentChooser, configuredAgentOf, memoryState } from './startAgent';
import * as notify from './notify';

/** Arguments of **Ralph: Start** when called programmatically (tests, other extensions); the UI asks otherwise. */
export interface StartArgs {
  /** Workspace folder path; default the only folder, else a quick pick. */
  folder?: string;
  /** `flow` | `quantum` | `checklist` | a checklist path; default a quick pick when there are several. */
  source?: string;
  /**
   * An agent name (`claude`, `codex`, …, `cursor-agent`); default the configured one, else the one remembered for the
   * folder, else a quick pick when several agent CLIs are found (startAgent.ts).
   */
  agent?: AgentName;
  /** Run without gates. */
  noGates?: boolean;
  /** Begin with this task, story or box (`ralph run --item`; the tree's **Start Here**); with it, `source` defaults to the item's. */
  item?: string;
  /**
   * Run independent quantum stories at once in git worktrees (`ralph run --parallel`). Given (true or false), Start
   * does not ask; absent, Start asks for a quantum.json run (startChoices.ts `parallelOfferOf`).
   */
  parallel?: boolean;
  /** Most stories at once with `parallel` (`--max-parallel N`); default the settings' or configuration's, else 4. */
  maxParallel?: number;
}

/** How Start makes an engine (tests give a fake one: a unit test must not spawn the agent). */
export type EngineFactory = (options: EngineOptions) => LoopEngine;

/** What the run store hears from Start (so the gauge spins at once and follows the run before its first event). */
export interface StartHooks {
  /** Start was given for `folder`; the run is being prepared. */
  starting(folder: string): void;
  /** The engine started `runId`. */
  started(folder: string, runId: string): void;
  /** Start ended without a run (backed out, refused, bad configuration). */
  failed(folder: string): void;
}

/** The activity line of a paused run in the extension's log: VS Code users resume with the command, not a file. */
export const PAUSED_LINE_IN_VSCODE = 'PAUSED — run "Ralph: Resume" to go on';

interface ActiveRun {
  folder: string;
  engine: LoopEngine;
  cancel: AbortController;
  done: Promise<RunResult | undefined>;
}

/**
 * Runs the loop engine inside the extension host (one run per workspace folder) and steers runs from outside
 * through the same sentinel files as the CLI, so a run started in a terminal is paused from VS Code and the
 * reverse. Engine events go to the run records (as `ralph run` writes them), the "Ralph" log, and `onEvent`.
 */
export class RunController extends Disposable {
  private readonly runs = new Map<string, ActiveRun>();
  private readonly events = this._register(new vscode.EventEmitter<{ folder: string; event: EngineEvent }>());
  /** Engine events of this host's runs, `agentArgs` values redacted (as in events.jsonl). */
  readonly onEvent = this.events.event;
  /** The dialogs of the workspace-configuration trust check at Start (integration tests swap them). */
  trustUi: TrustUi = vscodeTrustUi;
  /** Start's agent pick and its memory per folder (the extension gives it the workspace's state). */
  agents = new AgentChooser({ memory: memoryState() });

  constructor(
    private readonly log: Logger,
    private readonly hooks?: StartHooks,
    private readonly createEngine?: EngineFactory,
  ) {
    super();
    this._register({
      dispose: () => {
        for (const r of this.runs.values()) r.cancel.abort();
      },
    });
  }

  /** Whether this host runs an engine for `folder` (or for any folder). */
  isRunning(folder?: string): boolean {
    return folder ? this.runs.has(folder) : this.runs.size > 0;
  }

  /** Resolves with the result of this host's run in `folder` (undefined when none, or it refused to start). */
  wait(folder: string): Promise<RunResult | undefined> {
    return this.runs.get(folder)?.done ?? Promise.resolve(undefined);
  }

  /** **Ralph: Start**: resolves once the run has started (with its id), or undefined when the user backed out. */
  async start(args: StartArgs = {}): Promise<string | undefined> {
    let folder: string | undefined;
    try {
      const runId = await this.startIn(args, (f) => {
        folder = f;
        this.hooks?.starting(f);
      });
      if (folder && runId) this.hooks?.started(folder, runId);
      else if (folder) this.hooks?.failed(folder);
      return runId;
    } catch (err) {
      if (folder) this.hooks?.failed(folder);
      // A file Ralph cannot use (.ralph/config.json that does not parse …): a Ralph error naming file:line:column
      // with Open File, instead of VS Code's generic "command resulted in an error" modal.
      const problem = fileProblemOf(err);
      this.log.error('start', err as Error);
      if (problem && folder) void showFileProblem(problem, folder);
      else void notify.showErrorMessage(`Ralph: Start failed: ${(err as Error).message}`);
      return undefined;
    }
  }

  private async startIn(args: StartArgs, noteFolder: (folder: string) => void): Promise<string | undefined> {
    if (!vscode.workspace.isTrusted) {
      // VS Code's own trust editor is the way out; the Start button is hidden in Restricted Mode (package.json).
      void notify
        .showErrorMessage(
          'Ralph: Start runs an agent CLI with your permissions. Trust this workspace first (Restricted Mode).',
          MANAGE_TRUST,
        )
        .then((c) => {
          if (c === MANAGE_TRUST) void vscode.commands.executeCommand('workbench.trust.manage');
        });
      return undefined;
    }
    const folder = args.folder ?? (await this.pickFolder());
    if (!folder) return undefined;
    if (this.runs.has(folder)) {
      void notify.showWarningMessage(`Ralph is already running in ${path.basename(folder)}.`);
      return undefined;
    }
    noteFolder(folder);
    // Workspace Trust let anything run; the folder's program-naming configuration must also be trusted as it is now.
    if (!(await ensureContentTrusted(folder, this.log, this.trustUi))) return undefined;
    // The engine and its dependencies load on the first Start, not at activation.
    const [
      { EngineRefusal, LoopEngine, NoGatesRefusal },
      { RunRecorder },
      { availableSources },
      { loadConfig },
      { resolveActor },
      { environmentSecrets, redactEvent, redactText },
    ] = await Promise.all([
      import('../core/loop/startRun'),
      import('../core/loop/recorder'),
      import('../core/sources/work/workSources'),
      import('../core/store/loadConfig'),
      import('../core/sources/actor'),
      import('../core/trust/redact'),
    ]);
    const { configKeys } = await import('../core/model/config');
    const settings = readSettingsLayer(configKeys, vscode.Uri.file(folder));
    let config = await loadConfig(folder, { settings, trusted: true });
    const sources = availableSources({ folder, actor: resolveActor(folder) });
    // A source named by path (a resume brief: Resume with Ralph) needs no other source; the engine checks it.
    if (!sources.length && !args.source) {
      void notify.showErrorMessage(
        'Ralph: no task source here. Add quantum.json, .flow/, RALPH_TASK.md, PROMPT.md or specs/<name>/tasks.md.',
      );
      return undefined;
    }
    let source = args.source;
    if (!source && sources.length > 1 && !args.item) {
      const pick = await vscode.window.showQuickPick(
        sources.map((s) => ({ label: s.label, description: s.kind, value: s.kind === 'checklist' ? s.label : s.kind })),
        { title: 'Ralph: Start — which task source?' },
      );
      if (!pick) return undefined;
      source = pick.value;
    }
    const offer = parallelOfferOf({
      source,
      sourceKinds: sources.map((s) => s.kind),
      args,
      setting: settings as Record<string, unknown>,
      configuredMaxParallel: (config as unknown as Record<string, unknown>).maxParallel,
    });
    let parallel: ParallelChoice | null = offer.ask ? null : offer.choice;
    if (offer.ask) {
      const pick = await vscode.window.showQuickPick(parallelPickItems(offer.maxParallel), {
        title: 'Ralph: Start — how should the stories run?',
      });
      if (!pick) return undefined;
      parallel = pick.choice;
    }
    const chosen = await this.agents.choose({
      folder,
      config,
      given: args.agent,
      configured: await configuredAgentOf(folder, settings),
    });
    if (!chosen) return undefined;
    const agent = chosen.agent;
    this.log.info('start', `agent: ${agent ?? config.agent} (${chosen.why})`);
    // As `ralph run --agent`: the agent is the configuration's, so the run's agents (`agents`, default `[agent]`) are
    // that one, not it and the configured default.
    if (agent) config = { ...config, agent: agent as typeof config.agent };
    const cancel = new AbortController();
    const options: EngineOptions = {
      folder,
      config,
      source,
      agent,
      ...(args.item ? { item: args.item } : {}),
      ...(parallel ?? {}),
      noGates: args.noGates,
      signal: cancel.signal,
    };
    const engine = this.createEngine ? this.createEngine(options) : new LoopEngine(options);
    // agentArgs values and the agents' keys in the environment are redacted once, before the records, the log and
    // onEvent see an event.
    const secrets = environmentSecrets(process.env);
    const recorder = new RunRecorder(folder, engine.runId, {
      onLine: (line) => this.log.info('run', line.startsWith('PAUSED') ? PAUSED_LINE_IN_VSCODE : line),
      onError: (err) => this.log.warn('run', `could not write a run record: ${err.message}`),
    });
    engine.on('event', (event, lane) => {
      const shown = redactEvent(event, config.agentArgs, secrets);
      recorder.record(shown, lane);
      this.events.fire({ folder, event: shown });
    });
    let resolveStarted!: (id: string | undefined) => void;
    const started = new Promise<string | undefined>((r) => (resolveStarted = r));
    engine.once('event', () => resolveStarted(engine.runId));
    const done = engine
      .run()
      .then(
        async (result) => {
          await recorder.flush();
          this.notifyEnd(folder, { ...result, reason: redactText(result.reason, config.agentArgs, secrets) });
          return result;
        },
        (err: Error) => {
          resolveStarted(undefined);
          if (err instanceof NoGatesRefusal) {
            this.log.warn('run', err.message);
            void offerGates(folder, { ...args, folder, ...(source ? { source } : {}) });
            return undefined;
          }
          const msg = redactText(
            err instanceof EngineRefusal ? err.message : `the run failed: ${err.message}`,
            config.agentArgs,
            secrets,
          );
          this.log.error('run', msg);
          void notify.showErrorMessage(`Ralph: ${msg}`);
          return undefined;
        },
      )
      .finally(() => this.runs.delete(folder));
    this.runs.set(folder, { folder, engine, cancel, done });
    // Context keys (ralph.running …) come from the run store, which follows this run through its log like any other.
    return started;
  }

  /**
   * **Ralph: Choose Agent…**: offers the agent CLIs found for the folder and remembers the one picked, which the next
   * Start runs. Resolves with it, or undefined when dismissed, refused or the configuration names the agent.
   */
  async chooseAgent(folder?: string): Promise<string | undefined> {
    if (!vscode.workspace.isTrusted) {
      void notify.showErrorMessage(
        'Ralph: choosing an agent runs each agent CLI for its version. Trust this workspace first.',
      );
      return undefined;
    }
    const f = folder ?? (await this.pickFolder());
    if (!f) return undefined;
    try {
      if (!(await ensureContentTrusted(f, this.log, this.trustUi))) return undefined;
      const [{ loadConfig }, { configKeys }] = await Promise.all([
        import('../core/store/loadConfig'),
        import('../core/model/config'),
      ]);
      const settings = readSettingsLayer(configKeys, vscode.Uri.file(f));
      const config = await loadConfig(f, { settings, trusted: true });
      const configured = await configuredAgentOf(f, settings);
      if (configured) {
        const where = typeof settings.agent === 'string' ? 'the ralph.agent setting' : '.ralph/config.json';
        void notify.showInformationMessage(
          `Ralph: ${path.basename(f)} runs ${configured}, named by ${where}; Start runs it without asking. Change it there.`,
        );
        return undefined;
      }
      const chosen = await this.agents.choose({ folder: f, config, given: undefined, configured, change: true });
      if (chosen?.agent) this.log.info('start', `agent for ${path.basename(f)}: ${chosen.agent} (remembered)`);
      return chosen?.agent;
    } catch (err) {
      const problem = fileProblemOf(err);
      this.log.error('agent', err as Error);
      if (problem) void showFileProblem(problem, f);
      else void notify.showErrorMessage(`Ralph: Choose Agent failed: ${(err as Error).message}`);
      return undefined;
    }
  }

  /** **Ralph: Pause / Resume / Stop**: writes or removes the sentinel of the single active run (ours or flow-next's). */
  async control(action: 'pause' | 'resume' | 'stop', folder?: string): Promise<string | undefined> {
    const f = folder ?? (await this.pickFolder());
    if (!f) return undefined;
    try {
      const { pauseRun, resumeRun, stopRun } = await import('../core/control/runControl');
      const answer = await (action === 'pause' ? pauseRun(f) : action === 'resume' ? resumeRun(f) : stopRun(f));
      // Pause: the gauge says "pausing…" until the run honours it, then one notification says it is paused
      // (runNotifications.ts); a toast now would say both at once.
      if (action !== 'pause')
        void notify.showInformationMessage(
          `Ralph: run ${answer.run} ${action === 'resume' ? 'resumes' : 'will stop after this iteration'}.`,
        );
      this.log.info('control', `${action} ${answer.run}: ${answer.files.join(', ')}`);
      return answer.run;
    } catch (err) {
      void notify.showWarningMessage(`Ralph: ${(err as Error).message}`);
      return undefined;
    }
  }

  /** **Ralph: Cancel**: ends this host's run now (the agent's process group first). */
  cancel(folder?: string): boolean {
    const run = folder ? this.runs.get(folder) : [...this.runs.values()][0];
    if (!run) {
      void notify.showInformationMessage(
        'Ralph: no run of this window to cancel (use Ralph: Stop for a run started elsewhere).',
      );
      return false;
    }
    run.cancel.abort();
    return true;
  }

  private notifyEnd(folder: string, r: RunResult): void {
    const text = `Ralph: ${r.state === 'completed' ? 'complete' : r.state} — ${endReasonText(r.reason.replace(/^complete: /, ''))} (${r.done}/${r.total} done, ${r.iterations} iterations)`;
    this.log.info('run', text);
    const show = r.state === 'completed' ? notify.showInformationMessage : notify.showWarningMessage;
    // Open Log opens the activity log at its end (the run that just ended), like Ralph: Open Log.
    void show(text, 'Open Log').then(async (choice) => {
      if (choice === 'Open Log') await openActivityLog(folder);
    });
  }

  private async pickFolder(): Promise<string | undefined> {
    const folders = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file');
    if (folders.length <= 1) return folders[0]?.uri.fsPath;
    const pick = await vscode.window.showWorkspaceFolderPick({ placeHolder: 'Ralph: which folder?' });
    return pick?.uri.fsPath;
  }
}

/** The action of the Restricted Mode refusal: VS Code's Manage Workspace Trust. */
const MANAGE_TRUST = 'Manage Workspace Trust';

/** The ways out of "no gates configured" that VS Code can take (the CLI's `--no-gates` is not one of them). */
export const NO_GATES_ACTIONS = ['Open Settings', 'Open config.json', 'Start Without Gates'] as const;

/**
 * Start refused for want of a gate: says why, and offers the `ralph.gates` setting, `.ralph/config.json` (created
 * with an example gate when missing, never overwritten) or a start without gates (the same Start, `noGates`).
 */
export async function offerGates(folder: string, args: StartArgs): Promise<void> {
  const choice = await notify.showErrorMessage(
    `Ralph: no gates configured in ${path.basename(folder)}: nothing would check the agent's work before a task counts as done. Name a gate command (e.g. npm test), or start without gates.`,
    ...NO_GATES_ACTIONS,
  );
  if (choice === 'Open Settings') await vscode.commands.executeCommand('workbench.action.openSettings', 'ralph.gates');
  else if (choice === 'Open config.json') {
    const file = ralphFile(folder, 'config');
    const { mkdir, writeFile } = await import('node:fs/promises');
    await mkdir(path.dirname(file), { recursive: true });
    // `wx`: an existing file (even one that does not parse) is opened as it is, never overwritten.
    await writeFile(file, '{\n  "gates": { "basic": "npm test" }\n}\n', { flag: 'wx' }).catch(() => undefined);
    await vscode.window.showTextDocument(vscode.Uri.file(file));
  } else if (choice === 'Start Without Gates')
    await vscode.commands.executeCommand('ralph.start', { ...args, noGates: true });
}
