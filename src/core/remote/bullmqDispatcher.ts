import { EventEmitter } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import * as path from 'node:path';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { ralphRunDir } from '../control/sentinels';
import { fetchRefArgs } from '../git/git';
import { looseRefFromFiles } from '../git/gitHead';
import type { EngineEvent, WorkItemRef } from '../loop/events';
import {
  git,
  GitWorktreeDispatcher,
  headOf,
  laneBranch,
  laneTree,
  type LaneEngine,
  type MergeOutcome,
} from '../loop/parallel/dispatcher';
import type { LaneStorySource } from '../loop/parallel/laneSource';
import { laneAttemptFailed, storyAttempts } from '../loop/parallel/quantumRuntime';
import { readQuantum } from '../sources/quantum/readQuantum';
import { EngineRefusal, type EngineLane, type EngineOptions, type RunResult } from '../loop/runOptions';
import {
  decideFencing,
  decideStall,
  laneJobId,
  liveWorkers,
  redactRedisUrl,
  WORKER_BEAT_MS,
  type Dispatch,
} from './decide';
import {
  controlKey,
  eventsKey,
  FEATURE_CHANNEL,
  KEY_PREFIX,
  LANE_QUEUE,
  leaseKey,
  parseStreamEntry,
  pendingKey,
  WORKERS_KEY,
  type LaneJob,
  type LaneResult,
  type StreamEntry,
} from './laneJob';
import { CoalescedRuns } from './coalescedRuns';
import { remoteTrace } from './phaseTrace';
import { checkRedisAuth, redisConnection, WorkerRefusal } from './worker';

/** What {@link BullmqDispatcher.open} needs: the run, its folder and feature branch, and the settings of remote lanes. */
export interface BullmqDispatcherOptions {
  folder: string;
  featureBranch: string;
  runId: string;
  redisUrl: string;
  /** The git remote (a name in `folder`) lanes fetch from and push to. */
  laneRemote: string;
  laneStallMs: number;
  storyTimeoutMs: number;
  warn: (message: string) => void;
  /** A run-wide event of the remote lanes (`workers`: the workers alive when that changes), for the run log. */
  emit?: (event: EngineEvent) => void;
}

/** The key counting a run's dispatches: each dispatch's fencing token (INCR: never reused, even after a restart). */
const tokenKey = (runId: string): string => `${KEY_PREFIX}:run:${runId}:token`;

/**
 * The lane dispatcher of `laneDispatcher: "bullmq"` (docs/distributed-lanes.md): each lane is a BullMQ job for a
 * `ralph worker`, named by its data (remote, feature-branch SHA, story, attempt, fencing token); the lane's events
 * come back through the run's Redis stream and are re-emitted here as the local lane's would be (with the `worker`
 * that sent them), and the lane's pushed branch is fetched and merged in this folder as a local lane's branch is.
 * Only the story's current token is heard (decide.ts `decideFencing`); a lane silent for `laneStallMs` is taken for
 * dead (decide.ts `decideStall`), its attempt counted failed in quantum.json and dispatched again under `maxAttempts`.
 */
