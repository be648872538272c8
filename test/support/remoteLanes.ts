import * as assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Redis } from 'ioredis';
import { LoopEngine, type EngineOptions, type RunResult } from '../../src/core/loop/startRun';
import { RunRecorder } from '../../src/core/loop/recorder';
import { ralphConfigSchema } from '../../src/core/model/config';
import type { EngineEvent } from '../../src/core/model/runEvent';
import { withoutClaudeVars } from './claude';
import { cliPath } from './cli';
import { testCacheHome } from './tempFolder';
import { listProcesses } from './processes';
import { repoRoot } from './repoRoot';
import { makeTempFolder, type TempFolder } from './tempFolder';
import { git, gitInit, quantumJson, type StorySpec } from './workspace';

/**
 * Remote lanes over real parts (docs/distributed-lanes.md): a repository with quantum stories whose `origin` is a
 * bare repository (the shared remote), `ralph worker` processes each with its own HOME and work folder (separate
 * "machines"), and the parallel run's coordinator in this process with `laneDispatcher: "bullmq"`. The agent is the
 * lane stub (test/support/stubs/laneAgent.cjs: a plan per story, a log of starts and ends).
 */
export const LANE_STUB = path.join(repoRoot, 'test', 'support', 'stubs', 'laneAgent.cjs');

export interface RemoteRepo {
  t: TempFolder;
  dir: string;
  /** The bare repository, `origin` of `dir`. */
  remote: string;
  plan: string;
  log: string;
  side: TempFolder;
}

/** A repository of `stories` (committed, on `main`), its bare remote, and the stub's plan and log files. */
export function makeRemoteRepo(
  stories: StorySpec[],
  redisUrl: string,
  extra: { laneStallMs?: number; gates?: Record<string, string> } = {},
): RemoteRepo {
  const t = makeTempFolder('ralph-remote-');
  const side = makeTempFolder('ralph-remote-side-');
  t.write('quantum.json', quantumJson(stories));
  t.write('README.md', 'demo\n');
  t.write('.gitignore', '.ralph/\n');
  t.write(
    '.ralph/config.json',
    JSON.stringify({
      claudePath: LANE_STUB,
      gates: extra.gates ?? { basic: 'true' },
      laneDispatcher: 'bullmq',
      redisUrl,
      laneStallMs: extra.laneStallMs ?? 10_000,
      timing: { betweenIterationsMs: 20, killGraceMs: 1000, stopGraceMs: 300 },
    }),
  );
  gitInit(t, { commit: true });
  const remote = path.join(side.dir, 'remote.git');
  git(side.dir, 'init', '-q', '--bare', remote);
  git(t.dir, 'remote', 'add', 'origin', remote);
  git(t.dir, 'push', '-q', 'origin', 'main');
  return { t, dir: t.dir, remote, plan: side.write('plan.json', '{}'), log: side.file('log.txt'), side };
}

/** Writes the stub agent's plan: story id → step (laneAgent.cjs). */
export function planSteps(r: RemoteRepo, steps: Record<string, unknown>): void {
  fs.writeFileSync(r.plan, JSON.stringify(steps));
}

/** One `ralph worker` process with its own HOME and work folder. */
export interface WorkerProc {
  child: ChildProcess;
  pid: number;
  home: TempFolder;
  dir: string;
  /** Its stderr so far. */
  output(): string;
  /** Resolves once its stderr matches `re` (a line it writes when something happened). */
  waitFor(re: RegExp): Promise<void>;
  /** Resolves with its exit code (or signal) once it has exited. */
  exited: Promise<number | string>;
}

