import type * as ChildProcesses from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { PassThrough, type Readable } from 'node:stream';

/**
 * git started from a small long-lived helper process (measured by the lanes bench). Node's `child_process.spawn` forks
 * the whole calling process and blocks its thread until the child has exec'd: in a parallel run the one main thread
 * that drives every lane's engine spent about a third of its time there (CPU profile of the 4-lane bench:
 * `ChildProcess.spawn` 7.3 s of 23 s busy), and each fork of the large process costs CPU. The helper (a bare `node -e`,
 * a few MB of heap) forks cheaply and waits for the exec itself; the main thread only writes one JSON line and reads
 * one back. (A worker thread was tried first: it freed the main thread but cost more CPU, the main thread's writes
 * during each fork copying pages.)
 *
 * Used only while a parallel run holds it ({@link holdGitWorker}); everything else (the sequential engine, `ralph
 * status`, whose fs-read recording watches `child_process`) spawns git as before. The result is the one git/git.ts
 * `runGit` gives: stdout and stderr as text with one final newline taken off (execa's `stripFinalNewline`), exit
 * code 1 when git could not be started (stderr then names the error) or was killed; git gets this process's
 * environment of the moment of the call plus `env`. A helper that cannot be started, or has failed, answers `null`
 * before a call is sent: the caller then runs git itself. A call already sent when the helper fails is answered as a
 * failed command (exit code 1, {@link LOST_ANSWER} on stderr), never run a second time: git may have done it (a
 * commit, a merge), and running it again could do it twice. The helper exits when its stdin closes (the run let go
 * of it, or this process died).
 *
 * A parallel run also starts its agents and gates from the helper ({@link spawnInWorker}, for the same reason): their
 * output is piped back as JSON lines, or appended by the helper to the gate's log. `setpriv --pdeathsig` then ties a
 * contained child to the helper, which dies with this process.
 */

/** One request to the helper (one JSON line on its stdin): the argv after `git`, the folder, the whole environment. */
export interface GitWorkerRequest {
  id: number;
  cwd: string;
  argv: readonly string[];
  env: Readonly<Record<string, string | undefined>>;
}

/** The helper's answer to one request (one JSON line on its stdout). */
export interface GitWorkerAnswer {
  id: number;
  stdout: string;
  stderr: string;
  exitCode: number;
}

/** The helper's code (given to `node -e`, so that the bundles need no extra file): one `spawn` per request, stdin closed. */
const HELPER_SOURCE = `
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const strip = (s) => s.endsWith('\\r\\n') ? s.slice(0, -2) : s.endsWith('\\n') ? s.slice(0, -1) : s;
const send = (o) => process.stdout.write(JSON.stringify(o) + '\\n');
function run(m) {
  let out = [], err = [], done = false;
  const answer = (exitCode) => { if (done) return; done = true; send({ id: m.id, stdout: strip(Buffer.concat(out).toString('utf8')), stderr: strip(Buffer.concat(err).toString('utf8')), exitCode }); };
  let child;
  try {
    child = spawn('git', m.argv, { cwd: m.cwd, env: m.env, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    err = [Buffer.from(String((e && e.message) || e))];
    answer(1);
    return;
  }
  child.stdout.on('data', (b) => out.push(b));
  child.stderr.on('data', (b) => err.push(b));
  child.on('error', (e) => { err.push(Buffer.from(String((e && e.message) || e))); answer(1); });
  child.on('close', (code) => answer(typeof code === 'number' ? code : 1));
}
function start(m) {
  const fds = [];
  const sink = (w) => (w === 'pipe' || w === 'ignore' ? w : (fds.push(fs.openSync(w.append, 'a')), fds[fds.length - 1]));
  let child;
  try {
    const out = sink(m.stdout);
    const err = m.stderr === 'stdout' ? out : sink(m.stderr);
    child = spawn(m.file, m.args, { cwd: m.cwd, env: m.env, stdio: ['ignore', out, err], detached: true });
  } catch (e) {
    for (const fd of fds) fs.closeSync(fd);
    send({ id: m.id, pid: null, error: String((e && e.message) || e) });
    return;
  }
  for (const fd of fds) fs.closeSync(fd);
  let sent = false;
  child.on('error', (e) => { if (!sent) { sent = true; send({ id: m.id, pid: null, error: String((e && e.message) || e) }); } });
  if (child.pid === undefined) return;
  sent = true;
  send({ id: m.id, pid: child.pid });
  child.on('exit', () => send({ id: m.id, x: 1 }));
  child.stdout && child.stdout.on('data', (b) => send({ id: m.id, o: b.toString('base64') }));
  child.stderr && child.stderr.on('data', (b) => send({ id: m.id, e: b.toString('base64') }));
  child.on('close', (code, signal) => send({ id: m.id, exit: code, signal: signal || null }));
}
let buf = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d) => {
  buf += d;
  for (let i = buf.indexOf('\\n'); i >= 0; i = buf.indexOf('\\n')) {
    const line = buf.slice(0, i);
    buf = buf.slice(i + 1);
    if (line) { const m = JSON.parse(line); if (m.spawn) start(m); else run(m); }
  }
});
process.stdin.on('end', () => process.exit(0));
send({ ready: 1 });
`;

