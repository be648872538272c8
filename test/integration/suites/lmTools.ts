import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { LM_TOOL_NAMES, type LmToolName } from '../../../src/core/control/lmTools';
import { claudeBinary, scriptedClaudeEnv } from '../../support/claude';
import { bash, say, startModelServer, type ModelServer } from '../../support/modelServer';
import { makeTempDir } from '../../support/tempFolder';
import { ralphApi } from './helpers';

/**
 * What VS Code would ask the user before `invoke` (the tool's `prepareInvocation`, in this real host). Under extension
 * tests VS Code's dialog service confirms every dialog by itself (`skipDialogs`), so `invokeTool` runs a confirmed
 * tool; the confirmation text is read here from the tool as registered.
 */
async function confirmationOf(
  name: LmToolName,
  input: object,
): Promise<{ title: string; message: string } | undefined> {
  const api = await ralphApi();
  const prepared = await api.lmTools[name].prepareInvocation!(
    { input } as vscode.LanguageModelToolInvocationPrepareOptions<object>,
    new vscode.CancellationTokenSource().token,
  );
  const c = prepared?.confirmationMessages;
  return c ? { title: c.title, message: typeof c.message === 'string' ? c.message : c.message.value } : undefined;
}

/** Calls a tool as a chat agent would (no chat request: VS Code confirms in a dialog) and returns its text. */
async function invoke(name: string, input: object): Promise<string> {
  const r = await vscode.lm.invokeTool(name, { input, toolInvocationToken: undefined });
  return r.content.map((p) => (p instanceof vscode.LanguageModelTextPart ? p.value : '')).join('');
}

/** Ralph's Language Model Tools called through `vscode.lm.invokeTool`, with the workbench's real confirmations. */
export function registerLmToolsSuite(): void {
  describe('Language Model Tools through vscode.lm.invokeTool', function () {
    this.timeout(120_000);
    const folder = () => vscode.workspace.workspaceFolders![0]!.uri.fsPath;
    const quantum = () => path.join(folder(), 'quantum.json');
    let savedQuantum = '';
    let server: ModelServer | undefined;
    before(() => {
      savedQuantum = fs.readFileSync(quantum(), 'utf8');
      fs.writeFileSync(
        quantum(),
        JSON.stringify({
          project: 'tools',
          stories: [
            { id: 'US-001', title: 'First story', status: 'passed', priority: 1, dependsOn: [] },
            { id: 'US-002', title: 'Second story', status: 'pending', priority: 2, dependsOn: ['US-001'] },
            { id: 'US-003', title: 'Third story', status: 'pending', priority: 3, dependsOn: ['US-002'] },
          ],
        }),
      );
    });
    after(() => fs.writeFileSync(quantum(), savedQuantum));
    afterEach(async () => {
      await server?.close();
      server = undefined;
    });

    it('registers the six tools the manifest declares', () => {
      const ours = vscode.lm.tools.filter((t) => t.name.startsWith('ralph_')).map((t) => t.name);
      assert.deepEqual(ours.sort(), [...LM_TOOL_NAMES].sort());
    });

    it('ralph_plan answers the ready items with their dependencies, and what waits on what', async () => {
      const text = await invoke('ralph_plan', {});
      assert.match(text.split('\n')[0]!, /^Ralph plan of .*: \d+\/\d+ done, \d+ ready/);
      const report = JSON.parse(text.slice(text.indexOf('\n') + 1));
      const us2 = report.ready.find((r: { id: string }) => r.id === 'US-002');
      assert.deepEqual(us2.dependsOn, ['US-001']);
      assert.equal(us2.source, 'quantum');
      const us3 = report.waiting.find((w: { id: string }) => w.id === 'US-003');
      assert.deepEqual(us3.waitsOn, [{ id: 'US-002', status: 'pending' }]);
    });

    it('ralph_reset asks first, naming what goes back; confirmed, the story goes back', async () => {
      const asked = await confirmationOf('ralph_reset', { id: 'US-001' });
      assert.equal(asked?.title, 'Reset US-001?');
      assert.match(asked!.message, /US-001 \(First story, passed\) goes back to pending/);
      const text = await invoke('ralph_reset', { id: 'US-001' });
      assert.match(text, /Ralph reset US-001/);
      const story = JSON.parse(fs.readFileSync(quantum(), 'utf8')).stories[0];
      assert.equal(story.status, 'pending');
    });

    it('ralph_reset refuses a story to do, asking nothing', async () => {
      assert.equal(await confirmationOf('ralph_reset', { id: 'US-003' }), undefined);
      assert.match(await invoke('ralph_reset', { id: 'US-003' }), /US-003 cannot be reset/);
    });

    it('ralph_start asks, starts a run; ralph_status sees it; ralph_stop asks and stops it', async () => {
      const api = await ralphApi();
      fs.writeFileSync(path.join(folder(), 'RALPH_TASK.md'), '- [ ] One\n- [ ] Two\n');
      server = await startModelServer([bash('sleep 2'), say('Still thinking.'), say('never used')]);
      Object.assign(process.env, scriptedClaudeEnv(server.url, makeTempDir('ralph-int-home-')));
      await vscode.workspace
        .getConfiguration('ralph')
        .update('claudePath', claudeBinary, vscode.ConfigurationTarget.Workspace);
      const agentStarted = new Promise<void>((resolve) => {
        const sub = api.runs.onEvent(({ event }) => {
          if (event.type === 'agentStarted') {
            sub.dispose();
            resolve();
          }
        });
      });
      const asked = await confirmationOf('ralph_start', { source: 'RALPH_TASK.md' });
      assert.equal(asked?.title, 'Start a Ralph loop?');
      assert.match(asked!.message, /unattended in .*, on RALPH_TASK\.md/);
      const started = await invoke('ralph_start', { source: 'RALPH_TASK.md' });
      const runId = /Ralph run (\S+) started/.exec(started)?.[1];
      assert.ok(runId, started);
      await agentStarted;

      const status = await invoke('ralph_status', {});
      assert.match(status.split('\n')[0]!, new RegExp(`run ${runId} `));

      assert.equal(await confirmationOf('ralph_start', { source: 'RALPH_TASK.md' }), undefined);
      const again = await invoke('ralph_start', { source: 'RALPH_TASK.md' });
      assert.match(again, /already active/, 'a second start is refused without asking');

      const stopAsk = await confirmationOf('ralph_stop', {});
      assert.equal(stopAsk?.title, 'Stop the Ralph run?');
      assert.match(stopAsk!.message, new RegExp(`${runId} .* will stop after its current iteration`));
      const stopped = await invoke('ralph_stop', {});
      assert.match(stopped, new RegExp(`Ralph run ${runId} will stop`));
      const result = await api.runs.wait(folder());
      assert.equal(result?.state, 'stopped');
    });
  });
}

/** In Restricted Mode the tools still read; ralph_start refuses without asking. */
export function registerLmToolsRestrictedSuite(): void {
  describe('Language Model Tools in Restricted Mode', () => {
    it('ralph_status reads; ralph_start refuses, asking nothing', async () => {
      assert.match(await invoke('ralph_status', {}), /^Ralph status of /);
      assert.equal(await confirmationOf('ralph_start', {}), undefined);
      assert.match(await invoke('ralph_start', {}), /Restricted Mode/);
    });
  });
}