export class BullmqDispatcher extends GitWorktreeDispatcher {
  private readonly lanes = new Map<string, RemoteLane>();
  /**
   * Each story's newest dispatch (its fencing token), kept after its lane ended: a late report of a superseded or
   * ended dispatch is refused with the reason (decide.ts `decideFencing`), whether or not the story still has a lane.
   */
  readonly dispatches = new Map<string, Dispatch>();
  /** The run's jobs still in the queue or at work (removed from Redis when the run ends). */
  readonly jobs = new Set<string>();
  /** The accepted result's SHA of each story whose lane passed: the only commit its merge takes. */
  private readonly named = new Map<string, string>();
  private lastId = '0-0';
  closed = false;
  private following: Promise<void> = Promise.resolve();
  private pushChain: Promise<unknown> = Promise.resolve();
  /** The feature branch's commit last pushed to the lane remote (a dispatch pushes only a newer one). */
  private pushedFeature: string | null = null;
  /** Lane branches being fetched since their lane's result was heard, by story id (the merge takes the fetch). */
  private readonly fetching = new Map<string, Promise<unknown>>();
  /** The lane fetches: one `git fetch` at a time, of every lane branch whose result was heard while one ran. */
  private readonly laneFetches = new CoalescedRuns<string>((ids) => this.fetchLanes(ids));
  /** Merged lanes' branches still on the lane remote: removed there in one push when the run ends. */
  private readonly mergedOnRemote = new Set<string>();
  redisUp = true;
  redisBackAt = 0;
  /** Reads the workers' heartbeats while the run has lanes (from its first lane to its close). */
  private workersTimer: NodeJS.Timeout | null = null;
  /** The ids of the workers alive last reported (`workers` event), joined. */
  private workersSaid: string | null = null;

  private constructor(
    readonly o: BullmqDispatcherOptions,
    /** The remote's address as workers reach it (an absolute path for a folder). */
    readonly remote: string,
    readonly redis: Redis,
    private readonly reader: Redis,
    readonly queue: Queue,
    /** The queue's connection: BullMQ leaves a connection it was given open when it closes. */
    private readonly queueConnection: Redis,
  ) {
    super(o.folder, o.featureBranch);
  }

  /**
   * Checks Redis (a password, and no answer without it) and the lane remote, and starts following the run's stream.
   * Throws {@link EngineRefusal} naming what is wrong.
   */
  static async open(o: BullmqDispatcherOptions): Promise<BullmqDispatcher> {
    try {
      await checkRedisAuth(o.redisUrl);
    } catch (err) {
      if (err instanceof WorkerRefusal) throw new EngineRefusal(`laneDispatcher "bullmq": ${err.message}`);
      throw err;
    }
    const url = await git(o.folder, ['remote', 'get-url', o.laneRemote], { reject: false });
    if (url.exitCode !== 0)
      throw new EngineRefusal(
        `laneDispatcher "bullmq" needs the git remote "${o.laneRemote}" (laneRemote) that workers fetch from and push to: \`git remote add ${o.laneRemote} <address>\``,
      );
    const raw = url.stdout.trim();
    const remote = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/|^[^/]+@[^/]+:/.test(raw) ? raw : path.resolve(o.folder, raw);
    const redis = redisConnection(o.redisUrl);
    const reader = redisConnection(o.redisUrl);
    const queueConnection = redisConnection(o.redisUrl);
    const queue = new Queue(LANE_QUEUE, { connection: queueConnection, prefix: KEY_PREFIX });
    queue.on('error', () => undefined);
    const d = new BullmqDispatcher(o, remote, redis, reader, queue, queueConnection);
    // While Redis is away nothing is dispatched or heard (commands wait for it): said once each way in the run log.
    let lostAt = 0;
    redis.on('close', () => {
      if (!d.redisUp || d.closed) return;
      d.redisUp = false;
      lostAt = Date.now();
      o.warn(`remote lanes: lost Redis at ${d.where}: dispatch and the lanes' reports wait for it`);
    });
    redis.on('ready', () => {
      if (d.redisUp) return;
      d.redisBackAt = Date.now();
      d.redisUp = true;
      o.warn(
        `remote lanes: Redis at ${d.where} is back after ${d.redisBackAt - lostAt} ms: dispatch resumes, the lanes' silence counts from now`,
      );
    });
    // The stream exists from now on (workers add with NOMKSTREAM: a run that ended gets no key back).
    await redis.xadd(eventsKey(o.runId), '*', 'open', o.runId);
    d.following = d.follow();
    return d;
  }

