import * as vscode from 'vscode';
import type {
  ControlToolInput,
  LmToolName,
  ResetToolInput,
  StartToolInput,
  ToolDecision,
} from '../core/control/lmTools';
import type { Logger } from './logger';
import type { RunController } from './runController';

/**
 * The adapter of Ralph's Language Model Tools (`contributes.languageModelTools`): loads the status snapshot or the
 * plan graph, asks core/control/lmTools.ts what to answer or confirm, acts through the same paths as the commands
 * (the run controller, the sentinels, the reset operation) and returns text. Every mutating tool's
 * `prepareInvocation` returns the confirmation VS Code shows before `invoke`; a refusal (nothing to do, not allowed)
 * asks nothing and `invoke` answers it, so the calling agent learns why and can try again.
 */
export interface LmToolDeps {
  runs: RunController;
  /** The workspace's file folders. */
  folders: () => { path: string; name: string }[];
  log: Logger;
}

// Loaded on first use: activation stays cheap (bench extension.activation).
const core = () => import('../core/control/lmTools');

const text = (t: string) => new vscode.LanguageModelToolResult([new vscode.LanguageModelTextPart(t)]);

async function folderOf(
  named: string | undefined,
  deps: LmToolDeps,
): Promise<{ folder: string } | { refusal: string }> {
  return (await core()).resolveToolFolder(named, deps.folders());
}

/** The active run of `folder` (running, paused, stopping), as the status snapshot sees it. */
async function activeRunOf(folder: string): Promise<{ id: string; stateText: string; paused: boolean } | null> {
  const { buildStatus } = await import('../core/control/status');
  const run = buildStatus(folder).runs[0];
  return run ? { id: run.id, stateText: run.view.stateText, paused: run.view.state === 'paused' } : null;
}

/** A mutating tool: `decide` (pure, in core) gives the confirmation or the refusal; `act` does it. */
function mutating<I extends { folder?: string }, A>(
  deps: LmToolDeps,
  decide: (input: I, folder: string) => Promise<ToolDecision<A>>,
  act: (args: A) => Promise<string>,
): vscode.LanguageModelTool<I> {
  const decision = async (input: I): Promise<ToolDecision<A>> => {
    const f = await folderOf(input.folder, deps);
    return 'refusal' in f ? { ok: false, refusal: f.refusal } : decide(input, f.folder);
  };
  return {
    async prepareInvocation(options) {
      const d = await decision(options.input);
      if (!d.ok) return { invocationMessage: 'Ralph: nothing to confirm' };
      return {
        invocationMessage: d.invocation,
        confirmationMessages: { title: d.title, message: new vscode.MarkdownString(d.message) },
      };
    },
    async invoke(options) {
      const d = await decision(options.input);
      if (!d.ok) return text(d.refusal);
      try {
        return text(await act(d.args));
      } catch (err) {
        deps.log.warn('lm', `${(err as Error).message}`);
        return text(`Ralph: ${(err as Error).message}`);
      }
    },
  };
}

/** Every tool of `contributes.languageModelTools` (LM_TOOL_NAMES), by name. */
export type RalphLmTools = Record<LmToolName, vscode.LanguageModelTool<object>>;

/** Registers every tool with `vscode.lm.registerTool`; dispose to unregister. */
export function registerLmTools(tools: RalphLmTools): vscode.Disposable {
  return vscode.Disposable.from(...Object.entries(tools).map(([name, tool]) => vscode.lm.registerTool(name, tool)));
}

/** Builds the tools over the run controller and the workspace's folders. */
export function createLmTools(deps: LmToolDeps): RalphLmTools {
  const read = (name: 'ralph_status' | 'ralph_plan'): vscode.LanguageModelTool<{ folder?: string }> => ({
    async invoke(options) {
      const f = await folderOf(options.input.folder, deps);
      if ('refusal' in f) return text(f.refusal);
      const c = await core();
      let report;
      if (name === 'ralph_status') {
        const { buildStatus } = await import('../core/control/status');
        report = c.statusReport(f.folder, buildStatus(f.folder));
      } else {
        const { loadPlan } = await import('../core/sources/plan');
        report = c.planReport(await loadPlan(f.folder));
      }
      return text(`${c.summaryLine(name, report)}\n${JSON.stringify(report, null, 2)}`);
    },
  });

  const start = mutating<StartToolInput, { folder: string; source?: string; item?: string }>(
    deps,
    async (input, folder) => {
      const [c, { loadPlan }, { availableSources }, { resolveActor }] = await Promise.all([
        core(),
        import('../core/sources/plan'),
        import('../core/sources/work/workSources'),
        import('../core/sources/actor'),
      ]);
      // `--source` values, as ralph_plan names them (core/sources/startPolicy.ts `sourceArgOf`).
      const sources = availableSources({ folder, actor: resolveActor(folder) }).map((s) =>
        s.kind === 'checklist' ? s.label : s.kind === 'flow-next' ? 'flow' : s.kind,
      );
      return c.decideStart(input, folder, {
        plan: await loadPlan(folder),
        activeRun: await activeRunOf(folder),
        sources,
        trusted: vscode.workspace.isTrusted,
      });
    },
    async (args) => {
      // One story at a time unless the settings say otherwise: a tool call never opens the parallel quick pick.
      const runId = await deps.runs.start({ ...args, parallel: false });
      return runId
        ? `Ralph run ${runId} started in ${args.folder}${args.item ? `, beginning with ${args.item}` : ''}. Follow it with ralph_status; steer it with ralph_pause or ralph_stop.`
        : `Ralph did not start a run in ${args.folder} (refused or cancelled: the Ralph log says why).`;
    },
  );

  const control = (action: 'pause' | 'stop') =>
    mutating<ControlToolInput, { folder: string }>(
      deps,
      async (_input, folder) => (await core()).decideControl(action, folder, await activeRunOf(folder)),
      async ({ folder }) => {
        const { pauseRun, stopRun } = await import('../core/control/runControl');
        const answer = await (action === 'pause' ? pauseRun(folder) : stopRun(folder));
        deps.log.info('lm', `${action} ${answer.run}: ${answer.files.join(', ')}`);
        return `Ralph run ${answer.run} will ${action} after its current iteration.`;
      },
    );

  const reset = mutating<ResetToolInput, { folder: string; id: string; cascade: boolean }>(
    deps,
    async (input, folder) => {
      const { loadPlan } = await import('../core/sources/plan');
      return (await core()).decideReset(input, folder, await loadPlan(folder));
    },
    async ({ folder, id, cascade }) => {
      const { resetItem } = await import('../core/sources/operations');
      const r = await resetItem(id, { folder, cascade });
      deps.log.info('lm', `reset ${id}${cascade ? ' (cascade)' : ''}: ${r.reset.join(', ') || r.message || 'nothing'}`);
      return r.reset.length ? `Ralph reset ${r.reset.join(', ')}.` : `Ralph: ${r.message ?? `${id} needed no reset`}.`;
    },
  );

  const tools: Record<LmToolName, vscode.LanguageModelTool<never>> = {
    ralph_status: read('ralph_status'),
    ralph_plan: read('ralph_plan'),
    ralph_start: start,
    ralph_pause: control('pause'),
    ralph_stop: control('stop'),
    ralph_reset: reset,
  };
  return tools as RalphLmTools;
}
