import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { cp, mkdir, readdir, readFile, rm, rmdir, writeFile } from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { ralphRunDir } from '../control/sentinels';
import { fetchRefArgs } from '../git/git';
import { holdGitWorker } from '../git/gitWorker';
import { loadShellParser } from '../gates/shellSyntax';
import type { RalphConfig } from '../model/config';
import { ralphFile } from '../model/ralphPaths';
import { markScratch } from '../store/durability';
import { userStateDir } from '../store/userStateDir';
import { LaneRun } from '../loop/laneRun';
import type { EngineEvent } from '../loop/events';
import { excludeRunnerFiles, git, gitFailure, hasLeftovers, headOf, RUNNER_FILES } from '../loop/parallel/dispatcher';
import { greenTreeStandsForLeftovers } from '../loop/parallel/rules';
import { probeContainment, resolveContainment } from '../process/containment';
import { treeStatePaths } from '../git/gitState';
import { LaneStorySource } from '../loop/parallel/laneSource';
import { redactRedisUrl, redisUrlRefusal, remoteAllowed, WORKER_BEAT_MS } from './decide';
import { remoteTrace } from './phaseTrace';
import { removeTree, SpareTree, type IdleSpot } from './spareTree';
import { warmLaneStart } from './warmLane';
import {
  controlKey,
  eventsKey,
  FEATURE_CHANNEL,
  KEY_PREFIX,
  LANE_QUEUE,
  leaseKey,
  parseFeatureNote,
  pendingKey,
  parseLaneJob,
  WORKERS_KEY,
  type LaneJob,
  type LaneResult,
  type StreamEntry,
} from './laneJob';

/**
 * `ralph worker`: takes lane jobs of parallel runs from Redis (BullMQ queue {@link LANE_QUEUE}) and runs each as a
 * lane on this machine (docs/distributed-lanes.md). Per repository a bare mirror under `<dir>/mirrors/`; per job a
 * worktree under `<dir>/lanes/` at the commit the job names, the lane engine (laneRun.ts `LaneRun`, the same code as a local
 * lane: agent, stream, ledger, rotation, guard, the story's gates in its tree), the lane's branch pushed to the
 * job's remote, its events and heartbeats to the run's Redis stream, and everything it made removed. What it runs
 * comes from this worker's own configuration (`<dir>/.ralph/`, trusted here) and environment (agent credentials),
 * never from the job. BullMQ's own retries are off: a failed lane is the coordinator's to retry.
 */
export interface WorkerOptions {
  /** redis:// or rediss:// with a password (decide.ts `redisUrlRefusal`). */
  redisUrl: string;
  /** Lanes at once on this worker. */
  concurrency: number;
  /** The work folder: mirrors, lanes, lane state, and `.ralph/` with this worker's configuration. */
  dir: string;
  /** The repositories (remote addresses) this worker serves; a job for any other is refused. */
  repos: readonly string[];
  /** This worker's configuration (agent, gates, timing), loaded from `dir` and trusted there. */
  config: RalphConfig;
  /** One line of what the worker does, for its log (stderr). */
  log: (line: string) => void;
  /** Ends the worker: running lanes are cancelled, their branches pushed, their results reported. */
  signal: AbortSignal;
  /** Agent environment added to the worker's own (tests: a stub's plan). */
  agentEnv?: Record<string, string>;
}

/** Refusals of a worker before it takes any job (an address without a password, a server that lets anyone in). */
export class WorkerRefusal extends Error {}

/**
 * Checks that Redis at `url` takes no unauthenticated client: a connection without credentials must be refused
 * (NOAUTH). Throws {@link WorkerRefusal} when the URL has no password or the server answers without one.
 */