  /** Reads the run's stream until closed; entries go to their lanes (fenced there). Survives Redis restarts. */
  private async follow(): Promise<void> {
    while (!this.closed) {
      let r: [string, [string, string[]][]][] | null;
      try {
        r = (await this.reader.xread('COUNT', 500, 'BLOCK', 250, 'STREAMS', eventsKey(this.o.runId), this.lastId)) as
          [string, [string, string[]][]][] | null;
      } catch {
        if (this.closed) return;
        await new Promise((res) => setTimeout(res, 100));
        continue;
      }
      for (const [, entries] of r ?? [])
        for (const [id, fields] of entries) {
          this.lastId = id;
          if (fields[0] === 'open') continue;
          const e = parseStreamEntry(fields);
          if (!e.ok) {
            this.o.warn(`remote lanes: ${e.reason}`);
            continue;
          }
          const lane = this.lanes.get(e.value.storyId);
          if (lane) lane.hear(e.value);
          else if (e.value.kind === 'result' || e.value.kind === 'started') {
            const f = decideFencing(this.dispatches.get(e.value.storyId) ?? null, e.value);
            const why = f.kind === 'refuse' ? f.reason : 'its lane has ended';
            this.o.warn(`${e.value.storyId}: refused a ${e.value.kind} from ${e.value.worker}: ${why}`);
          }
        }
    }
  }

  /** Pushes the feature branch to the lane remote (one push at a time) and returns its commit. */
  pushFeature(): Promise<string> {
    const step = this.pushChain.then(async () => {
      const sha = await headOf(this.o.folder);
      if (sha === this.pushedFeature) return sha;
      // The coordinator is the branch's one writer: a merge undone after its gate failed may have been pushed, so
      // the push may go back, but only over what this run pushed (a lease on it).
      const lease = this.pushedFeature
        ? [`--force-with-lease=refs/heads/${this.o.featureBranch}:${this.pushedFeature}`]
        : [];
      await git(this.o.folder, [
        'push',
        '-q',
        ...lease,
        this.o.laneRemote,
        `${sha}:refs/heads/${this.o.featureBranch}`,
      ]);
      this.pushedFeature = sha;
      // Workers that serve this remote bring the commit into their mirror while idle (remote/worker.ts).
      this.say('moved', sha);
      return sha;
    });
    this.pushChain = step.catch(() => undefined);
    return step;
  }

  /** Tells the workers (FEATURE_CHANNEL) that the feature branch moved to `sha`, or that the run ended; never waited for. */
  private say(kind: 'moved' | 'ended', sha: string): void {
    const note = { v: 1, kind, runId: this.o.runId, remote: this.remote, featureBranch: this.o.featureBranch, sha };
    void this.redis.publish(FEATURE_CHANNEL, JSON.stringify(note)).catch(() => undefined);
  }

  /** Adds one dispatch's job (BullMQ's retries off: retrying is the coordinator's). */
  async enqueue(job: LaneJob): Promise<string> {
    const id = laneJobId(job.runId, job.storyId, job.token);
    this.jobs.add(id);
    await this.queue.add('lane', job, { jobId: id, attempts: 1, removeOnComplete: true, removeOnFail: true });
    return id;
  }

  /** Removes a dispatch's job, even one a dead worker still holds locked (its lock is ended first). */
  async dropJob(id: string): Promise<void> {
    const job = await this.queue.getJob(id).catch(() => undefined);
    if (job) {
      await this.redis.del(`${KEY_PREFIX}:${LANE_QUEUE}:${id}:lock`);
      await this.queue.remove(id).catch(() => undefined);
    }
    this.jobs.delete(id);
  }

  /** The lane of `story` runs on a worker: the coordinator's `Lane` options give its run, signal and source. */
  lane(options: EngineOptions & { lane: EngineLane }, story: WorkItemRef): LaneEngine {
    const lane = new RemoteLane(this, options, story);
    this.lanes.set(story.id, lane);
    if (!this.workersTimer && !this.closed) {
      void this.sayWorkers();
      this.workersTimer = setInterval(() => void this.sayWorkers(), WORKER_BEAT_MS / 2);
    }
    return lane;
  }

