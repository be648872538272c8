import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { CommandIds } from '../../../src/extension/commandIds';
import type { RalphExtensionApi } from '../../../src/extension/extension';
import type { PlanNode } from '../../../src/extension/planTree';
import type { TreeUi } from '../../../src/extension/planTreeCommands';
import { ralphApi } from './helpers';

type Story = { id: string; status: string; dependsOn?: string[] };
const quantum = (stories: Story[]) => JSON.stringify({ project: 'fixture', feature: 'fixture-feature', stories: stories.map((s, i) => ({ id: s.id, title: `Story ${s.id}`, status: s.status, priority: i + 1, dependsOn: s.dependsOn ?? [], attempts: 0 })) }, null, 2) + '\n';

/** Resolves with the node once the tree shows row `id` with a description matching `re` (the store re-read the file). */
async function rowShows(api: RalphExtensionApi, id: string, re: RegExp, timeoutMs = 5000): Promise<PlanNode> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const n = api.plan.node(id);
    if (n && re.test(String(api.plan.getTreeItem(n).description))) return n;
    if (Date.now() > until) throw new Error(`row ${id} did not show ${re} (now: ${n ? String(api.plan.getTreeItem(n).description) : 'absent'})`);
    await new Promise((r) => setTimeout(r, 25));
  }
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

    it('updates the changed story\'s row (not the root) within a second of quantum.json changing on disk', async () => {
      const id = `${folder}#quantum/story/US-002`;
      await rowShows(api, id, /to do/);
      const fired = new Promise<{ at: number; ids: string[] | undefined }>((resolve) => {
        const sub = api.plan.onDidChangeTreeData((e) => {
          const ids = e === undefined ? undefined : (Array.isArray(e) ? e : [e]).map((n) => n.id);
          if (ids && !ids.includes(id)) return;
          sub.dispose();
          resolve({ at: Date.now(), ids });
        });
      });
      const t0 = Date.now();
      fs.writeFileSync(file, quantum([{ id: 'US-001', status: 'passed' }, { id: 'US-002', status: 'in_progress', dependsOn: ['US-001'] }]));
      const f = await fired;
      assert.ok(f.ids, 'the changed row was fired, not the root');
      assert.ok(f.at - t0 < 1000, `shown ${f.at - t0} ms after the write`);
      assert.match(String(api.plan.getTreeItem(api.plan.node(id)!).description), /in progress/);
      assert.equal((api.plan.getTreeItem(api.plan.node(id)!).iconPath as vscode.ThemeIcon).id, 'sync~spin');
    });

    it('Reset Task and Dependents on a node resets exactly the cascade the modal lists, on disk', async () => {
      fs.writeFileSync(file, quantum([{ id: 'US-001', status: 'passed' }, { id: 'US-002', status: 'passed', dependsOn: ['US-001'] }, { id: 'US-003', status: 'passed' }]));
      const node = await rowShows(api, `${folder}#quantum/story/US-001`, /^done/);
      await rowShows(api, `${folder}#quantum/story/US-003`, /^done/);
      assert.match(String(api.plan.getTreeItem(node).contextValue), /\bresettable\b/);
      const asked: string[] = [];
      api.tree.ui = { ...realUi, confirm: async (m, d) => { asked.push(m, d); return true; }, info: (m) => void asked.push(m) };
      const reset = await vscode.commands.executeCommand<string[]>(CommandIds.treeResetCascade, node);
      assert.deepEqual(reset, ['US-001', 'US-002']);
      assert.equal(asked[0], 'Reset US-001 and its dependents (2 items) to pending?');
      assert.equal(asked[1], '• US-001 Story US-001 (passed → pending)\n• US-002 Story US-002 (passed → pending)');
      const onDisk = (JSON.parse(fs.readFileSync(file, 'utf8')) as { stories: Story[] }).stories.map((s) => [s.id, s.status]);
      assert.deepEqual(onDisk, [['US-001', 'pending'], ['US-002', 'pending'], ['US-003', 'passed']]);
      await rowShows(api, `${folder}#quantum/story/US-002`, /to do/);
    });

    it('Start Here on a story whose dependency is open explains why and offers the next ready one', async () => {
      fs.writeFileSync(file, quantum([{ id: 'US-001', status: 'pending' }, { id: 'US-002', status: 'pending', dependsOn: ['US-001'] }]));
      await rowShows(api, `${folder}#quantum/story/US-001`, /to do/);
      const node = api.plan.node(`${folder}#quantum/story/US-002`)!;
      const offered: [string, string | undefined][] = [];
      api.tree.ui = { ...realUi, offer: async (m, a) => { offered.push([m, a]); return false; } };
      const started = await vscode.commands.executeCommand<string | undefined>(CommandIds.treeStartHere, node);
      assert.equal(started, undefined, 'declined: no run');
      assert.deepEqual(offered, [['Ralph: cannot start with US-002: US-002 waits on US-001 (pending). The next ready item of its source is US-001.', 'Start with US-001']]);
    });
  });
}
