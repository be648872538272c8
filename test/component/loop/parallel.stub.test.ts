import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { answerQuestion, type AnswerResult } from '../../../src/core/control/runControl';
import { LoopEngine, type EngineOptions, type RunResult } from '../../../src/core/loop/startRun';
import { RunRecorder } from '../../../src/core/loop/recorder';
import { traceListeners } from '../../../src/core/loop/parallel/trace';
import { ralphConfigSchema } from '../../../src/core/model/config';
import type { EngineEvent } from '../../../src/core/model/runEvent';
import { cliPath } from '../../support/cli';
import { listProcesses } from '../../support/processes';
import { repoRoot } from '../../support/repoRoot';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';
import { git, gitInit, quantumJson, type StorySpec } from '../../support/workspace';

/**
 * Issue 19, the lanes engine: parallel quantum stories in git worktrees, with a stub agent (test/support/stubs/
 * laneAgent.cjs: it finds its story in the prompt, does the step planned for it, commits, signals) and real git.
 */
const STUB = path.join(repoRoot, 'test', 'support', 'stubs', 'laneAgent.cjs');

interface Ws {
  t: TempFolder;
  dir: string;
  plan: string;
  log: string;
}

function makeRepo(
  stories: (StorySpec & { filePaths?: string[] })[],
  gates: Record<string, string> = { basic: 'true' },
  extra: Record<string, unknown> = {},
): Ws {
  const t = makeTempFolder('ralph-lanes-');
  const q = JSON.parse(quantumJson(stories)) as { stories: Record<string, unknown>[] };
  stories.forEach((s, i) => {
    if (s.filePaths) q.stories[i]!.filePaths = s.filePaths;
  });
  t.write('quantum.json', JSON.stringify({ ...q, ...extra }, null, 2) + '\n');
  t.write('README.md', 'demo\n');
  t.write('.gitignore', '.ralph/\n');
  t.write(
    '.ralph/config.json',
    JSON.stringify({
      claudePath: STUB,
      gates,
      timing: { betweenIterationsMs: 20, killGraceMs: 1000, stopGraceMs: 300 },
    }),
  );
  gitInit(t, { commit: true });
  const side = makeTempFolder('ralph-lanes-side-');
  return { t, dir: t.dir, plan: side.write('plan.json', '{}'), log: side.file('log.txt') };
}

function plan(ws: Ws, steps: Record<string, unknown>): void {
  fs.writeFileSync(ws.plan, JSON.stringify(steps));
}

function config(ws: Ws) {
  return ralphConfigSchema.parse(JSON.parse(ws.t.read('.ralph/config.json')));
}

/**
 * A feature gate that holds the merge slot: in the main tree only (a lane's `.git` is a file), it says it started
 * (the file `started`), then waits until every story of `ids` has queued for the slot (a trace listener writes its
 * release), then runs `after` (`command(after)`). Stories that wait for `started` end while it holds, so they queue
 * together whatever the machine's speed. `dispose` removes the listener and the files.
 */
function heldGate(ids: readonly string[]): {
  started: string;
  command: (after: string) => string;
  dispose: () => void;
} {
  const side = makeTempFolder('ralph-lanes-release-');
  const started = side.file('gate-started');
  const release = side.file('release');
  const queued = new Set<string>();
  const onPhase = (_lane: number, story: string, phase: string) => {
    if (phase !== 'mergeQueued' || !ids.includes(story)) return;
    queued.add(story);
    if (queued.size === ids.length) fs.writeFileSync(release, '');
  };
  traceListeners.add(onPhase);
  return {
    started,
    command: (after) =>
      `if test -d .git; then touch '${started}'; until test -e '${release}'; do sleep 0.05; done; fi; ${after}`,
    dispose: () => {
      traceListeners.delete(onPhase);
      side.dispose();
    },
  };
}

/** The main folder's changes to tracked files, but quantum.json's (`git status --porcelain` lines). */
function trackedChanges(ws: Ws): string[] {
  return git(ws.dir, 'status', '--porcelain', '--untracked-files=no')
    .split('\n')
    .filter((l) => l && !l.endsWith('quantum.json'));
}

/** Each `laneMerge` as `<story>:<outcome>`, sorted. */
function mergeOutcomes(events: readonly { e: EngineEvent }[]): string[] {
  return events
    .filter((x) => x.e.type === 'laneMerge')
    .map((x) => `${(x.e as { item: { id: string } }).item.id}:${(x.e as { outcome: string }).outcome}`)
    .sort();
}

async function runParallel(
  ws: Ws,
  o: Partial<EngineOptions> = {},
  onEvent?: (e: EngineEvent, lane: number, engine: LoopEngine) => void,
): Promise<{ result: RunResult; events: { e: EngineEvent; lane: number }[] }> {
  const engine = new LoopEngine({
    folder: ws.dir,
    config: config(ws),
    source: 'quantum',
    parallel: true,
    maxParallel: 4,
    agentEnv: { LANE_STUB_PLAN: ws.plan, LANE_STUB_LOG: ws.log },
    ...o,
  });
  const recorder = new RunRecorder(ws.dir, engine.runId);
  const events: { e: EngineEvent; lane: number }[] = [];
  engine.on('event', (e, lane = 0) => {
    events.push({ e, lane });
    recorder.record(e, lane);
    onEvent?.(e, lane, engine);
  });
  const result = await engine.run();
  await recorder.flush();
  return { result, events };
}

