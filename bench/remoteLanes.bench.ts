/**
 * Remote lanes benchmark (`npm run bench` / `node scripts/bench.mjs remoteLanes`): eight independent quantum stories
 * through BullMQ on a real redis-server (127.0.0.1, password, AOF: test/support/redisServer.ts), `ralph worker`
 * processes (dist/cli.js) with their own HOME and work folder, a bare repository as the lane remote, the bash stub
 * agent of the lanes bench (test/support/stubs/benchAgent.sh: commits one file, sleeps BENCH_LANES_STORY_MS, default
 * 1500 ms), and the coordinator in this process (`laneDispatcher: "bullmq"`). The same Redis serves both runs.
 *   - remoteLanes.wallRatio: wall time on four workers (--max-parallel 4) over one worker (--max-parallel 1), target
 *     ≤ 0.35;
 *   - remoteLanes.enqueueToAgentMs: per story, from the coordinator's enqueue of its job to its agent's start on the
 *     worker (the stub logs its start, BENCH_STUB_LOG), p50 and p95, target p95 ≤ 300 ms;
 *   - remoteLanes.pushToMergeMs: per story, from the worker's push of the lane's branch (the bare remote's
 *     post-receive hook logs it) to the coordinator's merge start, p50 and p95, target p95 ≤ 300 ms.
 *   - remoteLanes.cpuPerStoryMs.workers / .coordinator: CPU (user + system, children included) per story of the
 *     worker processes (with their helper and all they started) and of this process, on four workers and on one.
 * The two overheads are taken from the four-worker run (lanes dispatched and merged while others run), with the
 * one-worker run's beside them. All on one machine, so one clock. Temporary folders, workers and Redis are ended at
 * the end; per-user state and cache in private folders, as in bench/lanes.bench.ts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { LoopEngine } from '../src/core/loop/startRun';
import { ralphConfigSchema } from '../src/core/model/config';
import { BullmqDispatcher } from '../src/core/remote/bullmqDispatcher';
import type { LaneJob } from '../src/core/remote/laneJob';
import { startRedis } from '../test/support/redisServer';
import { gitIn, makeLanesRepository } from './workspace';

const emit = (o: Record<string, unknown>) => console.log(JSON.stringify(o));
const STORIES = 8;
const storyMs = Number(process.env.BENCH_LANES_STORY_MS ?? 1500);
const repo = path.resolve(__dirname, '..', '..');
const stub = path.join(repo, 'test', 'support', 'stubs', 'benchAgent.sh');
const cli = path.join(repo, 'dist', 'cli.js');
const stateHome = fs.mkdtempSync(path.join(os.tmpdir(), 'ralph-bench-state-'));
const cacheHome = fs.mkdtempSync(path.join(os.tmpdir(), 'ralph-bench-cache-'));
process.env.XDG_STATE_HOME = stateHome;
process.env.XDG_CACHE_HOME = cacheHome;
const temps: string[] = [stateHome, cacheHome];
process.on('exit', () => {
  for (const d of temps) fs.rmSync(d, { recursive: true, force: true });
});
const tempDir = (prefix: string) => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  temps.push(d);
  return d;
};

// The coordinator's marks (wall clock, ms): each story's last enqueue and its first merge start.
const enqueuedAt = new Map<string, number>();
const mergeAt = new Map<string, number>();
const enqueue = BullmqDispatcher.prototype.enqueue;
BullmqDispatcher.prototype.enqueue = function (this: BullmqDispatcher, job: LaneJob) {
  enqueuedAt.set(job.storyId, Date.now());
  return enqueue.call(this, job);
};
const merge = BullmqDispatcher.prototype.merge;
BullmqDispatcher.prototype.merge = function (this: BullmqDispatcher, id: string) {
  if (!mergeAt.has(id)) mergeAt.set(id, Date.now());
  return merge.call(this, id);
};

interface Worker {
  child: ChildProcess;
  exited: Promise<unknown>;
}

/**
 * CPU time (ms, user + system) of process `pid` and of its children it has waited for (git, the agent and its own
 * children), from /proc/<pid>/stat (fields 14–17, clock ticks): what the process has cost the machine so far.
 */
function cpuMs(pid: number | 'self'): { own: number; children: number } {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // After the name: state is field 3, so utime (14) … cstime (17) are at 11 … 14 here.
  return {
    own: ((Number(f[11]) + Number(f[12])) * 1000) / CLK_TCK,
    children: ((Number(f[13]) + Number(f[14])) * 1000) / CLK_TCK,
  };
}

