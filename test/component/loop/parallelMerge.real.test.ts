import * as assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import type { EngineEvent } from '../../../src/core/loop/events';
import { scriptedClaudeStub } from '../../support/claude';
import { cliPath } from '../../support/cli';
import { agentEnv, fastTiming, runEngine, useWorkspaces, type Workspace } from '../../support/engineHarness';
import { bash, hang, say, startModelServer, storyOfRequest } from '../../support/modelServer';
import { processGroupAlive } from '../../../src/core/process/processGroup';

/**
 * The loop's own rules run the agent's light stand-in (test/support/stubs/scriptedClaude.cjs: the same model server
 * and tools); a test without `stub` runs the real claude CLI.
 */
const stub = { claudePath: scriptedClaudeStub };

/**
 * Issue 19 "Tests" with the real Claude Code CLI (each lane's claude answered by the routed scripted model server):
 * a merge conflict and a test regression each fail the right story and leave the feature branch green; killing the
 * runner mid-round and starting again recovers with no commit lost. The stub-agent versions are in
 * parallel.stub.test.ts; these prove the same with real agents, real git and `ralph run` itself.
 */

interface Story {
  id: string;
  status: string;
  retries: { attempts: number; failureLog: { phase: string; files?: string; error?: string }[] };
}

/** quantum.json of `ids` (priority in order, no dependencies, no `filePaths`: one round), `maxAttempts` each. */
function quantum(ids: string[], maxAttempts = 1): string {
  const stories = ids.map((id, i) => ({
    id,
    title: `Story ${id}`,
    priority: i + 1,
    status: 'pending',
    dependsOn: [],
    retries: { attempts: 0, maxAttempts, failureLog: [] },
  }));
  return JSON.stringify({ project: 'p', stories }, null, 2) + '\n';
}

const storiesOf = (ws: Workspace): Story[] => (JSON.parse(ws.read('quantum.json')) as { stories: Story[] }).stories;
const statusOf = (ws: Workspace): Record<string, string> =>
  Object.fromEntries(storiesOf(ws).map((s) => [s.id, s.status]));
/** Is `rev` reachable from the feature branch (HEAD of the folder)? */
const inFeature = (ws: Workspace, rev: string): boolean =>
  spawnSync('git', ['merge-base', '--is-ancestor', rev, 'HEAD'], { cwd: ws.dir }).status === 0;

/** Nothing is left behind: no lane tree, no git worktree record or lock, no merge in progress, no index lock, no active lane. */
function assertNothingLeft(ws: Workspace): void {
  assert.equal(
    ws
      .git('worktree', 'list', '--porcelain')
      .split('\n')
      .filter((l) => l.startsWith('worktree ')).length,
    1,
    ws.git('worktree', 'list'),
  );
  assert.deepEqual(fs.existsSync(ws.file('.ql-wt')) ? fs.readdirSync(ws.file('.ql-wt')) : [], []);
  assert.equal(
    fs.existsSync(ws.file('.git/worktrees')) ? fs.readdirSync(ws.file('.git/worktrees')).length : 0,
    0,
    'no worktree record (nor its lock) in .git/worktrees',
  );
  for (const f of ['.git/index.lock', '.git/MERGE_HEAD', '.git/HEAD.lock'])
    assert.ok(!fs.existsSync(ws.file(f)), `${f} is left`);
  assert.deepEqual(
    (JSON.parse(ws.read('quantum.json')) as { execution?: { activeWorktrees?: string[] } }).execution
      ?.activeWorktrees ?? [],
    [],
  );
  // Tracked files as committed (quantum.json is the runner's own).
  assert.equal(ws.git('status', '--porcelain', '--untracked-files=no', '--', '.', ':(exclude)quantum.json'), '');
  // No process of the workspace is left: useWorkspaces' cleanup fails the test when one is.
}

/**
 * The run ended blocked after two merges: the first went in, the second ended `outcome` and its story failed with
 * `phase` in its failure log. Returns the two story ids (which lane merges first is the scheduler's) and the entry.
 */