export async function checkRedisAuth(url: string): Promise<void> {
  const refused = redisUrlRefusal(url);
  if (refused) throw new WorkerRefusal(refused);
  const u = new URL(url);
  const probe = new Redis({
    host: u.hostname,
    port: Number(u.port || 6379),
    ...(u.protocol === 'rediss:' ? { tls: {} } : {}),
    lazyConnect: true,
    // No HELLO (RESP3) nor ready check (INFO) at connect: both fail with NOAUTH and close the connection before the
    // PING below could say whether the server lets anyone in.
    protocol: 2,
    enableReadyCheck: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableOfflineQueue: false,
  });
  probe.on('error', () => undefined);
  try {
    await probe.connect();
    const open = await probe.ping().then(
      () => true,
      (err: Error) => {
        if (/NOAUTH|WRONGPASS|Authentication required/i.test(err.message)) return false;
        throw err;
      },
    );
    if (open)
      throw new WorkerRefusal(
        `Redis at ${u.hostname}:${u.port || 6379} answers clients without a password: set requirepass (or ACL users without nopass) before running workers`,
      );
  } catch (err) {
    if (err instanceof WorkerRefusal) throw err;
    throw new WorkerRefusal(`cannot reach Redis at ${redactRedisUrl(url)}: ${(err as Error).message}`);
  } finally {
    probe.disconnect();
  }
}

/** A Redis connection for BullMQ and our streams: commands wait while Redis is away (it may restart mid-run). */
export function redisConnection(url: string): Redis {
  const r = new Redis(url, { maxRetriesPerRequest: null, enableReadyCheck: true, retryStrategy: () => 200 });
  r.on('error', () => undefined);
  return r;
}

/**
 * How long a worker stays without a lane after the feature branch moved before it fetches the move ahead of a job:
 * long enough that the moves of a busy run (a job follows each within milliseconds) and of its last merges are not
 * fetched by every idle worker, short against the minutes a dependent story waits for the merge it needs.
 */
const PREFETCH_IDLE_MS = 1000;

/** The folder of repository `remote`'s bare mirror under `dir`. */
const mirrorOf = (dir: string, remote: string): string =>
  path.join(dir, 'mirrors', createHash('sha256').update(remote).digest('hex').slice(0, 16) + '.git');

/** Runs the worker until `o.signal` aborts; resolves once every lane it took has ended and reported. */
export async function runWorker(o: WorkerOptions): Promise<void> {
  await checkRedisAuth(o.redisUrl);
  if (!o.repos.length) throw new WorkerRefusal('a worker needs at least one repository to serve (--repo <remote>)');
  const dir = path.resolve(o.dir);
  await mkdir(dir, { recursive: true });
  // The lanes' trees and state are scratch: a lane lost with this worker is the coordinator's to run again, and
  // nothing here reads a lane after it ended (store/durability.ts: no fsync there).
  markScratch(path.join(dir, 'lanes'));
  markScratch(path.join(dir, 'state'));
  // So are the claim baselines' mirrors of this process's runs (all lanes), kept for a crash recovery no worker runs.
  markScratch(path.join(userStateDir(), 'baselines'));
  markScratch(path.join(userStateDir(), 'claims'));
  // Every lane's git, agent and gates start from the small helper process (git/gitWorker.ts), as in a local parallel
  // run: a fork of this large process costs CPU and stalls the thread every lane's engine runs on, and a worker
  // forks a dozen times a story. Held for the worker's life; it exits with this process (its stdin closes).
  const releaseGitWorker = holdGitWorker({ start: true });
  // Every lane parses its gate commands (the gate-file snapshot) with the shell parser, whose first load is about
  // 0.1–0.2 s of this thread: loaded once now, before the worker serves, not on its first job's path (a local
  // parallel run loads it while its start waits for git, runParallel.ts).
  loadShellParser();
  // Its first agent's start would otherwise probe the containment (three blocking child processes, 0.1–0.2 s of this
  // thread, which every lane's engine shares): probed once now, before the worker serves.
  probeContainment(o.config.containment);
  // So is the first use of the lane's run record and the job's parsers (warmLane.ts).
  await warmLaneStart(path.join(dir, 'state'), o.repos[0]!);
  try {
    await serve(o, dir);
  } finally {
    await releaseGitWorker();
  }
}