  /** Reports the workers alive (decide.ts `liveWorkers`: a fresh heartbeat) when they are not the ones last said. */
  private async sayWorkers(): Promise<void> {
    if (!this.redisUp || !this.o.emit) return;
    const beats = await this.redis.hgetall(WORKERS_KEY).catch(() => null);
    if (!beats || this.closed) return;
    const alive = liveWorkers(beats, Date.now(), 3 * WORKER_BEAT_MS);
    const said = alive.map((w) => w.id).join(' ');
    if (said === this.workersSaid) return;
    this.workersSaid = said;
    this.o.emit({ type: 'workers', alive });
  }

  /**
   * Notes the commit a story's accepted result named (its merge takes that commit only), and starts fetching the
   * lane's branch: at once when no lane fetch runs, else with the other results heard meanwhile in the fetch after
   * it. The fetch runs while earlier lanes merge, not in the merge slot.
   */
  name(storyId: string, sha: string): void {
    this.named.set(storyId, sha);
    this.fetching.set(storyId, this.laneFetches.add(storyId));
  }

  /**
   * Fetches stories `ids`' lane branches from the lane remote into the branches of the same names here (one git
   * fetch), then checks each fetched tip against the commit its accepted result named ({@link namedTip}), so that
   * the merge slot finds each branch ready.
   */
  private async fetchLanes(ids: readonly string[]): Promise<unknown> {
    const refspecs = ids.map((id) => `+refs/heads/${laneBranch(id)}:refs/heads/${laneBranch(id)}`);
    await git(this.o.folder, fetchRefArgs(this.o.laneRemote, refspecs));
    for (const id of ids) await this.namedTip(id);
    return undefined;
  }

  /**
   * Puts story `id`'s fetched lane branch at the commit its accepted result named, when the remote's tip differs (a
   * later push of a lane believed dead), and says so: the merge takes the named commit only.
   */
  private async namedTip(id: string): Promise<void> {
    const named = this.named.get(id);
    if (!named) return;
    const branch = laneBranch(id);
    // The fetched tip from its ref file (no git process), else from git.
    const tip =
      (await looseRefFromFiles(this.o.folder, `refs/heads/${branch}`)) ??
      (await git(this.o.folder, ['rev-parse', `refs/heads/${branch}`])).stdout.trim();
    if (tip === named) return;
    this.o.warn(
      `${branch} on ${this.o.laneRemote} is at ${tip.slice(0, 10)}, not the ${named.slice(0, 10)} its lane reported: merging ${named.slice(0, 10)}`,
    );
    await git(this.o.folder, ['branch', '-f', branch, named]);
  }

  /** A placeholder folder for the coordinator's files of the lane (its run folder receives STOP and PAUSE). */
  override async create(id: string) {
    const tree = laneTree(this.o.folder, id);
    await mkdir(ralphRunDir(tree, this.o.runId), { recursive: true });
    // Read while the lanes run, not in the first merge, which the first wave's other results wait behind.
    void this.readyMergeIdentity().catch(() => undefined);
    return { tree, branch: laneBranch(id), reused: false };
  }

  /** Nothing to save here: the worker committed and pushed the lane's work. */
  override async saveLeftovers(): Promise<string | null> {
    return null;
  }

