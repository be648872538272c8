import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import type { EngineEvent } from '../../../src/core/model/runEvent';
import {
  eventsKey,
  FEATURE_CHANNEL,
  KEY_PREFIX,
  LANE_QUEUE,
  leaseKey,
  type LaneJob,
} from '../../../src/core/remote/laneJob';
import { laneJobId } from '../../../src/core/remote/decide';
import { startRedis, type RedisServer } from '../../support/redisServer';
import {
  EventLog,
  idleSpareOnly,
  killAgentGroup,
  lanesCleaned,
  makeRemoteRepo,
  planSteps,
  queueEntriesOf,
  redisClientsOfThisProcess,
  runCoordinator,
  startWorker,
  statuses,
  stopWorker,
  stubAgents,
  waitForLogLine,
  watchJson,
  workerOf,
  type RemoteRepo,
  type WorkerProc,
} from '../../support/remoteLanes';
import { runCliAsync } from '../../support/cli';
import { git } from '../../support/workspace';
import { waitUntil } from '../../support/processes';

/**
 * laneStallMs of the kill and stop tests. A live worker's heartbeat (every third of it) can be late by seconds on a
 * loaded 2-core machine: at 2 s a live worker was taken for dead before the test stopped it, and the scenario changed.
 */
const STALL_MS = 8000;

/**
 * Remote lanes through BullMQ on a real redis-server (127.0.0.1, random port, password, AOF): `ralph worker`
 * processes with their own HOME and work folder, a bare repository as the shared remote, the lane stub agent, and
 * the coordinator of a parallel run in this process (`laneDispatcher: "bullmq"`).
 */
