import * as assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { CommandIds } from '../../../src/extension/commandIds';
import type { RalphExtensionApi } from '../../../src/extension/extension';
import type { PlanNode } from '../../../src/extension/planTree';
import type { TreeUi } from '../../../src/extension/planTreeCommands';
import { edit, say, startModelServer } from '../../support/modelServer';
import { makeTempDir } from '../../support/tempFolder';
import { EXTENSION_ID, ralphApi, until } from './helpers';

type Story = { id: string; status: string; dependsOn?: string[] };
const quantum = (stories: Story[]) =>
  JSON.stringify(
    {
      project: 'fixture',
      feature: 'fixture-feature',
      stories: stories.map((s, i) => ({
        id: s.id,
        title: `Story ${s.id}`,
        status: s.status,
        priority: i + 1,
        dependsOn: s.dependsOn ?? [],
        attempts: 0,
      })),
    },
    null,
    2,
  ) + '\n';

/** Resolves with the node once the tree shows row `id` with a description matching `re` (the store re-read the file). */
async function rowShows(api: RalphExtensionApi, id: string, re: RegExp): Promise<PlanNode> {
  return rowUntil(api, id, (item) => re.test(String(item.description)));
}

/** Resolves with the node once row `id` exists and its tree item passes `ok` (the store re-read the file or followed the run). */
async function rowUntil(
  api: RalphExtensionApi,
  id: string,
  ok: (item: vscode.TreeItem) => boolean,
  ms?: number,
): Promise<PlanNode> {
  const passes = () => {
    const n = api.plan.node(id);
    return n && ok(api.plan.getTreeItem(n)) ? n : undefined;
  };
  await until(`row ${id} to become as expected`, () => passes() !== undefined, {
    now: () => {
      const n = api.plan.node(id);
      if (!n) return 'absent';
      const it = api.plan.getTreeItem(n);
      return JSON.stringify({ label: it.label, description: it.description, contextValue: it.contextValue });
    },
    ms,
  });
  return passes()!;
}

