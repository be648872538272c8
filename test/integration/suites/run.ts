import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { CommandIds } from '../../../src/extension/commandIds';
import { bash, edit, say, startModelServer, type ModelServer, type Turn } from '../../support/modelServer';
import { ralphApi, until } from './helpers';
import { claudeBinary, scriptedClaudeEnv } from '../../support/claude';
import { makeTempDir } from '../../support/tempFolder';

/**
 * Ralph: Start runs the real engine in this extension host, driving the real Claude Code CLI against a scripted
 * model server started here; Ralph: Stop writes the sentinel the engine honours.
 */
export function registerRunSuite(): void {
  describe('Ralph: Start in the real extension host', function () {
    this.timeout(120_000);
    let server: ModelServer | undefined;
    const folder = () => vscode.workspace.workspaceFolders![0]!.uri.fsPath;
    const task = () => path.join(folder(), 'RALPH_TASK.md');

    async function useServer(script: Turn[]): Promise<void> {
      server = await startModelServer(script);
      Object.assign(process.env, scriptedClaudeEnv(server.url, makeTempDir('ralph-int-home-')));
      await vscode.workspace
        .getConfiguration('ralph')
        .update('claudePath', claudeBinary, vscode.ConfigurationTarget.Workspace);
    }
    afterEach(async () => {
      await server?.close();
      server = undefined;
    });

    it('runs the checklist to verified completion with the real claude CLI (a folder that is not a git repository)', async () => {
      const api = await ralphApi();
      await useServer([
        edit(task(), '- [ ] Add tests', '- [x] Add tests'),
        say('Tests added.'),
        edit(task(), '- [ ] Document the CLI', '- [x] Document the CLI'),
        say('Documented.'),
      ]);
      const runId = await vscode.commands.executeCommand<string | undefined>(CommandIds.start, {
        source: 'RALPH_TASK.md',
      });
      assert.ok(runId, 'the run started');
      assert.equal(api.runs.isRunning(folder()), true);
      const result = await api.runs.wait(folder());
      assert.equal(result?.state, 'completed', result?.reason);
      assert.equal(result?.done, 3);
      assert.doesNotMatch(fs.readFileSync(task(), 'utf8'), /\[ \]/);
      assert.match(
        fs.readFileSync(path.join(folder(), '.ralph', 'runs', runId, 'progress.txt'), 'utf8'),
        /completion_reason=DONE/,
      );
      assert.match(fs.readFileSync(path.join(folder(), '.ralph', 'activity.log'), 'utf8'), /VERIFIED/);
    });

    it('Ralph: Stop ends a run after its iteration, through the STOP sentinel', async () => {
      const api = await ralphApi();
      fs.writeFileSync(task(), '- [ ] One\n- [ ] Two\n');
      await useServer([bash('sleep 2'), say('Still thinking.'), say('never used')]);
      const seen: string[] = [];
      const sub = api.runs.onEvent(({ event }) => seen.push(event.type));
      try {
        const runId = await vscode.commands.executeCommand<string | undefined>(CommandIds.start, {
          source: 'RALPH_TASK.md',
        });
        assert.ok(runId);
        await until('the agent to start', () => seen.includes('agentStarted'), { now: () => seen.join(' ') });
        const stopped = await vscode.commands.executeCommand<string | undefined>(CommandIds.stop);
        assert.equal(stopped, runId, 'Stop found the single active run by itself');
        assert.ok(fs.existsSync(path.join(folder(), '.ralph', 'runs', runId, 'STOP')));
        const result = await api.runs.wait(folder());
        assert.equal(result?.state, 'stopped');
        assert.equal(result?.iterations, 1);
      } finally {
        sub.dispose();
      }
    });

    it('Ralph: Cancel ends the agent at once and the run is interrupted', async () => {
      const api = await ralphApi();
      fs.writeFileSync(task(), '- [ ] One\n');
      await useServer([bash('sleep 30'), say('never reached')]);
      let agentPid: number | null = null;
      const sub = api.runs.onEvent(({ event }) => {
        if (event.type === 'agentStarted') agentPid = event.pid;
      });
      try {
        const runId = await vscode.commands.executeCommand<string | undefined>(CommandIds.start, {
          source: 'RALPH_TASK.md',
        });
        assert.ok(runId);
        await until('the agent to start', () => agentPid !== null);
        await server!.waitForAgentRequests(1);
        assert.equal(await vscode.commands.executeCommand<boolean>(CommandIds.cancel), true);
        const result = await api.runs.wait(folder());
        assert.equal(result?.state, 'cancelled');
        assert.equal(result?.exitCode, 130);
        assert.ok(agentPid);
        assert.throws(() => process.kill(-agentPid!, 0), 'no process of the agent group is left');
        assert.match(
          fs.readFileSync(path.join(folder(), '.ralph', 'runs', runId, 'progress.txt'), 'utf8'),
          /completion_reason=INTERRUPTED/,
        );
      } finally {
        sub.dispose();
      }
    });
  });
}
