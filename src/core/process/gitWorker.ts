import type * as ChildProcesses from 'node:child_process';
import type { ChildProcess } from 'node:child_process';

/**
 * git started from a small long-lived helper process (issue 19 "Benchmark"; docs/NOTES.md "lanes wall ratio (branch
 * m19)"). Node's `child_process.spawn` forks the whole calling process and blocks its thread until the child has
 * exec'd: in a parallel run the one main thread that drives every lane's engine spent about a third of its time there
 * (CPU profile of the 4-lane bench: `ChildProcess.spawn` 7.3 s of 23 s busy), and each fork of the large process
 * costs CPU. The helper (a bare `node -e`, a few MB of heap) forks cheaply and waits for the exec itself; the main
 * thread only writes one JSON line and reads one back. (A worker thread was tried first: it freed the main thread but
 * cost more CPU, the main thread's writes during each fork copying pages.)
 *
 * Used only while a parallel run holds it ({@link holdGitWorker}); everything else (the sequential engine, `ralph
 * status`, whose fs-read recording watches `child_process`) spawns git as before. The result is the one process/git.ts
 * `runGit` gives: stdout and stderr as text with one final newline taken off (execa's `stripFinalNewline`), exit
 * code 1 when git could not be started (stderr then names the error) or was killed; git gets this process's
 * environment of the moment of the call plus `env`. A helper that cannot be started, or has failed, answers `null`
 * before a call is sent: the caller then runs git itself. A call already sent when the helper fails is answered as a
 * failed command (exit code 1, {@link LOST_ANSWER} on stderr), never run a second time: git may have done it (a
 * commit, a merge), and running it again could do it twice. The helper exits when its stdin closes (the run let go
 * of it, or this process died).
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
let buf = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d) => {
  buf += d;
  for (let i = buf.indexOf('\\n'); i >= 0; i = buf.indexOf('\\n')) {
    const line = buf.slice(0, i);
    buf = buf.slice(i + 1);
    if (line) run(JSON.parse(line));
  }
});
process.stdin.on('end', () => process.exit(0));
`;

/** stderr of a call whose answer was lost: the helper ended after the call was sent (see the module's comment). */
export const LOST_ANSWER = 'the git helper process ended before it answered; the command may or may not have run';

/** Settles every waiting call as a failed command ({@link LOST_ANSWER}). */
function loseWaiting(): void {
  for (const [id, settle] of waiting) {
    waiting.delete(id);
    settle({ id, stdout: '', stderr: LOST_ANSWER, exitCode: 1 });
  }
}

let holders = 0;
let helper: ChildProcess | null = null;
let broken = false;
let nextId = 1;
const waiting = new Map<number, (a: GitWorkerAnswer | null) => void>();

/**
 * Keeps the git helper in use until the returned function is called (calls nest: the helper ends when the last
 * holder lets go). A parallel run holds it for its whole length. The returned function resolves once the helper has
 * exited (its stdin closed; killed when it has not exited within 2 s), so that a run leaves no process behind.
 */
export function holdGitWorker(): () => Promise<void> {
  holders++;
  let released = false;
  return async () => {
    if (released) return;
    released = true;
    if (--holders > 0) return;
    const h = helper;
    helper = null;
    broken = false;
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
    h.once('exit', () => { clearTimeout(t); resolve(); });
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
  // ELECTRON_RUN_AS_NODE: in VS Code's extension host, process.execPath is the editor's binary.
  const h = cp.spawn(process.execPath, ['-e', HELPER_SOURCE], { stdio: ['pipe', 'pipe', 'ignore'], env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' } });
  let buf = '';
  h.stdout!.setEncoding('utf8');
  h.stdout!.on('data', (d: string) => {
    buf += d;
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      let a: GitWorkerAnswer;
      try { a = JSON.parse(line) as GitWorkerAnswer; } catch { failAll(h); return; }
      const settle = waiting.get(a.id);
      if (!settle) continue;
      waiting.delete(a.id);
      if (!waiting.size) keepAlive(h, false);
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
 * Runs `git <argv>` in `cwd` through the helper, with this process's environment plus `env`; resolves null when the
 * helper is not held, cannot be started or has failed (then run git in this thread), and a failed command
 * ({@link LOST_ANSWER}) when it fails after the call was sent. The helper keeps this
 * process alive only while calls wait.
 */
export function runGitInWorker(cwd: string, argv: readonly string[], env: Readonly<Record<string, string>>): Promise<GitWorkerAnswer | null> {
  if (!gitWorkerActive()) return Promise.resolve(null);
  let h: ChildProcess;
  try {
    h = helper ??= start();
  } catch {
    broken = true;
    return Promise.resolve(null);
  }
  const id = nextId++;
  return new Promise((resolve) => {
    waiting.set(id, resolve);
    if (waiting.size === 1) keepAlive(h, true);
    h.stdin!.write(JSON.stringify({ id, cwd, argv, env: { ...process.env, ...env } } satisfies GitWorkerRequest) + '\n');
  });
}
