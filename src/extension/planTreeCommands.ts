import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { CommandIds } from './commandIds';
import type { Logger } from './logger';
import type { PlanNode, PlanTreeProvider } from './planTree';
import { resetConfirmOf, type TreeRow } from './planTreeModel';
import type { RunStore } from './runStore';
import * as notify from './notify';

/** The dialogs the tree's commands show; integration tests replace them (a modal cannot be clicked from a test). */
export interface TreeUi {
  /** A modal warning with one action; resolves true when the action was chosen. */
  confirm(message: string, detail: string, action: string): Promise<boolean>;
  /** A (non-modal) warning with an optional action; resolves true when the action was chosen. */
  offer(message: string, action?: string): Promise<boolean>;
  info(message: string): void;
  /** An input box (kept open on focus loss); resolves with the text, or undefined when dismissed. */
  ask(title: string, prompt: string | undefined, placeHolder: string): Promise<string | undefined>;
}

const vscodeUi: TreeUi = {
  confirm: async (message, detail, action) =>
    (await notify.showWarningMessage(message, { modal: true, detail }, action)) === action,
  offer: async (message, action) => {
    if (action) return (await notify.showWarningMessage(message, action)) === action;
    void notify.showWarningMessage(message);
    return false;
  },
  info: (message) => void notify.showInformationMessage(message),
  ask: async (title, prompt, placeHolder) =>
    vscode.window.showInputBox({ title, prompt, placeHolder, ignoreFocusOut: true }),
};

/**
 * The tree's right-click commands (hidden from the palette: `commandPalette` `when: false`). Each takes the clicked
 * node; the row says what it stands for. Decisions come from core: `resetOfferOf` (what a reset and its cascade
 * take, as `ralph task reset --cascade`), `startOfferOf` (Start Here, as `ralph run --item`).
 */
export class PlanTreeCommands {
  /** The dialogs (tests swap them). */
  ui: TreeUi = vscodeUi;

  constructor(
    private readonly tree: PlanTreeProvider,
    private readonly store: RunStore,
    private readonly log: Logger,
  ) {}

  private rowOf(node: PlanNode | undefined): TreeRow | undefined {
    const row = node ? this.tree.row(node) : undefined;
    if (!row) this.ui.info('Ralph: pick a row of the Ralph tree.');
    return row;
  }

  private plan(folder: string) {
    return this.store.snapshot().folders.find((f) => f.folder === folder)?.plan;
  }

  /**
   * **Reset Task** / **Reset Task and Dependents**: a modal lists exactly the items the reset takes (from the store's
   * plan graph and core `resetOfferOf`); on OK, core `resetItem` (the operation of `ralph task reset`). Resolves with
   * the ids reset, or undefined when refused or cancelled.
   */
  async reset(node: PlanNode | undefined, cascade: boolean): Promise<string[] | undefined> {
    const row = this.rowOf(node);
    if (!row?.itemId) return undefined;
    const [{ resetOfferOf }, { resetItem }, { loadPlan }] = await Promise.all([
      import('../core/sources/resetPolicy'),
      import('../core/sources/operations'),
      import('../core/sources/plan'),
    ]);
    // The store's plan may be a read behind a change made a moment ago: decide on a fresh read, as the CLI does.
    const plan = await loadPlan(row.folder).catch(() => this.plan(row.folder));
    if (!plan) return undefined;
    const confirm = resetConfirmOf(plan, resetOfferOf(plan, row.itemId), cascade);
    if (!confirm.ok) {
      this.ui.info(confirm.message);
      return undefined;
    }
    if (!(await this.ui.confirm(confirm.message, confirm.detail, 'Reset'))) return undefined;
    try {
      const r = await resetItem(row.itemId, { folder: row.folder, cascade });
      this.log.info(
        'reset',
        `${row.itemId}${cascade ? ' (cascade)' : ''} from the tree: ${r.reset.join(', ') || r.message || 'nothing to do'}`,
      );
      void this.store.reloadPlan(row.folder);
      return r.reset;
    } catch (err) {
      void notify.showErrorMessage(`Ralph: ${(err as Error).message}`);
      return undefined;
    }
  }

  /** **Open Task File**: the row's file, at the box's line for a checklist box. */
  async openFile(node: PlanNode | undefined): Promise<boolean> {
    const row = this.rowOf(node);
    if (!row?.file) return false;
    const uri = path.isAbsolute(row.file)
      ? vscode.Uri.file(row.file)
      : vscode.Uri.joinPath(vscode.Uri.file(row.folder), row.file);
    const line = Math.max(0, (row.line ?? 1) - 1);
    await vscode.window.showTextDocument(uri, {
      preview: true,
      selection: new vscode.Range(new vscode.Position(line, 0), new vscode.Position(line, 0)),
    });
    return true;
  }