/** stderr of a call whose answer was lost: the helper ended after the call was sent (see the module's comment). */
export const LOST_ANSWER = 'the git helper process ended before it answered; the command may or may not have run';

/** Settles every waiting call as a failed command ({@link LOST_ANSWER}) and every child started as lost. */
function loseWaiting(): void {
  for (const [id, settle] of waiting) {
    waiting.delete(id);
    settle({ id, stdout: '', stderr: LOST_ANSWER, exitCode: 1 });
  }
  for (const [id, child] of spawned) {
    spawned.delete(id);
    child.lost();
  }
}

let holders = 0;
let helper: ChildProcess | null = null;
let broken = false;
/** The helper has said it is up: calls go to it from then on (before, from this thread: its start-up is ~0.1 s). */
let ready = false;
let readyWaiters: ((up: boolean) => void)[] = [];
function setReady(up: boolean): void {
  ready = up;
  const ws = readyWaiters;
  readyWaiters = [];
  for (const w of ws) w(up);
}
let nextId = 1;
const waiting = new Map<number, (a: GitWorkerAnswer | null) => void>();
/** Children started through the helper ({@link spawnInWorker}) whose end has not been reported. */
const spawned = new Map<number, { message(m: SpawnMessage): void; lost(): void }>();
/** Calls and children that keep this process alive. */
const pending = (): number => waiting.size + spawned.size;

/**
 * Keeps the git helper in use until the returned function is called (calls nest: the helper ends when the last
 * holder lets go). A parallel run holds it for its whole length. `start`: start the helper now rather than at the first
 * call (its start-up, ~0.1 s of Node's, then overlaps what the caller does meanwhile). The returned function resolves
 * once the helper has exited (its stdin closed; killed when it has not exited within 2 s), so that a run leaves no
 * process behind.
 */
export function holdGitWorker(o: { start?: boolean } = {}): () => Promise<void> {
  holders++;
  if (o.start && !helper && !broken) {
    try {
      helper = start();
    } catch {
      broken = true;
    }
  }
  let released = false;
  return async () => {
    if (released) return;
    released = true;
    if (--holders > 0) return;
    const h = helper;
    helper = null;
    broken = false;
    setReady(false);
    // None is expected once the run ended; one still waiting is answered as failed, not run again.
    loseWaiting();
    if (h) await endHelper(h);
  };
}

/** Closes the helper's stdin and waits for it to exit (SIGKILL after 2 s). */
function endHelper(h: ChildProcess): Promise<void> {
  if (h.exitCode !== null || h.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(() => h.kill('SIGKILL'), 2_000);
    h.once('exit', () => {
      clearTimeout(t);
      resolve();
    });
    h.stdin?.end();
  });
}

/** Is git run through the helper now (held, and it has not failed)? */
export function gitWorkerActive(): boolean {
  return holders > 0 && !broken;
}

function failAll(h: ChildProcess): void {
  if (helper !== h) return;
  broken = true;
  helper = null;
  setReady(false);
  loseWaiting();
  h.stdin?.destroy();
  if (h.exitCode === null && h.signalCode === null) h.kill('SIGKILL');
}

/** Lets this process exit while the helper idles (`on`: keep it alive while calls wait). */
function keepAlive(h: ChildProcess, on: boolean): void {
  for (const s of [h, h.stdin, h.stdout] as ({ ref?(): void; unref?(): void } | null)[]) {
    if (on) s?.ref?.();
    else s?.unref?.();
  }
}

