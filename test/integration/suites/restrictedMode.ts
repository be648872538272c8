import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as vscode from 'vscode';
import { CommandIds } from '../../../src/extension/commandIds';
import { EXTENSION_ID, ralphApi, rootLabels } from './helpers';

/** The untrusted workspace (Restricted Mode): the tree works, no agent binary is ever executed. */
export function registerRestrictedModeSuite(): void {
  describe('Ralph Loop in Restricted Mode', () => {
    it('opens the workspace untrusted', () => {
      assert.equal(vscode.workspace.isTrusted, false);
    });

    it('still activates and shows the sources in the tree', async () => {
      const api = await ralphApi();
      assert.ok(vscode.extensions.getExtension(EXTENSION_ID)!.isActive);
      assert.ok((await rootLabels(api)).includes('quantum.json — fixture'));
    });

    it('Doctor locates the agent CLIs but runs none of them', async () => {
      const text = await vscode.commands.executeCommand<string>(CommandIds.doctor);
      assert.match(text, /claude\s+\? \(not run: workspace is not trusted\)/);
      const stubLog = process.env.RALPH_STUB_LOG!;
      const calls = fs.existsSync(stubLog) ? fs.readFileSync(stubLog, 'utf8') : '';
      assert.equal(calls, '', `the stub claude was executed in Restricted Mode: ${calls}`);
    });

    it('Ralph: Start refuses to run an agent in an untrusted workspace', async () => {
      const runId = await vscode.commands.executeCommand<string | undefined>(CommandIds.start, {
        source: 'RALPH_TASK.md',
      });
      assert.equal(runId, undefined);
      const runs = vscode.workspace.workspaceFolders![0]!.uri.fsPath + '/.ralph/runs';
      assert.equal(fs.existsSync(runs) ? fs.readdirSync(runs).length : 0, 0, 'no run was created');
      const stubLog = process.env.RALPH_STUB_LOG!;
      assert.equal(fs.existsSync(stubLog) ? fs.readFileSync(stubLog, 'utf8') : '', '');
    });
  });
}