  /**
   * Fetches the lane's pushed branch and merges the commit its accepted result named (never a later push of a lane
   * believed dead: when the fetched tip differs, the named commit is merged and the difference said).
   */
  override async merge(id: string): Promise<MergeOutcome> {
    const token = this.dispatches.get(id)?.token ?? 0;
    remoteTrace('coordinator', id, token, 'mergeStart');
    // The merge slot holds the feature branch: its head is read while the lane's fetch ends.
    const before = headOf(this.o.folder);
    before.catch(() => undefined); // awaited below; not unhandled when the fetch fails first
    // The fetch (and the tip's check) started when the lane's result was heard; a merge without one (or after its
    // failure, which may be another lane's branch of the same fetch) fetches its branch alone now.
    const fetched = await (this.fetching.get(id) ?? Promise.resolve(new Error('not fetched')));
    this.fetching.delete(id);
    if (fetched instanceof Error) await this.fetchLanes([id]);
    remoteTrace('coordinator', id, token, 'mergeFetched');
    const out = await this.mergeOnto(id, await before);
    remoteTrace('coordinator', id, token, 'merged');
    return out;
  }

  /**
   * Removes the placeholder and the lane branch's copy here; a merged lane's branch also goes from the remote (with
   * the others, when the run ends), any other is kept there for a person.
   */
  override async remove(id: string): Promise<void> {
    const token = this.dispatches.get(id)?.token ?? 0;
    remoteTrace('coordinator', id, token, 'mergeRecorded');
    this.lanes.delete(id);
    await rm(laneTree(this.o.folder, id), { recursive: true, force: true });
    const branch = laneBranch(id);
    // A lane not merged may still be fetching (it started when its result was heard): its copy here goes after it.
    await this.fetching.get(id);
    this.fetching.delete(id);
    const merged =
      (await git(this.o.folder, ['merge-base', '--is-ancestor', `refs/heads/${branch}`, 'HEAD'], { reject: false }))
        .exitCode === 0;
    // Merged: the branch goes here and, when the run ends, on the remote. Not merged: the remote keeps it for a
    // person; the copy fetched here goes.
    if (merged) this.mergedOnRemote.add(branch);
    // The merge passed its gate: the feature branch goes to the remote now, so the next dispatch finds it there.
    if (merged && !this.closed) void this.pushFeature().catch(() => undefined);
    await git(this.o.folder, ['branch', '-q', '-D', branch], { reject: false });
    remoteTrace('coordinator', id, token, 'removed');
  }

  /**
   * Ends the run's part in Redis: every lease (a worker still on one stops and pushes nothing), its jobs, stream,
   * control and token keys; then pushes the feature branch and closes the connections. Idempotent.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.workersTimer) clearInterval(this.workersTimer);
    await this.following;
    for (const id of [...this.jobs]) await this.dropJob(id).catch(() => undefined);
    const keys = await this.redis.keys(`${KEY_PREFIX}:run:${this.o.runId}:*`).catch(() => [] as string[]);
    if (keys.length) await this.redis.del(...keys).catch(() => undefined);
    await this.pushFeature().catch((err: Error) =>
      this.o.warn(`could not push ${this.o.featureBranch} to ${this.o.laneRemote}: ${err.message}`),
    );
    await Promise.all(this.fetching.values());
    // The merged lanes' branches leave the remote together: one push instead of one per story.
    if (this.mergedOnRemote.size) {
      const gone = [...this.mergedOnRemote];
      const r = await git(this.o.folder, ['push', '-q', this.o.laneRemote, '--delete', ...gone], { reject: false });
      if (r.exitCode !== 0)
        this.o.warn(`could not remove ${gone.join(', ')} from ${this.o.laneRemote}: ${(r.stderr || r.stdout).trim()}`);
    }
    // The workers remove what they kept for this run (their spare trees) once they hear it ended, or once they see
    // its stream gone (the keys above).
    if (this.pushedFeature) this.say('ended', this.pushedFeature);
    await this.redis.ping().catch(() => undefined);
    await this.queue.close().catch(() => undefined);
    this.queueConnection.disconnect();
    this.redis.disconnect();
    this.reader.disconnect();
  }

  /** For messages: the Redis address without its password. */
  get where(): string {
    return redactRedisUrl(this.o.redisUrl);
  }
}