function start(): ChildProcess {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const cp = require('node:child_process') as typeof ChildProcesses;
  // ELECTRON_RUN_AS_NODE: in VS Code's extension host, process.execPath is the editor's binary. Each request carries
  // the whole environment of its command: the helper itself keeps none of this process's (an agent's credentials
  // stay in the processes that use them), only PATH, by which Node finds the command when a request names none.
  const h = cp.spawn(process.execPath, ['-e', HELPER_SOURCE], {
    stdio: ['pipe', 'pipe', 'ignore'],
    env: { PATH: process.env.PATH ?? '', ELECTRON_RUN_AS_NODE: '1' },
  });
  let buf = '';
  h.stdout!.setEncoding('utf8');
  h.stdout!.on('data', (d: string) => {
    buf += d;
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      let a: GitWorkerAnswer & SpawnMessage & { ready?: 1 };
      try {
        a = JSON.parse(line) as GitWorkerAnswer & SpawnMessage & { ready?: 1 };
      } catch {
        failAll(h);
        return;
      }
      if (a.ready) {
        if (helper === h) setReady(true);
        continue;
      }
      const child = spawned.get(a.id);
      if (child) {
        if (a.exit !== undefined) spawned.delete(a.id);
        if (!pending()) keepAlive(h, false);
        child.message(a);
        continue;
      }
      const settle = waiting.get(a.id);
      if (!settle) continue;
      waiting.delete(a.id);
      if (!pending()) keepAlive(h, false);
      settle(a);
    }
  });
  h.on('error', () => failAll(h));
  h.on('exit', () => failAll(h));
  h.stdin!.on('error', () => failAll(h));
  keepAlive(h, false);
  return h;
}

/**
 * The helper when it is held, up and has not failed; else null (run the command in this thread). Starts it when held
 * and not started yet: the calls made until it says it is up run here.
 */
function startedHelper(): ChildProcess | null {
  if (!gitWorkerActive()) return null;
  try {
    helper ??= start();
  } catch {
    broken = true;
    return null;
  }
  return ready ? helper : null;
}

/** Resolves true once the helper is up (started if held and not yet), false when it is not held or fails first. */
export function gitWorkerReady(): Promise<boolean> {
  if (!gitWorkerActive()) return Promise.resolve(false);
  if (ready) return Promise.resolve(true);
  startedHelper();
  const h = helper;
  if (!gitWorkerActive() || !h) return Promise.resolve(false);
  // Kept alive while waited for (the idle helper does not hold this process open).
  keepAlive(h, true);
  return new Promise((resolve) =>
    readyWaiters.push((up) => {
      if (helper === h && !pending()) keepAlive(h, false);
      resolve(up);
    }),
  );
}

/**
 * Runs `git <argv>` in `cwd` through the helper, with this process's environment plus `env`; resolves null when the
 * helper is not held, not up yet, cannot be started or has failed (then run git in this thread), and a failed command
 * ({@link LOST_ANSWER}) when it fails after the call was sent. The helper keeps this
 * process alive only while calls wait.
 */
export function runGitInWorker(
  cwd: string,
  argv: readonly string[],
  env: Readonly<Record<string, string>>,
): Promise<GitWorkerAnswer | null> {
  const h = startedHelper();
  if (!h) return Promise.resolve(null);
  const id = nextId++;
  return new Promise((resolve) => {
    waiting.set(id, resolve);
    if (pending() === 1) keepAlive(h, true);
    h.stdin!.write(
      JSON.stringify({ id, cwd, argv, env: { ...process.env, ...env } } satisfies GitWorkerRequest) + '\n',
    );
  });
}

/** One message about a child started through the helper: its pid (or why it could not start), output, its end. */
interface SpawnMessage {
  id: number;
  /** The child's pid; null when it could not be started (then `error`). */
  pid?: number | null;
  error?: string;
  /** The child itself has exited (its output may still be open: whatever it left in its group holds it). */
  x?: 1;
  /** A chunk of stdout / stderr, base64. */
  o?: string;
  e?: string;
  /** The child has exited and its output streams closed: its exit code, or null with the signal that ended it. */
  exit?: number | null;
  signal?: NodeJS.Signals | null;
}

/** Where a child's stdout or stderr goes: a pipe read here, nowhere, or appended to a file (opened by the helper). */
export type WorkerSink = 'pipe' | 'ignore' | { append: string };

/** How a child started through the helper ended. */
export interface WorkerExit {
  /** Its exit code; null when a signal ended it, or it never started. */
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  /** Why it could not be started (the spawn error's message), or that the helper was lost; null when it ran. */
  spawnError: string | null;
}