/** Starts a worker serving `repos` and resolves once it says it serves them (or rejects with its output if it exits). */
export async function startWorker(
  redisUrl: string,
  repos: string[],
  r: RemoteRepo,
  o: {
    concurrency?: number;
    gates?: Record<string, string>;
    waitReady?: boolean;
    /** The worker's `timing` settings over the tests' own. */
    timing?: Record<string, number>;
    /** The agent the worker runs (default: the lane stub). */
    claudePath?: string;
    /**
     * The worker's environment over this process's own, which then loses its ANTHROPIC_* and CLAUDE_* variables
     * (the agent's credentials and model server are the worker's: the real claude's scripted server).
     */
    env?: Record<string, string>;
    /** The work folder (default: a new one in the worker's new HOME): another worker's, to start where it ended. */
    dir?: string;
  } = {},
): Promise<WorkerProc> {
  const home = makeTempFolder('ralph-worker-home-');
  const dir = o.dir ?? path.join(home.dir, 'work');
  fs.mkdirSync(path.join(dir, '.ralph'), { recursive: true });
  fs.writeFileSync(
    path.join(dir, '.ralph', 'config.json'),
    JSON.stringify({
      claudePath: o.claudePath ?? LANE_STUB,
      gates: o.gates ?? { basic: 'true' },
      timing: { betweenIterationsMs: 20, killGraceMs: 1000, stopGraceMs: 300, ...o.timing },
    }),
  );
  const child = spawn(
    process.execPath,
    [
      cliPath,
      'worker',
      '--redis',
      redisUrl,
      '--dir',
      dir,
      '--concurrency',
      String(o.concurrency ?? 1),
      '--trust',
      ...repos.flatMap((x) => ['--repo', x]),
    ],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: {
        ...(o.env ? withoutClaudeVars() : process.env),
        HOME: home.dir,
        XDG_STATE_HOME: path.join(home.dir, 'state'),
        XDG_CACHE_HOME: path.join(home.dir, 'cache'),
        GIT_CONFIG_GLOBAL: '/dev/null',
        LANE_STUB_PLAN: r.plan,
        LANE_STUB_LOG: r.log,
        ...o.env,
      },
    },
  );
  let out = '';
  const waiters: { re: RegExp; resolve: () => void; reject: (e: Error) => void }[] = [];
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => {
      resolve(code ?? signal ?? 'gone');
      for (const w of waiters.splice(0)) w.reject(new Error(`the worker exited (${code ?? signal}):\n${out}`));
    }),
  );
  child.stderr!.on('data', (b: Buffer) => {
    out += b.toString();
    for (const w of [...waiters])
      if (w.re.test(out)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
  });
  const proc: WorkerProc = {
    child,
    pid: child.pid!,
    home,
    dir,
    output: () => out,
    waitFor: (re) =>
      re.test(out)
        ? Promise.resolve()
        : new Promise<void>((resolve, reject) => {
            if (child.exitCode !== null || child.signalCode !== null)
              reject(new Error(`the worker exited (${child.exitCode ?? child.signalCode}):\n${out}`));
            else waiters.push({ re, resolve, reject });
          }),
    exited,
  };
  if (o.waitReady !== false) await proc.waitFor(/ serves /);
  return proc;
}

/**
 * Resolves once `w` has removed every lane of run `runId` it took (its log says `token N cleaned up` for each
 * `attempt … (token N)` line), and its spare tree once it heard the run ended (`the run ended; nothing of it kept
 * here`): a worker removes a lane's tree and branch after the lane has reported, while it takes its next job.
 */
export async function lanesCleaned(w: WorkerProc, runId: string): Promise<void> {
  const esc = (x: string) => x.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const taken = [...w.output().matchAll(new RegExp(`${esc(runId)} (\\S+): attempt \\d+ \\(token (\\d+)\\)`, 'g'))];
  for (const m of taken) await w.waitFor(new RegExp(`${esc(runId)} ${esc(m[1]!)}: token ${m[2]} cleaned up`));
  // A worker that took a lane of the run keeps a spare tree for its next job until it hears the run ended.
  if (taken.length) await w.waitFor(new RegExp(`${esc(runId)}: the run ended; nothing of it kept here`));
}

/**
 * What a worker keeps between runs: nothing in `<dir>/lanes/` but at most its idle spare tree (`spare-<pid>-<n>`),
 * which is detached, clean, and at a commit of the served repositories' branches as the worker fetched them before it
 * served (`refs/remotes/lane-warm/*` of a mirror: nothing of a run), and no worktree in a mirror but that spare.
 * Returns the spare's folder, or null when there is none.
 */
