import * as vscode from 'vscode';
import { CommandIds, type AnswerArgs } from './commandIds';
import { Disposable } from './lifecycle';
import type { RunStore, StoreQuestion } from './runStore';
import * as notify from './notify';

/**
 * Notifications about runs, whoever started them, from the store's changes:
 * - a run that pauses: a message naming **Ralph: Resume** (with a Resume button), not a file to remove;
 * - a question the run waits on: the question with **Answer…**, which runs **Ralph: Answer Question…** for it (an
 *   input box; the answer goes through core `answerQuestion`, the path of `ralph answer`).
 * Once per pause and once per question.
 */
export class RunNotifications extends Disposable {
  private readonly paused = new Set<string>();

  constructor(private readonly store: RunStore) {
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
      void notify
        .showInformationMessage(`Ralph: run ${r.runId} is paused. Run "Ralph: Resume" to go on.`, 'Resume')
        .then((c) => {
          if (c === 'Resume') void vscode.commands.executeCommand(CommandIds.resume, r.folder);
        });
    }
    this.paused.clear();
    for (const k of now) this.paused.add(k);
  }

  private async ask(q: StoreQuestion): Promise<void> {
    const about = q.itemId ? ` (${q.itemId})` : '';
    const choice = await notify.showInformationMessage(`Ralph: run ${q.run.runId} asks${about}: ${q.text}`, 'Answer…');
    if (choice !== 'Answer…') return;
    const args: AnswerArgs = { folder: q.run.folder, runId: q.run.runId, ...(q.itemId ? { itemId: q.itemId } : {}) };
    await vscode.commands.executeCommand(CommandIds.answer, args);
  }
}