/** {@link runWorker} once its folder is made: takes jobs until `o.signal` aborts. */
async function serve(o: WorkerOptions, dir: string): Promise<void> {
  const id = `${os.hostname()}:${process.pid}`;
  const redis = redisConnection(o.redisUrl);
  const mirrors = new Map<string, Promise<unknown>>();
  const running = new Map<string, AbortController>();
  const cleanups = new Set<Promise<void>>();
  await removeOrphanSpares(dir);
  const idleAt = await warmMirrors(o, dir, mirrors);
  const spare = new SpareTree(dir, () => idleAt);
  // The first job then checks its commit out in a tree made now, off its path (decision 0026).
  await spare.idle().catch((err: Error) => o.log(`could not make a spare tree: ${err.message}`));
  /** The runs this worker took a job of, until it knows they ended (then nothing of them stays here). */
  const served = new Set<string>();
  /** Runs heard to have ended lately (the newest 100): a prefetch of one of them under way moves no spare. */
  const finished = new Set<string>();
  const ended = (runId: string) => {
    finished.add(runId);
    if (finished.size > 100) finished.delete(finished.values().next().value!);
    if (!served.delete(runId)) return;
    // Its spare (if any) goes back to the idle commit, or an idle one is made for the next run's first job.
    void spare
      .idle(runId)
      .catch((err: Error) => o.log(`could not make a spare tree: ${err.message}`))
      .then(() => o.log(`${runId}: the run ended; nothing of it kept here`));
  };
  const beat = async () => {
    await redis
      .hset(WORKERS_KEY, id, JSON.stringify({ host: os.hostname(), pid: process.pid, at: Date.now() }))
      .catch(() => undefined);
    // A run's end missed on the channel (Redis away then): its stream's key is gone once it ended.
    for (const runId of served) if ((await redis.exists(eventsKey(runId)).catch(() => 1)) === 0) ended(runId);
  };
  await beat();
  const beats = setInterval(() => void beat(), WORKER_BEAT_MS);
  // The coordinators' news of their feature branches: a worker that has had no lane for PREFETCH_IDLE_MS since a
  // move brings the newest moved commit into its mirror and moves its spare tree there, so that a job that comes
  // later (a story that waited for that merge) finds both ready. A job, a newer move or the run's end first: nothing
  // is fetched (a job right after a move fetches for itself; a worker idle at a run's end fetches nothing for it).
  let ahead: NodeJS.Timeout | null = null;
  const news = redisConnection(o.redisUrl);
  news.on('message', (_channel: string, message: string) => {
    const note = parseFeatureNote(message);
    if (!note.ok || !remoteAllowed(note.value.remote, o.repos)) return;
    const n = note.value;
    if (ahead) clearTimeout(ahead);
    ahead = null;
    if (n.kind === 'ended') return ended(n.runId);
    const mirror = mirrorOf(dir, n.remote);
    if (running.size || !existsSync(mirror)) return;
    ahead = setTimeout(() => {
      ahead = null;
      if (running.size || o.signal.aborted) return;
      void (async () => {
        // Not for a run with no story left to dispatch: no job of it would use the commit.
        if ((await redis.get(pendingKey(n.runId))) === '0') return;
        await fetchInto(mirrors, mirror, featureFetch(n));
        // The run may have ended during the fetch: then its commit stays out of the spare.
        if (finished.has(n.runId)) return;
        // The spare is the run's now, even on a worker that took no job of it, so its end puts the spare back to
        // idle. Marked and queued in one step: an end heard after this queues its put-back behind the move.
        served.add(n.runId);
        await spare.move(mirror, n.sha, n.runId);
      })().catch((err: Error) => o.log(`could not fetch ${n.featureBranch} of ${n.remote} ahead: ${err.message}`));
    }, PREFETCH_IDLE_MS);
  });
  await news.subscribe(FEATURE_CHANNEL);
  const connection = redisConnection(o.redisUrl);
  const worker = new Worker(
    LANE_QUEUE,
    async (job: Job) => {
      const abort = new AbortController();
      running.set(String(job.id), abort);
      if (ahead) clearTimeout(ahead);
      ahead = null;
      try {
        return await runJob(job.data, {
          ...o,
          dir,
          id,
          redis,
          mirrors,
          cleanups,
          spare,
          served,
          abort: abort.signal,
        });
      } finally {
        running.delete(String(job.id));
      }
    },
    {
      connection,
      prefix: KEY_PREFIX,
      concurrency: o.concurrency,
      // A worker gone mid-lane is the coordinator's to notice (heartbeats, laneStallMs) and retry: BullMQ never
      // hands the job to another worker on its own.
      maxStalledCount: 0,
    },
  );
  worker.on('error', (err) => o.log(`worker: ${err.message}`));
  o.log(`worker ${id} serves ${o.repos.join(', ')} from ${redactRedisUrl(o.redisUrl)} (${o.concurrency} at once)`);
  await new Promise<void>((resolve) => {
    if (o.signal.aborted) resolve();
    else o.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  for (const a of running.values()) a.abort();
  clearInterval(beats);
  if (ahead) clearTimeout(ahead);
  o.log(`worker ${id} ends: waiting for ${running.size} lane(s) to report`);
  await worker.close();
  // Lanes that reported are still being removed (off the next job's path): the worker ends after them.
  while (cleanups.size) await Promise.all([...cleanups]);
  await spare.close();
  await redis.hdel(WORKERS_KEY, id).catch(() => undefined);
  news.disconnect();
  // BullMQ leaves a connection it was given open.
  connection.disconnect();
  redis.disconnect();
  o.log(`worker ${id} ended`);
}

interface JobContext extends WorkerOptions {
  dir: string;
  id: string;
  redis: Redis;
  mirrors: Map<string, Promise<unknown>>;
  spare: SpareTree;
  served: Set<string>;
  /** The clean-ups of lanes that have reported (awaited before the worker ends). */
  cleanups: Set<Promise<void>>;
  abort: AbortSignal;
}

/** One job: checks, lane, push, report, clean-up. Resolves with the lane's result (the BullMQ job's return value). */
async function runJob(data: unknown, c: JobContext): Promise<LaneResult> {
  const parsed = parseLaneJob(data);
  if (!parsed.ok) {
    c.log(parsed.reason);
    throw new Error(parsed.reason);
  }
  const job = parsed.value;
  const mark = (phase: string) => remoteTrace(c.id, job.storyId, job.token, phase);
  mark('picked');
  let seq = 0;
  let chain: Promise<unknown> = Promise.resolve();
  /** Appends one entry to the run's stream, in order; never creates the stream (a run that ended keeps no key). */
  const send = (kind: StreamEntry['kind'], extra: Partial<StreamEntry> = {}): Promise<unknown> => {
    const entry: StreamEntry = {
      kind,
      storyId: job.storyId,
      attempt: job.attempt,
      token: job.token,
      worker: c.id,
      laneSeq: ++seq,
      ...extra,
    };
    chain = chain.then(() =>
      c.redis
        .xadd(eventsKey(job.runId), 'NOMKSTREAM', 'MAXLEN', '~', '100000', '*', 'm', JSON.stringify(entry))
        .catch((err: Error) => c.log(`could not report ${kind} of ${job.storyId}: ${err.message}`)),
    );
    return chain;
  };
  const refuse = async (reason: string): Promise<LaneResult> => {
    c.log(`${job.runId} ${job.storyId}: refused: ${reason}`);
    const result: LaneResult = {
      state: 'refused',
      reason,
      verified: false,
      blocked: null,
      sha: null,
      timedOut: false,
      green: null,
    };
    await send('result', { result });
    return result;
  };
  if (!remoteAllowed(job.remote, c.repos))
    return refuse(`this worker does not serve ${job.remote} (its repositories: ${c.repos.join(', ')})`);
  if ((await c.redis.get(leaseKey(job.runId, job.storyId))) !== String(job.token))
    return refuse(`token ${job.token} of ${job.storyId} is no longer current`);

  c.served.add(job.runId);
  const slot = `${job.runId}-${job.storyId}-${job.token}`;
  /** The lane's tree: the spare tree when there is one, else a worktree made for it (below). */
  let tree = path.join(c.dir, 'lanes', slot);
  const stateRoot = path.join(c.dir, 'state', slot);
  const mirror = mirrorOf(c.dir, job.remote);
  const local = `ql-wt/${job.storyId}.${job.token}`;
  const hb = setInterval(() => void send('heartbeat'), job.heartbeatMs);
  const laneAbort = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    laneAbort.abort();
  }, job.storyTimeoutMs);
  const onAbort = () => laneAbort.abort();
  c.abort.addEventListener('abort', onAbort);
  let control = '';
  const controls = setInterval(() => void followControl(), Math.min(job.heartbeatMs, 500));
  /** The run's control word and this dispatch's lease: stop and pause go to the lane's sentinels, cancel ends it. */
  const followControl = async () => {
    const [word, lease] = await Promise.all([
      c.redis.get(controlKey(job.runId, job.storyId)).catch(() => null),
      c.redis.get(leaseKey(job.runId, job.storyId)).catch(() => undefined),
    ]);
    if (lease !== undefined && lease !== String(job.token)) laneAbort.abort();
    if (word === null || word === control) return;
    if (word === 'cancel') laneAbort.abort();
    // The lane's run folder is made by its engine: until then the word waits (it is read again next time).
    const runDir = ralphRunDir(tree, job.runId);
    if (!existsSync(runDir)) return;
    control = word;
    if (word === 'stop') await writeFile(path.join(runDir, 'STOP'), 'the parallel run stops\n').catch(() => undefined);
    if (word === 'pause')
      await writeFile(path.join(runDir, 'PAUSE'), 'the parallel run is paused\n').catch(() => undefined);
    else await rm(path.join(runDir, 'PAUSE'), { force: true });
  };
  try {
    mark('checked');
    // Not waited for: the stream keeps its entries in order (`send`'s chain), and nothing below needs it written.
    void send('started');
    mark('startedSent');
    c.log(`${job.runId} ${job.storyId}: attempt ${job.attempt} (token ${job.token}) at ${job.sha.slice(0, 10)}`);
    const ready = await c.spare.take(mirror);
    mark('fetched');
    // The spare is this lane's tree from now on: removed with it, whatever happens below.
    if (ready) tree = ready.tree;
    // The job's commit is usually in the mirror already (its branches fetched before the worker served, an earlier
    // job's fetch, a prefetch): git is asked to check it out, or to add the tree, at once, and the mirror fetches
    // only when that fails (a commit it lacks fails before anything in the tree changes).
    const place = (): ReturnType<typeof git> =>
      ready
        ? git(ready.tree, ['checkout', '-q', '-f', '-B', local, job.sha], { reject: false })
        : mkdir(path.dirname(tree), { recursive: true }).then(() =>
            git(mirror, ['worktree', 'add', '-f', '-B', local, tree, job.sha], { reject: false }),
          );
    let placed = await place();
    if (placed.exitCode !== 0) {
      // git just said the mirror lacks the commit: fetched without asking it again.
      await fetchInto(c.mirrors, mirror, { ...featureFetch(job), sha: undefined });
      mark('mirrorFetched');
      placed = await place();
    }
    if (ready && placed.exitCode === 0) mark('spareTaken');
    if (ready && placed.exitCode !== 0) {
      // A spare git could not check the commit out in: the lane gets a worktree of its own.
      await removeTree(mirror, ready.tree);
      tree = path.join(c.dir, 'lanes', slot);
      await mkdir(path.dirname(tree), { recursive: true });
      placed = await git(mirror, ['worktree', 'add', '-f', '-B', local, tree, job.sha], { reject: false });
    }
    if (placed.exitCode !== 0) {
      if ((await git(mirror, ['cat-file', '-e', `${job.sha}^{commit}`], { reject: false })).exitCode !== 0)
        throw new Error(`${job.remote} has no commit ${job.sha} on ${job.featureBranch}`);
      throw gitFailure(['worktree', 'add', '-f', '-B', local, tree, job.sha], placed);
    }
    mark('worktreeAdded');
    await excludeRunnerFiles(tree, mirror);
    await prepareState(c, job, tree, stateRoot);
    mark('prepared');
    let spareAsked = false;
    const result = await runLane(c, job, tree, stateRoot, laneAbort.signal, (e) => {
      mark(`event:${e.type}`);
      void send('event', { event: e });
      // While the agent works, the next job's tree is made: not for a lane whose lease or run has ended, nor when
      // the run has no story left to dispatch (a tree no job would take).
      if (e.type === 'agentStarted' && !spareAsked) {
        spareAsked = true;
        void c.spare
          .make(mirror, job.sha, job.runId, async () => {
            if (laneAbort.signal.aborted) return false;
            const [lease, pending] = await c.redis
              .mget(leaseKey(job.runId, job.storyId), pendingKey(job.runId))
              .catch(() => [null, null]);
            return lease === String(job.token) && pending !== '0';
          })
          .catch((err: Error) => c.log(`could not make a spare tree: ${err.message}`));
      }
    });
    mark('laneReturned');
    // The tree the lane's repeated final gate saw stands for its tree now in a PID namespace (nothing the agent
    // started outlives it): no `git status` for the leftovers then, as in a local lane (rules.ts).
    const changed = greenTreeStandsForLeftovers(resolveContainment(c.config.containment).kind, result.green !== null)
      ? treeStatePaths(result.green!.state)
      : undefined;
    await saveLeftovers(tree, job.storyId, changed);
    mark('leftoversSaved');
    // A lane whose lease ended (superseded, the run gone) pushes nothing: its branch is no longer its own.
    const lease = await c.redis.get(leaseKey(job.runId, job.storyId)).catch(() => null);
    mark('leaseChecked');
    let sha: string | null = null;
    if (lease === String(job.token)) {
      sha = await headOf(tree);
      await git(tree, ['push', '-q', '--force', job.remote, `HEAD:refs/heads/ql-wt/${job.storyId}`]);
    }
    mark('pushed');
    const out: LaneResult = { ...result, sha, timedOut };
    await send('result', { result: out });
    mark('resultSent');
    c.log(`${job.runId} ${job.storyId}: ${out.state}${out.verified ? ' (verified)' : ''}: ${out.reason}`);
    return out;
  } catch (err) {
    const out: LaneResult = {
      state: 'failed',
      reason: `worker ${c.id}: ${(err as Error).message}`,
      verified: false,
      blocked: null,
      sha: null,
      timedOut,
      green: null,
    };
    await send('result', { result: out });
    return out;
  } finally {
    clearInterval(hb);
    clearInterval(controls);
    clearTimeout(timer);
    c.abort.removeEventListener('abort', onAbort);
    // The lane has reported: its tree, branch and state go while the worker takes its next job (the worker ends
    // only after every clean-up).
    const cleanup = (async () => {
      await removeTree(mirror, tree);
      await git(mirror, ['branch', '-D', local], { reject: false });
      await rm(stateRoot, { recursive: true, force: true });
      await chain;
      mark('cleaned');
      c.log(`${job.runId} ${job.storyId}: token ${job.token} cleaned up`);
    })().catch((err: Error) =>
      c.log(`${job.runId} ${job.storyId}: could not clean up token ${job.token}: ${err.message}`),
    );
    c.cleanups.add(cleanup);
    void cleanup.finally(() => c.cleanups.delete(cleanup));
  }
}