/** The plan tree in the real host: live rows from the store, right-click commands on nodes (issue 14). */
export function registerPlanTreeSuite(): void {
  describe('the plan tree in the real host', () => {
    let folder: string;
    let file: string;
    let original: string;
    let api: RalphExtensionApi;
    let realUi: TreeUi;
    before(async () => {
      api = await ralphApi();
      folder = vscode.workspace.workspaceFolders![0]!.uri.fsPath;
      file = path.join(folder, 'quantum.json');
      original = fs.readFileSync(file, 'utf8');
      realUi = api.tree.ui;
    });
    afterEach(async () => {
      api.tree.ui = realUi;
      fs.writeFileSync(file, original);
      await rowShows(api, `${folder}#quantum/story/US-002`, /to do/);
    });

    it("updates the changed story's row (not the root) when quantum.json changes on disk", async () => {
      const id = `${folder}#quantum/story/US-002`;
      await rowShows(api, id, /to do/);
      const fired = new Promise<{ ids: string[] | undefined }>((resolve) => {
        const sub = api.plan.onDidChangeTreeData((e) => {
          const ids = e === undefined ? undefined : (Array.isArray(e) ? e : [e]).map((n) => n.id);
          if (ids && !ids.includes(id)) return;
          sub.dispose();
          resolve({ ids });
        });
      });
      fs.writeFileSync(
        file,
        quantum([
          { id: 'US-001', status: 'passed' },
          { id: 'US-002', status: 'in_progress', dependsOn: ['US-001'] },
        ]),
      );
      const f = await fired;
      assert.ok(f.ids, 'the changed row was fired, not the root');
      assert.match(String(api.plan.getTreeItem(api.plan.node(id)!).description), /in progress/);
      assert.equal((api.plan.getTreeItem(api.plan.node(id)!).iconPath as vscode.ThemeIcon).id, 'sync~spin');
    });

    it('Reset Task and Dependents on a node resets exactly the cascade the modal lists, on disk', async () => {
      fs.writeFileSync(
        file,
        quantum([
          { id: 'US-001', status: 'passed' },
          { id: 'US-002', status: 'passed', dependsOn: ['US-001'] },
          { id: 'US-003', status: 'passed' },
        ]),
      );
      const node = await rowShows(api, `${folder}#quantum/story/US-001`, /^done/);
      await rowShows(api, `${folder}#quantum/story/US-003`, /^done/);
      assert.match(String(api.plan.getTreeItem(node).contextValue), /\bresettable\b/);
      const asked: string[] = [];
      api.tree.ui = {
        ...realUi,
        confirm: async (m, d) => {
          asked.push(m, d);
          return true;
        },
        info: (m) => void asked.push(m),
      };
      const reset = await vscode.commands.executeCommand<string[]>(CommandIds.treeResetCascade, node);
      assert.deepEqual(reset, ['US-001', 'US-002']);
      assert.equal(asked[0], 'Reset US-001 and its dependents (2 items) to "to do"?');
      assert.equal(asked[1], '• US-001 Story US-001 (done → to do)\n• US-002 Story US-002 (done → to do)');
      const onDisk = (JSON.parse(fs.readFileSync(file, 'utf8')) as { stories: Story[] }).stories.map((s) => [
        s.id,
        s.status,
      ]);
      assert.deepEqual(onDisk, [
        ['US-001', 'pending'],
        ['US-002', 'pending'],
        ['US-003', 'passed'],
      ]);
      await rowShows(api, `${folder}#quantum/story/US-002`, /to do/);
    });

    it('Start Here on a story whose dependency is open explains why and offers the next ready one', async () => {
      fs.writeFileSync(
        file,
        quantum([
          { id: 'US-001', status: 'pending' },
          { id: 'US-002', status: 'pending', dependsOn: ['US-001'] },
        ]),
      );
      await rowShows(api, `${folder}#quantum/story/US-001`, /to do/);
      const node = api.plan.node(`${folder}#quantum/story/US-002`)!;
      const offered: [string, string | undefined][] = [];
      api.tree.ui = {
        ...realUi,
        offer: async (m, a) => {
          offered.push([m, a]);
          return false;
        },
      };
      const started = await vscode.commands.executeCommand<string | undefined>(CommandIds.treeStartHere, node);
      assert.equal(started, undefined, 'declined: no run');
      assert.deepEqual(offered, [
        [
          'Ralph: cannot start with US-002: US-002 waits on US-001 (pending). The next ready item of its source is US-001.',
          'Start with US-001',
        ],
      ]);
    });

    it("shows a wave's subagents as its children, live, when a checkpoint appears and goes (issue 18's core)", async () => {
      const wave = `${folder}#waves/1`;
      await rowUntil(api, wave, () => true);
      const checkpoint = path.join(folder, '.ijfw', 'wave-1', 'subagent-1-A.checkpoint.json');
      const sub = `${wave}/1-A`;
      try {
        fs.writeFileSync(
          checkpoint,
          JSON.stringify({
            schema_version: 1,
            wave_id: '1',
            sub_id: '1-A',
            ts: new Date().toISOString(),
            last_action: 'editing the lexer',
            next_step: 'finish the lexer',
          }),
        );
        const node = await rowUntil(api, sub, (it) => it.label === '1-A');
        assert.deepEqual(
          (await api.plan.getChildren(api.plan.node(wave)!)).map((n) => n.id),
          [sub],
          "the wave row's children",
        );
        const item = api.plan.getTreeItem(node);
        assert.match(String(item.description), /^active · .* next: finish the lexer$/);
        assert.match(String(item.contextValue), /\bsubagent\b/);
        assert.match(String(api.plan.getTreeItem(api.plan.node(wave)!).description), /0\/1 done/);
      } finally {
        fs.rmSync(checkpoint, { force: true });
      }
      await until('the row to go with its checkpoint', () => api.plan.node(sub) === undefined);
      assert.equal(api.plan.node(sub), undefined, 'the row went with its checkpoint');
    });

    it("Open Task File on a checklist box opens its file at the box's line", async () => {
      const task = path.join(folder, 'RALPH_TASK.md');
      const before = fs.readFileSync(task, 'utf8');
      try {
        fs.writeFileSync(task, '# Task\n\n- [x] First box\n- [ ] Second box\n');
        const id = `${folder}#checklist/checkbox/RALPH_TASK.md:4`;
        const node = await rowUntil(api, id, (it) => it.label === 'Second box');
        assert.match(String(api.plan.getTreeItem(node).contextValue), /\bfile\b/);
        assert.equal(await vscode.commands.executeCommand<boolean>(CommandIds.treeOpenFile, node), true);
        const e = vscode.window.activeTextEditor!;
        assert.equal(e.document.uri.fsPath, task);
        assert.equal(e.selection.active.line, 3, 'line 4 (0-based 3)');
        assert.equal(e.document.lineAt(e.selection.active.line).text, '- [ ] Second box');
      } finally {
        await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
        fs.writeFileSync(task, before);
      }
    });

    it('Answer Question… on the item a run waits on writes the answer through core answerQuestion, and the run goes on', async function () {
      this.timeout(150_000);
      const repo = vscode.extensions.getExtension(EXTENSION_ID)!.extensionPath;
      const task = path.join(folder, 'RALPH_TASK.md');
      const taskBefore = fs.readFileSync(task, 'utf8');
      const configFile = path.join(folder, '.ralph', 'config.json');
      const config = fs.readFileSync(configFile, 'utf8');
      const server = await startModelServer([
        say('I need a decision first.\n<question>Which port?</question>'),
        edit(task, '- [ ] Pick the port', '- [x] Pick the port'),
        say('Done with 8080.'),
      ]);
      const home = makeTempDir('ralph-tree-answer-home-');
      let child: ChildProcess | undefined;
      try {
        fs.writeFileSync(task, '- [ ] Pick the port\n');
        fs.writeFileSync(
          configFile,
          JSON.stringify(
            { ...JSON.parse(config), claudePath: path.join(repo, 'node_modules', '.bin', 'claude') },
            null,
            2,
          ),
        );
        let out = '';
        child = spawn(
          process.execPath,
          [
            path.join(repo, 'dist', 'cli.js'),
            '-C',
            folder,
            'run',
            '--source',
            'RALPH_TASK.md',
            '--no-gates',
            '--max-iterations',
            '4',
            '--trust',
          ],
          {
            env: {
              ...process.env,
              ANTHROPIC_BASE_URL: server.url,
              ANTHROPIC_API_KEY: 'test',
              HOME: home,
              IS_SANDBOX: '1',
              CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
            },
            stdio: ['ignore', 'pipe', 'pipe'],
          },
        );
        child.stdout!.on('data', (d) => {
          out += String(d);
        });
        child.stderr!.on('data', (d) => {
          out += String(d);
        });
        const exited = new Promise<number | null>((resolve) => child!.on('close', resolve));
        const id = `${folder}#checklist/checkbox/RALPH_TASK.md:1`;
        const node = await Promise.race([
          rowUntil(api, id, (it) => /\bwaiting\b/.test(String(it.contextValue)), 130_000),
          exited.then((code) => {
            throw new Error(`the run ended (${code}) before the tree showed the item waiting:\n${out}`);
          }),
        ]);
        assert.equal((api.plan.getTreeItem(node).iconPath as vscode.ThemeIcon).id, 'comment-discussion');
        const runId = api.plan.row(node)!.runId!;
        const answerFile = api.store.snapshot().runs.find((r) => r.runId === runId)!.facts.questions[0]!.answerFile;
        assert.equal(fs.existsSync(answerFile), false, 'not answered yet');
        const asked: [string, string | undefined][] = [];
        api.tree.ui = {
          ...realUi,
          ask: async (title, prompt) => {
            asked.push([title, prompt]);
            return 'Port 8080';
          },
        };
        const requestsAtQuestion = server.agentRequests().length;
        const question = await vscode.commands.executeCommand<string | undefined>(CommandIds.treeAnswer, node);
        assert.ok(question, 'a question was answered');
        assert.deepEqual(asked, [['Ralph: answer (RALPH_TASK.md:1)', 'Which port?']]);
        // Core answerQuestion wrote the question's answer file (`ralph answer`'s path), which the engine reads.
        assert.equal(fs.readFileSync(answerFile, 'utf8'), 'Port 8080\n');
        assert.equal(await exited, 0, out);
        assert.ok(server.agentRequests().length > requestsAtQuestion, 'the run went on');
        assert.match(
          JSON.stringify(server.agentRequests().map((r) => r.body)),
          /Port 8080/,
          'the next prompt holds the answer',
        );
      } finally {
        if (child && child.exitCode === null) child.kill('SIGINT');
        await server.close();
        fs.writeFileSync(configFile, config);
        fs.writeFileSync(task, taskBefore);
      }
    });
  });
}