  /**
   * **Answer Question…** on a waiting item (or its run / lane): asks for the answer (the question's text as the
   * prompt), then **Ralph: Answer Question…** with the text for the row's run and item, which writes it through core
   * `answerQuestion` (as `ralph answer`). Resolves with the id of the question answered, or undefined (dismissed, or
   * no question: the command says why).
   */
  async answer(node: PlanNode | undefined): Promise<string | undefined> {
    const row = this.rowOf(node);
    if (!row) return undefined;
    const itemId = row.itemId && !row.contextValue.startsWith('run') ? row.itemId : undefined;
    const args = { folder: row.folder, ...(row.runId ? { runId: row.runId } : {}), ...(itemId ? { itemId } : {}) };
    // Without a run the command offers the open questions itself (a quick pick).
    if (!row.runId) return vscode.commands.executeCommand<string | undefined>(CommandIds.answer, args);
    const run = this.store.snapshot().runs.find((r) => r.folder === row.folder && r.runId === row.runId);
    const question = run?.facts.questions.find((q) => !itemId || q.itemId === itemId);
    if (!question) {
      this.ui.info(`Ralph: run ${row.runId} waits on no question${itemId ? ` for ${itemId}` : ''} now.`);
      return undefined;
    }
    const text = await this.ui.ask(
      `Ralph: answer${itemId ? ` (${itemId})` : ''}`,
      question.text,
      'Your answer (the agent reads it verbatim)',
    );
    if (!text) return undefined;
    return vscode.commands.executeCommand<string | undefined>(CommandIds.answer, { ...args, text });
  }

  /**
   * **Start Here**: `ralph run --item <id>`. When the item is not ready (open dependencies, blocked, done) says why and
   * offers to start with the source's next ready item. Resolves with the run id started, or undefined.
   */
  async startHere(node: PlanNode | undefined): Promise<string | undefined> {
    const row = this.rowOf(node);
    if (!row?.itemId) return undefined;
    const plan = this.plan(row.folder);
    if (!plan) return undefined;
    const { startOfferOf } = await import('../core/sources/startPolicy');
    const offer = startOfferOf(plan, row.itemId);
    let id = row.itemId;
    if (!offer.ready) {
      const text = `Ralph: cannot start with ${row.itemId}: ${offer.why ?? 'it is not ready'}.${offer.next ? ` The next ready item of its source is ${offer.next}.` : ' No other item of its source is ready.'}`;
      const chosen = await this.ui.offer(text, offer.next ? `Start with ${offer.next}` : undefined);
      if (!chosen || !offer.next) return undefined;
      id = offer.next;
    }
    this.log.info('run', `Start Here: ${id}${offer.source ? ` (${offer.source})` : ''}`);
    return vscode.commands.executeCommand<string | undefined>(CommandIds.start, {
      folder: row.folder,
      item: id,
      ...(offer.source ? { source: offer.source } : {}),
    });
  }

  /** The resume briefs of a subagent: `.planning/<phase>/resume-<sub>.md` under its worktree and the folder. */
  briefsOf(row: TreeRow): string[] {
    const roots = [
      ...new Set(
        [row.worktree ? path.resolve(row.folder, row.worktree) : undefined, row.folder].filter((r): r is string => !!r),
      ),
    ];
    const out: string[] = [];
    for (const root of roots) {
      const planning = path.join(root, '.planning');
      let phases: string[] = [];
      try {
        phases = fs
          .readdirSync(planning, { withFileTypes: true })
          .filter((d) => d.isDirectory())
          .map((d) => d.name)
          .slice(0, 500);
      } catch {
        continue;
      }
      for (const p of phases) {
        const f = path.join(planning, p, `resume-${row.itemId}.md`);
        if (fs.existsSync(f)) out.push(f);
      }
    }
    return out;
  }

  private async pickBrief(row: TreeRow): Promise<string | undefined> {
    const briefs = this.briefsOf(row);
    if (!briefs.length) {
      this.ui.info(
        `Ralph: no resume brief for ${row.itemId} yet (.planning/<phase>/resume-${row.itemId}.md). \`ralph waves check\` writes it.`,
      );
      return undefined;
    }
    if (briefs.length === 1) return briefs[0];
    return (
      await vscode.window.showQuickPick(
        briefs.map((b) => ({ label: path.relative(row.folder, b) || b, b })),
        { title: `Ralph: which resume brief of ${row.itemId}?` },
      )
    )?.b;
  }

  /** **Open Resume Brief** on an orphan subagent. */
  async openBrief(node: PlanNode | undefined): Promise<string | undefined> {
    const row = this.rowOf(node);
    if (!row?.itemId) return undefined;
    const brief = await this.pickBrief(row);
    if (brief) await vscode.window.showTextDocument(vscode.Uri.file(brief), { preview: true });
    return brief;
  }

  /**
   * **Resume with Ralph** on an orphan subagent: after a modal confirm, `ralph run --source <brief>` in the sub's
   * worktree when it names one (else the folder). Never automatic.
   */
  async resume(node: PlanNode | undefined): Promise<string | undefined> {
    const row = this.rowOf(node);
    if (!row?.itemId) return undefined;
    const brief = await this.pickBrief(row);
    if (!brief) return undefined;
    const where = row.worktree ? path.resolve(row.folder, row.worktree) : row.folder;
    if (
      !(await this.ui.confirm(
        `Resume ${row.itemId} with Ralph?`,
        `Runs ralph run --source ${brief}\nin ${where}`,
        'Resume',
      ))
    )
      return undefined;
    return vscode.commands.executeCommand<string | undefined>(CommandIds.start, { folder: where, source: brief });
  }
}