/**
 * Brings `want.refspec` of `want.remote` into the repository's bare mirror (made at its first fetch), one fetch at a
 * time per mirror; nothing when the mirror already has commit `want.sha`.
 */
async function fetchInto(
  mirrors: Map<string, Promise<unknown>>,
  mirror: string,
  want: { remote: string; refspec: string; sha?: string; prune?: boolean },
): Promise<void> {
  const prev = mirrors.get(mirror) ?? Promise.resolve();
  const step = prev.then(async () => {
    if (
      want.sha !== undefined &&
      (await git(mirror, ['cat-file', '-e', `${want.sha}^{commit}`], { reject: false })).exitCode === 0
    )
      return;
    if (!existsSync(mirror)) {
      await mkdir(path.dirname(mirror), { recursive: true });
      await git(path.dirname(mirror), ['init', '-q', '--bare', mirror]);
    }
    await git(mirror, fetchRefArgs(want.remote, want.refspec, want.prune));
  });
  mirrors.set(
    mirror,
    step.catch(() => undefined),
  );
  await step;
}

/** The fetch of a job's (or a feature note's) commit `sha` of the feature branch into the mirror. */
const featureFetch = (j: Pick<LaneJob, 'sha' | 'remote' | 'featureBranch'>) => ({
  remote: j.remote,
  sha: j.sha,
  refspec: `+refs/heads/${j.featureBranch}:refs/remotes/lane/${j.featureBranch}`,
});

