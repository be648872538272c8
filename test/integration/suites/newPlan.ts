import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { CommandIds } from '../../../src/extension/commandIds';
import type { NewPlanResult } from '../../../src/extension/newPlan';
import { EXTENSION_ID, ralphApi, rootLabels, until } from './helpers';

interface WalkthroughStep {
  id: string;
  description: string;
  media: { markdown?: string };
  completionEvents?: string[];
}

/** Resolves once the Ralph tree's root labels satisfy `ok` (the tree follows the files through its watchers). */
async function treeUntil(ok: (labels: string[]) => boolean): Promise<string[]> {
  const api = await ralphApi();
  for (;;) {
    const labels = await rootLabels(api);
    if (ok(labels)) return labels;
    await new Promise<void>((resolve) => {
      const sub = api.plan.onDidChangeTreeData(() => {
        sub.dispose();
        resolve();
      });
    });
  }
}

/** The first hour: the walkthrough and **Ralph: New Plan…** in the real extension host. */
export function registerNewPlanSuite(): void {
  describe('the first-hour walkthrough and Ralph: New Plan…', function () {
    this.timeout(90_000);
    const folder = () => vscode.workspace.workspaceFolders![0]!.uri.fsPath;

    it('contributes a walkthrough whose every link runs a registered command and whose media ship', async () => {
      await ralphApi();
      const ext = vscode.extensions.getExtension(EXTENSION_ID)!;
      const walkthroughs = (
        ext.packageJSON as { contributes: { walkthroughs: { id: string; steps: WalkthroughStep[] }[] } }
      ).contributes.walkthroughs;
      const first = walkthroughs.find((w) => w.id === 'ralph.firstHour');
      assert.ok(first, 'the ralph.firstHour walkthrough is contributed');
      assert.deepEqual(
        first.steps.map((s) => s.id),
        ['agent', 'plan', 'start', 'watch', 'steer'],
      );
      const registered = new Set(await vscode.commands.getCommands(true));
      for (const step of first.steps) {
        const links = [...step.description.matchAll(/\(command:([\w.]+)/g)].map((m) => m[1]!);
        assert.ok(links.length, `${step.id} offers an action`);
        for (const id of links) assert.ok(registered.has(id), `${step.id} links ${id}, which is not registered`);
        for (const e of step.completionEvents ?? [])
          if (e.startsWith('onCommand:')) assert.ok(registered.has(e.slice(10)), `${step.id} completes on ${e}`);
        assert.ok(fs.existsSync(path.join(ext.extensionPath, step.media.markdown!)), `${step.id} media`);
      }
    });

    it('opens in the Welcome editor through VS Code’s own command', async () => {
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
      await vscode.commands.executeCommand(
        'workbench.action.openWalkthrough',
        `${EXTENSION_ID}#ralph.firstHour`,
        false,
      );
      await until(
        'the Welcome editor',
        () => vscode.window.tabGroups.all.some((g) => g.tabs.some((t) => t.label === 'Welcome')),
        { now: () => vscode.window.tabGroups.all.flatMap((g) => g.tabs.map((t) => t.label)).join(', ') },
      );
      const labels = vscode.window.tabGroups.all.flatMap((g) => g.tabs.map((t) => t.label));
      assert.ok(
        labels.includes('Welcome'),
        `the walkthrough opened in the Welcome editor (tabs: ${labels.join(', ')})`,
      );
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    });

    it('New Plan: the real quick pick and input box make a checklist beside RALPH_TASK.md, opened and in the tree', async () => {
      const dir = path.join(folder(), 'specs');
      assert.equal(fs.existsSync(dir), false, 'the fixture has no specs/ yet');
      let settled = false;
      const made = Promise.resolve(
        vscode.commands.executeCommand<NewPlanResult | undefined>(CommandIds.newPlan),
      ).finally(() => {
        settled = true;
      });
      try {
        // The kind pick (Checklist first), then the title box with its default: accept each as Enter would.
        await until('New Plan to take the accepted answers', () => settled, {
          then: () => vscode.commands.executeCommand('workbench.action.acceptSelectedQuickOpenItem'),
          everyMs: 250,
        });
        const result = await made;
        assert.ok(result, 'New Plan wrote a plan');
        assert.deepEqual(
          result.files.map((f) => path.relative(folder(), f)),
          [path.join('specs', 'a-first-feature', 'tasks.md')],
          'a checklist next to the existing RALPH_TASK.md, and no gate (the folder has one)',
        );
        assert.equal(vscode.window.activeTextEditor?.document.uri.fsPath, result.opened);
        assert.match(fs.readFileSync(result.opened, 'utf8'), /^# Ralph task: A first feature\n/);
        await treeUntil((l) => l.includes('specs/a-first-feature/tasks.md'));
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
        await vscode.commands.executeCommand('workbench.action.closeAllEditors');
      }
      await treeUntil((l) => !l.includes('specs/a-first-feature/tasks.md'));
    });

    it('New Plan: a flow-next epic after the folder’s fn-1, in its epics/ dialect, that the tree shows', async () => {
      const before = await rootLabels(await ralphApi());
      assert.ok(before.includes('flow-next (1 epic)'), before.join(', '));
      const result = await vscode.commands.executeCommand<NewPlanResult | undefined>(CommandIds.newPlan, {
        kind: 'flow-next',
        title: 'Walkthrough epic',
      });
      try {
        assert.ok(result);
        const rel = result.files.map((f) => path.relative(folder(), f).split(path.sep).join('/'));
        assert.deepEqual(rel, [
          '.flow/epics/fn-2-walkthrough-epic.json',
          '.flow/epics/fn-2-walkthrough-epic.md',
          '.flow/tasks/fn-2-walkthrough-epic.1.json',
          '.flow/tasks/fn-2-walkthrough-epic.1.md',
          '.flow/tasks/fn-2-walkthrough-epic.2.json',
          '.flow/tasks/fn-2-walkthrough-epic.2.md',
        ]);
        await treeUntil((l) => l.includes('flow-next (2 epics)'));
        const snap = (await ralphApi()).store.snapshot();
        const plan = snap.folders.find((f) => f.folder === folder())?.plan;
        const task2 = plan?.items.find((i) => i.id === 'fn-2-walkthrough-epic.2');
        assert.deepEqual(task2?.dependsOn, ['fn-2-walkthrough-epic.1']);
      } finally {
        for (const f of result?.files ?? []) fs.rmSync(f, { force: true });
        await vscode.commands.executeCommand('workbench.action.closeAllEditors');
      }
      await treeUntil((l) => l.includes('flow-next (1 epic)'));
    });
  });
}
