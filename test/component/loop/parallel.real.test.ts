import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { bash, say, startModelServer, storyOfRequest } from '../../support/modelServer';
import { runEngine, useWorkspaces } from '../../support/engineHarness';
import { scriptedClaudeStub } from '../../support/claude';

/**
 * The loop's own rules run the agent's light stand-in (test/support/stubs/scriptedClaude.cjs: the same model server
 * and tools); a test without `stub` runs the real claude CLI.
 */
const stub = { claudePath: scriptedClaudeStub };

/**
 * Issue 19 with the real Claude Code CLI: two quantum stories at once, each lane's claude answered by the scripted
 * model server from that story's own script (routed by the story id in the prompt).
 */
describe('parallel lanes with the real claude CLI (issue 19)', function () {
  this.timeout(180_000);
  const make = useWorkspaces();

  it('runs two stories at once, each on its own lane and script, and merges both', async () => {
    const quantum =
      JSON.stringify(
        {
          project: 'p',
          stories: ['A', 'B'].map((id, i) => ({
            id,
            title: `Story ${id}`,
            priority: i + 1,
            status: 'pending',
            dependsOn: [],
          })),
        },
        null,
        2,
      ) + '\n';
    const ws = make({ 'quantum.json': quantum, '.gitignore': '.ralph/\n' });
    const story = (id: string) => [
      bash(
        `printf '${id}\\n' > ${id.toLowerCase()}.txt && git add ${id.toLowerCase()}.txt && git commit -qm '${id}: work'`,
        { delayMs: 1500 },
      ),
      say(`Committed. <quantum>STORY_PASSED</quantum>`),
    ];
    const server = await startModelServer({ A: story('A'), B: story('B') });
    const at: Record<string, number> = {};
    try {
      const run = await runEngine(ws, [], {
        server,
        config: { gates: { basic: 'true' } },
        engine: { source: 'quantum', parallel: true, maxParallel: 2 },
        onEvent: (e) => {
          if (e.type === 'iterationStarted' && e.item) at[`start ${e.item.id}`] ??= Date.now();
          if (e.type === 'laneMerge') at[`merged ${e.item.id}`] = Date.now();
        },
      });
      assert.equal(run.result.state, 'completed', `${run.result.reason}\n${run.lines.join('\n')}`);
      const stories = (JSON.parse(ws.read('quantum.json')) as { stories: { id: string; status: string }[] }).stories;
      assert.deepEqual(
        stories.map((s) => s.status),
        ['passed', 'passed'],
      );
      assert.equal(ws.read('a.txt'), 'A\n');
      assert.equal(ws.read('b.txt'), 'B\n');
      // Both lanes started before either story was merged: the two agents ran at once.
      assert.ok(at['start B']! < at['merged A']! && at['start A']! < at['merged B']!, JSON.stringify(at));
      assert.equal(server.exhausted, 0);
      assert.deepEqual(
        fs.existsSync(path.join(ws.dir, '.ql-wt')) ? fs.readdirSync(path.join(ws.dir, '.ql-wt')) : [],
        [],
      );
      assert.equal(ws.git('worktree', 'list').split('\n').length, 1);
    } finally {
      await server.close();
    }
  });

  it("a dependent story waits for its dependency's merge, then starts at once from a tree that has it", async () => {
    // C depends on A; B is independent and slow; three lanes, so a lane is free from the start while C waits: C must
    // still wait for A's merge, and must start as soon as A is merged (not when B's lane is over).
    const stories = [
      { id: 'A', title: 'Story A', priority: 1, status: 'pending', dependsOn: [] },
      { id: 'B', title: 'Story B', priority: 2, status: 'pending', dependsOn: [] },
      { id: 'C', title: 'Story C', priority: 3, status: 'pending', dependsOn: ['A'] },
    ];
    const ws = make({
      'quantum.json': JSON.stringify({ project: 'p', stories }, null, 2) + '\n',
      '.gitignore': '.ralph/\n',
    });
    const commit = (id: string, cmd: string, delayMs: number) => [
      bash(`${cmd} && git add ${id.toLowerCase()}.txt && git commit -qm '${id}: work'`, { delayMs }),
      say(`Committed. <quantum>STORY_PASSED</quantum>`),
    ];
    // C's own file starts with what its tree holds of A's (a missing a.txt fails its command, so its commit).
    const server = await startModelServer({
      A: commit('A', `printf 'A\\n' > a.txt`, 1000),
      B: commit('B', `printf 'B\\n' > b.txt`, 12_000),
      C: commit('C', `cat a.txt > c.txt && printf 'C\\n' >> c.txt`, 500),
    });
    const at: Record<string, number> = {};
    try {
      const run = await runEngine(ws, [], {
        server,
        config: { ...stub, gates: { basic: 'true' } },
        engine: { source: 'quantum', parallel: true, maxParallel: 3 },
        onEvent: (e) => {
          if (e.type === 'iterationStarted' && e.item) at[`start ${e.item.id}`] ??= Date.now();
          if (e.type === 'laneMerge') at[`merged ${e.item.id}`] = Date.now();
        },
      });
      assert.equal(run.result.state, 'completed', `${run.result.reason}\n${run.lines.join('\n')}`);
      const after = (JSON.parse(ws.read('quantum.json')) as { stories: { id: string; status: string }[] }).stories;
      assert.deepEqual(
        after.map((s) => s.status),
        ['passed', 'passed', 'passed'],
      );
      // C's lane started only after A's merge, and while B's lane still ran (a freed lane is refilled at once).
      assert.ok(at['merged A']! < at['start C']!, JSON.stringify(at));
      assert.ok(at['start C']! < at['merged B']!, JSON.stringify(at));
      // The model server was asked for C only after A's merge.
      const firstC = server.agentRequests().find((r) => storyOfRequest(r.body, ['A', 'B', 'C']) === 'C');
      assert.ok(firstC && firstC.at > at['merged A']!, JSON.stringify({ firstC: firstC?.at, ...at }));
      // C's tree had A's commit: C's file holds a.txt's text, and C's branch descends from A's.
      assert.equal(ws.read('c.txt'), 'A\nC\n');
      assert.equal(ws.git('merge-base', '--is-ancestor', 'ql-wt/A', 'ql-wt/C'), '');
      assert.equal(server.exhausted, 0);
      assert.deepEqual(
        fs.existsSync(path.join(ws.dir, '.ql-wt')) ? fs.readdirSync(path.join(ws.dir, '.ql-wt')) : [],
        [],
      );
      assert.equal(ws.git('worktree', 'list').split('\n').length, 1);
    } finally {
      await server.close();
    }
  });

  it('STOP during a round ends every lane cleanly: stories back to pending, branches kept, nothing left running', async () => {
    const quantum =
      JSON.stringify(
        {
          project: 'p',
          stories: ['A', 'B'].map((id, i) => ({
            id,
            title: `Story ${id}`,
            priority: i + 1,
            status: 'pending',
            dependsOn: [],
          })),
        },
        null,
        2,
      ) + '\n';
    const ws = make({ 'quantum.json': quantum, '.gitignore': '.ralph/\n' });
    // Each agent's first answer comes late, so STOP is written while both lanes' agents run.
    const story = (id: string) => [
      bash(
        `printf '${id}\\n' > ${id.toLowerCase()}.txt && git add ${id.toLowerCase()}.txt && git commit -qm '${id}: work'`,
        { delayMs: 4000 },
      ),
      say(`Committed. <quantum>STORY_PASSED</quantum>`),
    ];
    const server = await startModelServer({ A: story('A'), B: story('B') });
    let agents = 0;
    try {
      const run = await runEngine(ws, [], {
        server,
        config: { ...stub, gates: { basic: 'true' } },
        engine: { source: 'quantum', parallel: true, maxParallel: 2 },
        onEvent: (e, engine) => {
          if (e.type === 'agentStarted' && ++agents === 2)
            fs.writeFileSync(path.join(ws.dir, '.ralph', 'runs', engine.runId, 'STOP'), '');
        },
      });
      assert.equal(run.result.state, 'stopped', `${run.result.reason}\n${run.lines.join('\n')}`);
      const stories = JSON.parse(ws.read('quantum.json')) as {
        stories: { id: string; status: string; worktree?: string | null }[];
        execution?: { activeWorktrees?: string[] };
      };
      assert.deepEqual(
        stories.stories.map((s) => s.status),
        ['pending', 'pending'],
      );
      assert.deepEqual(stories.execution?.activeWorktrees ?? [], []);
      // The lanes finished their iteration: each story's commit is on its kept branch, not on the feature branch.
      for (const id of ['A', 'B'])
        assert.match(ws.git('log', '-1', '--format=%s', `ql-wt/${id}`), new RegExp(`^${id}: `));
      assert.ok(!fs.existsSync(path.join(ws.dir, 'a.txt')) && !fs.existsSync(path.join(ws.dir, 'b.txt')));
      assert.deepEqual(
        fs.existsSync(path.join(ws.dir, '.ql-wt')) ? fs.readdirSync(path.join(ws.dir, '.ql-wt')) : [],
        [],
      );
      assert.equal(ws.git('worktree', 'list').split('\n').length, 1);
      assert.equal(
        fs.existsSync(path.join(ws.dir, '.git', 'worktrees'))
          ? fs.readdirSync(path.join(ws.dir, '.git', 'worktrees')).length
          : 0,
        0,
      );
      // No claude process is left: useWorkspaces' cleanup fails the test when one of the workspace is.
    } finally {
      await server.close();
    }
  });
});