const stories = (dir: string) =>
  JSON.parse(fs.readFileSync(path.join(dir, 'quantum.json'), 'utf8')) as {
    stories: { id: string; status: string; retries: { failureLog: { phase: string; files?: string }[] } }[];
    execution?: { activeWorktrees?: string[] };
  };
const statusOf = (dir: string) => Object.fromEntries(stories(dir).stories.map((s) => [s.id, s.status]));
const logLines = (ws: Ws) => (fs.existsSync(ws.log) ? fs.readFileSync(ws.log, 'utf8').trim().split('\n') : []);

/**
 * Command lines of this checkout's stub agents still running that log to `log`: other test files, other checkouts
 * and benches may run the same stub at the same time, and each workspace has its own log.
 */
function stubProcesses(log: string): string[] {
  return listProcesses()
    .filter((p) => p.cmdline.includes(STUB))
    .filter((p) => {
      try {
        return fs.readFileSync(`/proc/${p.pid}/environ`, 'utf8').split('\0').includes(`LANE_STUB_LOG=${log}`);
      } catch {
        return false; // gone meanwhile
      }
    })
    .map((p) => p.cmdline);
}

/** Nothing is left behind: no worktree, no lock of git's worktree list, no stub process. */
function assertNothingLeft(ws: Ws): void {
  assert.equal(
    git(ws.dir, 'worktree', 'list', '--porcelain')
      .split('\n')
      .filter((l) => l.startsWith('worktree ')).length,
    1,
    git(ws.dir, 'worktree', 'list'),
  );
  assert.deepEqual(fs.existsSync(path.join(ws.dir, '.ql-wt')) ? fs.readdirSync(path.join(ws.dir, '.ql-wt')) : [], []);
  assert.equal(
    fs.existsSync(path.join(ws.dir, '.git', 'worktrees'))
      ? fs.readdirSync(path.join(ws.dir, '.git', 'worktrees')).length
      : 0,
    0,
  );
  assert.deepEqual(stubProcesses(ws.log), []);
  assert.deepEqual(stories(ws.dir).execution?.activeWorktrees ?? [], []);
}

