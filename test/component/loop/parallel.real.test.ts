import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { bash, say, startModelServer } from '../../support/modelServer';
import { runEngine, useWorkspaces } from '../../support/engineHarness';

/**
 * Issue 19 with the real Claude Code CLI: two quantum stories at once, each lane's claude answered by the scripted
 * model server from that story's own script (routed by the story id in the prompt).
 */
describe('parallel lanes with the real claude CLI (issue 19)', function () {
  this.timeout(180_000);
  const make = useWorkspaces();

  it('runs two stories at once, each on its own lane and script, and merges both', async () => {
    const quantum = JSON.stringify({ project: 'p', stories: ['A', 'B'].map((id, i) => ({ id, title: `Story ${id}`, priority: i + 1, status: 'pending', dependsOn: [] })) }, null, 2) + '\n';
    const ws = make({ 'quantum.json': quantum, '.gitignore': '.ralph/\n' });
    const story = (id: string) => [
      bash(`printf '${id}\\n' > ${id.toLowerCase()}.txt && git add ${id.toLowerCase()}.txt && git commit -qm '${id}: work'`, { delayMs: 1500 }),
      say(`Committed. <quantum>STORY_PASSED</quantum>`),
    ];
    const server = await startModelServer({ A: story('A'), B: story('B') });
    const at: Record<string, number> = {};
    try {
      const run = await runEngine(ws, [], { server, config: { gates: { basic: 'true' } }, engine: { source: 'quantum', parallel: true, maxParallel: 2 }, onEvent: (e) => {
        if (e.type === 'iterationStarted' && e.item) at[`start ${e.item.id}`] ??= Date.now();
        if (e.type === 'laneMerge') at[`merged ${e.item.id}`] = Date.now();
      } });
      assert.equal(run.result.state, 'completed', `${run.result.reason}\n${run.lines.join('\n')}`);
      const stories = (JSON.parse(ws.read('quantum.json')) as { stories: { id: string; status: string }[] }).stories;
      assert.deepEqual(stories.map((s) => s.status), ['passed', 'passed']);
      assert.equal(ws.read('a.txt'), 'A\n');
      assert.equal(ws.read('b.txt'), 'B\n');
      // Both lanes started before either story was merged: the two agents ran at once.
      assert.ok(at['start B']! < at['merged A']! && at['start A']! < at['merged B']!, JSON.stringify(at));
      assert.equal(server.exhausted, 0);
      assert.deepEqual(fs.existsSync(path.join(ws.dir, '.ql-wt')) ? fs.readdirSync(path.join(ws.dir, '.ql-wt')) : [], []);
      assert.equal(ws.git('worktree', 'list').split('\n').length, 1);
    } finally {
      await server.close();
    }
  });

  it('STOP during a round ends every lane cleanly: stories back to pending, branches kept, nothing left running', async () => {
    const quantum = JSON.stringify({ project: 'p', stories: ['A', 'B'].map((id, i) => ({ id, title: `Story ${id}`, priority: i + 1, status: 'pending', dependsOn: [] })) }, null, 2) + '\n';
    const ws = make({ 'quantum.json': quantum, '.gitignore': '.ralph/\n' });
    // Each agent's first answer comes late, so STOP is written while both lanes' agents run.
    const story = (id: string) => [
      bash(`printf '${id}\\n' > ${id.toLowerCase()}.txt && git add ${id.toLowerCase()}.txt && git commit -qm '${id}: work'`, { delayMs: 4000 }),
      say(`Committed. <quantum>STORY_PASSED</quantum>`),
    ];
    const server = await startModelServer({ A: story('A'), B: story('B') });
    let agents = 0;
    try {
      const run = await runEngine(ws, [], { server, config: { gates: { basic: 'true' } }, engine: { source: 'quantum', parallel: true, maxParallel: 2 }, onEvent: (e, engine) => {
        if (e.type === 'agentStarted' && ++agents === 2) fs.writeFileSync(path.join(ws.dir, '.ralph', 'runs', engine.runId, 'STOP'), '');
      } });
      assert.equal(run.result.state, 'stopped', `${run.result.reason}\n${run.lines.join('\n')}`);
      const stories = (JSON.parse(ws.read('quantum.json')) as { stories: { id: string; status: string; worktree?: string | null }[]; execution?: { activeWorktrees?: string[] } });
      assert.deepEqual(stories.stories.map((s) => s.status), ['pending', 'pending']);
      assert.deepEqual(stories.execution?.activeWorktrees ?? [], []);
      // The lanes finished their iteration: each story's commit is on its kept branch, not on the feature branch.
      for (const id of ['A', 'B']) assert.match(ws.git('log', '-1', '--format=%s', `ql-wt/${id}`), new RegExp(`^${id}: `));
      assert.ok(!fs.existsSync(path.join(ws.dir, 'a.txt')) && !fs.existsSync(path.join(ws.dir, 'b.txt')));
      assert.deepEqual(fs.existsSync(path.join(ws.dir, '.ql-wt')) ? fs.readdirSync(path.join(ws.dir, '.ql-wt')) : [], []);
      assert.equal(ws.git('worktree', 'list').split('\n').length, 1);
      assert.equal(fs.existsSync(path.join(ws.dir, '.git', 'worktrees')) ? fs.readdirSync(path.join(ws.dir, '.git', 'worktrees')).length : 0, 0);
      // No claude process is left: useWorkspaces' cleanup fails the test when one of the workspace is.
    } finally {
      await server.close();
    }
  });
});