function firstMergedSecondFailed(
  ws: Workspace,
  run: Awaited<ReturnType<typeof runEngine>>,
  outcome: 'conflict' | 'regression',
  phase: string,
): {
  won: string;
  lost: string;
  merges: Extract<EngineEvent, { type: 'laneMerge' }>[];
  entry: Story['retries']['failureLog'][number] | undefined;
} {
  assert.equal(run.result.state, 'blocked', `${run.result.reason}\n${run.lines.join('\n')}`);
  const merges = run.events.filter((e): e is Extract<EngineEvent, { type: 'laneMerge' }> => e.type === 'laneMerge');
  assert.equal(merges.length, 2, run.lines.join('\n'));
  const [won, lost] = [merges[0]!.item.id, merges[1]!.item.id];
  assert.deepEqual([merges[0]!.outcome, merges[1]!.outcome], ['merged', outcome]);
  assert.deepEqual(statusOf(ws), { [won]: 'passed', [lost]: 'failed' });
  const entry = storiesOf(ws)
    .find((s) => s.id === lost)!
    .retries.failureLog.at(-1);
  assert.equal(entry?.phase, phase);
  return { won, lost, merges, entry };
}

/** One agent: its Bash command (its work and commit, after `delayMs`), then the story's completion signal. */
const commits = (cmd: string, delayMs: number) => [
  bash(cmd, { delayMs }),
  say('Committed. <quantum>STORY_PASSED</quantum>'),
];

