import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { EngineEvent } from '../../../src/core/loop/events';
import { spawn } from 'node:child_process';
import { bash, edit, say, startModelServer, write } from '../../support/modelServer';
import { cliPath } from '../../support/cli';
import { scriptedClaudeStub } from '../../support/claude';
import { type Workspace, agentEnv, runEngine, useWorkspaces } from '../../support/engineHarness';

/**
 * The loop's own rules run the agent's light stand-in (test/support/stubs/scriptedClaude.cjs: the same model server
 * and tools); a test without `stub` runs the real claude CLI.
 */
const stub = { claudePath: scriptedClaudeStub };

/**
 * Issue 11 "Every item, every exit": an agent (the real claude CLI, scripted through the model server) claims
 * items done that no green gate confirmed; none of it may stay recorded done.
 */
const ofType = <T extends EngineEvent['type']>(events: EngineEvent[], type: T) =>
  events.filter((e): e is Extract<EngineEvent, { type: T }> => e.type === type);
const statuses = (ws: Workspace) =>
  Object.fromEntries(
    (JSON.parse(ws.read('quantum.json')) as { stories: { id: string; status: string }[] }).stories.map((s) => [
      s.id,
      s.status,
    ]),
  );
const quantum = (stories: { id: string; status?: string }[]) =>
  JSON.stringify(
    {
      project: 'p',
      stories: stories.map((s, i) => ({
        title: `Story ${s.id}`,
        status: 'pending',
        priority: i + 1,
        dependsOn: [],
        ...s,
      })),
    },
    null,
    2,
  ) + '\n';
/** `ralph …` as the agent runs it from its Bash tool (the iteration token is in its environment). */
const ralph = (args: string) => `node ${cliPath} ${args}`;
const flowFiles = {
  '.flow/meta.json': '{\n  "schema_version": 2,\n  "next_epic": 2\n}\n',
  '.flow/epics/fn-1.json':
    JSON.stringify({ id: 'fn-1', title: 'Epic', status: 'open', depends_on_epics: [] }, null, 2) + '\n',
  '.flow/tasks/fn-1.1.json':
    JSON.stringify(
      { id: 'fn-1.1', epic: 'fn-1', title: 'First', status: 'todo', depends_on: [], priority: null },
      null,
      2,
    ) + '\n',
  '.flow/tasks/fn-1.1.md':
    '# fn-1.1 First\n\n## Description\nWrite a.txt\n\n## Acceptance\n- [ ] a.txt exists\n\n## Done summary\nTBD\n\n## Evidence\n- Commits:\n- Tests:\n- PRs:\n',
  '.flow/tasks/fn-1.2.json':
    JSON.stringify(
      { id: 'fn-1.2', epic: 'fn-1', title: 'Second', status: 'todo', depends_on: [], priority: null },
      null,
      2,
    ) + '\n',
  '.flow/tasks/fn-1.2.md':
    '# fn-1.2 Second\n\n## Description\nWrite b.txt\n\n## Acceptance\n- [ ] b.txt exists\n\n## Done summary\nTBD\n\n## Evidence\n- Commits:\n- Tests:\n- PRs:\n',
};

/** Does the folder's (one) run record name a running agent (its process group)? */
function agentNamed(w: { file(rel: string): string }): boolean {
  const runs = w.file('.ralph/runs');
  if (!fs.existsSync(runs)) return false;
  return fs.readdirSync(runs).some((id) => {
    try {
      const r = JSON.parse(fs.readFileSync(path.join(runs, id, 'run.json'), 'utf8')) as { agentPgid?: unknown };
      return typeof r.agentPgid === 'number' && r.agentPgid > 1;
    } catch {
      return false;
    }
  });
}

