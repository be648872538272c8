import { execa } from 'execa';
import { randomBytes } from 'node:crypto';
import { constants as osConstants } from 'node:os';
import { LOST_CHILD, spawnInWorker } from '../git/gitWorker';
import { containedCommand, type ContainmentMode, parentDeathPrefix, resolveContainment } from '../process/containment';
import {
  endMarkedProcesses,
  endProcessGroup,
  trackMarker,
  trackProcessGroup,
  untrackMarker,
  untrackProcessGroup,
} from '../process/processGroup';

/**
 * One gate command in its own process group with a watchdog (seed-systems.md §3.10): `bash -c` detached,
 * stdout+stderr straight to the log's descriptor, SIGTERM to the group on timeout or cancel, SIGKILL after the
 * grace, then whatever the command detached that still carries the run's marker.
 */

/** Default between SIGTERM and SIGKILL of a timed-out or cancelled gate, ms (`RALPH_GATE_KILL_GRACE` 10 s, §3.10). */
export const GATE_KILL_GRACE_MS = 10_000;
/** Environment variable marking every process of one gate run, so detached ones are ended with it. */
export const GATE_MARKER = 'RALPH_GATE_TOKEN';
/** Exit code of a gate that ran out of time (GNU `timeout`; gate-run.sh maps signal deaths to it, §3.10). */
export const EXIT_TIMEOUT = 124;
/** Exit code of a gate cancelled through its AbortSignal (the shell's code for SIGINT). */
export const EXIT_CANCELLED = 130;
/** Exit code when bash itself could not be started. */
export const EXIT_SPAWN_FAILED = 127;

export interface GroupRun {
  exitCode: number;
  timedOut: boolean;
  cancelled: boolean;
  pid: number | undefined;
  spawnError?: string;
  /**
   * Started, or perhaps started, and its exit unknown: the helper process that started it ended first, before or after
   * it told the pid (git/gitWorker.ts `LOST_CHILD`).
   */
  lost?: string;
}

export async function runInGroup(
  command: string,
  o: {
    cwd: string;
    fd: number;
    logPath?: string;
    env?: Record<string, string>;
    timeoutMs: number;
    graceMs: number;
    signal?: AbortSignal;
    containment?: ContainmentMode;
  },
): Promise<GroupRun> {
  if (o.signal?.aborted) return { exitCode: EXIT_CANCELLED, timedOut: false, cancelled: true, pid: undefined };
  // Both streams go straight to the log's file descriptor (like `>log 2>&1`): true interleaving, no pipe a
  // background process could hold open, nothing buffered in the engine. execa documents an integer as a file
  // descriptor; its types only list 3–9 for stdout/stderr.
  const fd = o.fd as 3;
  const token = `${process.pid}-${randomBytes(6).toString('hex')}`;
  // In its own PID namespace when available (process/containment.ts): whatever the command started ends with it,
  // even `setsid env -i server &`, which the marker below cannot find; and it dies with this process (setpriv --pdeathsig).
  const containment = resolveContainment(o.containment);
  const wrapped =
    containment.kind === 'pid-namespace'
      ? containedCommand(containment, 'bash', ['-c', command], {
          graceMs: o.graceMs,
          token,
          report: false,
          deathPrefix: parentDeathPrefix(),
        })
      : null;
  const file = wrapped?.file ?? 'bash';
  const args = wrapped?.args ?? ['-c', command];
  // The marker reaches whatever the command detaches (`setsid server &`), which the group kill cannot.
  const env = { ...process.env, ...o.env, [GATE_MARKER]: token };
  // In a parallel run, from the small helper process (git/gitWorker.ts), appending to the log by its path: a fork
  // of this large process stalls the one thread every lane's engine runs on.
  const remote = o.logPath
    ? spawnInWorker(file, args, { cwd: o.cwd, env, stdout: { append: o.logPath }, stderr: 'stdout' })
    : null;
  const child = remote
    ? null
    : execa(file, args, {
        cwd: o.cwd,
        env,
        extendEnv: false,
        detached: true,
        stdin: 'ignore',
        stdout: fd,
        stderr: fd,
        reject: false,
      });
  const pid = child ? child.pid : await remote!.pid;
  const finished = child
    ? child.then((r) => ({
        exitCode: r.exitCode ?? null,
        signal: (r.signal ?? null) as NodeJS.Signals | null,
        spawnError: child.pid === undefined ? (r.shortMessage ?? r.message ?? null) : null,
      }))
    : remote!.exit;
  if (pid === undefined) {
    const r = await finished;
    // A helper that died before it told the pid may well have started the command: its exit is lost, not a failure
    // to start (the command, contained with the helper's death signal, ended with it).
    const lost = r.spawnError === LOST_CHILD;
    if (lost && containment.kind !== 'pid-namespace') await endMarkedProcesses(GATE_MARKER, token, o.graceMs);
    return {
      exitCode: EXIT_SPAWN_FAILED,
      timedOut: false,
      cancelled: false,
      pid,
      ...(lost ? { lost: LOST_CHILD } : { spawnError: r.spawnError ?? undefined }),
    };
  }
  trackProcessGroup(pid);
  trackMarker(GATE_MARKER, token);
  let timedOut = false;
  let cancelled = false;
  let ending: Promise<void> | undefined;
  const end = () => (ending ??= endProcessGroup(pid, o.graceMs));
  const timer = setTimeout(() => {
    timedOut = true;
    void end();
  }, o.timeoutMs);
  const onAbort = () => {
    if (timedOut) return;
    cancelled = true;
    void end();
  };
  o.signal?.addEventListener('abort', onAbort, { once: true });
  // Cancelled while the helper was starting it.
  if (o.signal?.aborted) onAbort();
  try {
    const result = await finished;
    clearTimeout(timer);
    // The command has exited; end whatever it left behind in its group (gate-run.sh's belt-and-braces kill).
    await end();
    // Contained, the namespace ended with the command: the marker sweep is marker containment's net only.
    if (containment.kind !== 'pid-namespace') await endMarkedProcesses(GATE_MARKER, token, o.graceMs);
    let exitCode: number;
    if (timedOut) exitCode = EXIT_TIMEOUT;
    else if (cancelled) exitCode = EXIT_CANCELLED;
    else if (typeof result.exitCode === 'number') exitCode = result.exitCode;
    else if (result.signal) exitCode = 128 + (osConstants.signals[result.signal as NodeJS.Signals] ?? 0);
    else exitCode = EXIT_SPAWN_FAILED;
    return { exitCode, timedOut, cancelled, pid, ...(result.spawnError ? { lost: result.spawnError } : {}) };
  } finally {
    clearTimeout(timer);
    o.signal?.removeEventListener('abort', onAbort);
    untrackProcessGroup(pid);
    untrackMarker(GATE_MARKER, token);
  }
}