describe('parallel lanes (issue 19, stub agent, real git)', function () {
  this.timeout(120_000);
  const made: Ws[] = [];
  /** Stories without dependencies, their priorities 1, 2, … in the order given. */
  const inPriorityOrder = (...ids: string[]) => ids.map((id, i) => ({ id, priority: i + 1 }));
  const repo = (...a: Parameters<typeof makeRepo>) => {
    const w = makeRepo(...a);
    made.push(w);
    return w;
  };
  afterEach(() => {
    for (const w of made.splice(0)) {
      w.t.dispose();
      fs.rmSync(path.dirname(w.plan), { recursive: true, force: true });
    }
  });

  it('runs a round of independent stories at once and waits for a dependency to be merged before its dependent starts', async () => {
    const ws = repo([
      { id: 'A', priority: 1 },
      { id: 'B', priority: 2 },
      { id: 'C', priority: 3, deps: ['A'] },
    ]);
    // A and B each wait until the other has started: they can only both pass when their lanes overlap.
    plan(ws, {
      A: { waitFor: ['B'], write: { 'a.txt': 'a\n' } },
      B: { waitFor: ['A'], write: { 'b.txt': 'b\n' } },
      C: { seeFile: 'a.txt', write: { 'c.txt': 'c\n' } },
    });
    const { result, events } = await runParallel(ws);
    assert.equal(result.state, 'completed', result.reason);
    assert.deepEqual(statusOf(ws.dir), { A: 'passed', B: 'passed', C: 'passed' });
    const lines = logLines(ws);
    assert.ok(lines.includes('saw A B yes') && lines.includes('saw B A yes'), lines.join('\n'));
    assert.ok(lines.includes('see C a.txt yes'), 'C started from the feature branch after A was merged');
    // Spans overlap: both started before either ended.
    const at = (k: string) => Number(lines.find((l) => l.startsWith(k))!.split(' ')[2]);
    assert.ok(at('start B') < at('end A') && at('start A') < at('end B'));
    const merges = events.filter((x) => x.e.type === 'laneMerge');
    assert.deepEqual(
      merges.map((x) => (x.e as { outcome: string }).outcome),
      ['merged', 'merged', 'merged'],
    );
    assert.ok(
      new Set(events.filter((x) => x.e.type === 'iterationStarted').map((x) => x.lane)).size >= 2,
      'iterations ran on two lanes',
    );
    // Each one-story lane ran its basic gate once (its final gate would repeat it on the same tree), then the
    // feature branch's gate after its merge, unless the merge made exactly the tree that gate passed on (the first
    // merge of A and B, both from the same head): at most two gates per story, never three.
    const gates = events
      .filter((x) => x.e.type === 'gateResult')
      .map((x) => `${x.lane}:${(x.e as { tier: string }).tier}`);
    const notAgain = merges.filter((x) => /not run again/.test((x.e as { reason: string }).reason)).length;
    assert.ok(notAgain >= 1 && notAgain <= 2, merges.map((x) => (x.e as { reason: string }).reason).join(' | '));
    assert.equal(gates.length, 3 + 3 - notAgain, gates.join(' '));
    assert.equal(git(ws.dir, 'rev-parse', '--abbrev-ref', 'HEAD'), 'ql/demo');
    for (const f of ['a.txt', 'b.txt', 'c.txt']) assert.ok(ws.t.exists(f), `${f} merged into the feature branch`);
    const log = fs.readFileSync(path.join(ws.dir, '.ralph', 'runs', result.runId, 'events.jsonl'), 'utf8');
    assert.match(log, /"lane":2/);
    assertNothingLeft(ws);
  });

  it('a merge conflict fails the right story, keeps its branch and names the file; a regression is undone and fails its story', async () => {
    const ws = repo(
      inPriorityOrder('P', 'Q', 'X', 'Y'),
      // The feature branch's gate: x.txt and y.txt together are a regression (each alone is green in its lane).
      { basic: 'true', final: '! { test -f x.txt && test -f y.txt; }' },
    );
    const maxAttempts = { maxAttempts: 1 };
    const q = JSON.parse(ws.t.read('quantum.json')) as { stories: { retries: Record<string, unknown> }[] };
    for (const s of q.stories) Object.assign(s.retries, maxAttempts);
    ws.t.write('quantum.json', JSON.stringify(q, null, 2) + '\n');
    git(ws.dir, 'commit', '-qam', 'one attempt each');
    plan(ws, {
      P: { waitFor: ['Q'], write: { 'same.txt': 'from P\n' }, sleepMs: 0 },
      Q: { waitFor: ['P'], write: { 'same.txt': 'from Q\n' }, sleepMs: 600 },
      X: { waitFor: ['Y'], write: { 'x.txt': 'x\n' } },
      Y: { waitFor: ['X'], write: { 'y.txt': 'y\n' }, sleepMs: 600 },
    });
    const { result, events } = await runParallel(ws);
    assert.equal(result.state, 'blocked', result.reason);
    // Which of two racing lanes merges first is the scheduler's: the other one conflicts (or regresses).
    const st = statusOf(ws.dir);
    const [won, lost] = st.P === 'passed' ? ['P', 'Q'] : ['Q', 'P'];
    const [ok, bad] = st.X === 'passed' ? ['X', 'Y'] : ['Y', 'X'];
    assert.deepEqual(
      [st[won], st[lost], st[ok], st[bad]],
      ['passed', 'failed', 'passed', 'failed'],
      JSON.stringify(st),
    );
    const byId = Object.fromEntries(stories(ws.dir).stories.map((s) => [s.id, s.retries.failureLog.at(-1)]));
    assert.equal(byId[lost!]?.phase, 'merge_conflict');
    assert.equal(byId[lost!]?.files, 'same.txt');
    assert.equal(byId[bad!]?.phase, 'merge_regression');
    // The feature branch is green: the winner's text, one of x.txt / y.txt; the failed stories' branches are kept.
    assert.equal(ws.t.read('same.txt'), `from ${won}\n`);
    assert.ok(ws.t.exists(`${ok!.toLowerCase()}.txt`) && !ws.t.exists(`${bad!.toLowerCase()}.txt`));
    assert.match(git(ws.dir, 'log', '-1', '--format=%s', `ql-wt/${lost}`), new RegExp(`^${lost}: `));
    assert.match(git(ws.dir, 'log', '-1', '--format=%s', `ql-wt/${bad}`), new RegExp(`^${bad}: `));
    assert.deepEqual(trackedChanges(ws), [], 'the feature branch has no change but quantum.json');
    const outcomes = mergeOutcomes(events);
    assert.deepEqual(outcomes, [`${won}:merged`, `${lost}:conflict`, `${ok}:merged`, `${bad}:regression`].sort());
    assertNothingLeft(ws);
  });

  it('lanes waiting for the merge slot together are merged under one feature gate; on red, one at a time: the right story fails and the branch ends green', async () => {
    // The feature branch's gate (in the main tree only: a lane's .git is a file) says it started, then holds its merge
    // in the slot until X, Y and Z have all queued for it; X, Y and Z end only after a gate started (so none of them
    // merges first, alone). So they wait together whatever the machine's speed. x.txt and y.txt together are a
    // regression (each alone is green).
    const held = heldGate(['X', 'Y', 'Z']);
    try {
      const ws = repo(inPriorityOrder('A', 'B', 'X', 'Y', 'Z'), {
        basic: 'true',
        final: held.command('! { test -f x.txt && test -f y.txt; }'),
      });
      const q = JSON.parse(ws.t.read('quantum.json')) as { stories: { retries: Record<string, unknown> }[] };
      for (const s of q.stories) Object.assign(s.retries, { maxAttempts: 1 });
      ws.t.write('quantum.json', JSON.stringify(q, null, 2) + '\n');
      git(ws.dir, 'commit', '-qam', 'one attempt each');
      plan(ws, {
        // A and B end first; X, Y and Z end once the feature gate of A's or B's merge has started.
        A: { write: { 'a.txt': 'a\n' }, sleepMs: 300 },
        B: { write: { 'b.txt': 'b\n' }, sleepMs: 300 },
        X: { write: { 'x.txt': 'x\n' }, waitForFile: held.started },
        Y: { write: { 'y.txt': 'y\n' }, waitForFile: held.started },
        Z: { write: { 'z.txt': 'z\n' }, waitForFile: held.started },
      });
      const { result, events } = await runParallel(ws, { maxParallel: 5 });
      assert.equal(result.state, 'blocked', result.reason);
      const st = statusOf(ws.dir);
      const [ok, bad] = st.X === 'passed' ? ['X', 'Y'] : ['Y', 'X'];
      assert.deepEqual(
        [st.A, st.B, st[ok], st[bad], st.Z],
        ['passed', 'passed', 'passed', 'failed', 'passed'],
        JSON.stringify(stories(ws.dir).stories.map((s) => [s.id, s.status, s.retries.failureLog])) +
          events
            .filter((x) => x.e.type === 'warning' || x.e.type === 'laneMerge')
            .map((x) => JSON.stringify(x.e))
            .join('\n'),
      );
      const byId = Object.fromEntries(stories(ws.dir).stories.map((s) => [s.id, s.retries.failureLog.at(-1)]));
      assert.equal(byId[bad!]?.phase, 'merge_regression');
      // The culprit came in a batch (X, Y and Z queued behind the held gate): the batch's gate was red, then its stories
      // were merged again one at a time.
      const warnings = events.filter((x) => x.e.type === 'warning').map((x) => (x.e as { message: string }).message);
      assert.ok(
        warnings.some((w) => /merged again one at a time/.test(w) && new RegExp(`\\b${bad}\\b`).test(w.split(':')[0]!)),
        warnings.join('\n'),
      );
      // The feature branch is green and holds every passed story's file, not the culprit's; its branch is kept.
      for (const f of ['a.txt', 'b.txt', `${ok!.toLowerCase()}.txt`, 'z.txt']) assert.ok(ws.t.exists(f), f);
      assert.ok(!ws.t.exists(`${bad!.toLowerCase()}.txt`));
      assert.match(git(ws.dir, 'log', '-1', '--format=%s', `ql-wt/${bad}`), new RegExp(`^${bad}: `));
      assert.deepEqual(trackedChanges(ws), [], 'the feature branch has no change but quantum.json');
      const outcomes = mergeOutcomes(events);
      assert.deepEqual(outcomes, ['A:merged', 'B:merged', `${ok}:merged`, `${bad}:regression`, 'Z:merged'].sort());
      assertNothingLeft(ws);
    } finally {
      held.dispose();
    }
  });

  it('lanes waiting for the merge slot together pass under one run of the feature gate when it is green', async () => {
    // The feature gate of A's or B's merge holds the slot until X and Y have both queued for it, and X and Y end only
    // after it started: they wait together whatever the machine's speed.
    const held = heldGate(['X', 'Y']);
    try {
      const ws = repo(inPriorityOrder('A', 'B', 'X', 'Y'), { basic: 'true', final: held.command('true') });
      plan(ws, {
        A: { write: { 'a.txt': 'a\n' }, sleepMs: 300 },
        B: { write: { 'b.txt': 'b\n' }, sleepMs: 300 },
        X: { write: { 'x.txt': 'x\n' }, waitForFile: held.started },
        Y: { write: { 'y.txt': 'y\n' }, waitForFile: held.started },
      });
      const { result, events } = await runParallel(ws);
      assert.equal(result.state, 'completed', result.reason);
      const merges = events
        .filter((x) => x.e.type === 'laneMerge')
        .map((x) => x.e as { item: { id: string }; outcome: string; reason: string });
      assert.deepEqual(merges.map((m) => `${m.item.id}:${m.outcome}`).sort(), [
        'A:merged',
        'B:merged',
        'X:merged',
        'Y:merged',
      ]);
      // At least one of X and Y waited for the slot and went in with others under one gate.
      const batched = merges
        .filter((m) => /with \d+ other stor(y|ies) under one run of the feature branch's gate/.test(m.reason))
        .map((m) => m.item.id);
      assert.ok(
        batched.length >= 2 && (batched.includes('X') || batched.includes('Y')),
        merges.map((m) => `${m.item.id}: ${m.reason}`).join('\n'),
      );
      for (const f of ['a.txt', 'b.txt', 'x.txt', 'y.txt']) assert.ok(ws.t.exists(f), f);
      assertNothingLeft(ws);
    } finally {
      held.dispose();
    }
  });

  it('STOP during a round ends every lane; the stories go back to pending with their branches kept', async () => {
    const ws = repo(inPriorityOrder('S1', 'S2'));
    plan(ws, {
      S1: { waitFor: ['S2'], write: { 's1.txt': '1\n' }, hang: true },
      S2: { waitFor: ['S1'], write: { 's2.txt': '2\n' }, hang: true },
    });
    let runId = '';
    // STOP once both lanes' agents are running (seen in the stub's log), written to the run's own folder.
    const poll = setInterval(() => {
      if (runId && logLines(ws).filter((l) => l.startsWith('hang ')).length === 2) {
        clearInterval(poll);
        fs.writeFileSync(path.join(ws.dir, '.ralph', 'runs', runId, 'STOP'), '');
      }
    }, 100);
    const { result } = await runParallel(ws, {}, (_e, _lane, engine) => {
      runId = engine.runId;
    }).finally(() => clearInterval(poll));
    assert.equal(result.state, 'stopped', result.reason);
    assert.deepEqual(statusOf(ws.dir), { S1: 'pending', S2: 'pending' });
    assert.match(git(ws.dir, 'log', '-1', '--format=%s', 'ql-wt/S1'), /^S1: /);
    assert.match(git(ws.dir, 'log', '-1', '--format=%s', 'ql-wt/S2'), /^S2: /);
    assertNothingLeft(ws);
  });

  it('killing the runner mid-round and starting again recovers: no commit lost, no worktree left', async () => {
    const ws = repo(inPriorityOrder('K1', 'K2'));
    plan(ws, {
      K1: { waitFor: ['K2'], write: { 'k1.txt': 'first run\n' }, subject: 'first run', hang: true },
      K2: { waitFor: ['K1'], write: { 'k2.txt': 'first run\n' }, subject: 'first run', hang: true },
    });
    const child = spawn(
      process.execPath,
      [cliPath, '-C', ws.dir, 'run', '--source', 'quantum', '--parallel', '--json'],
      { env: { ...process.env, LANE_STUB_PLAN: ws.plan, LANE_STUB_LOG: ws.log, RALPH_TRUST: '1' }, stdio: 'ignore' },
    );
    try {
      const until = Date.now() + 60_000;
      while (logLines(ws).filter((l) => l.startsWith('hang ')).length < 2 && Date.now() < until)
        await new Promise((r) => setTimeout(r, 100));
      assert.equal(logLines(ws).filter((l) => l.startsWith('hang ')).length, 2, logLines(ws).join('\n'));
    } finally {
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
    }
    // Left behind by the crash: two lanes, their agents still running.
    assert.equal(fs.readdirSync(path.join(ws.dir, '.ql-wt')).length, 2);
    plan(ws, { K1: { write: { 'k1-more.txt': 'second\n' } }, K2: { write: { 'k2-more.txt': 'second\n' } } });
    const { result, events } = await runParallel(ws);
    assert.equal(result.state, 'completed', result.reason);
    assert.deepEqual(statusOf(ws.dir), { K1: 'passed', K2: 'passed' });
    // The first run's commits are on the feature branch (taken up from the kept branches).
    const subjects = git(ws.dir, 'log', '--format=%s').split('\n');
    assert.ok(subjects.includes('K1: first run') && subjects.includes('K2: first run'), subjects.join('\n'));
    assert.ok(ws.t.exists('k1.txt') && ws.t.exists('k2-more.txt'));
    assert.ok(
      events.some(
        (x) =>
          x.e.type === 'warning' && /in progress in a crashed run: pending/.test((x.e as { message: string }).message),
      ),
    );
    assertNothingLeft(ws);
  });

  /**
   * Runs `ws` in parallel and answers Q1's question "blue" as a person would, through core answerQuestion (`ralph
   * answer`), once the stub logged it asked and the question is in the run log. `tried`: the last answer error.
   */
  async function runAnswering(
    ws: Ws,
    onEvent?: (e: EngineEvent, lane: number, engine: LoopEngine) => void,
  ): Promise<{
    result: RunResult;
    events: { e: EngineEvent; lane: number }[];
    answered: AnswerResult | null;
    tried: string;
  }> {
    let answered: AnswerResult | null = null;
    let tried = '';
    const poll = setInterval(() => {
      if (answered || !logLines(ws).includes('asked Q1')) return;
      answerQuestion(ws.dir, 'blue').then(
        (r) => {
          answered = r;
        },
        (err: Error) => {
          tried = err.message;
        },
      );
    }, 200);
    const { result, events } = await runParallel(ws, {}, onEvent).finally(() => clearInterval(poll));
    return { result, events, answered: answered as AnswerResult | null, tried };
  }

  it('a question asked in a lane waits for `ralph answer`, which writes it where the lane reads it; the other lane goes on', async () => {
    const ws = repo(inPriorityOrder('Q1', 'Q2'));
    plan(ws, { Q1: { ask: 'Which colour?', write: { 'q1.txt': '1\n' } }, Q2: { write: { 'q2.txt': '2\n' } } });
    const { result, events, answered, tried } = await runAnswering(ws);
    assert.equal(result.state, 'completed', `${result.reason} (last answer error: ${tried})`);
    assert.deepEqual(statusOf(ws.dir), { Q1: 'passed', Q2: 'passed' });
    const a = answered as AnswerResult | null;
    assert.ok(a, tried);
    assert.equal(a.item, 'Q1');
    // One place: the state root's run folder, the path the lane's question event names too.
    assert.equal(a.file, path.join(ws.dir, '.ralph', 'runs', result.runId, 'answers', `${a.question}.md`));
    assert.equal(fs.readFileSync(a.file, 'utf8'), 'blue\n', "the answer outlives the lane's worktree");
    const q = events.find((x) => x.e.type === 'question');
    assert.equal((q?.e as { answerFile: string }).answerFile, a.file);
    assert.ok(logLines(ws).includes('answer Q1 blue'), logLines(ws).join('\n'));
    assert.ok(events.some((x) => x.e.type === 'answered' && (x.e as { text: string }).text === 'blue'));
    // The lane waited: Q1's agent ran twice (the question, then the work), never a third time meanwhile.
    assert.equal(logLines(ws).filter((l) => l.startsWith('start Q1 ')).length, 2, logLines(ws).join('\n'));
    assertNothingLeft(ws);
  });

  it("hears what a lane's agent said while the engine was still recording it in run.json: its question, its STORY_PASSED", async () => {
    // Under load the agent's output came while the engine awaited run.json and the agent mirror after the spawn, before
    // it listened: the texts were lost, a question read as a natural end (its story run again before the answer) and a
    // STORY_PASSED as no claim (the lane stalled, the run ended blocked). Forced here: the lock of the lane's run.json
    // is taken when its agent starts (the event comes before those writes), and the agent removes it only once the
    // engine has read its output (laneAgent.cjs holdRunRecord). One attempt each: a lost text fails the run soon.
    const ws = repo([
      { id: 'Q1', priority: 1, maxAttempts: 1 },
      { id: 'Q2', priority: 2, maxAttempts: 1 },
    ]);
    plan(ws, {
      Q1: { ask: 'Which colour?', write: { 'q1.txt': '1\n' }, holdRunRecord: ws.dir },
      Q2: { write: { 'q2.txt': '2\n' }, holdRunRecord: ws.dir },
    });
    // The agent removes a lock inside its lane's run folder, which the protected mounts keep read-only: the engine's
    // own barrier is what this tests, so the lanes run without the mount namespace.
    const cfgFile = path.join(ws.dir, '.ralph', 'config.json');
    fs.writeFileSync(
      cfgFile,
      JSON.stringify({ ...JSON.parse(fs.readFileSync(cfgFile, 'utf8')), containment: 'marker' }),
    );
    const storyOf = new Map<number, string>();
    const locks = new Set<string>();
    const notTaken: string[] = [];
    // proper-lockfile takes over a lock older than 5 s: kept fresh while the agent has not started yet.
    const fresh = setInterval(() => {
      for (const l of locks) {
        try {
          const now = new Date();
          fs.utimesSync(l, now, now);
        } catch {
          locks.delete(l);
        }
      }
    }, 500);
    const { result, events, answered, tried } = await runAnswering(ws, (e, lane, engine) => {
      if (e.type === 'iterationStarted') storyOf.set(lane, e.item?.id ?? '?');
      if (e.type !== 'agentStarted') return;
      const lock = path.join(
        ws.dir,
        '.ql-wt',
        storyOf.get(lane) ?? '?',
        '.ralph',
        'runs',
        engine.runId,
        'run.json.lock',
      );
      try {
        fs.mkdirSync(lock);
        locks.add(lock);
      } catch (err) {
        notTaken.push(`${lock}: ${(err as Error).message}`);
      }
    }).finally(() => clearInterval(fresh));
    assert.deepEqual(notTaken, []);
    const lines = logLines(ws);
    // The barrier held every time: each agent's output was read while the lock was still taken.
    assert.deepEqual(
      lines.filter((l) => l.startsWith('held ')).sort(),
      ['held Q1 read locked', 'held Q1 read locked', 'held Q2 read locked'],
      lines.join('\n'),
    );
    const endings = events
      .filter((x) => x.e.type === 'iterationEnded')
      .map((x) => (x.e as { ending: string }).ending)
      .sort();
    assert.deepEqual(endings, ['complete', 'complete', 'question']);
    assert.equal(result.state, 'completed', `${result.reason} (last answer error: ${tried})`);
    assert.deepEqual(statusOf(ws.dir), { Q1: 'passed', Q2: 'passed' });
    assert.equal(answered?.item, 'Q1', tried);
    assert.ok(lines.includes('answer Q1 blue'), lines.join('\n'));
    assert.equal(lines.filter((l) => l.startsWith('start Q1 ')).length, 2, lines.join('\n'));
    assertNothingLeft(ws);
  });

  it("a lane's iteration writes its start with the marks taken before the agent, and the agent's end with the gate's start (decision 0027): never a state with a child running and no marks", async () => {
    const ws = repo([{ id: 'A', priority: 1 }]);
    plan(ws, { A: { write: { 'a.txt': 'a\n' } } });
    // Every state of the lane's run.json, as written (writePlan.ts renames its temp file over it).
    const states: {
      iteration?: number;
      agentPgid?: number | null;
      claimBaseline?: { marksAtAgentStart?: unknown } | null;
    }[] = [];
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const nodeFs = require('node:fs') as typeof fs;
    const orig = nodeFs.renameSync;
    nodeFs.renameSync = (from: fs.PathLike, to: fs.PathLike) => {
      if (String(to).includes(`${path.sep}.ql-wt${path.sep}`) && String(to).endsWith(`${path.sep}run.json`))
        states.push(JSON.parse(fs.readFileSync(from, 'utf8')));
      orig(from, to);
    };
    let result: RunResult;
    try {
      ({ result } = await runParallel(ws, { maxParallel: 1 }));
    } finally {
      nodeFs.renameSync = orig;
    }
    assert.equal(result.state, 'completed', result.reason);
    const started = states.findIndex((r) => typeof r.agentPgid === 'number');
    const ended = states.findIndex((r, i) => i > started && r.agentPgid === null);
    assert.ok(started > 0 && ended > started, `the agent's start and end are in run.json (${states.length} writes)`);
    // Before the agent: no state shows the iteration started without the marks (two writes before, the first one without).
    assert.deepEqual(
      states.slice(0, started).filter((r) => r.iteration === 1 && !r.claimBaseline?.marksAtAgentStart).length,
      0,
    );
    // After it: the agent's marks stay until the write that clears the agent (no state with the agent and no marks),
    // and that write is the story gate's start, with the gate's own reading of the marks (none: no person marked).
    assert.deepEqual(states.slice(started, ended).filter((r) => !r.claimBaseline?.marksAtAgentStart).length, 0);
    assert.deepEqual(states[ended]!.claimBaseline?.marksAtAgentStart, {});
  });

  it("starts a round's lane engines one at a time: the next lane's engine starts once the previous lane's agent runs; the agents still overlap", async () => {
    const ws = repo(inPriorityOrder('A', 'B', 'C'));
    // All three agents wait until the others have started: they pass only when the three run at once.
    plan(ws, {
      A: { waitFor: ['B', 'C'], write: { 'a.txt': 'a\n' } },
      B: { waitFor: ['A', 'C'], write: { 'b.txt': 'b\n' } },
      C: { waitFor: ['A', 'B'], write: { 'c.txt': 'c\n' } },
    });
    const { result, events } = await runParallel(ws);
    assert.equal(result.state, 'completed', result.reason);
    // A lane's engine shows itself to the run with its first iteration (its runStarted is its own).
    const starts = events
      .filter((x) => x.lane > 0 && (x.e.type === 'iterationStarted' || x.e.type === 'agentStarted'))
      .map((x) => `${x.e.type === 'iterationStarted' ? 'engine' : 'agent'}${x.lane}`);
    assert.equal(starts.length, 6, starts.join(' '));
    for (let i = 0; i < starts.length; i += 2) {
      assert.match(starts[i]!, /^engine/, starts.join(' '));
      assert.equal(
        starts[i + 1],
        starts[i]!.replace('engine', 'agent'),
        `each engine's agent starts before the next engine: ${starts.join(' ')}`,
      );
    }
    assertNothingLeft(ws);
  });

  it('STOP written when the first lane agent starts: lanes still waiting for their turn start no agent; their stories go back (breaker 11)', async () => {
    const ws = repo(inPriorityOrder('A', 'B', 'C', 'D'));
    plan(ws, {
      A: { write: { 'a.txt': 'a\n' }, hang: true },
      B: { write: { 'b.txt': 'b\n' }, hang: true },
      C: { write: { 'c.txt': 'c\n' }, hang: true },
      D: { write: { 'd.txt': 'd\n' }, hang: true },
    });
    let stopped = false;
    const { result, events } = await runParallel(ws, {}, (e, _lane, engine) => {
      if (e.type !== 'agentStarted' || stopped) return;
      stopped = true;
      fs.writeFileSync(path.join(ws.dir, '.ralph', 'runs', engine.runId, 'STOP'), '');
    });
    assert.equal(result.state, 'stopped', result.reason);
    // The engine's own count of the agents it started: the first one only. Its process may be ended (STOP, then
    // stopGraceMs) before it logs its start on a loaded machine, so the stub's log shows at most that one.
    const started = events.filter((x) => x.e.type === 'agentStarted').map((x) => x.lane);
    assert.equal(
      started.length,
      1,
      `agents started (lanes ${started.join(', ')}), the first one when STOP was written`,
    );
    const starts = logLines(ws).filter((l) => l.startsWith('start '));
    assert.ok(starts.length <= 1, `agents started after STOP: ${starts.join(' | ')}`);
    const status = statusOf(ws.dir);
    assert.deepEqual(
      Object.values(status).filter((st) => st !== 'pending'),
      [],
      JSON.stringify(status),
    );
    assertNothingLeft(ws);
  });

  it('commits what a lane left uncommitted onto its branch before the merge, so it reaches the feature branch', async () => {
    const ws = repo(inPriorityOrder('A', 'B'));
    // A commits nothing (its final gate repeats the green one on the same tree: the leftovers are read from that
    // tree's status); B commits one file and leaves another.
    plan(ws, {
      A: { write: { 'a.txt': 'a\n', 'dir with space/n.txt': 'n\n' }, commit: false },
      B: { write: { 'b.txt': 'b\n' } },
    });
    const { result, events } = await runParallel(ws);
    assert.equal(result.state, 'completed', result.reason);
    assert.deepEqual(statusOf(ws.dir), { A: 'passed', B: 'passed' });
    for (const f of ['a.txt', 'dir with space/n.txt', 'b.txt'])
      assert.ok(ws.t.exists(f), `${f} merged into the feature branch`);
    assert.match(git(ws.dir, 'log', '-1', '--format=%s', 'ql-wt/A'), /^ralph: A: work the lane left uncommitted$/);
    assert.match(git(ws.dir, 'log', '-1', '--format=%s', 'ql-wt/B'), /^B: /);
    assert.ok(
      events.some(
        (x) =>
          x.e.type === 'laneMerge' &&
          (x.e as { item: { id: string } }).item.id === 'A' &&
          (x.e as { outcome: string }).outcome === 'merged',
      ),
    );
    assertNothingLeft(ws);
  });

  it("keeps one disk-space reserve for the run, in the main folder's run folder, not one per lane; none is left at the end", async () => {
    const ws = repo(inPriorityOrder('A', 'B'));
    plan(ws, { A: { write: { 'a.txt': 'a\n' } }, B: { write: { 'b.txt': 'b\n' } } });
    const seen: string[] = [];
    const { result } = await runParallel(ws, {}, (e, lane, engine) => {
      if (e.type !== 'agentStarted') return;
      const story = lane === 0 ? '' : fs.readdirSync(path.join(ws.dir, '.ql-wt')).sort().join(',');
      const laneReserves = story
        .split(',')
        .filter(Boolean)
        .filter((id) =>
          fs.existsSync(path.join(ws.dir, '.ql-wt', id, '.ralph', 'runs', engine.runId, '.space-reserve')),
        );
      seen.push(
        `run:${fs.existsSync(path.join(ws.dir, '.ralph', 'runs', engine.runId, '.space-reserve'))} lanes:${laneReserves.length}`,
      );
    });
    assert.equal(result.state, 'completed', result.reason);
    assert.deepEqual(seen, ['run:true lanes:0', 'run:true lanes:0']);
    assert.equal(
      fs.existsSync(path.join(ws.dir, '.ralph', 'runs', result.runId, '.space-reserve')),
      false,
      'released at the end',
    );
    assertNothingLeft(ws);
  });

  it('refuses to start with uncommitted changes to tracked files, or outside a git repository', async () => {
    const ws = repo([{ id: 'A' }]);
    ws.t.write('README.md', 'changed\n');
    await assert.rejects(runParallel(ws), /uncommitted changes/);
    const plain = makeTempFolder('ralph-lanes-nogit-', {
      files: {
        'quantum.json': quantumJson([{ id: 'A' }]),
        '.ralph/config.json': JSON.stringify({ claudePath: STUB, gates: { basic: 'true' } }),
      },
    });
    try {
      const engine = new LoopEngine({
        folder: plain.dir,
        config: ralphConfigSchema.parse({ claudePath: STUB, gates: { basic: 'true' } }),
        source: 'quantum',
        parallel: true,
      });
      await assert.rejects(engine.run(), /needs a git repository/);
    } finally {
      plain.dispose();
    }
    // A subfolder of a repository, and a repository with no commit yet (the start's one rev-parse fails there; the
    // checks ask again, one at a time).
    const sub = repo([{ id: 'A' }]);
    sub.t.write('inner/quantum.json', quantumJson([{ id: 'A' }]));
    await assert.rejects(
      new LoopEngine({
        folder: path.join(sub.dir, 'inner'),
        config: config(sub),
        source: 'quantum',
        parallel: true,
      }).run(),
      /needs the repository's top folder/,
    );
    const unborn = makeTempFolder('ralph-lanes-unborn-', { files: { 'quantum.json': quantumJson([{ id: 'A' }]) } });
    try {
      git(unborn.dir, 'init', '-q', '-b', 'main');
      const engine = new LoopEngine({
        folder: unborn.dir,
        config: ralphConfigSchema.parse({ claudePath: STUB, gates: { basic: 'true' } }),
        source: 'quantum',
        parallel: true,
      });
      await assert.rejects(engine.run(), /git rev-parse --abbrev-ref HEAD: .*HEAD/);
      assert.deepEqual(
        listProcesses()
          .filter((p) => p.cmdline.includes(STUB) && (p.cwd ?? '').startsWith(unborn.dir))
          .map((p) => p.cmdline),
        [],
      );
    } finally {
      unborn.dispose();
    }
  });
});