export function idleSpareOnly(w: WorkerProc): string | null {
  const lanes = path.join(w.dir, 'lanes');
  const names = fs.existsSync(lanes) ? fs.readdirSync(lanes) : [];
  const mirrorsDir = path.join(w.dir, 'mirrors');
  const mirrors = (fs.existsSync(mirrorsDir) ? fs.readdirSync(mirrorsDir) : []).map((m) => path.join(mirrorsDir, m));
  const trees = mirrors.flatMap((m) =>
    git(m, 'worktree', 'list', '--porcelain')
      .split('\n')
      .filter((l) => l.startsWith('worktree '))
      .map((l) => l.slice('worktree '.length))
      .filter((t) => t !== m),
  );
  if (!names.length) {
    assert.deepEqual(trees, [], `no worktree in the mirrors of ${w.pid}`);
    return null;
  }
  assert.equal(names.length, 1, `only the idle spare in the lanes of ${w.pid}: ${names.join(', ')}`);
  assert.match(names[0]!, new RegExp(`^spare-${w.pid}-\\d+$`));
  const spare = path.join(lanes, names[0]!);
  assert.deepEqual(trees, [spare], `no worktree in the mirrors of ${w.pid} but its spare`);
  const head = git(spare, 'rev-parse', 'HEAD');
  assert.equal(git(spare, 'rev-parse', '--abbrev-ref', 'HEAD'), 'HEAD', 'the spare is detached');
  assert.equal(git(spare, 'status', '--porcelain', '--ignored'), '', 'the spare is clean');
  const warm = mirrors.flatMap((m) =>
    git(m, 'for-each-ref', '--format=%(objectname)', 'refs/remotes/lane-warm/').split('\n').filter(Boolean),
  );
  assert.ok(warm.includes(head), `the spare is at a branch fetched before the worker served (${head})`);
  return spare;
}

/** Ends a worker (SIGTERM, then waits for its exit) and removes its HOME. */
export async function stopWorker(w: WorkerProc): Promise<void> {
  if (w.child.exitCode === null && w.child.signalCode === null) {
    w.child.kill('SIGTERM');
    // A worker a test stopped (SIGSTOP) takes the SIGTERM only once it runs again.
    w.child.kill('SIGCONT');
  }
  await w.exited;
  w.home.dispose();
}

/** Ends every worker of `all` still running (the test's afterEach), whatever happened to the test. */
export async function stopWorkers(all: WorkerProc[]): Promise<void> {
  for (const w of all.splice(0)) await stopWorker(w);
}