/** One dispatch's end as the lane follows it. */
type Heard = { kind: 'result'; result: LaneResult; worker: string } | { kind: 'stalled'; silentMs: number };

/**
 * One lane of the run on a worker: dispatches its story (again after a stall, under `maxAttempts`), re-emits the
 * worker's events with the run's iteration numbers and the `worker`, passes STOP, PAUSE and cancel on as the lane's
 * control word, and resolves with the lane's end as a local lane engine would.
 */
class RemoteLane extends EventEmitter<{ event: [event: EngineEvent, lane?: number] }> implements LaneEngine {
  private current: Dispatch | null = null;
  private takenAt: number | null = null;
  private lastSeenAt: number | null = null;
  private worker = '';
  private settle: ((h: Heard) => void) | null = null;
  /** The worker's iteration numbers → the run's (options.lane.nextIteration). */
  private readonly iterations = new Map<number, number>();

  constructor(
    private readonly d: BullmqDispatcher,
    private readonly options: EngineOptions & { lane: EngineLane },
    private readonly story: WorkItemRef,
  ) {
    super();
  }

  /** An entry of this story from the stream: counted only when its token is the current dispatch's. */
  hear(e: StreamEntry): void {
    const f = decideFencing(this.current, e);
    if (f.kind === 'refuse') {
      if (e.kind === 'result' || e.kind === 'started')
        this.emit('event', {
          type: 'warning',
          message: `${this.story.id}: refused a ${e.kind} from ${e.worker}: ${f.reason}`,
        });
      return;
    }
    this.lastSeenAt = Date.now();
    if (e.kind !== 'heartbeat')
      remoteTrace(
        'coordinator',
        e.storyId,
        e.token,
        e.kind === 'event' ? `heard:${String(e.event?.type)}` : `heard:${e.kind}`,
      );
    if (e.kind === 'started') {
      this.takenAt = this.lastSeenAt;
      this.worker = e.worker;
    }
    if (e.kind === 'event' && e.event) this.emit('event', this.renumbered(e.event, e.worker));
    if (e.kind === 'result' && e.result) {
      this.current!.ended = true;
      this.settle?.({ kind: 'result', result: e.result, worker: e.worker });
    }
  }

  private renumbered(event: Record<string, unknown>, worker: string): EngineEvent {
    const out: Record<string, unknown> = { ...event, worker };
    if (typeof event.iteration === 'number') {
      let n = this.iterations.get(event.iteration);
      if (n === undefined && event.type === 'iterationStarted') {
        n = this.options.lane.nextIteration();
        this.iterations.set(event.iteration, n);
      }
      if (n !== undefined) out.iteration = n;
    }
    return out as unknown as EngineEvent;
  }