/** Where a mirror keeps the remote's branches as they were at the worker's start: their objects stay in the mirror. */
const WARM_REFS = 'refs/remotes/lane-warm';

/**
 * Brings each served repository's branches into its mirror, made if missing, before the worker takes a job: a run's
 * feature branch starts from one of them, so its first job finds its commit there (or fetches only what the run
 * added), where it would otherwise make the mirror and fetch the whole history on its path to the agent. The
 * branches, not the remote's HEAD: a bare remote's HEAD often names a branch it does not have. A remote that cannot
 * be fetched now is logged and left to its jobs (a mirror made for it is removed again).
 */
async function warmMirrors(
  o: WorkerOptions,
  dir: string,
  mirrors: Map<string, Promise<unknown>>,
): Promise<IdleSpot | null> {
  const spots = await Promise.all(
    o.repos.map(async (remote): Promise<IdleSpot | null> => {
      const mirror = mirrorOf(dir, remote);
      const made = !existsSync(mirror);
      try {
        await fetchInto(mirrors, mirror, { remote, refspec: `+refs/heads/*:${WARM_REFS}/*`, prune: true });
      } catch (err) {
        if (made) {
          await rm(mirror, { recursive: true, force: true });
          // The mirrors' folder too, when this was its only mirror (an allowlist of one unreachable remote).
          await rmdir(path.dirname(mirror)).catch(() => undefined);
        }
        o.log(`could not fetch ${remote} ahead: ${gitMessage(err)}`);
        return null;
      }
      // The newest of its branches: a run's feature branch most likely starts there, so a job's checkout in the
      // idle spare changes the fewest files.
      const newest = await git(
        mirror,
        ['for-each-ref', '--count=1', '--sort=-committerdate', '--format=%(objectname)', WARM_REFS],
        { reject: false },
      );
      const sha = newest.stdout.trim();
      return sha ? { mirror, sha } : null;
    }),
  );
  // The first served repository that could be fetched holds the idle spare.
  return spots.find((x) => x !== null) ?? null;
}

