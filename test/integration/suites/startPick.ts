import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { CommandIds } from '../../../src/extension/commandIds';
import { claudeBinary, scriptedClaudeEnv } from '../../support/claude';
import { bash, say, startModelServer } from '../../support/modelServer';
import { makeTempDir } from '../../support/tempFolder';
import { ralphApi, until } from './helpers';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * **Ralph: Start** on the fixture's quantum.json (US-002 ready) asks "one at a time or in parallel" in VS Code's own
 * quick input, waits for the answer, and starts once it is accepted. The choice's passage into the engine's
 * options is tested in test/component/extension/startParallel.test.ts (the parallel engine is issue 19's).
 */
export function registerStartPickSuite(): void {
  describe('Ralph: Start asks how quantum stories run (the real quick pick)', function () {
    this.timeout(120_000);

    it('waits on the pick for a quantum.json run and starts once "one at a time" is accepted', async () => {
      const api = await ralphApi();
      const folder = vscode.workspace.workspaceFolders![0]!.uri.fsPath;
      const quantum = path.join(folder, 'quantum.json');
      const before = fs.readFileSync(quantum);
      const server = await startModelServer([bash('sleep 30'), say('never reached')]);
      Object.assign(process.env, scriptedClaudeEnv(server.url, makeTempDir('ralph-int-home-')));
      await vscode.workspace
        .getConfiguration('ralph')
        .update('claudePath', claudeBinary, vscode.ConfigurationTarget.Workspace);
      let settled = false;
      const started = Promise.resolve(
        vscode.commands.executeCommand<string | undefined>(CommandIds.start, {
          source: 'quantum',
          agent: 'claude',
          noGates: true,
        }),
      ).finally(() => {
        settled = true;
      });
      try {
        await sleep(3000);
        assert.equal(settled, false, 'Start waits for the answer to its pick');
        assert.equal(api.runs.isRunning(folder), false, 'no engine before the pick is answered');
        // The first entry ("Run stories one at a time") is selected: accept it as Enter would.
        await until('Start to take the accepted pick', () => settled || api.runs.isRunning(folder), {
          then: () => vscode.commands.executeCommand('workbench.action.acceptSelectedQuickOpenItem'),
          everyMs: 250,
        });
        const runId = await started;
        assert.ok(runId, 'the run started once the pick was answered');
      } finally {
        api.runs.cancel(folder);
        await api.runs.wait(folder);
        await server.close();
        fs.writeFileSync(quantum, before);
      }
    });
  });
}
