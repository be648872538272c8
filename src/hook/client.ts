/**
 * `dist/guard-hook.js`: the PreToolUse hook process. Tiny and dependency-free so it starts fast:
 * - `--socket <path>` (a run's hook): forwards stdin to the engine's guard server and prints its answer; when the
 *   server does not answer within `RALPH_GUARD_TIMEOUT_MS` (default 30,000 ms: under the hook's own 60 s, past which
 *   claude lets the call through; 4 s denied calls on a loaded 2-core machine) it exits 2, which blocks the call.
 * - no socket (`ralph guard install`, people running claude themselves): decides in-process with `dist/guard.js`.
 * Any error exits 2 with the reason on stderr: the guard never fails open.
 */
import * as net from 'node:net';
import * as path from 'node:path';

function deny(reason: string): never {
  process.stderr.write(`Ralph guard: ${reason} (the call is blocked)\n`);
  process.exit(2);
}

function readStdin(): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    process.stdin.on('data', (c: Buffer) => chunks.push(c));
    process.stdin.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    process.stdin.on('error', reject);
  });
}

interface Answer {
  stdout: string;
  stderr: string;
  exitCode: number;
}

/** True for `{stdout: string, stderr: string, exitCode: 0 | 2}`: anything else is denied, never printed. */
function isAnswer(a: unknown): a is Answer {
  if (typeof a !== 'object' || a === null) return false;
  const o = a as Record<string, unknown>;
  return typeof o.stdout === 'string' && typeof o.stderr === 'string' && (o.exitCode === 0 || o.exitCode === 2);
}

function emit(a: Answer): void {
  if (a.stderr) process.stderr.write(a.stderr);
  process.stdout.write(a.stdout, () => process.exit(a.exitCode));
}

function viaServer(socket: string, stdin: string): void {
  const timeoutMs =
    Number(process.env.RALPH_GUARD_TIMEOUT_MS) > 0 ? Number(process.env.RALPH_GUARD_TIMEOUT_MS) : 30_000;
  const timer = setTimeout(() => deny(`the run's guard server did not answer within ${timeoutMs} ms`), timeoutMs);
  let buf = '';
  const conn = net.createConnection(socket);
  conn.setEncoding('utf8');
  conn.on('connect', () => conn.write(`${JSON.stringify({ stdin })}\n`));
  conn.on('data', (d: string) => {
    buf += d;
  });
  conn.on('error', (err) => deny(`the run's guard server is not answering (${err.message})`));
  conn.on('end', () => {
    clearTimeout(timer);
    let a: unknown;
    try {
      a = JSON.parse(buf);
    } catch {
      deny('the guard server sent no answer');
    }
    if (!isAnswer(a)) deny('the guard server sent a malformed answer');
    emit(a);
  });
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const at = args.indexOf('--socket');
  const socket = at >= 0 ? args[at + 1] : undefined;
  if (at >= 0 && !socket) deny('--socket without a path');
  const stdin = await readStdin();
  if (socket) {
    viaServer(socket, stdin);
    return;
  }
  const ws = args.indexOf('--workspace');
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const mod = require(path.join(__dirname, 'guard.js')) as {
    runInProcess(stdin: string, workspace?: string): Promise<Answer>;
  };
  const a: unknown = await mod.runInProcess(stdin, ws >= 0 ? args[ws + 1] : undefined);
  if (!isAnswer(a)) deny('the in-process guard gave a malformed answer');
  emit(a);
}

// An exception thrown in an event handler would end node with exit 1, which Claude Code treats as a non-blocking
// hook error (the call goes through): turn it into a denial too.
process.on('uncaughtException', (err: Error) => deny(`internal error: ${err.message}`));
main().catch((err: Error) => deny(err.message));
