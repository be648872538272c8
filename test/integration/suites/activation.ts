import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { allCommandIds, CommandIds } from '../../../src/extension/commandIds';
import { EXTENSION_ID, ralphApi, rootLabels, until } from './helpers';

/** The trusted workspace: activation, commands, the tree and Doctor in the real extension host. */
export function registerActivationSuite(): void {
  describe('Ralph Loop in a real VS Code extension host', () => {
    it('runs inside VS Code 1.100', () => {
      assert.match(vscode.version, /^1\.100\./);
    });

    it('activates by itself in a workspace that holds .ralph/ and quantum.json', async () => {
      const ext = vscode.extensions.getExtension(EXTENSION_ID);
      assert.ok(ext);
      await until('workspaceContains activation', () => ext.isActive);
      assert.equal(ext.isActive, true, 'workspaceContains activation did not fire');
      assert.ok(vscode.workspace.isTrusted, 'this suite runs in a trusted workspace');
    });

    it('registers every command of the manifest and of the typed table', async () => {
      await ralphApi();
      const registered = new Set(await vscode.commands.getCommands(true));
      const manifest = vscode.extensions.getExtension(EXTENSION_ID)!.packageJSON as {
        contributes: { commands: { command: string }[] };
      };
      for (const c of manifest.contributes.commands)
        assert.ok(registered.has(c.command), `${c.command} is in the manifest but not registered`);
      for (const id of allCommandIds) assert.ok(registered.has(id), `${id} is not registered`);
    });

    it('shows the fixture workspace sources as the root nodes of the Ralph tree, with counts', async () => {
      const api = await ralphApi();
      const labels = await rootLabels(api);
      // The tree reads the plan graph: the quantum root is titled by its `project`; runs show once a run exists.
      assert.deepEqual(labels, ['flow-next (1 epic)', 'quantum.json — fixture', 'RALPH_TASK.md', 'IJFW waves']);
      const roots = await api.plan.getChildren();
      const quantum = api.plan.getTreeItem(roots[1]!);
      assert.equal(quantum.description, '1/2 stories');
      assert.equal(api.plan.getTreeItem(roots[2]!).description, '1/3 tasks');
    });

    it('updates the tree by itself when a source file appears on disk', async () => {
      const api = await ralphApi();
      const folder = vscode.workspace.workspaceFolders![0]!.uri.fsPath;
      const changed = new Promise<void>((resolve) => {
        const sub = api.plan.onDidChangeTreeData(() => {
          sub.dispose();
          resolve();
        });
      });
      fs.writeFileSync(path.join(folder, 'PROMPT.md'), '- [ ] one\n- [x] two\n');
      try {
        await changed;
        assert.ok((await rootLabels(api)).includes('PROMPT.md'));
      } finally {
        fs.rmSync(path.join(folder, 'PROMPT.md'));
        await vscode.commands.executeCommand(CommandIds.refresh);
      }
    });

    it('Ralph: Doctor opens the report in a read-only editor and runs the agent CLIs for their versions', async () => {
      const text = await vscode.commands.executeCommand<string>(CommandIds.doctor);
      assert.match(text, /quantum\s+quantum\.json — 1\/2 stories/);
      const editor = vscode.window.activeTextEditor;
      assert.ok(editor, 'no editor opened');
      assert.equal(editor.document.uri.scheme, 'ralph');
      assert.equal(editor.document.getText(), text);
      const stubLog = process.env.RALPH_STUB_LOG;
      assert.ok(stubLog, 'the runner puts a recording stub claude first on PATH');
      assert.match(text, /claude\s+9\.9\.9-stub/);
      assert.match(fs.readFileSync(stubLog, 'utf8'), /--version/);
    });
  });
}