/** Runs the parallel run of `r` in this process (the coordinator) and records its events like the CLI. */
export async function runCoordinator(
  r: RemoteRepo,
  o: Partial<EngineOptions> = {},
  onEvent?: (e: EngineEvent, lane: number, engine: LoopEngine) => void,
): Promise<{ result: RunResult; events: { e: EngineEvent; lane: number }[] }> {
  const config = ralphConfigSchema.parse(JSON.parse(r.t.read('.ralph/config.json')));
  const engine = new LoopEngine({
    folder: r.dir,
    config,
    source: 'quantum',
    parallel: true,
    maxParallel: 8,
    agentEnv: { LANE_STUB_PLAN: r.plan, LANE_STUB_LOG: r.log },
    ...o,
  });
  const recorder = new RunRecorder(r.dir, engine.runId);
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

/**
 * The stub agents still running that log to `log` (this test's), as this machine's pids (an agent in a PID namespace
 * logs its pid there); `story`: only the agents working on that story (its prompt names it).
 */
export function stubAgents(log: string, story?: string): number[] {
  return listProcesses()
    .filter((p) => p.cmdline.includes(LANE_STUB))
    .filter((p) => story === undefined || p.cmdline.includes(`Story ${story}:`))
    .filter((p) => {
      try {
        return fs.readFileSync(`/proc/${p.pid}/environ`, 'utf8').split('\0').includes(`LANE_STUB_LOG=${log}`);
      } catch {
        return false;
      }
    })
    .map((p) => p.pid);
}

/** Story statuses of the repository's quantum.json. */
export function statuses(dir: string): Record<string, string> {
  const q = JSON.parse(fs.readFileSync(path.join(dir, 'quantum.json'), 'utf8')) as {
    stories: { id: string; status: string }[];
  };
  return Object.fromEntries(q.stories.map((s) => [s.id, s.status]));
}

/**
 * Resolves with the first match of `re` in the stub's log `log` (a line the stub agent wrote), woken by the file's
 * changes (inotify), never by a timer.
 */
export function waitForLogLine(log: string, re: RegExp): Promise<RegExpExecArray> {
  if (!fs.existsSync(log)) fs.writeFileSync(log, '', { flag: 'a' });
  return new Promise((resolve) => {
    const check = (): boolean => {
      const m = re.exec(fs.readFileSync(log, 'utf8'));
      if (!m) return false;
      watcher.close();
      resolve(m);
      return true;
    };
    const watcher = fs.watch(log, () => void check());
    check();
  });
}

/**
 * The events of a coordinator run as they come, and promises of the first one that matches (test waits on events,
 * never on the clock). Pass {@link EventLog.on} as runCoordinator's `onEvent`.
 */
export class EventLog {
  readonly all: { e: EngineEvent; lane: number }[] = [];
  private waiters: { pred: (e: EngineEvent, lane: number) => boolean; resolve: (e: EngineEvent) => void }[] = [];
  readonly on = (e: EngineEvent, lane: number): void => {
    this.all.push({ e, lane });
    for (const w of [...this.waiters])
      if (w.pred(e, lane)) {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        w.resolve(e);
      }
  };
  /** The first event (seen already or to come) for which `pred` holds. */
  next(pred: (e: EngineEvent, lane: number) => boolean): Promise<EngineEvent> {
    const seen = this.all.find((x) => pred(x.e, x.lane));
    if (seen) return Promise.resolve(seen.e);
    return new Promise((resolve) => this.waiters.push({ pred, resolve }));
  }
}

/** The `worker` (`host:pid`) a remote lane's event names, or undefined for a local one. */
export const workerOf = (e: EngineEvent): string | undefined => (e as { worker?: string }).worker;

/** Ends the process group of a stub agent (a pid of this machine) and the stub itself: what a lost machine does. */
export function killAgentGroup(pid: number): void {
  for (const target of [-pid, pid])
    try {
      process.kill(target, 'SIGKILL');
    } catch {
      // gone already
    }
}

/** `ralph watch --run <id> --json` of a run, followed as it prints (one parsed event per line). */
export interface WatchProc {
  events: Record<string, unknown>[];
  /** Resolves once the events printed so far satisfy `pred` (called at every new line). */
  until(pred: (events: Record<string, unknown>[]) => boolean): Promise<void>;
  /** Resolves with its exit code once it has exited (it exits when the run ends). */
  exited: Promise<number | null>;
}

/** Starts `ralph watch --run <runId> --json` in `folder` (the CLI process a person or a bot would run). */
export function watchJson(folder: string, runId: string): WatchProc {
  const child = spawn(process.execPath, [cliPath, '-C', folder, 'watch', '--run', runId, '--json'], {
    env: { ...process.env, XDG_CACHE_HOME: testCacheHome(), FLOW_ACTOR: 'tester' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const events: Record<string, unknown>[] = [];
  const waiters: { pred: (events: Record<string, unknown>[]) => boolean; resolve: () => void }[] = [];
  let rest = '';
  let err = '';
  child.stderr.on('data', (b: Buffer) => (err += b.toString()));
  child.stdout.on('data', (b: Buffer) => {
    const lines = (rest + b.toString()).split('\n');
    rest = lines.pop()!;
    for (const l of lines) if (l.trim()) events.push(JSON.parse(l) as Record<string, unknown>);
    for (const w of [...waiters])
      if (w.pred(events)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    events,
    until: (pred) =>
      pred(events)
        ? Promise.resolve()
        : new Promise<void>((resolve, reject) => {
            waiters.push({ pred, resolve });
            void exited.then(() => {
              if (!pred(events)) reject(new Error(`ralph watch exited first:\n${err}`));
            });
          }),
    exited,
  };
}

/**
 * The Redis connections this process holds, as `CLIENT LIST` rows of `client`'s server (their address's port is a
 * TCP socket of this process: /proc/self/fd → /proc/net/tcp), `client`'s own left out. A coordinator that ended its
 * run holds none.
 */
export async function redisClientsOfThisProcess(client: Redis): Promise<string[]> {
  const inodes = new Set<string>();
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/self/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch {
      // closed meanwhile
    }
  }
  const ports = new Set<number>();
  for (const line of fs.readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length > 9 && inodes.has(f[9]!)) ports.add(parseInt(f[1]!.split(':')[1]!, 16));
  }
  const own = String(await client.client('ID'));
  return String(await client.client('LIST'))
    .split('\n')
    .filter((row) => {
      const port = /\baddr=[^ ]*:(\d+)\b/.exec(row)?.[1];
      return port !== undefined && ports.has(Number(port)) && !new RegExp(`\\bid=${own}\\b`).test(row);
    });
}

/**
 * Every member of the lane queue's lists, sets and sorted sets (waiting, active, delayed, prioritized, completed,
 * failed, …: BullMQ's keys under `<prefix>:<queue>:`) that names `runId`: a run that ended leaves none.
 */
export async function queueEntriesOf(client: Redis, queueKeyPrefix: string, runId: string): Promise<string[]> {
  const found: string[] = [];
  for (const key of await client.keys(`${queueKeyPrefix}:*`)) {
    const type = await client.type(key);
    const members =
      type === 'list'
        ? await client.lrange(key, 0, -1)
        : type === 'zset'
          ? await client.zrange(key, 0, -1)
          : type === 'set'
            ? await client.smembers(key)
            : [];
    for (const m of members) if (m.includes(runId)) found.push(`${key}: ${m}`);
  }
  return found;
}