describe('parallel lanes with the real claude CLI: merge failures and a killed runner (issue 19)', function () {
  this.timeout(240_000);
  const make = useWorkspaces();

  it('a merge conflict fails the second story to merge, naming the file and keeping its branch; the feature branch stays green', async () => {
    // Both stories rewrite the one line of same.txt; no `filePaths`, so both run in the same round.
    const gate = 'test "$(wc -l < same.txt)" -eq 1 && ! grep -q "^[<=>]\\{7\\}" same.txt';
    const ws = make({ 'quantum.json': quantum(['A', 'B']), 'same.txt': 'base\n', '.gitignore': '.ralph/\n' });
    const edit = (id: string, delayMs: number) =>
      commits(`printf 'from ${id}\\n' > same.txt && git commit -qam '${id}: same.txt'`, delayMs);
    const server = await startModelServer({ A: edit('A', 500), B: edit('B', 2500) });
    try {
      const run = await runEngine(ws, [], {
        server,
        config: { gates: { basic: gate } },
        engine: { source: 'quantum', parallel: true, maxParallel: 2 },
      });
      // Which lane merges first is the scheduler's (B's agent is slower): the other one is the conflict.
      const { won, lost, merges, entry } = firstMergedSecondFailed(ws, run, 'conflict', 'merge_conflict');
      assert.deepEqual(merges[1]!.files, ['same.txt']);
      assert.equal(entry?.files, 'same.txt');
      // The loser's branch is kept with its commit, which is not in the feature branch; the winner's is.
      assert.equal(ws.git('log', '-1', '--format=%s', `ql-wt/${lost}`), `${lost}: same.txt`);
      assert.ok(!inFeature(ws, `ql-wt/${lost}`) && inFeature(ws, `ql-wt/${won}`));
      // The feature branch is green: the winner's line, no conflict markers, its gate passes there.
      assert.equal(ws.read('same.txt'), `from ${won}\n`);
      assert.equal(spawnSync('sh', ['-c', gate], { cwd: ws.dir }).status, 0);
      assert.equal(server.exhausted, 0);
      assertNothingLeft(ws);
    } finally {
      await server.close();
    }
  });

  it('a regression at merge time (each lane green alone) fails the second story to merge, undoes its merge and leaves the feature branch green', async () => {
    // The project's tests: every tests/*.sh. A changes lib.txt (its tests still pass); B adds a test that holds
    // lib.txt to its old value (green in B's tree). Together they are red: whichever merges second regresses.
    const gate = 'for t in tests/*.sh; do sh "$t" || exit 1; done';
    const ws = make({
      'quantum.json': quantum(['A', 'B']),
      '.gitignore': '.ralph/\n',
      'lib.txt': 'v1\n',
      'tests/lib.sh': 'test -s lib.txt\n',
    });
    const server = await startModelServer({
      A: commits(`printf 'v2\\n' > lib.txt && git commit -qam 'A: lib v2'`, 2500),
      B: commits(
        `printf 'grep -qx v1 lib.txt\\n' > tests/b.sh && git add tests/b.sh && git commit -qm 'B: test of lib'`,
        500,
      ),
    });
    try {
      const run = await runEngine(ws, [], {
        server,
        config: { ...stub, gates: { basic: gate } },
        engine: { source: 'quantum', parallel: true, maxParallel: 2 },
      });
      const { won, lost } = firstMergedSecondFailed(ws, run, 'regression', 'merge_regression');
      // Each lane's own gate passed in its tree: the red gate is the feature branch's, after the second merge.
      const gates = run.events.filter(
        (e): e is Extract<EngineEvent, { type: 'gateResult' }> => e.type === 'gateResult',
      );
      assert.equal(gates.at(-1)?.passed, false);
      assert.equal(gates.filter((g) => !g.passed).length, 1, run.lines.join('\n'));
      // The merge is undone: the loser's commit is on its kept branch only, the feature branch has the winner's.
      assert.match(ws.git('log', '-1', '--format=%s', `ql-wt/${lost}`), new RegExp(`^${lost}: `));
      assert.ok(!inFeature(ws, `ql-wt/${lost}`) && inFeature(ws, `ql-wt/${won}`));
      assert.equal(ws.read('lib.txt'), won === 'A' ? 'v2\n' : 'v1\n');
      assert.equal(fs.existsSync(ws.file('tests/b.sh')), won === 'B');
      assert.equal(
        ws.git('log', '-1', '--format=%P', 'HEAD').split(' ').length,
        2,
        "HEAD is the winner's merge commit",
      );
      assert.equal(spawnSync('sh', ['-c', gate], { cwd: ws.dir }).status, 0, 'the feature branch is green');
      assert.equal(server.exhausted, 0);
      assertNothingLeft(ws);
    } finally {
      await server.close();
    }
  });

  it('SIGKILL of `ralph run` mid-round, then a new run: the merged story passed, the other pending and run again, no commit lost', async () => {
    // A's lane ends first (its agent leaves a file uncommitted, so the feature branch's gate is not skipped as a
    // repeat of the lane's); the runner is killed while that gate runs in the folder: A's branch is merged, its
    // status still in_progress. B's agent has committed once and is waiting on its model (a hanging reply).
    const featureGate =
      'if [ -d .git ] && [ ! -e .ralph/feature-gate-ran ]; then touch .ralph/feature-gate-ran; sleep 4; fi; true';
    const config = {
      claudePath: scriptedClaudeStub,
      gates: { basic: 'true', final: featureGate },
      timing: { ...fastTiming, killGraceMs: 1000 },
    };
    const ws = make({
      'quantum.json': quantum(['A', 'B'], 3),
      '.gitignore': '.ralph/\n',
      '.ralph/config.json': JSON.stringify(config),
    });
    const server = await startModelServer({
      A: commits(
        `printf 'A\\n' > a.txt && git add a.txt && git commit -qm 'A: work' && printf 'notes\\n' > a-notes.txt`,
        1500,
      ),
      B: [
        bash(`printf 'B1\\n' > b.txt && git add b.txt && git commit -qm 'B: first run'`),
        hang(),
        // The second run's lane of B (on its kept branch, b.txt there).
        bash(`grep -qx B1 b.txt && printf 'B2\\n' >> b.txt && git commit -qam 'B: second run'`),
        say('Committed. <quantum>STORY_PASSED</quantum>'),
      ],
    });
    const bRequests = () => server.agentRequests().filter((r) => storyOfRequest(r.body, ['A', 'B']) === 'B');
    try {
      const env = { ...process.env, ...agentEnv(ws, server) } as NodeJS.ProcessEnv;
      for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
      const first = spawn(
        process.execPath,
        [cliPath, '-C', ws.dir, 'run', '--source', 'quantum', '--parallel', '--max-parallel', '2', '--json', '--trust'],
        { env, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      const events: EngineEvent[] = [];
      let buf = '';
      first.stdout.on('data', (b: Buffer) => {
        buf += b.toString();
        const lines = buf.split('\n');
        buf = lines.pop()!;
        for (const l of lines) if (l.trim()) events.push(JSON.parse(l) as EngineEvent);
      });
      const exited = new Promise((r) => first.once('exit', r));
      let ended = false;
      void exited.then(() => {
        ended = true;
      });
      const until = Date.now() + 120_000;
      // B's agent hangs on its second request; A's feature gate has started in the folder.
      while (
        !(bRequests().length >= 2 && fs.existsSync(ws.file('.ralph/feature-gate-ran'))) &&
        !ended &&
        Date.now() < until
      )
        await new Promise((r) => setTimeout(r, 50));
      const agents = events
        .filter((e): e is Extract<EngineEvent, { type: 'agentStarted' }> => e.type === 'agentStarted')
        .map((e) => e.pid)
        .filter((p): p is number => typeof p === 'number');
      first.kill('SIGKILL');
      await exited;
      assert.ok(
        !ended || first.signalCode === 'SIGKILL',
        `the first run ended by itself:\n${events.map((e) => JSON.stringify(e)).join('\n')}`,
      );
      assert.ok(fs.existsSync(ws.file('.ralph/feature-gate-ran')) && bRequests().length >= 2, 'killed mid-round');
      // What the crash left: A merged but still in progress, B in progress, both trees (B's agent ends with its runner or
      // is ended by the next run's recovery).
      assert.deepEqual(statusOf(ws), { A: 'in_progress', B: 'in_progress' });
      assert.ok(inFeature(ws, 'ql-wt/A'), 'A was merged before the kill');
      assert.deepEqual(fs.readdirSync(ws.file('.ql-wt')).sort(), ['A', 'B']);
      const crashed = { A: ws.git('rev-parse', 'ql-wt/A'), B: ws.git('rev-parse', 'ql-wt/B') };
      assert.equal(ws.git('log', '-1', '--format=%s', crashed.B), 'B: first run');
      assert.ok(agents.length >= 2, "both lanes' agents had started");
      const aRequests = server.agentRequests().filter((r) => storyOfRequest(r.body, ['A', 'B']) === 'A').length;

      const run = await runEngine(ws, [], {
        server,
        config,
        engine: { source: 'quantum', parallel: true, maxParallel: 2 },
      });
      assert.equal(run.result.state, 'completed', `${run.result.reason}\n${run.lines.join('\n')}`);
      const warnings = run.events
        .filter((e): e is Extract<EngineEvent, { type: 'warning' }> => e.type === 'warning')
        .map((e) => e.message);
      assert.ok(
        warnings.some((w) => /story A was in progress in a crashed run: passed/.test(w)),
        warnings.join('\n'),
      );
      assert.ok(
        warnings.some((w) => /story B was in progress in a crashed run: pending/.test(w)),
        warnings.join('\n'),
      );
      assert.deepEqual(statusOf(ws), { A: 'passed', B: 'passed' });
      // A was not run again; B was, on its kept branch (its first commit under the second).
      assert.equal(server.agentRequests().filter((r) => storyOfRequest(r.body, ['A', 'B']) === 'A').length, aRequests);
      assert.deepEqual(
        run.events.filter((e) => e.type === 'iterationStarted').map((e) => (e as { item?: { id: string } }).item?.id),
        ['B'],
      );
      assert.equal(ws.git('log', '-1', '--format=%s', 'ql-wt/B^'), 'B: first run');
      // Every commit the crashed lanes made is on the feature branch now.
      for (const sha of Object.values(crashed)) assert.ok(inFeature(ws, sha), `${sha} is on the feature branch`);
      const subjects = ws.git('log', '--format=%s').split('\n');
      for (const s of ['A: work', 'B: first run', 'B: second run'])
        assert.ok(subjects.includes(s), subjects.join('\n'));
      assert.equal(ws.read('b.txt'), 'B1\nB2\n');
      assert.ok(fs.existsSync(ws.file('a.txt')) && fs.existsSync(ws.file('a-notes.txt')));
      assert.ok(!agents.some((p) => processGroupAlive(p)), "the crashed run's agents are ended");
      assert.equal(server.exhausted, 0);
      assertNothingLeft(ws);
    } finally {
      await server.close();
    }
  });
});
