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

  describe('Ralph: Start asks which agent, remembers it per workspace; Ralph: Choose Agent… changes it (the real quick pick)', function () {
    this.timeout(120_000);

    it('offers the agent CLIs found, runs the one picked, starts without asking next time, and runs the one chosen later', async () => {
      const api = await ralphApi();
      const folder = vscode.workspace.workspaceFolders![0]!.uri.fsPath;
      const configFile = path.join(folder, '.ralph', 'config.json');
      const original = fs.readFileSync(configFile, 'utf8');
      const settings = vscode.workspace.getConfiguration('ralph');
      const claudeBefore = settings.inspect('claudePath')?.workspaceValue;
      // Two agent CLIs on this machine (stubs that answer --version and otherwise wait), claude not among them.
      const bin = makeTempDir('ralph-int-agents-');
      const stub = (name: string, version: string) => {
        const file = path.join(bin, name);
        fs.writeFileSync(file, `#!/bin/sh\n[ "$1" = --version ] && { echo "${version}"; exit 0; }\nexec sleep 120\n`, {
          mode: 0o755,
        });
        return file;
      };
      const ran = () => {
        const runs = path.join(folder, '.ralph', 'runs');
        return (id: string) => JSON.parse(fs.readFileSync(path.join(runs, id, 'run.json'), 'utf8')).agent as string;
      };
      /** Runs a command that may show a pick, accepting its first row (as Enter would) until it settles. */
      const answeringFirst = async <T>(run: Thenable<T>): Promise<T> => {
        let settled = false;
        const p = Promise.resolve(run).finally(() => (settled = true));
        await until('the command to take the accepted pick', () => settled, {
          then: () => vscode.commands.executeCommand('workbench.action.acceptSelectedQuickOpenItem'),
          everyMs: 250,
        });
        return p;
      };
      const startOnce = async (answer: boolean): Promise<string> => {
        const started = vscode.commands.executeCommand<string | undefined>(CommandIds.start, {
          source: 'RALPH_TASK.md',
          noGates: true,
        });
        const runId = answer ? await answeringFirst(started) : await started;
        assert.ok(runId, 'the run started (the Ralph log says why not)');
        api.runs.cancel(folder);
        await api.runs.wait(folder);
        return runId;
      };
      try {
        // The folder names no agent (the fixture's config does: that one Start never asks over).
        const named = JSON.parse(original) as Record<string, unknown>;
        delete named.agent;
        fs.writeFileSync(configFile, JSON.stringify(named, null, 2));
        await settings.update('claudePath', path.join(bin, 'no-claude-here'), vscode.ConfigurationTarget.Workspace);
        await settings.update('codexPath', stub('codex', 'codex-cli 0.171.0'), vscode.ConfigurationTarget.Workspace);
        await settings.update('geminiPath', stub('gemini', '0.61.0'), vscode.ConfigurationTarget.Workspace);

        // 1. Several found, nothing remembered: Start asks (codex first, Ralph's order) and runs the one accepted.
        const first = await startOnce(true);
        assert.equal(ran()(first), 'codex');
        assert.equal(api.runs.agents.remembered(folder), 'codex');

        // 2. Remembered: Start runs codex without a pick (no answer is given; it would wait forever on one).
        const second = await startOnce(false);
        assert.equal(ran()(second), 'codex');

        // 3. Ralph: Choose Agent… offers the others first (the current one last, marked): gemini is accepted.
        const chosen = await answeringFirst(
          vscode.commands.executeCommand<string | undefined>(CommandIds.chooseAgent, folder),
        );
        assert.equal(chosen, 'gemini');
        assert.equal(api.runs.agents.remembered(folder), 'gemini');

        // 4. The next Start runs gemini, again without asking.
        const third = await startOnce(false);
        assert.equal(ran()(third), 'gemini');
      } finally {
        api.runs.cancel(folder);
        await api.runs.wait(folder);
        fs.writeFileSync(configFile, original);
        await settings.update('claudePath', claudeBefore, vscode.ConfigurationTarget.Workspace);
        await settings.update('codexPath', undefined, vscode.ConfigurationTarget.Workspace);
        await settings.update('geminiPath', undefined, vscode.ConfigurationTarget.Workspace);
        await api.runs.agents.forget(folder);
        fs.rmSync(bin, { recursive: true, force: true });
      }
    });
  });
}