/**
 * Removes the spare trees a worker of this folder that is gone left in `<dir>/lanes/` (a worker killed, or a machine
 * that lost power, never removed its idle spare), with git's record of them in each mirror.
 */
async function removeOrphanSpares(dir: string): Promise<void> {
  const lanes = path.join(dir, 'lanes');
  const names = await readdir(lanes).catch(() => [] as string[]);
  const orphans = names.filter((n) => {
    const pid = Number(/^spare-(\d+)-\d+$/.exec(n)?.[1]);
    return pid > 0 && pid !== process.pid && !processAlive(pid);
  });
  if (!orphans.length) return;
  for (const n of orphans) await rm(path.join(lanes, n), { recursive: true, force: true });
  const mirrorsDir = path.join(dir, 'mirrors');
  for (const m of await readdir(mirrorsDir).catch(() => [] as string[]))
    await git(path.join(mirrorsDir, m), ['worktree', 'prune'], { reject: false });
}

/** Whether process `pid` exists (EPERM: it does, another user's). */
function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The first line of a failed git command's message (its stderr names the cause). */
const gitMessage = (err: unknown): string => ((err as Error).message ?? String(err)).trim().split('\n')[0]!;

/**
 * The lane's state root (its iteration streams and its quantum.json): the tree's quantum.json with the story
 * `in_progress` at the attempts the coordinator counted (attempt − 1 failed before), so the lane's engine takes it
 * up as a local lane does. This worker's `.ralph/` configuration files go into the tree (ignored there).
 */