describe('remote lanes (BullMQ on a real Redis, worker processes, real git)', function () {
  this.timeout(600_000);
  let redis: RedisServer;
  let client: Redis;
  const workers: WorkerProc[] = [];
  const repos: RemoteRepo[] = [];

  before(async () => {
    redis = await startRedis();
    client = new Redis(redis.url, { maxRetriesPerRequest: null });
    client.on('error', () => undefined);
  });
  after(async () => {
    client.disconnect();
    await redis.stop();
  });
  afterEach(async () => {
    for (const w of workers.splice(0)) await stopWorker(w);
    for (const r of repos.splice(0)) {
      r.t.dispose();
      r.side.dispose();
    }
  });

  const repo = (...a: Parameters<typeof makeRemoteRepo>) => {
    const r = makeRemoteRepo(...a);
    repos.push(r);
    return r;
  };
  const worker = async (r: RemoteRepo, o: Parameters<typeof startWorker>[3] = {}, repoList = [r.remote]) => {
    const w = await startWorker(redis.url, repoList, r, o);
    workers.push(w);
    return w;
  };

  /**
   * Nothing of the run is left: no lane branch on the remote or here, no worktree, no stub agent, no Redis key.
   * `lost`: workers killed as a lost machine is (what they left on their own disk went with the machine).
   */
  async function assertNothingLeft(r: RemoteRepo, runId: string, lost: readonly WorkerProc[] = []): Promise<void> {
    assert.equal(
      git(r.remote, 'for-each-ref', '--format=%(refname)', 'refs/heads/ql-wt/'),
      '',
      'no lane branch on the remote',
    );
    assert.equal(git(r.dir, 'for-each-ref', '--format=%(refname)', 'refs/heads/ql-wt/'), '', 'no lane branch here');
    assert.equal(
      git(r.dir, 'worktree', 'list', '--porcelain')
        .split('\n')
        .filter((l) => l.startsWith('worktree ')).length,
      1,
    );
    assert.deepEqual(fs.existsSync(path.join(r.dir, '.ql-wt')) ? fs.readdirSync(path.join(r.dir, '.ql-wt')) : [], []);
    for (const w of workers.filter((x) => !lost.includes(x))) {
      await lanesCleaned(w, runId);
      // No lane tree left, no worktree in a mirror: only the idle spare, at a commit of no run.
      idleSpareOnly(w);
    }
    assert.deepEqual(stubAgents(r.log), []);
    assert.deepEqual(await client.keys(`${KEY_PREFIX}:run:${runId}:*`), []);
    assert.deepEqual(await client.keys(`${KEY_PREFIX}:${LANE_QUEUE}:${runId}.*`), []);
    // No key anywhere names the run, no queue list or set holds one of its jobs, no connection of the coordinator
    // (this process) is left open.
    assert.deepEqual(
      (await client.keys('*')).filter((k) => k.includes(runId)),
      [],
    );
    assert.deepEqual(await queueEntriesOf(client, `${KEY_PREFIX}:${LANE_QUEUE}`, runId), []);
    assert.deepEqual(await redisClientsOfThisProcess(client), [], 'the coordinator closed its Redis connections');
  }

  const merges = (events: { e: EngineEvent }[]) =>
    events
      .filter((x) => x.e.type === 'laneMerge' && (x.e as { outcome: string }).outcome === 'merged')
      .map((x) => (x.e as { item: { id: string } }).item.id)
      .sort();
  const laneBranchesOf = (remote: string) =>
    git(remote, 'for-each-ref', '--format=%(refname:short)', 'refs/heads/ql-wt/').split('\n').filter(Boolean);
  const itemOf = (e: EngineEvent) => (e as { item?: { id: string } | null }).item?.id;
  const quantumStory = (r: RemoteRepo, id: string) =>
    (
      JSON.parse(r.t.read('quantum.json')) as {
        stories: { id: string; retries: { attempts: number; failureLog: { phase: string; error: string }[] } }[];
      }
    ).stories.find((s) => s.id === id)!;

  /**
   * The machine running story `id`'s first attempt (`started`, its iterationStarted) is lost: its worker and the
   * story's stub agents are killed at once. Returns the lost worker.
   */
  async function loseMachineOf(r: RemoteRepo, id: string, started: EngineEvent): Promise<WorkerProc> {
    const victim = workers.find((w) => workerOf(started)?.endsWith(`:${w.pid}`));
    assert.ok(victim, `${id} runs on one of the workers (${workerOf(started)})`);
    victim.child.kill('SIGKILL');
    for (const pid of stubAgents(r.log, id)) killAgentGroup(pid);
    await victim.exited;
    return victim;
  }

  /**
   * Redis dies while story `id`'s agent waits for `release`; the agent ends while Redis is away (its worker's report
   * waits for Redis), then Redis comes back.
   */
  async function redisOutageWhileWaiting(r: RemoteRepo, log: EventLog, id: string, release: string): Promise<void> {
    await waitForLogLine(r.log, new RegExp(`^wait ${id} \\d+$`, 'm'));
    await redis.kill('SIGKILL');
    await log.next((e) => e.type === 'warning' && /^remote lanes: lost Redis/.test(e.message));
    fs.writeFileSync(release, '');
    await waitForLogLine(r.log, new RegExp(`^end ${id} \\d+$`, 'm'));
    await redis.start();
  }

  /**
   * Eight stories S1…S8 on three workers (laneStallMs {@link STALL_MS}), each passing after 200 ms but S1, whose
   * agent hangs: returns once S1's first attempt runs, with that attempt's `iterationStarted` (`first`).
   */
  async function eightWithS1Hanging() {
    const ids = ['S1', 'S2', 'S3', 'S4', 'S5', 'S6', 'S7', 'S8'];
    const r = repo(
      ids.map((id, i) => ({ id, priority: i + 1 })),
      redis.url,
      { laneStallMs: STALL_MS },
    );
    const pass = (id: string) => ({ write: { [`${id}.txt`]: `${id}\n` }, sleepMs: 200 });
    planSteps(r, { ...Object.fromEntries(ids.map((id) => [id, pass(id)])), S1: { hang: true } });
    await Promise.all([worker(r), worker(r), worker(r)]);
    const log = new EventLog();
    const running = runCoordinator(r, { maxParallel: 3 }, log.on);
    await waitForLogLine(r.log, /^hang S1 \d+$/m);
    const first = await log.next((e) => e.type === 'iterationStarted' && itemOf(e) === 'S1');
    return { ids, r, pass, log, running, first };
  }

  /** The run's warnings say Redis was lost, then back. Returns the warnings. */
  function assertRedisLostAndBack(events: readonly { e: EngineEvent }[]): string[] {
    const said = events.filter((x) => x.e.type === 'warning').map((x) => (x.e as { message: string }).message);
    const lost = said.findIndex((m) => /^remote lanes: lost Redis/.test(m));
    const back = said.findIndex((m) => /^remote lanes: Redis at .* is back after \d+ ms/.test(m));
    assert.ok(lost >= 0 && back > lost, said.join('\n'));
    return said;
  }

  it('runs eight stories on three workers to passed, each merged once, every lane event naming its worker', async () => {
    const ids = ['S1', 'S2', 'S3', 'S4', 'S5', 'S6', 'S7', 'S8'];
    const r = repo(
      ids.map((id, i) => ({ id, priority: i + 1 })),
      redis.url,
    );
    planSteps(r, Object.fromEntries(ids.map((id) => [id, { write: { [`${id}.txt`]: `${id}\n` }, sleepMs: 200 }])));
    await Promise.all([worker(r), worker(r), worker(r)]);
    const { result, events } = await runCoordinator(r, { maxParallel: 3 });
    assert.equal(result.state, 'completed', result.reason);
    assert.deepEqual(statuses(r.dir), Object.fromEntries(ids.map((id) => [id, 'passed'])));
    assert.deepEqual(merges(events), ids);
    for (const id of ids) assert.ok(r.t.exists(`${id}.txt`), `${id} merged into the feature branch`);
    const started = events.filter((x) => x.e.type === 'agentStarted');
    // At least one agent per story (a loaded machine may see a lane taken for dead and dispatched again).
    assert.deepEqual(
      [
        ...new Set(
          events
            .filter((x) => x.e.type === 'iterationStarted')
            .map((x) => (x.e as { item: { id: string } | null }).item?.id),
        ),
      ].sort(),
      ids,
    );
    for (const s of started) assert.match(workerOf(s.e) ?? '', /:\d+$/, 'an agent start names its worker');
    const used = new Set(started.map((s) => workerOf(s.e)!.split(':')[1]));
    assert.ok(used.size >= 2, `lanes ran on ${used.size} worker(s)`);
    const log = fs.readFileSync(path.join(r.dir, '.ralph', 'runs', result.runId, 'events.jsonl'), 'utf8');
    assert.match(log, /"lane":\d+.*"worker":"[^"]+:\d+"/);
    // The feature branch the run made is on the remote.
    assert.equal(git(r.remote, 'rev-parse', 'ql/demo'), git(r.dir, 'rev-parse', 'HEAD'));
    await assertNothingLeft(r, result.runId);
  });

  it('dependencies wait for merges: a story starts on a worker only after each story it depends on is merged, on a commit that holds their work', async () => {
    const r = repo(
      [
        { id: 'S1', priority: 1 },
        { id: 'S2', priority: 2 },
        { id: 'S3', priority: 3, deps: ['S1'] },
        { id: 'S4', priority: 4, deps: ['S2', 'S3'] },
      ],
      redis.url,
    );
    const ids = ['S1', 'S2', 'S3', 'S4'];
    planSteps(r, Object.fromEntries(ids.map((id) => [id, { write: { [`${id}.txt`]: `${id}\n` }, sleepMs: 200 }])));
    await Promise.all([worker(r), worker(r), worker(r)]);
    const { result, events } = await runCoordinator(r, { maxParallel: 3 });
    assert.equal(result.state, 'completed', result.reason);
    assert.deepEqual(merges(events), ids);
    const at = (type: string, id: string, outcome?: string) =>
      events.findIndex(
        (x) =>
          x.e.type === type &&
          itemOf(x.e) === id &&
          (outcome === undefined || (x.e as { outcome?: string }).outcome === outcome),
      );
    for (const [story, deps] of [
      ['S3', ['S1']],
      ['S4', ['S2', 'S3']],
    ] as const) {
      const started = at('iterationStarted', story);
      assert.ok(started >= 0, `${story} ran`);
      for (const d of deps) assert.ok(at('laneMerge', d, 'merged') < started, `${d} merged before ${story} started`);
      // The lane's commit descends from each dependency's: its worker checked out a feature branch that held them.
      const commitOf = (id: string) =>
        git(r.dir, 'log', '--format=%H %s', 'HEAD')
          .split('\n')
          .find((l) => l.split(' ')[1] === `${id}:`)!
          .split(' ')[0]!;
      for (const d of deps)
        assert.doesNotThrow(
          () => git(r.dir, 'merge-base', '--is-ancestor', commitOf(d), commitOf(story)),
          `${d}'s commit is in ${story}'s history`,
        );
    }
    await assertNothingLeft(r, result.runId);
  });

  it('a worker makes an idle spare tree before it serves: its first job checks out there, a run leaves only the idle spare, and the worker removes it when it ends', async () => {
    const r = repo([{ id: 'S1' }], redis.url);
    planSteps(r, { S1: { write: { 'S1.txt': 'S1\n' } } });
    const traceFile = r.side.file('trace.jsonl');
    const w = await worker(r, { env: { RALPH_TRACE_REMOTE: traceFile } });
    assert.ok(idleSpareOnly(w), 'a spare tree ready before the worker served');
    // Its lane code warmed up in a scratch folder (warmLane.ts) that is gone again.
    assert.deepEqual(fs.readdirSync(path.join(w.dir, 'state')), []);
    const { result } = await runCoordinator(r);
    assert.equal(result.state, 'completed', result.reason);
    assert.ok(r.t.exists('S1.txt'), 'S1 merged');
    // The lane took the spare: its tree came from a checkout there, not from a `git worktree add`.
    const marks = fs
      .readFileSync(traceFile, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { who: string; story: string; phase: string });
    assert.ok(
      marks.some((m) => m.who.endsWith(`:${w.pid}`) && m.story === 'S1' && m.phase === 'spareTaken'),
      marks.map((m) => m.phase).join(' '),
    );
    // After the run: an idle spare again, at a commit fetched before the worker served (nothing of the run).
    await lanesCleaned(w, result.runId);
    assert.ok(idleSpareOnly(w), 'an idle spare ready for the next run');
    w.child.kill('SIGTERM');
    // A clean end (SIGTERM after a lane ran: it once killed the worker before it removed anything).
    assert.equal(await w.exited, 0);
    assert.deepEqual(fs.readdirSync(path.join(w.dir, 'lanes')), [], 'the worker removed its spare when it ended');
    assert.equal(idleSpareOnly(w), null);
  });

  it('a worker started in the folder of a killed one removes the spare tree it left and makes its own', async () => {
    const r = repo([{ id: 'S1' }], redis.url);
    const w1 = await worker(r);
    const left = idleSpareOnly(w1)!;
    assert.ok(left, "the first worker's idle spare");
    // Killed as a machine that loses power is: nothing of it ran to its end.
    w1.child.kill('SIGKILL');
    await w1.exited;
    assert.ok(fs.existsSync(left), 'the killed worker left its spare');
    const w2 = await worker(r, { dir: w1.dir });
    assert.ok(!fs.existsSync(left), "the killed worker's spare is gone");
    const own = idleSpareOnly(w2);
    assert.ok(own && path.basename(own).startsWith(`spare-${w2.pid}-`), 'the new worker made its own spare');
    // Ended here, before the folder it shares with the first worker goes with that worker's HOME.
    w2.child.kill('SIGTERM');
    assert.equal(await w2.exited, 0);
    assert.equal(idleSpareOnly(w2), null);
  });

  it("an idle worker's spare moved to a run's newer commit ahead of a job goes back to the idle commit when that run ends", async () => {
    const r = repo([{ id: 'S1' }], redis.url);
    const w = await worker(r);
    const spare = idleSpareOnly(w)!;
    // A run (its stream open) whose feature branch moved to a commit the worker has not fetched.
    const runId = `moved-${process.pid}`;
    r.t.write('moved.txt', 'moved\n');
    git(r.dir, 'checkout', '-q', '-b', 'ql/moved');
    git(r.dir, 'add', '-A');
    git(r.dir, 'commit', '-q', '-m', 'moved');
    git(r.dir, 'push', '-q', 'origin', 'ql/moved');
    const sha = git(r.dir, 'rev-parse', 'HEAD');
    await client.xadd(eventsKey(runId), '*', 'open', runId);
    try {
      const note = { v: 1, runId, remote: r.remote, featureBranch: 'ql/moved', sha };
      await client.publish(FEATURE_CHANNEL, JSON.stringify({ ...note, kind: 'moved' }));
      // A worker without a lane for a second after the note fetches the commit and moves its spare there.
      await waitUntil(() => git(spare, 'rev-parse', 'HEAD') === sha);
      await client.publish(FEATURE_CHANNEL, JSON.stringify({ ...note, kind: 'ended' }));
      await w.waitFor(new RegExp(`${runId}: the run ended; nothing of it kept here`));
      assert.equal(idleSpareOnly(w), spare, 'the same spare, at the idle commit again');
    } finally {
      await client.del(eventsKey(runId));
      git(r.remote, 'update-ref', '-d', 'refs/heads/ql/moved');
    }
  });

  it('a worker SIGKILLed mid-story is taken for dead after laneStallMs; its attempt counts failed and runs again on another worker', async () => {
    const { ids, r, pass, running, first } = await eightWithS1Hanging();
    // The next attempt of S1 passes; then the machine is lost.
    planSteps(r, Object.fromEntries(ids.map((id) => [id, pass(id)])));
    const victim = await loseMachineOf(r, 'S1', first);
    const { result, events } = await running;
    assert.equal(result.state, 'completed', result.reason);
    assert.deepEqual(statuses(r.dir), Object.fromEntries(ids.map((id) => [id, 'passed'])));
    assert.deepEqual(merges(events), ids, 'every story merged once');
    const lost = workerOf(first)!;
    const stall = events.findIndex(
      (x) => x.e.type === 'warning' && /^S1: attempt 1 failed: worker \S+ silent for \d+ ms/.test(x.e.message),
    );
    assert.ok(stall >= 0, 'the stall is said');
    assert.ok((events[stall]!.e as { message: string }).message.includes(lost));
    const silent = Number(/silent for (\d+) ms/.exec((events[stall]!.e as { message: string }).message)![1]);
    assert.ok(silent > STALL_MS, `taken for dead only after laneStallMs (${silent} ms)`);
    // The attempt after the stall ran on a live worker and passed.
    const again = events
      .slice(stall)
      .filter((x) => x.e.type === 'iterationStarted' && itemOf(x.e) === 'S1')
      .map((x) => workerOf(x.e));
    assert.ok(again.length >= 1 && again.every((w) => w !== lost), `S1 ran again elsewhere: ${again.join(', ')}`);
    // quantum.json counts the lost attempt.
    const s1 = quantumStory(r, 'S1');
    assert.ok(s1.retries.attempts >= 1);
    assert.ok(
      s1.retries.failureLog.some((f) => f.phase === 'crash' && f.error.includes(lost)),
      JSON.stringify(s1.retries),
    );
    await assertNothingLeft(r, result.runId, [victim]);
  });

  it('a worker SIGSTOPped past laneStallMs and then continued: its late result is refused, the story merged once from the retry', async () => {
    const r = repo(
      [
        { id: 'S1', priority: 1 },
        { id: 'S2', priority: 2 },
      ],
      redis.url,
      { laneStallMs: STALL_MS },
    );
    const releaseStale = r.side.file('release-stale');
    const releaseS2 = r.side.file('release-S2');
    planSteps(r, {
      S1: { write: { 'S1.txt': 'stale\n' }, waitForFile: releaseStale },
      S2: { write: { 'S2.txt': 'S2\n' }, waitForFile: releaseS2 },
    });
    await Promise.all([worker(r), worker(r), worker(r)]);
    const log = new EventLog();
    const running = runCoordinator(r, { maxParallel: 2 }, log.on);
    await waitForLogLine(r.log, /^wait S1 \d+$/m);
    const first = await log.next((e) => e.type === 'iterationStarted' && itemOf(e) === 'S1');
    const victim = workers.find((w) => workerOf(first)?.endsWith(`:${w.pid}`));
    assert.ok(victim, `S1 runs on one of the workers (${workerOf(first)})`);
    victim.child.kill('SIGSTOP');
    // The retry writes another S1.txt; the stopped worker's agent has committed the stale one in its own tree.
    planSteps(r, {
      S1: { write: { 'S1.txt': 'fresh\n' } },
      S2: { write: { 'S2.txt': 'S2\n' }, waitForFile: releaseS2 },
    });
    await log.next(
      (e) => e.type === 'laneMerge' && itemOf(e) === 'S1' && (e as { outcome: string }).outcome === 'merged',
    );
    // The stale agent ends and its worker runs again: its lease is superseded, so it pushes nothing, and its result
    // is refused.
    fs.writeFileSync(releaseStale, '');
    victim.child.kill('SIGCONT');
    const refused = await log.next(
      (e) => e.type === 'warning' && new RegExp(`^S1: refused a result from ${workerOf(first)}: `).test(e.message),
    );
    assert.match((refused as { message: string }).message, /late result of token \d+, superseded by token \d+/);
    await victim.waitFor(/S1: token \d+ cleaned up/);
    fs.writeFileSync(releaseS2, '');
    const { result, events } = await running;
    assert.equal(result.state, 'completed', result.reason);
    assert.deepEqual(statuses(r.dir), { S1: 'passed', S2: 'passed' });
    assert.deepEqual(merges(events), ['S1', 'S2'], 'each story merged once');
    assert.equal(r.t.read('S1.txt'), 'fresh\n', 'the retry is what was merged');
    assert.equal(
      git(r.dir, 'log', '--format=%s', 'HEAD')
        .split('\n')
        .filter((l) => l.startsWith('S1:')).length,
      1,
      'one commit of S1 on the feature branch',
    );
    const stale = events.filter((x) => x.e.type === 'agentStarted' && workerOf(x.e) === workerOf(first));
    assert.equal(stale.length, 1, 'the stopped worker ran one agent for S1, counted before the stall');
    assert.ok(quantumStory(r, 'S1').retries.failureLog.some((f) => f.phase === 'crash'));
    await assertNothingLeft(r, result.runId);
  });

  it('Redis killed and started again mid-run (AOF): dispatch waits and resumes, and every lane result is kept', async () => {
    const ids = ['S1', 'S2', 'S3', 'S4', 'S5', 'S6', 'S7', 'S8'];
    const r = repo(
      ids.map((id, i) => ({ id, priority: i + 1 })),
      redis.url,
    );
    const releaseS3 = r.side.file('release-S3');
    const pass = (id: string) => ({ write: { [`${id}.txt`]: `${id}\n` }, sleepMs: 200 });
    planSteps(r, {
      ...Object.fromEntries(ids.map((id) => [id, pass(id)])),
      S3: { ...pass('S3'), waitForFile: releaseS3 },
    });
    await Promise.all([worker(r), worker(r), worker(r)]);
    const log = new EventLog();
    const running = runCoordinator(r, { maxParallel: 3 }, log.on);
    await redisOutageWhileWaiting(r, log, 'S3', releaseS3);
    const { result, events } = await running;
    assert.equal(result.state, 'completed', result.reason);
    assert.deepEqual(statuses(r.dir), Object.fromEntries(ids.map((id) => [id, 'passed'])));
    assert.deepEqual(merges(events), ids, 'every story merged once');
    // No lane was taken for dead over the outage: each story's agent ran once, its one result kept.
    const starts = events.filter((x) => x.e.type === 'iterationStarted').map((x) => itemOf(x.e));
    assert.deepEqual([...starts].sort(), ids, 'one iteration per story');
    const said = assertRedisLostAndBack(events);
    assert.ok(!said.some((m) => /silent for/.test(m)), said.join('\n'));
    assert.equal(r.t.read('S3.txt'), 'S3\n');
    await assertNothingLeft(r, result.runId);
  });

  it('one run of eight stories on three workers survives a worker SIGKILL and a Redis restart: all passed, each merged once, nothing left behind', async () => {
    const { ids, r, pass, log, running, first } = await eightWithS1Hanging();
    const releaseS1 = r.side.file('release-S1');
    // The machine of S1's first attempt is lost; its retry waits for a file, and Redis dies while it waits.
    planSteps(r, {
      ...Object.fromEntries(ids.map((id) => [id, pass(id)])),
      S1: { ...pass('S1'), waitForFile: releaseS1 },
    });
    const victim = await loseMachineOf(r, 'S1', first);
    await log.next(
      (e) => e.type === 'warning' && /^S1: attempt 1 failed: worker \S+ silent for \d+ ms/.test(e.message),
    );
    await redisOutageWhileWaiting(r, log, 'S1', releaseS1);
    const { result, events } = await running;
    assert.equal(result.state, 'completed', result.reason);
    assert.deepEqual(statuses(r.dir), Object.fromEntries(ids.map((id) => [id, 'passed'])));
    assert.deepEqual(merges(events), ids, 'every story merged once');
    const said = assertRedisLostAndBack(events);
    // Only the lost machine's attempt was taken for dead: none over the Redis outage.
    assert.equal(said.filter((m) => /silent for/.test(m)).length, 1, said.join('\n'));
    const s1 = quantumStory(r, 'S1');
    assert.ok(
      s1.retries.failureLog.some((f) => f.phase === 'crash' && f.error.includes(workerOf(first)!)),
      JSON.stringify(s1.retries),
    );
    assert.equal(r.t.read('S1.txt'), 'S1\n');
    await assertNothingLeft(r, result.runId, [victim]);
  });

  describe('control crosses machines: every remote lane is reached while its agent runs', () => {
    const STOP = '.ralph/runs/${RALPH_RUN_ID}/STOP';
    const PAUSE = '.ralph/runs/${RALPH_RUN_ID}/PAUSE';
    const held = ['S1', 'S2', 'S3'];
    /** A repository of S1…S5 and three workers whose agents end only after STOP (stopGraceMs: never killed for it). */
    async function setUp(steps: Record<string, unknown>) {
      const ids = ['S1', 'S2', 'S3', 'S4', 'S5'];
      const r = repo(
        ids.map((id, i) => ({ id, priority: i + 1 })),
        redis.url,
      );
      planSteps(r, { ...Object.fromEntries(ids.map((id) => [id, { write: { [`${id}.txt`]: `${id}\n` } }])), ...steps });
      await Promise.all([1, 2, 3].map(() => worker(r, { timing: { stopGraceMs: 120_000 } })));
      return r;
    }
    const runDirOf = (r: RemoteRepo, log: EventLog) =>
      log
        .next((e) => e.type === 'runStarted')
        .then((e) => path.join(r.dir, '.ralph', 'runs', (e as { runId: string }).runId));
    const lines = (r: RemoteRepo) => fs.readFileSync(r.log, 'utf8');
    const waitAll = (r: RemoteRepo, word: string) =>
      Promise.all(held.map((id) => waitForLogLine(r.log, new RegExp(`^${word} ${id}\\b`, 'm'))));
    /** Each agent held saw the word's file (`found`) before it ended: the control reached it mid-step. */
    const observedBeforeEnd = (r: RemoteRepo) => {
      for (const id of held) {
        const at = (w: string) => lines(r).search(new RegExp(`^${w} ${id}\\b`, 'm'));
        assert.ok(at('found') >= 0 && at('found') < at('end'), `${id} saw the control, then ended:\n${lines(r)}`);
      }
    };

    it("STOP: each lane ends after its agent, no story starts, the stories go back with their branches kept; status and watch show each lane's worker and the workers alive", async () => {
      const r = await setUp(
        Object.fromEntries(held.map((id) => [id, { write: { [`${id}.txt`]: `${id}\n` }, waitForFile: STOP }])),
      );
      const log = new EventLog();
      const running = runCoordinator(r, { maxParallel: 3 }, log.on);
      const runDir = await runDirOf(r, log);
      const runId = path.basename(runDir);
      await waitAll(r, 'wait');
      // The faces, while the three lanes' agents run: each lane's worker and the workers alive.
      const alive = workers.map((w) => w.pid);
      const watch = watchJson(r.dir, runId);
      await watch.until(
        (es) =>
          es.filter((e) => e.type === 'iterationStarted' && typeof e.worker === 'string').length === 3 &&
          es.some((e) => e.type === 'workers' && (e.alive as unknown[]).length === 3),
      );
      const status = await runCliAsync(r.dir, ['status', '--json']);
      const run = (
        status.json().runs as {
          id: string;
          lanes: { story: string; worker: string | null }[];
          view: { workers: { pid: number }[] };
        }[]
      ).find((x) => x.id === runId)!;
      assert.deepEqual(run.lanes.map((l) => l.story).sort(), held);
      for (const l of run.lanes) assert.match(l.worker ?? '', /^[^:]+:\d+$/, JSON.stringify(run.lanes));
      assert.deepEqual(run.lanes.map((l) => Number(l.worker!.split(':')[1])).sort(), [...alive].sort());
      assert.deepEqual(run.view.workers.map((w) => w.pid).sort(), [...alive].sort());
      const text = (await runCliAsync(r.dir, ['status'])).stdout;
      for (const l of run.lanes) assert.ok(text.includes(`on ${l.worker}`), text);
      assert.match(text, /workers: 3 alive \(/);
      fs.writeFileSync(path.join(runDir, 'STOP'), '');
      const { result, events } = await running;
      assert.equal(await watch.exited, 3, 'ralph watch ends with the run (stopped)');
      const replay = (await runCliAsync(r.dir, ['watch', '--run', runId])).stdout;
      assert.match(replay, /WORKERS 3 alive: /);
      assert.match(replay, /LOOP \d+ START .* · on [^:\s]+:\d+/);
      assert.equal(result.state, 'stopped', result.reason);
      observedBeforeEnd(r);
      assert.doesNotMatch(lines(r), /^start S[45]\b/m, 'no story starts after STOP');
      // As on one machine: the stories go back to pending, each lane's work kept on its branch (here: on the remote).
      assert.deepEqual(statuses(r.dir), { S1: 'pending', S2: 'pending', S3: 'pending', S4: 'pending', S5: 'pending' });
      assert.deepEqual(merges(events), []);
      for (const id of held) {
        assert.match(git(r.remote, 'log', '-1', '--format=%s', `ql-wt/${id}`), new RegExp(`^${id}: `));
        git(r.remote, 'update-ref', '-d', `refs/heads/ql-wt/${id}`);
      }
      await assertNothingLeft(r, result.runId);
    });

    it('PAUSE and resume: the agent of each lane sees PAUSE come and go, then the run ends passed', async () => {
      const r = await setUp(
        Object.fromEntries(
          held.map((id) => [id, { write: { [`${id}.txt`]: `${id}\n` }, waitForFile: PAUSE, waitForGone: PAUSE }]),
        ),
      );
      const log = new EventLog();
      const running = runCoordinator(r, { maxParallel: 3 }, log.on);
      const runDir = await runDirOf(r, log);
      await waitAll(r, 'wait');
      fs.writeFileSync(path.join(runDir, 'PAUSE'), '');
      await waitAll(r, 'found');
      fs.rmSync(path.join(runDir, 'PAUSE'));
      const { result, events } = await running;
      assert.equal(result.state, 'completed', result.reason);
      for (const id of held) {
        const at = (w: string) => lines(r).search(new RegExp(`^${w} ${id}\\b`, 'm'));
        assert.ok(at('found') < at('gone') && at('gone') < at('end'), lines(r));
      }
      assert.deepEqual(merges(events), ['S1', 'S2', 'S3', 'S4', 'S5']);
      await assertNothingLeft(r, result.runId);
    });

    it('Cancel: every remote agent is ended before the run returns', async () => {
      const r = await setUp(Object.fromEntries(held.map((id) => [id, { hang: true }])));
      const log = new EventLog();
      const cancel = new AbortController();
      const running = runCoordinator(r, { maxParallel: 3, signal: cancel.signal }, log.on);
      await Promise.all(held.map((id) => waitForLogLine(r.log, new RegExp(`^hang ${id} \\d+$`, 'm'))));
      cancel.abort();
      const { result } = await running;
      assert.equal(result.state, 'cancelled', result.reason);
      assert.deepEqual(stubAgents(r.log), [], 'no agent outlives the run');
      assert.doesNotMatch(lines(r), /^end /m);
      assert.doesNotMatch(lines(r), /^start S[45]\b/m);
      await Promise.all(workers.map((w) => w.waitFor(/: token \d+ cleaned up/)));
      // What the cancelled lanes pushed is kept on the remote for a person (nothing else is left).
      for (const b of laneBranchesOf(r.remote)) {
        assert.match(b, /^ql-wt\/S[123]$/);
        git(r.remote, 'update-ref', '-d', `refs/heads/${b}`);
      }
      await assertNothingLeft(r, result.runId);
    });

    it('the cost cap: reached by one lane, the agents of the other lanes see the STOP it sends', async () => {
      // S1 passes once S2's and S3's agents run; its cost (the stub's 0.01 USD) is over the cap.
      const r = await setUp({
        S1: { write: { 'S1.txt': 'S1\n' }, waitFor: ['S2', 'S3'] },
        S2: { write: { 'S2.txt': 'S2\n' }, waitForFile: STOP },
        S3: { write: { 'S3.txt': 'S3\n' }, waitForFile: STOP },
      });
      const log = new EventLog();
      const running = runCoordinator(r, { maxParallel: 3, maxCostUsd: 0.005 }, log.on);
      const { result } = await running;
      assert.match(result.reason, /cost/i);
      for (const id of ['S2', 'S3']) {
        const at = (w: string) => lines(r).search(new RegExp(`^${w} ${id}\\b`, 'm'));
        assert.ok(at('found') >= 0 && at('found') < at('end'), lines(r));
      }
      assert.doesNotMatch(lines(r), /^start S[45]\b/m);
      // A lane branch is kept on the remote for each story not merged (as on one machine), and for no other.
      const st = statuses(r.dir);
      for (const b of laneBranchesOf(r.remote)) {
        assert.notEqual(st[b.slice('ql-wt/'.length)], 'passed', `${b} kept: ${JSON.stringify(st)}`);
        git(r.remote, 'update-ref', '-d', `refs/heads/${b}`);
      }
      await assertNothingLeft(r, result.runId);
    });
  });

  it('a worker and a coordinator refuse a Redis without a password, and a Redis that answers without one', async () => {
    const r = repo([{ id: 'S1' }], redis.url);
    const noPassword = await startWorker(redis.urlWithoutPassword, [r.remote], r, { waitReady: false });
    workers.push(noPassword);
    assert.equal(await noPassword.exited, 1);
    assert.match(noPassword.output(), /refused without a password/);
    const open = await startRedisWithoutPassword();
    const config = JSON.parse(r.t.read('.ralph/config.json')) as Record<string, unknown>;
    try {
      const w = await startWorker(open.url, [r.remote], r, { waitReady: false });
      workers.push(w);
      assert.equal(await w.exited, 1);
      assert.match(w.output(), /answers clients without a password/);
      // The coordinator refuses both before it dispatches or writes anything of a run.
      const before = r.t.read('quantum.json');
      for (const [url, why] of [
        [redis.urlWithoutPassword, /laneDispatcher "bullmq": .*refused without a password/],
        [open.url, /laneDispatcher "bullmq": .*answers clients without a password/],
      ] as const) {
        r.t.write('.ralph/config.json', JSON.stringify({ ...config, redisUrl: url }));
        await assert.rejects(runCoordinator(r), why);
      }
      assert.equal(r.t.read('quantum.json'), before);
      assert.deepEqual(laneBranchesOf(r.remote), []);
      assert.deepEqual(await redisClientsOfThisProcess(client), [], 'no connection of the refused coordinator left');
    } finally {
      await open.stop();
    }
  });

  it('a worker refuses a job for a repository outside its allowlist, and a job whose token is not current', async () => {
    const r = repo([{ id: 'S1' }], redis.url);
    const w = await worker(r, {}, ['/srv/git/only-this.git']);
    // The repository it serves could not be fetched before it served: said, and nothing kept of the attempt.
    assert.match(w.output(), /could not fetch \/srv\/git\/only-this\.git ahead/);
    const queue = new Queue(LANE_QUEUE, { connection: { url: redis.url }, prefix: KEY_PREFIX });
    const runId = `refusal-${process.pid}`;
    const events = `${KEY_PREFIX}:run:${runId}:events`;
    await client.xadd(events, '*', 'open', runId);
    const job: LaneJob = {
      v: 1,
      runId,
      remote: r.remote,
      sha: git(r.dir, 'rev-parse', 'HEAD'),
      featureBranch: 'main',
      storyId: 'S1',
      title: '',
      attempt: 1,
      token: 1,
      storyTimeoutMs: 60_000,
      heartbeatMs: 500,
    };
    try {
      await client.set(leaseKey(runId, 'S1'), '1');
      await queue.add('lane', job, { jobId: laneJobId(runId, 'S1', 1), attempts: 1, removeOnComplete: true });
      await w.waitFor(/refused: this worker does not serve/);
      // Refused before anything was fetched or made on its disk.
      assert.deepEqual(
        fs.readdirSync(w.dir).filter((f) => f === 'lanes' || f === 'mirrors'),
        [],
      );
      // Served now, but the lease names another token: refused before anything runs.
      await stopWorker(w);
      const w2 = await worker(r);
      // Before it served, the worker brought the remote's branches into its mirror (a run's first job finds its
      // commit there).
      const mirrors = path.join(w2.dir, 'mirrors');
      const [mirror] = fs.readdirSync(mirrors).map((m) => path.join(mirrors, m));
      const refsOf = (repo: string, prefix: string) =>
        git(repo, 'for-each-ref', '--format=%(objectname) %(refname)', prefix)
          .split('\n')
          .filter(Boolean)
          .map((l) => l.replace(prefix, ''));
      assert.deepEqual(refsOf(mirror!, 'refs/remotes/lane-warm/'), refsOf(r.remote, 'refs/heads/'));
      await queue.add(
        'lane',
        { ...job, token: 2 },
        { jobId: laneJobId(runId, 'S1', 2), attempts: 1, removeOnComplete: true },
      );
      await w2.waitFor(/refused: token 2 of S1 is no longer current/);
      const entries = (await client.xrange(events, '-', '+')).map(([, f]) => f.join(' '));
      assert.ok(
        entries.some((e) => /"kind":"result".*"state":"refused"/.test(e)),
        entries.join('\n'),
      );
      // Nothing was made or fetched for the job: no lane but the idle spare made before serving, and the mirror
      // holds only what was fetched before serving.
      assert.ok(idleSpareOnly(w2), 'the idle spare made before the worker served');
      assert.deepEqual(
        refsOf(mirror!, 'refs/').filter((l) => !l.includes(' remotes/lane-warm/')),
        [],
      );
    } finally {
      await client.del(events, leaseKey(runId, 'S1'));
      await queue.close();
    }
  });
});

/** A second redis-server with no password (what a worker must refuse). */
async function startRedisWithoutPassword(): Promise<{ url: string; stop: () => Promise<void> }> {
  const s = await startRedis();
  const c = new Redis(s.url);
  await c.config('SET', 'requirepass', '');
  c.disconnect();
  return { url: `redis://:unused@127.0.0.1:${s.port}`, stop: () => s.stop() };
}