describe('truth of done on every item and every exit (issue 11, real claude CLI)', function () {
  this.timeout(180_000);
  let ws: Workspace | undefined;
  const make = useWorkspaces();

  it('puts back another checklist box the agent ticked (it never becomes the next baseline)', async () => {
    ws = make({ 'RALPH_TASK.md': '# T\n\n- [ ] One\n- [ ] Two\n' });
    const run = await runEngine(
      ws,
      [edit(ws.file('RALPH_TASK.md'), '- [ ] Two', '- [x] Two'), say('Ticked Two.'), say('Nothing more.')],
      { config: { gates: { basic: 'false' }, maxIterations: 2 } },
    );
    assert.equal(ws.read('RALPH_TASK.md'), '# T\n\n- [ ] One\n- [ ] Two\n', run.lines.join('\n'));
    const back = ofType(run.events, 'claimPutBack');
    assert.deepEqual(
      back.flatMap((e) => e.items.map((i) => i.title)),
      ['Two'],
    );
    assert.match(ws.read('.ralph/activity.log'), /PUT BACK .* Two: the agent claimed it done/);
    assert.equal(run.result.done, 0);
  });

  it('puts back another quantum story the agent completed with `ralph task done --force` (gate red)', async () => {
    ws = make({ 'quantum.json': quantum([{ id: 'US-001' }, { id: 'US-002' }]) });
    const run = await runEngine(
      ws,
      [bash(ralph('task done US-002 --force')), say('Marked US-002.'), say('Nothing more.')],
      { config: { ...stub, gates: { basic: 'false' }, maxIterations: 2 } },
    );
    assert.notEqual(statuses(ws)['US-002'], 'passed', run.lines.join('\n'));
    assert.deepEqual(
      ofType(run.events, 'claimPutBack').flatMap((e) => e.items.map((i) => i.id)),
      ['US-002'],
    );
    assert.equal(run.result.done, 0);
  });

  it('puts back another flow-next task the agent completed with `ralph task done --force`', async () => {
    ws = make(flowFiles);
    const run = await runEngine(
      ws,
      [bash(ralph('task done fn-1.2 --force')), say('Marked fn-1.2.'), say('Nothing more.')],
      { config: { ...stub, gates: { basic: 'false' }, maxIterations: 2 } },
    );
    assert.notEqual(JSON.parse(ws.read('.flow/tasks/fn-1.2.json')).status, 'done', run.lines.join('\n'));
    assert.deepEqual(
      ofType(run.events, 'claimPutBack').flatMap((e) => e.items.map((i) => i.id)),
      ['fn-1.2'],
    );
  });

  it('an agent that drops its iteration token is still inside the iteration: its `ralph task done` is a claim', async () => {
    ws = make({ 'quantum.json': quantum([{ id: 'US-001' }, { id: 'US-002' }]) });
    const run = await runEngine(
      ws,
      [bash(`env -u RALPH_ITERATION_TOKEN ${ralph('task done US-002 --force')}`), say('Marked US-002.')],
      { config: { ...stub, gates: { basic: 'false' }, maxIterations: 1 } },
    );
    assert.notEqual(statuses(ws)['US-002'], 'passed', run.lines.join('\n'));
    assert.equal(fs.existsSync(ws.file('.ralph/person-done.json')), false, 'no person mark recorded');
  });

  it("a person's `ralph task done` from outside an iteration, between iterations, is theirs", async () => {
    ws = make({ 'quantum.json': quantum([{ id: 'US-001' }, { id: 'US-002' }]) });
    const { runCli } = await import('../../support/cli');
    let marked = false;
    const run = await runEngine(ws, [bash('sleep 1'), say('Nothing done.')], {
      config: { ...stub, gates: { basic: 'false' }, maxIterations: 1 },
      onEvent: (e) => {
        if (e.type === 'iterationEnded' && !marked) {
          marked = true;
          assert.equal(runCli(ws!.dir, ['task', 'done', 'US-002', '--force']).code, 0);
        }
      },
    });
    assert.ok(marked);
    assert.equal(statuses(ws)['US-002'], 'passed', run.lines.join('\n'));
    assert.deepEqual(ofType(run.events, 'claimPutBack'), []);
  });

  it("a mark made while the agent runs cannot be told from the agent's: a claim the gate verifies (red: put back), and the person is told", async () => {
    ws = make({ 'quantum.json': quantum([{ id: 'US-001' }, { id: 'US-002' }]) });
    const { runCli } = await import('../../support/cli');
    let stderr = '';
    const run = await runEngine(ws, [bash('sleep 1'), say('Nothing done.')], {
      config: { ...stub, gates: { basic: 'false' }, maxIterations: 1 },
      // Marked at a report of the agent's once its run.json names it: agentStarted is emitted just before its pid is
      // written, and on a loaded machine the agent's first lines can be read before that write lands (the mark would
      // then be told it came while "a gate or notify command" ran). The agent's second reply comes a second after its
      // first (`sleep 1`), long after that write.
      onEvent: (e) => {
        if (e.type === 'tokens' && !stderr && agentNamed(ws!)) {
          const r = runCli(ws!.dir, ['task', 'done', 'US-002', '--force']);
          assert.equal(r.code, 0);
          stderr = r.stderr;
        }
      },
    });
    assert.match(stderr, /an agent of run .* is running: .* verifies US-002 with a gate like a claim/);
    assert.notEqual(statuses(ws)['US-002'], 'passed', run.lines.join('\n'));
    assert.deepEqual(
      ofType(run.events, 'claimPutBack').flatMap((e) => e.items.map((i) => i.id)),
      ['US-002'],
    );
  });

  it("a forged .ralph/person-done.json written by the agent does not make its claim a person's", async () => {
    ws = make({ 'quantum.json': quantum([{ id: 'US-001' }, { id: 'US-002' }]) });
    // The guard denies a command that names .ralph/; a script file it does not read gets past it (a known limit).
    const script = `const fs = require('fs'); fs.writeFileSync('.' + 'ralph/person-done.json', JSON.stringify({ 'quantum:US-002': '2099-01-01T00:00:00.000Z' }));\n`;
    const run = await runEngine(
      ws,
      [
        write(ws.file('forge.js'), script),
        bash(`node forge.js && ${ralph('task done US-002 --force')}`),
        say('Marked US-002.'),
        say('Nothing more.'),
      ],
      // The engine's rule where the kernel does not keep .ralph/ read-only (marker: no namespaces); with them the
      // write fails with EROFS (test/component/process/protectedPaths.test.ts).
      { config: { ...stub, gates: { basic: 'false' }, maxIterations: 2, containment: 'marker' } },
    );
    // The forged mark was a claim: settled at the run's end, it leaves the file (breaker-s6: no exit path leaves such a mark).
    assert.doesNotMatch(ws.read('.ralph/person-done.json'), /quantum:US-002/, run.lines.join('\n'));
    assert.notEqual(statuses(ws)['US-002'], 'passed', run.lines.join('\n'));
    assert.deepEqual(
      ofType(run.events, 'claimPutBack').flatMap((e) => e.items.map((i) => i.id)),
      ['US-002'],
      run.lines.join('\n'),
    );
    assert.ok(
      ofType(run.events, 'warning').some((e) =>
        /person-done\.json changed while the agent ran \(quantum:US-002\)/.test(e.message),
      ),
      run.lines.join('\n'),
    );
  });

  it('the current story set to passed under a red gate is a failed attempt, not an engine error', async () => {
    ws = make({ 'quantum.json': quantum([{ id: 'US-001' }]) });
    const run = await runEngine(
      ws,
      [bash(ralph('task done US-001 --force')), say('Done. <quantum>STORY_PASSED</quantum>')],
      { config: { ...stub, gates: { basic: 'false' }, maxIterations: 1 } },
    );
    assert.equal(run.result.state, 'capReached', run.lines.join('\n'));
    assert.doesNotMatch(run.result.reason, /engine error/);
    assert.equal(ofType(run.events, 'attemptFailed').length, 1);
    const story = (
      JSON.parse(ws.read('quantum.json')) as { stories: { status: string; retries?: { attempts?: number } }[] }
    ).stories[0]!;
    assert.equal(story.status, 'failed');
    assert.equal(story.retries?.attempts, 1);
  });

  it("a person's `ralph task done` on the current story during a red-gate iteration is a failed attempt, not an engine error", async () => {
    ws = make({ 'quantum.json': quantum([{ id: 'US-001' }]) });
    const { runCli } = await import('../../support/cli');
    let marked = false;
    const run = await runEngine(ws, [bash('sleep 1'), say('Still working.')], {
      config: { ...stub, gates: { basic: 'false' }, maxIterations: 1 },
      // From outside the agent's process tree, while it runs (as a person in another terminal).
      onEvent: (e) => {
        if (e.type === 'tokens' && !marked) {
          marked = true;
          assert.equal(runCli(ws!.dir, ['task', 'done', 'US-001', '--force']).code, 0);
        }
      },
    });
    assert.ok(marked, run.lines.join('\n'));
    assert.equal(run.result.state, 'capReached', run.lines.join('\n'));
    assert.doesNotMatch(run.result.reason, /engine error/);
    assert.equal(ofType(run.events, 'attemptFailed').length, 1);
    assert.notEqual(statuses(ws)['US-001'], 'passed');
  });

  it('deleting .ralph/attempts.json each iteration does not keep a box from blocking', async () => {
    ws = make({ 'RALPH_TASK.md': '# T\n\n- [ ] Make\n' });
    // The command guard refuses `rm .ralph/…`; a script does not ask.
    const turn = () => [
      bash(`node -e "require('fs').rmSync('.ralph/attempts.json', { force: true })"`),
      edit(ws!.file('RALPH_TASK.md'), '- [ ] Make', '- [x] Make'),
      say('Ticked Make.'),
    ];
    const run = await runEngine(ws, Array.from({ length: 6 }, turn).flat(), {
      config: { ...stub, gates: { basic: 'false' }, maxIterations: 8, continueOnBlocked: true },
    });
    assert.equal(ofType(run.events, 'itemBlocked').length, 1, run.lines.join('\n'));
    assert.equal(run.result.state, 'blocked');
    assert.ok(run.result.iterations <= 5, `blocked after ${run.result.iterations} iterations`);
    assert.equal(
      JSON.parse(ws.read(`.ralph/runs/${run.result.runId}/run.json`)).attempts['checklist:Make'],
      run.result.iterations,
    );
  });

  it('finishing the last task on the last allowed iteration completes (completion wins over the cap)', async () => {
    ws = make({ 'RALPH_TASK.md': '# T\n\n- [ ] Make\n' });
    const run = await runEngine(ws, [edit(ws.file('RALPH_TASK.md'), '- [ ] Make', '- [x] Make'), say('Done.')], {
      config: { ...stub, gates: { basic: 'true', final: 'true' }, maxIterations: 1 },
    });
    assert.equal(run.result.state, 'completed', run.lines.join('\n'));
    assert.equal(run.result.exitCode, 0);
  });

  it('Ctrl-C twice during an iteration: the next run puts back the box the agent ticked (ralph run process)', async () => {
    ws = make({
      'RALPH_TASK.md': '# T\n\n- [ ] One\n- [ ] Two\n',
      '.ralph/config.json': JSON.stringify({
        claudePath: scriptedClaudeStub,
        gates: { basic: 'false' },
        timing: { betweenIterationsMs: 50, killGraceMs: 8000 },
      }),
    });
    // The agent ticks another box, then works on (a long command) when Ctrl-C is pressed twice.
    const server = await startModelServer([
      edit(ws.file('RALPH_TASK.md'), '- [ ] Two', '- [x] Two'),
      bash("trap '' TERM; sleep 60"),
      say('never'),
    ]);
    try {
      const env = { ...process.env, ...agentEnv(ws, server) } as NodeJS.ProcessEnv;
      for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
      const child = spawn(process.execPath, [cliPath, 'run', '--json', '--trust'], {
        cwd: ws.dir,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
      child.stdout.resume();
      let stderr = '';
      const firstSeen = new Promise<void>((resolve) =>
        child.stderr.on('data', (b: Buffer) => {
          stderr += b.toString();
          if (/ending the agent and stopping/.test(stderr)) resolve();
        }),
      );
      await server.waitForAgentRequests(2);
      const deadline = Date.now() + 20_000;
      while (!ws.read('RALPH_TASK.md').includes('- [x] Two') && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 100));
      await new Promise((r) => setTimeout(r, 500));
      // The second Ctrl-C follows as soon as the first is taken (as a person pressing twice), while the engine waits
      // for the agent, which ignores SIGTERM for killGraceMs: it cannot finish its end first. Not after a fixed pause:
      // two SIGINTs sent before the process runs again are one (a pending signal is not queued twice).
      child.kill('SIGINT');
      await firstSeen;
      child.kill('SIGINT');
      assert.equal(await exited, 130);
      assert.match(
        ws.read('RALPH_TASK.md'),
        /- \[x\] Two/,
        'Ctrl-C twice left the unverified tick (the case to recover)',
      );
      const run = await runEngine(ws, [say('Nothing done.')], {
        config: { ...stub, gates: { basic: 'false' }, maxIterations: 1 },
      });
      assert.equal(ws.read('RALPH_TASK.md'), '# T\n\n- [ ] One\n- [ ] Two\n', run.lines.join('\n'));
    } finally {
      await server.close();
    }
  });

  it('a run that ended with claims open (Ctrl-C twice marks it stopped) has them put back at the next start', async () => {
    ws = make({ 'RALPH_TASK.md': '# T\n\n- [ ] One\n- [x] Two\n' });
    const runId = '20261201-000000-dead';
    ws.write(
      `.ralph/runs/${runId}/run.json`,
      JSON.stringify(
        {
          schemaVersion: 1,
          runId,
          pid: 2 ** 22 - 3,
          host: os.hostname(),
          startedAt: '2026-12-01T00:00:00.000Z',
          state: 'stopped',
          iteration: 1,
          currentItem: null,
          completion: { reason: 'INTERRUPTED', at: '2026-12-01T00:01:00.000Z' },
          endState: 'cancelled',
          claimBaseline: { at: '2026-12-01T00:00:01.000Z', source: 'checklist', label: 'RALPH_TASK.md', done: [] },
        },
        null,
        2,
      ) + '\n',
    );
    const run = await runEngine(ws, [say('Nothing done.')], {
      config: { ...stub, gates: { basic: 'false' }, maxIterations: 1 },
    });
    assert.equal(ws.read('RALPH_TASK.md'), '# T\n\n- [ ] One\n- [ ] Two\n', run.lines.join('\n'));
    assert.ok(
      ofType(run.events, 'warning').some((w) =>
        /ended with unverified claims, put back RALPH_TASK.md:\d+/.test(w.message),
      ),
    );
    assert.equal(JSON.parse(ws.read(`.ralph/runs/${runId}/run.json`)).claimBaseline, null);
  });
});