/** A child started through the helper: what `spawn` gives, with the pid known only once the helper has answered. */
export interface WorkerChild {
  /** Resolves with the child's pid (its process group id too: started detached), undefined when it did not start. */
  readonly pid: Promise<number | undefined>;
  /** Its stdout / stderr when piped (buffered until read), else null. */
  readonly stdout: Readable | null;
  readonly stderr: Readable | null;
  /** Resolves once it has exited and its piped output has been delivered. Never rejects. */
  readonly exit: Promise<WorkerExit>;
  /** Calls `listener` once the child itself has exited (before {@link exit} when something holds its output open). */
  onExited(listener: () => void): void;
}

/** spawnError of a child whose helper ended before reporting its end (it may still be running: end its group). */
export const LOST_CHILD = 'the helper process that started it ended before it did';

/**
 * Starts `file args` from the helper instead of this process (a fork of the large runner costs
 * its one thread ~10–25 ms and page-table copies on every core; the helper is a few MB): detached (its own process
 * group, as the engine starts agents and gates), stdin closed, the whole environment `env` (not merged with this
 * process's), stdout / stderr piped back here or appended to a file (`stderr: 'stdout'`: the same file). Returns null
 * when the helper is not held, not up yet or has failed: start the child here then. A child whose helper is lost is
 * reported as ended ({@link LOST_CHILD}); it was started through `setpriv --pdeathsig` when contained, so it dies with
 * the helper, and the caller ends its group as for any child. The helper keeps this process alive while children run.
 */
export function spawnInWorker(
  file: string,
  args: readonly string[],
  o: {
    cwd: string;
    env: Readonly<Record<string, string | undefined>>;
    stdout: WorkerSink;
    stderr: WorkerSink | 'stdout';
  },
): WorkerChild | null {
  const h = startedHelper();
  if (!h) return null;
  const id = nextId++;
  const stdout = o.stdout === 'pipe' ? new PassThrough() : null;
  const stderr = o.stderr === 'pipe' ? new PassThrough() : null;
  let setPid!: (pid: number | undefined) => void;
  const pid = new Promise<number | undefined>((r) => {
    setPid = r;
  });
  let setExit!: (e: WorkerExit) => void;
  const exit = new Promise<WorkerExit>((r) => {
    setExit = r;
  });
  let exitedListeners: (() => void)[] | null = [];
  const exited = () => {
    const ls = exitedListeners;
    exitedListeners = null;
    for (const l of ls ?? []) l();
  };
  const finish = (e: WorkerExit) => {
    setPid(undefined);
    exited();
    stdout?.end();
    stderr?.end();
    setExit(e);
  };
  let queued: SpawnMessage[] | null = [];
  const deliver = (m: SpawnMessage) => {
    if (m.x !== undefined) exited();
    if (m.o !== undefined) stdout?.write(Buffer.from(m.o, 'base64'));
    if (m.e !== undefined) stderr?.write(Buffer.from(m.e, 'base64'));
    if (m.exit !== undefined) finish({ exitCode: m.exit, signal: m.signal ?? null, spawnError: null });
  };
  spawned.set(id, {
    message(m) {
      if (m.pid !== undefined) {
        if (m.pid === null) {
          spawned.delete(id);
          if (!pending()) keepAlive(h, false);
          finish({ exitCode: null, signal: null, spawnError: m.error ?? `could not start ${file}` });
        } else {
          setPid(m.pid);
          // Output and the end come a turn of the event loop after the pid, as from a child started here: what
          // awaits the pid has run by then (the engine reports the agent started before any of its output).
          setImmediate(() => {
            const q = queued;
            queued = null;
            for (const x of q ?? []) deliver(x);
          });
        }
      }
      if (queued) queued.push(m);
      else deliver(m);
    },
    lost() {
      // Output that came with the pid and is still held for the next turn is delivered first (after the end, a
      // stream would drop it).
      const q = queued;
      queued = null;
      for (const x of q ?? []) deliver(x);
      finish({ exitCode: null, signal: null, spawnError: LOST_CHILD });
    },
  });
  if (pending() === 1) keepAlive(h, true);
  h.stdin!.write(
    JSON.stringify({ id, spawn: true, file, args, cwd: o.cwd, env: o.env, stdout: o.stdout, stderr: o.stderr }) + '\n',
  );
  return {
    pid,
    stdout,
    stderr,
    exit,
    onExited: (l) => {
      if (exitedListeners) exitedListeners.push(l);
      else l();
    },
  };
}
