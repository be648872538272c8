import * as vscode from 'vscode';
import { CommandIds } from './commandIds';
import { Disposable } from './lifecycle';
import type { RunStore, StoreQuestion } from './runStore';

/** Answers a run's question through the same path as `ralph answer` (core); resolves with a line for the log. */
export type AnswerQuestion = (folder: string, runId: string, questionId: string, itemId: string | null, text: string) => Promise<string>;

/**
 * Notifications about runs, whoever started them, from the store's changes:
 * - a run that pauses: a message naming **Ralph: Resume** (with a Resume button), not a file to remove;
 * - a question the run waits on: the question with **Answer…** (an input box; the answer goes through `answer`, the
 *   path of `ralph answer`).
 * Once per pause and once per question.
 */
export class RunNotifications extends Disposable {
  private readonly paused = new Set<string>();

  constructor(private readonly store: RunStore, private readonly answer: AnswerQuestion | undefined) {
    super();
    this._register(store.onDidChange(() => this.checkPaused()));
    this._register(store.onQuestion((q) => void this.ask(q)));
  }

  private checkPaused(): void {
    const now = new Set<string>();
    for (const r of this.store.snapshot().runs) {
      if (!r.facts.active || !r.facts.paused) continue;
      now.add(r.key);
      if (this.paused.has(r.key)) continue;
      void vscode.window.showInformationMessage(`Ralph: run ${r.runId} is paused. Run "Ralph: Resume" to go on.`, 'Resume').then((c) => {
        if (c === 'Resume') void vscode.commands.executeCommand(CommandIds.resume, r.folder);
      });
    }
    this.paused.clear();
    for (const k of now) this.paused.add(k);
  }

  private async ask(q: StoreQuestion): Promise<void> {
    const about = q.itemId ? ` (${q.itemId})` : '';
    const actions = this.answer ? ['Answer…'] : [];
    const choice = await vscode.window.showInformationMessage(`Ralph: run ${q.run.runId} asks${about}: ${q.text}`, ...actions);
    if (choice !== 'Answer…' || !this.answer) return;
    const text = await vscode.window.showInputBox({ title: `Ralph: answer${about}`, prompt: q.text, ignoreFocusOut: true, placeHolder: 'Your answer (the agent reads it verbatim)' });
    if (!text) return;
    try {
      await this.answer(q.run.folder, q.run.runId, q.id, q.itemId, text);
      void vscode.window.showInformationMessage(`Ralph: answered${about}; the run goes on.`);
    } catch (err) {
      void vscode.window.showErrorMessage(`Ralph: ${(err as Error).message}`);
    }
  }
}