/** The processes alive whose parent is `pid`, from /proc/<n>/stat (field 4). */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue;
    }
    if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(name));
  }
  return out;
}

/**
 * {@link cpuMs} of several processes, summed, with their live descendants' (a worker starts git, agents and gates
 * from a long-lived helper process, whose children's CPU reaches the worker's only when the helper ends); `own`: the
 * processes named. `minus`: an earlier reading taken off.
 */
function cpuOf(pids: readonly number[], minus = { own: 0, children: 0 }): { own: number; children: number } {
  const sum = { own: -minus.own, children: -minus.children };
  const add = (pid: number, top: boolean) => {
    let c: { own: number; children: number };
    try {
      c = cpuMs(pid);
    } catch {
      return; // ended between the listing and the reading
    }
    if (top) sum.own += c.own;
    else sum.children += c.own;
    sum.children += c.children;
    for (const child of childrenOf(pid)) add(child, false);
  };
  for (const pid of pids) add(pid, true);
  return sum;
}
const CLK_TCK = 100;

/** One `ralph worker` (its own HOME and work folder, concurrency 1); resolves once it serves the remote. */
function startWorker(redisUrl: string, remote: string, agentLog: string, traceFile: string): Promise<Worker> {
  const home = tempDir('ralph-bench-worker-');
  const dir = path.join(home, 'work');
  fs.mkdirSync(path.join(dir, '.ralph'), { recursive: true });
  fs.writeFileSync(
    path.join(dir, '.ralph', 'config.json'),
    JSON.stringify({ claudePath: stub, gates: { basic: 'true' }, timing: { betweenIterationsMs: 0 } }),
  );
  const child = spawn(
    process.execPath,
    [
      // BENCH_REMOTE_PROFILE_DIR=<dir>: a CPU profile of each worker (node --cpu-prof) written there at its end.
      ...(process.env.BENCH_REMOTE_PROFILE_DIR
        ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_REMOTE_PROFILE_DIR}`]
        : []),
      cli,
      'worker',
      '--redis',
      redisUrl,
      '--dir',
      dir,
      '--concurrency',
      '1',
      '--trust',
      '--repo',
      remote,
    ],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: {
        ...process.env,
        HOME: home,
        XDG_STATE_HOME: path.join(home, 'state'),
        XDG_CACHE_HOME: path.join(home, 'cache'),
        GIT_CONFIG_GLOBAL: '/dev/null',
        BENCH_STUB_SLEEP_S: String(storyMs / 1000),
        BENCH_STUB_LOG: agentLog,
        RALPH_TRACE_REMOTE: traceFile,
      },
    },
  );
  const exited = new Promise((resolve) => child.once('exit', resolve));
  return new Promise((resolve, reject) => {
    let out = '';
    child.stderr!.on('data', (b: Buffer) => {
      out += b.toString();
      if (/ serves /.test(out)) resolve({ child, exited });
    });
    void exited.then(() => reject(new Error(`a worker exited before serving:\n${out}`)));
  });
}

/** Seconds.micro lines `<word> <key> <time>` of `file` → key → every time (ms), in order. */
function marks(file: string, word: string): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const line of fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n') : []) {
    const [w, key, t] = line.split(' ');
    if (w !== word || !key || !t) continue;
    out.set(key, [...(out.get(key) ?? []), Math.round(Number(t) * 1000)]);
  }
  return out;
}

/**
 * The phases of one dispatch, in order, as `[label, from mark, to mark]` over the marks of RALPH_TRACE_REMOTE
 * (src/core/remote/phaseTrace.ts; `event:*` are the lane engine's events on the worker, `heard:*` the coordinator's
 * reading of the worker's stream entries). A mark's first time counts, `last:<mark>` its last.
 */
const PHASES: readonly (readonly [string, string, string])[] = [
  ['c.lease (token, lease, control word)', 'dispatch', 'leased'],
  ['c.push feature branch', 'leased', 'featurePushed'],
  ['c.enqueue (queue.add)', 'featurePushed', 'enqueued'],
  ['w.pickup (enqueued → job taken)', 'enqueued', 'picked'],
  ['w.checks (job, allowlist, lease)', 'picked', 'checked'],
  ['w.report started', 'checked', 'startedSent'],
  ['w.spare tree taken', 'startedSent', 'fetched'],
  ['w.tree at the commit (a fetch if needed)', 'fetched', 'worktreeAdded'],
  ['w.lane state', 'worktreeAdded', 'prepared'],
  ['w.lane start → agent spawned', 'prepared', 'event:agentStarted'],
  ['w.agent (stub sleeps storyMs)', 'event:agentStarted', 'event:iterationEnded'],
  ['w.gates and lane end', 'event:iterationEnded', 'laneReturned'],
  ['  of which gates', 'event:gateStarted', 'last:event:gateResult'],
  ['w.leftovers check', 'laneReturned', 'leftoversSaved'],
  ['w.lease check', 'leftoversSaved', 'leaseChecked'],
  ['w.push lane branch', 'leaseChecked', 'pushed'],
  ['w.report result', 'pushed', 'resultSent'],
  ['w.clean-up (after the report)', 'resultSent', 'cleaned'],
  ['c.hear result (XADD → XREAD)', 'pushed', 'heard:result'],
  ['c.lane end → merge start', 'heard:result', 'mergeStart'],
  ['c.fetch lane branch', 'mergeStart', 'mergeFetched'],
  ['c.merge', 'mergeFetched', 'merged'],
  ['c.feature gate and records', 'merged', 'mergeRecorded'],
  ['c.remove lane branch', 'mergeRecorded', 'removed'],
  ['= enqueued → agent spawned', 'enqueued', 'event:agentStarted'],
  ['= iteration end → result heard', 'event:iterationEnded', 'heard:result'],
  ['= dispatch → merged, less the agent', 'dispatch', 'merged'],
];

/** Each dispatch's marks (story.token → mark → times), from a RALPH_TRACE_REMOTE file. */
function phaseMarks(file: string): Map<string, Map<string, number[]>> {
  const out = new Map<string, Map<string, number[]>>();
  const pendingDispatch = new Map<string, number>();
  for (const line of fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n') : []) {
    if (!line.trim()) continue;
    const m = JSON.parse(line) as { at: number; story: string; token: number; phase: string };
    // A dispatch is marked before its token is drawn: it belongs to the story's next token.
    if (m.token === 0) {
      pendingDispatch.set(m.story, m.at);
      continue;
    }
    const key = `${m.story}.${m.token}`;
    let d = out.get(key);
    if (!d) {
      d = new Map();
      out.set(key, d);
      const at = pendingDispatch.get(m.story);
      if (at !== undefined) d.set('dispatch', [at]);
      pendingDispatch.delete(m.story);
    }
    d.set(m.phase, [...(d.get(m.phase) ?? []), m.at]);
  }
  return out;
}

/** The row of the coordinator's turn-around: from the latest lane result heard to the next dispatch. */
const TURNAROUND = 'c.a result heard → next dispatch';

/** Per phase of {@link PHASES}, its duration (ms) in each dispatch that has both marks. */
function phaseDurations(file: string, storyMsOff: number): Map<string, number[]> {
  const out = new Map<string, number[]>();
  const at = (d: Map<string, number[]>, mark: string) =>
    mark.startsWith('last:') ? d.get(mark.slice(5))?.at(-1) : d.get(mark)?.[0];
  const all = [...phaseMarks(file).values()];
  const heard = all.flatMap((d) => d.get('heard:result') ?? []).sort((a, b) => a - b);
  for (const d of all) {
    const t = d.get('dispatch')?.[0];
    const before = t === undefined ? undefined : heard.filter((h) => h <= t).at(-1);
    if (t !== undefined && before !== undefined)
      out.set(TURNAROUND, [...(out.get(TURNAROUND) ?? []), Math.round(t - before)]);
  }
  for (const d of all)
    for (const [label, from, to] of PHASES) {
      const a = at(d, from);
      const b = at(d, to);
      if (a === undefined || b === undefined) continue;
      const ms = b - a - (label.includes('less the agent') ? storyMsOff : 0);
      out.set(label, [...(out.get(label) ?? []), Math.round(ms)]);
    }
  return out;
}

/** Resolves once `count` lanes have marked their clean-up in the trace file (fs.watch on it; its changes, not a clock). */
async function waitForCleanups(file: string, count: number): Promise<void> {
  const cleaned = () => (fs.readFileSync(file, 'utf8').match(/"phase":"cleaned"/g) ?? []).length >= count;
  if (cleaned()) return;
  await new Promise<void>((resolve) => {
    const w = fs.watch(file, () => {
      if (!cleaned()) return;
      w.close();
      resolve();
    });
    if (cleaned()) {
      w.close();
      resolve();
    }
  });
}

/** The nearest-rank percentile `p` (0–100) of `xs`. */
function pct(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]! : NaN;
}

async function once(
  redisUrl: string,
  workers: number,
): Promise<{
  wallMs: number;
  enqueueToAgent: number[];
  pushToMerge: number[];
  phases: Map<string, number[]>;
  workerCpu: { own: number; children: number };
  coordinatorCpu: { own: number; children: number };
}> {
  enqueuedAt.clear();
  mergeAt.clear();
  const side = tempDir('ralph-bench-remote-side-');
  const dir = tempDir('ralph-bench-remote-');
  const remote = path.join(side, 'remote.git');
  const agentLog = path.join(side, 'agents.log');
  const pushLog = path.join(side, 'push.log');
  const traceFile = path.join(side, 'trace.jsonl');
  process.env.RALPH_TRACE_REMOTE = traceFile;
  gitIn(side, 'init', '-q', '--bare', remote);
  // The remote notes when each lane branch arrives (a worker's push), on its one clock with this process.
  fs.writeFileSync(
    path.join(remote, 'hooks', 'post-receive'),
    `#!/bin/bash\nwhile read -r old new ref; do\n  case "$ref" in refs/heads/ql-wt/*) [[ $new =~ ^0+$ ]] || printf 'push %s %s\\n' "\${ref#refs/heads/ql-wt/}" "$EPOCHREALTIME" >> ${JSON.stringify(pushLog)};; esac\ndone\n`,
    { mode: 0o755 },
  );
  makeLanesRepository(dir, STORIES);
  gitIn(dir, 'remote', 'add', 'origin', remote);
  gitIn(dir, 'push', '-q', 'origin', 'main');
  const started = await Promise.all(
    Array.from({ length: workers }, () => startWorker(redisUrl, remote, agentLog, traceFile)),
  );
  try {
    const config = ralphConfigSchema.parse({
      claudePath: stub,
      gates: { basic: 'true' },
      laneDispatcher: 'bullmq',
      redisUrl,
      timing: { betweenIterationsMs: 0 },
    });
    const engine = new LoopEngine({ folder: dir, config, source: 'quantum', parallel: true, maxParallel: workers });
    const pids = started.map((w) => w.child.pid!);
    const workersCpu0 = cpuOf(pids);
    // The coordinator's own reading takes no descendants (the workers and Redis are this process's children); its
    // git helper ends with the run, so its CPU is the run's by then.
    const coordinatorCpu0 = cpuMs('self');
    const t0 = performance.now();
    const r = await engine.run();
    const wallMs = performance.now() - t0;
    const coordinatorCpuNow = cpuMs('self');
    const coordinatorCpu = {
      own: coordinatorCpuNow.own - coordinatorCpu0.own,
      children: coordinatorCpuNow.children - coordinatorCpu0.children,
    };
    // The last lanes' clean-ups run after their reports: the workers' CPU is read once each has cleaned up.
    await waitForCleanups(traceFile, STORIES);
    const workerCpu = cpuOf(pids, workersCpu0);
    if (r.state !== 'completed' || r.done !== STORIES)
      throw new Error(`bench run on ${workers} worker(s) ended ${r.state} (${r.done}/${r.total}): ${r.reason}`);
    const starts = marks(agentLog, 'start');
    const pushes = marks(pushLog, 'push');
    const enqueueToAgent: number[] = [];
    const pushToMerge: number[] = [];
    for (const id of Array.from({ length: STORIES }, (_, i) => `S${i + 1}`)) {
      const enq = enqueuedAt.get(id);
      const start = (starts.get(id) ?? []).find((t) => enq !== undefined && t >= enq - 5);
      if (enq !== undefined && start !== undefined) enqueueToAgent.push(Math.max(0, start - enq));
      const m = mergeAt.get(id);
      const push = (pushes.get(id) ?? []).filter((t) => m !== undefined && t <= m + 5).at(-1);
      if (m !== undefined && push !== undefined) pushToMerge.push(Math.max(0, m - push));
    }
    if (enqueueToAgent.length !== STORIES || pushToMerge.length !== STORIES)
      throw new Error(
        `marks missing on ${workers} worker(s): ${enqueueToAgent.length} agent starts, ${pushToMerge.length} pushes of ${STORIES}`,
      );
    return {
      wallMs,
      enqueueToAgent,
      pushToMerge,
      phases: phaseDurations(traceFile, storyMs),
      workerCpu,
      coordinatorCpu,
    };
  } finally {
    delete process.env.RALPH_TRACE_REMOTE;
    // BENCH_REMOTE_TRACE_DIR: each run's marks kept there (trace-<workers>.jsonl), to look at one dispatch closely.
    if (process.env.BENCH_REMOTE_TRACE_DIR && fs.existsSync(traceFile))
      fs.copyFileSync(traceFile, path.join(process.env.BENCH_REMOTE_TRACE_DIR, `trace-${workers}.jsonl`));
    for (const w of started) w.child.kill('SIGTERM');
    await Promise.all(started.map((w) => w.exited));
  }
}

async function main(): Promise<void> {
  const redis = await startRedis();
  try {
    const one = await once(redis.url, 1);
    const four = await once(redis.url, 4);
    emit({
      name: 'remoteLanes.wallRatio',
      value: Number((four.wallMs / one.wallMs).toFixed(3)),
      unit: 'ratio',
      target: 0.35,
      stories: STORIES,
      storyMs,
      wallMs1: Math.round(one.wallMs),
      wallMs4: Math.round(four.wallMs),
    });
    // What a story costs the machine: CPU (user + system, children included) per story on the workers and in the
    // coordinator. The figure to compare builds by on a shared, loaded machine, where wall times say little.
    const perStory = (ms: number) => Math.round(ms / STORIES);
    for (const [who, f4, o1] of [
      ['workers', four.workerCpu, one.workerCpu],
      ['coordinator', four.coordinatorCpu, one.coordinatorCpu],
    ] as const)
      emit({
        name: `remoteLanes.cpuPerStoryMs.${who}`,
        value: perStory(f4.own + f4.children),
        unit: 'ms',
        stat: 'CPU per story on four workers (user + system, children included)',
        own: perStory(f4.own),
        children: perStory(f4.children),
        oneWorker: perStory(o1.own + o1.children),
        oneWorkerOwn: perStory(o1.own),
        oneWorkerChildren: perStory(o1.children),
        stories: STORIES,
      });
    for (const [name, four4, one1] of [
      ['remoteLanes.enqueueToAgentMs', four.enqueueToAgent, one.enqueueToAgent],
      ['remoteLanes.pushToMergeMs', four.pushToMerge, one.pushToMerge],
    ] as const)
      emit({
        name,
        value: pct(four4, 95),
        unit: 'ms',
        stat: 'p95 on four workers',
        target: 300,
        p50: pct(four4, 50),
        p95: pct(four4, 95),
        oneWorkerP50: pct(one1, 50),
        oneWorkerP95: pct(one1, 95),
        stories: STORIES,
      });
    // The per-phase breakdown: one line each (p50/p95 on four workers and on one), and a table on stderr.
    const rows: string[] = [];
    const cell = (xs: readonly number[] | undefined) =>
      xs?.length ? `${String(pct(xs, 50)).padStart(6)} ${String(pct(xs, 95)).padStart(6)}` : '     -      -';
    for (const label of [...PHASES.map((p) => p[0]), TURNAROUND]) {
      const f = four.phases.get(label);
      const o = one.phases.get(label);
      emit({
        name: `remoteLanes.phase.${label
          .replace(/^[ =]+/, '')
          .replace(/[^A-Za-z0-9.]+/g, '_')
          .replace(/_+$/, '')}`,
        value: f?.length ? pct(f, 50) : null,
        unit: 'ms',
        stat: 'p50 on four workers',
        p50: f?.length ? pct(f, 50) : null,
        p95: f?.length ? pct(f, 95) : null,
        oneWorkerP50: o?.length ? pct(o, 50) : null,
        oneWorkerP95: o?.length ? pct(o, 95) : null,
      });
      rows.push(`${label.padEnd(40)} ${cell(f)}   ${cell(o)}`);
    }
    process.stderr.write(
      `remote lanes, per phase of a dispatch (ms; c. coordinator, w. worker; load ${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')})\n` + `${''.padEnd(40)} 4 workers p50 p95   1 worker p50 p95\n${rows.join('\n')}\n`,
    );
  } finally {
    await redis.stop();
  }
}

// The test harness's redis-server keeps its (ended) child's pipes referenced: the bench exits when it is done.
main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