  async run(): Promise<Pick<RunResult, 'state' | 'reason'>> {
    const o = this.d.o;
    const id = this.story.id;
    const source = this.options.lane.source as LaneStorySource;
    const signal = this.options.signal;
    for (;;) {
      if (signal?.aborted) return { state: 'cancelled', reason: 'the run ended before the lane was dispatched' };
      const counted = storyAttempts(o.folder, id);
      const attempt = (counted?.attempts ?? 0) + 1;
      remoteTrace('coordinator', id, 0, 'dispatch');
      const token = await this.d.redis.incr(tokenKey(o.runId));
      this.current = { token, ended: false };
      this.d.dispatches.set(id, this.current);
      this.takenAt = null;
      this.lastSeenAt = null;
      this.iterations.clear();
      // The stories still to dispatch after this one: while there are, a worker makes a tree ahead for its next job.
      const pending = readQuantum(o.folder)?.doc?.data.stories.filter((s) => s.status === 'pending').length ?? 1;
      await this.d.redis
        .multi()
        .set(leaseKey(o.runId, id), String(token))
        .set(controlKey(o.runId, id), 'run')
        .set(pendingKey(o.runId), String(pending))
        .exec();
      remoteTrace('coordinator', id, token, 'leased');
      const sha = await this.d.pushFeature();
      remoteTrace('coordinator', id, token, 'featurePushed');
      const jobId = await this.d.enqueue({
        v: 1,
        runId: o.runId,
        remote: this.d.remote,
        sha,
        featureBranch: o.featureBranch,
        storyId: id,
        title: this.story.title,
        attempt,
        token,
        storyTimeoutMs: o.storyTimeoutMs,
        heartbeatMs: Math.max(50, Math.floor(o.laneStallMs / 3)),
      });
      remoteTrace('coordinator', id, token, 'enqueued');
      const heard = await this.follow();
      remoteTrace('coordinator', id, token, 'laneSettled');
      if (heard.kind === 'result') {
        if (heard.worker === '(none)') await this.d.dropJob(jobId).catch(() => undefined);
        else this.d.jobs.delete(jobId);
        const r = heard.result;
        if (r.verified && r.sha) {
          source.verified = true;
          this.d.name(id, r.sha);
          // The merge's feature gate is skipped when it would repeat this green gate on this tree (mergeSlot.ts).
          if (r.green) this.options.lane.onGreenTree?.(r.green);
        }
        if (r.blocked !== null) source.blocked = r.blocked;
        const state = r.state === 'refused' ? 'failed' : r.state;
        return { state, reason: `${r.reason} (worker ${heard.worker})` };
      }
      // The worker is gone (or stopped answering): this dispatch is over; its lease ends so that it pushes nothing.
      this.current!.ended = true;
      await this.d.dropJob(jobId).catch(() => undefined);
      const reason = `worker ${this.worker || '(none)'} silent for ${heard.silentMs} ms (laneStallMs ${o.laneStallMs})`;
      await laneAttemptFailed(o.folder, id, 'crash', reason);
      const after = storyAttempts(o.folder, id);
      this.emit('event', { type: 'warning', message: `${id}: attempt ${attempt} failed: ${reason}` });
      if (signal?.aborted || !after || after.attempts >= after.maxAttempts)
        return {
          state: 'failed',
          reason: `${reason}; ${after?.attempts ?? attempt} attempt(s) of ${after?.maxAttempts ?? '?'}`,
        };
    }
  }

  /** Waits for the current dispatch's result or its stall, passing STOP, PAUSE and cancel on meanwhile. */
  private follow(): Promise<Heard> {
    const o = this.d.o;
    const id = this.story.id;
    const runDir = ralphRunDir(laneTree(o.folder, id), o.runId);
    let word = 'run';
    return new Promise<Heard>((resolve) => {
      const tick = setInterval(() => {
        const want = this.options.signal?.aborted
          ? 'cancel'
          : existsSync(path.join(runDir, 'STOP'))
            ? 'stop'
            : existsSync(path.join(runDir, 'PAUSE'))
              ? 'pause'
              : 'run';
        if (want !== word) {
          word = want;
          void this.d.redis.set(controlKey(o.runId, id), want).catch(() => undefined);
        }
        const s = decideStall({
          now: Date.now(),
          takenAt: this.takenAt,
          lastSeenAt: this.lastSeenAt,
          redisUp: this.d.redisUp,
          redisBackAt: this.d.redisBackAt,
          laneStallMs: o.laneStallMs,
        });
        if (s.stalled) done({ kind: 'stalled', silentMs: s.silentMs });
        else if (this.options.signal?.aborted && this.takenAt === null)
          done({
            kind: 'result',
            result: {
              state: 'cancelled',
              reason: 'the run ended before a worker took the lane',
              verified: false,
              blocked: null,
              sha: null,
              timedOut: false,
              green: null,
            },
            worker: '(none)',
          });
      }, 100);
      const done = (h: Heard) => {
        clearInterval(tick);
        this.settle = null;
        resolve(h);
      };
      this.settle = done;
    });
  }
}