async function prepareState(c: JobContext, job: LaneJob, tree: string, stateRoot: string): Promise<void> {
  await mkdir(stateRoot, { recursive: true });
  const q = JSON.parse(await readFile(path.join(tree, 'quantum.json'), 'utf8')) as {
    stories?: { id: string; status?: string; attempts?: number }[];
  };
  const story = q.stories?.find((s) => s.id === job.storyId);
  if (!story) throw new Error(`quantum.json at ${job.sha.slice(0, 10)} has no story ${job.storyId}`);
  story.status = 'in_progress';
  story.attempts = job.attempt - 1;
  await writeFile(path.join(stateRoot, 'quantum.json'), JSON.stringify(q, null, 2) + '\n');
  for (const name of ['commandPolicy', 'prompts'] as const) {
    const from = ralphFile(c.dir, name);
    if (existsSync(from)) await cp(from, ralphFile(tree, name), { recursive: true });
  }
}

/** The lane engine over the job's story in `tree` (laneRun.ts `LaneRun`, as the local coordinator runs it). */
async function runLane(
  c: JobContext,
  job: LaneJob,
  tree: string,
  stateRoot: string,
  signal: AbortSignal,
  onEvent: (e: EngineEvent) => void,
): Promise<Omit<LaneResult, 'sha' | 'timedOut'>> {
  const source = new LaneStorySource(stateRoot, job.storyId, 'ralph-worker');
  let iterations = 0;
  let green: LaneResult['green'] = null;
  const engine = new LaneRun({
    folder: tree,
    config: { ...c.config, notify: '', parallel: false },
    maxIterations: c.config.maxIterations,
    maxCostUsd: 0,
    maxWallTimeMs: job.storyTimeoutMs,
    continueOnBlocked: true,
    agentEnv: c.agentEnv,
    signal,
    runId: job.runId,
    lane: {
      index: 1,
      stateRoot,
      source,
      actor: 'ralph-worker',
      nextIteration: () => ++iterations,
      onGreenTree: (g) => {
        green = g;
      },
    },
  });
  engine.on('event', (e) => {
    // A tree seen green before this agent (a reviewer after the final gate) says nothing about the tree after it.
    if (e.type === 'agentStarted') green = null;
    if (e.type === 'runStarted' || e.type === 'runEnded' || e.type === 'progress') return;
    onEvent(e);
  });
  let r: { state: string; reason: string };
  try {
    r = await engine.run();
  } catch (err) {
    r = { state: 'failed', reason: (err as Error).message };
  }
  const state = (['completed', 'stopped', 'cancelled', 'stalled'] as const).find((s) => s === r.state) ?? 'failed';
  return { state, reason: r.reason, verified: source.verified, blocked: source.blocked, green };
}

/**
 * Commits what the agent left uncommitted (the runner's files excluded), as the local dispatcher does. `changed`: the
 * paths of the tree state that stands for the tree now (no `git status` then).
 */
async function saveLeftovers(tree: string, storyId: string, changed?: readonly string[]): Promise<void> {
  if (!existsSync(tree)) return;
  if (changed ? !changed.some((p) => !RUNNER_FILES.includes(p)) : !(await hasLeftovers(tree))) return;
  await git(tree, ['add', '-A']);
  for (const f of RUNNER_FILES)
    if (existsSync(path.join(tree, f))) await git(tree, ['reset', '-q', '--', f], { reject: false });
  if ((await git(tree, ['diff', '--cached', '--quiet'], { reject: false })).exitCode === 0) return;
  await git(tree, [
    '-c',
    'user.name=Ralph',
    '-c',
    'user.email=ralph@localhost',
    'commit',
    '-q',
    '--no-verify',
    '-m',
    `ralph: ${storyId}: work the lane left uncommitted`,
  ]);
}
