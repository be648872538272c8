import { spawn } from 'node:child_process';

/** How a `notify` command went. `detail`: why it failed (exit code, timeout, could not start, stderr's tail). */
export type NotifyResult = { ok: true } | { ok: false; detail: string };

/**
 * Runs the configured `notify` command line (`/bin/sh -c <command>`, in the workspace folder, in its own process
 * group) with `payload` as JSON on stdin and `text` (one line) in `RALPH_NOTIFY_TEXT`. After `timeoutMs` the whole
 * group is killed. Never throws and never rejects: a failure is a result, which the engine reports as a warning
 * (a notify that fails never fails a run).
 */
export function runNotify(
  command: string,
  payload: unknown,
  text: string,
  opts: { cwd: string; timeoutMs: number; env?: NodeJS.ProcessEnv },
): Promise<NotifyResult> {
  return new Promise((resolve) => {
    let stderr = '';
    let timedOut = false;
    let settled = false;
    const done = (r: NotifyResult) => {
      if (!settled) {
        settled = true;
        clearTimeout(timer);
        resolve(r);
      }
    };
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn('/bin/sh', ['-c', command], {
        cwd: opts.cwd,
        detached: true,
        stdio: ['pipe', 'ignore', 'pipe'],
        env: { ...(opts.env ?? process.env), RALPH_NOTIFY_TEXT: text.replace(/\r?\n/g, ' ') },
      });
    } catch (err) {
      resolve({ ok: false, detail: `could not start: ${(err as Error).message}` });
      return;
    }
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }, opts.timeoutMs);
    child.stderr!.on('data', (b: Buffer) => {
      stderr = (stderr + b.toString()).slice(-500);
    });
    child.stdin!.on('error', () => {
      /* the command did not read its stdin: fine */
    });
    child.stdin!.end(`${JSON.stringify(payload)}\n`);
    child.once('error', (err) => done({ ok: false, detail: `could not start: ${err.message}` }));
    child.once('close', (code, signal) => {
      if (timedOut) return done({ ok: false, detail: `timed out after ${opts.timeoutMs} ms` });
      if (code === 0) return done({ ok: true });
      done({
        ok: false,
        detail: `exit ${code ?? signal}${stderr.trim() ? `: ${stderr.trim().split('\n').at(-1)}` : ''}`,
      });
    });
  });
}
