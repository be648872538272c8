import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { NewPlanKind } from '../core/control/newPlan';
import type { Logger } from './logger';
import * as notify from './notify';

/**
 * Arguments of **Ralph: New Plan…** when called programmatically (tests, the walkthrough); each one left out is
 * asked for: the folder (several open), the kind (a quick pick), the title and the gate command (input boxes).
 */
export interface NewPlanArgs {
  folder?: string;
  kind?: NewPlanKind;
  title?: string;
  /** The gate command; `''` writes none. Asked only when the folder has no gate yet. */
  gate?: string;
}

/** What **Ralph: New Plan…** made: the files written (absolute) and the one opened. */
export interface NewPlanResult {
  files: string[];
  opened: string;
}

const KIND_ITEMS: { plan: NewPlanKind; label: string; detail: string }[] = [
  {
    plan: 'checklist',
    label: '$(checklist) Checklist',
    detail: 'RALPH_TASK.md with boxes to tick: the simplest plan, one item after the other',
  },
  {
    plan: 'quantum',
    label: '$(json) quantum.json',
    detail: 'stories with priorities, dependencies and retries (quantum-loop); can run in parallel',
  },
  {
    plan: 'flow-next',
    label: '$(layers) flow-next epic',
    detail: '.flow/ epic with tasks and dependencies, as flowctl writes it',
  },
];

/**
 * **Ralph: New Plan…**: a starter plan of the kind the person picks (core/control/newPlan.ts writes it; no existing
 * file is overwritten), with the gate command when the folder has none, then opens its main file. Resolves with the
 * files written, or `undefined` when the person cancelled or nothing could be written (a notification says why).
 */
export async function newPlanCommand(args: NewPlanArgs = {}, log: Logger): Promise<NewPlanResult | undefined> {
  const folder = args.folder ?? (await pickFolder());
  if (!folder) return undefined;
  const core = await import('../core/control/newPlan');
  const facts = await core.readFolderFacts(folder);
  let kind = args.kind;
  if (!kind) {
    const pick = await vscode.window.showQuickPick(
      KIND_ITEMS.map((i) => {
        const refused = core.refusalOf(i.plan, facts);
        return { ...i, description: refused ? 'exists: opens it' : '' };
      }),
      { title: 'Ralph: New Plan — which kind?', placeHolder: 'The plan Ralph works through, item by item' },
    );
    if (!pick) return undefined;
    kind = pick.plan;
  }
  if (core.refusalOf(kind, facts)) {
    // The one plan of this kind is there already: show it rather than refuse.
    const existing = path.join(folder, 'quantum.json');
    await vscode.window.showTextDocument(vscode.Uri.file(existing));
    void notify.showInformationMessage(`Ralph: ${core.refusalOf(kind, facts)}; opened it.`);
    return undefined;
  }
  const title =
    args.title ??
    (await vscode.window.showInputBox({
      title: 'Ralph: New Plan — what should the agent build?',
      prompt: 'A short title (the plan, its epic or project)',
      value: 'A first feature',
      ignoreFocusOut: true,
      validateInput: (v) => (v.trim() ? undefined : 'a plan needs a title'),
    }));
  if (!title) return undefined;
  let gate = args.gate ?? '';
  if (args.gate === undefined && !facts.hasGates) {
    const pkg = readSmall(path.join(folder, 'package.json'));
    const asked = await vscode.window.showInputBox({
      title: 'Ralph: New Plan — which command checks the work (the gate)?',
      prompt: 'Ralph believes "done" only once this command exits 0. Leave empty to set it later (ralph.gates).',
      value: core.suggestedGate(pkg),
      placeHolder: 'e.g. npm test',
      ignoreFocusOut: true,
    });
    if (asked === undefined) return undefined;
    gate = asked;
  }
  try {
    const starter = core.planStarter({ kind, title, gate, nowMs: Date.now() }, facts);
    const files = await core.writeStarter(folder, starter, facts.configText);
    const opened = path.join(folder, ...starter.open.split('/'));
    log.info('newPlan', `${starter.summary} ${files.map((f) => path.relative(folder, f)).join(', ')}`);
    await vscode.window.showTextDocument(vscode.Uri.file(opened), { preview: false });
    void notify.showInformationMessage(`Ralph: ${starter.summary} Press Ralph: Start to run it.`);
    return { files, opened };
  } catch (err) {
    log.warn('newPlan', (err as Error).message);
    void notify.showErrorMessage(`Ralph: New Plan: ${(err as Error).message}`);
    return undefined;
  }
}

async function pickFolder(): Promise<string | undefined> {
  const folders = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file');
  if (!folders.length) {
    void notify.showInformationMessage('Ralph: open a folder first; the plan goes into it.');
    return undefined;
  }
  if (folders.length === 1) return folders[0]!.uri.fsPath;
  const pick = await vscode.window.showWorkspaceFolderPick({ placeHolder: 'Ralph: New Plan — in which folder?' });
  return pick?.uri.fsPath;
}

/** A small file's text (package.json), or `undefined` when absent or over 1 MB. */
function readSmall(file: string): string | undefined {
  try {
    return fs.statSync(file).size <= 1024 * 1024 ? fs.readFileSync(file, 'utf8') : undefined;
  } catch {
    return undefined;
  }
}
