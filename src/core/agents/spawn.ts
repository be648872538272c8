import { execa } from 'execa';
import { randomBytes } from 'node:crypto';
import { commandExists, containedCommand, containedExit, type ContainmentMode, parentDeathPrefix, resolveContainment, takeLeftovers, withPrefix } from '../process/containment';
import { endMarkedProcesses, endProcessGroup, trackMarker, trackProcessGroup, untrackMarker, untrackProcessGroup } from '../process/processGroup';
import type { AgentEvent } from '../stream/events';
import type { DecoderStats } from '../stream/lineDecoder';
import { type LedgerSignal, type LedgerSnapshot, TokenLedger } from '../stream/ledger';
import type { Outcome } from '../stream/classify';
import type { ThresholdOverrides } from '../stream/thresholds';
import type { AgentAdapter, Invocation, IterationSpec } from './adapter';
import { AgentStream } from './agentStream';
import { type SessionSummary, SessionInspector } from './inspect';

/**
 * Starting one iteration: one agent process in its own process group, stdin closed (cursor-agent waits for
 * EOF otherwise), stdout decoded into events as it arrives, stderr drained concurrently (a full pipe would
 * deadlock the child) and its tail kept. Killing signals the whole group, SIGTERM then SIGKILL after
 * `killGraceMs`; when the agent exits, anything left in its group is ended the same way, and `done` resolves
 * only once the group is empty. Nothing outlives an iteration.
 */

export interface SpawnOptions {
  /** Longest stdout line kept, bytes (config `maxLineBytes`). */
  maxLineBytes?: number;
  /** Window when the stream does not tell, tokens (config `contextWindowTokens`). */
  contextWindowTokens?: number;
  /** Configured warn / rotate thresholds (0 or absent: per-agent defaults). */
  thresholds?: ThresholdOverrides;
  /** Between SIGTERM and SIGKILL, ms; default 3000. */
  killGraceMs?: number;
  /** stderr bytes kept (the tail), default 64 KiB. */
  stderrTailBytes?: number;
  /** Receives every raw stdout chunk before decoding (the engine keeps the raw stream as `iter-NNN.jsonl`). */
  onStdout?: (chunk: Buffer) => void;
  /** Config `containment`; default the process's mode (process/containment.ts `setContainmentMode`). */
  containment?: ContainmentMode;
}

/** How an iteration ended. */
export interface IterationExit {
  exitCode: number | null;
  signal: string | null;
  /** Set when {@link IterationHandle.kill} ended it, with the reason given. */
  killedBy: string | null;
  /** The last `stderrTailBytes` of stderr, decoded as UTF-8. */
  stderr: string;
  /** Why it ended, for the retry policy (rate-limited, transient, fatal, …). */
  outcome: Outcome;
  /** Token totals, context, cost. */
  ledger: LedgerSnapshot;
  /** The same summary `ralph session inspect` prints, for run records. */
  summary: SessionSummary;
  decoder: DecoderStats;
  /** Set when the process could not be started at all, e.g. `spawn /usr/bin/claude ENOENT` (never the command line: it holds the prompt). */
  spawnError: string | null;
  /**
   * Processes the agent left running outside its group (its tool shells' `nohup … &`, `setsid …`), ended after it
   * exited: pids in the iteration's PID namespace when contained, host pids found by the marker sweep otherwise.
   */
  leftBehind: number[];
  /** `pid-namespace` when the iteration ran in its own PID namespace, `marker` when only the marker sweep covered it. */
  containment?: 'pid-namespace' | 'marker';
}

export interface IterationHandle {
  /** The value of {@link ITERATION_MARKER} in this iteration's environment (crash recovery ends what carries it). */
  readonly token: string;
  /** The agent's pid, which is also its process group id; undefined when it could not start. */
  readonly pid: number | undefined;
  readonly invocation: Invocation;
  readonly adapter: AgentAdapter;
  /** Subscribes to events in stream order; returns the unsubscribe function. */
  onEvent(listener: (e: AgentEvent) => void): () => void;
  /** Subscribes to the ledger's `warn` (once) and `rotate` signals; returns the unsubscribe function. */
  onLedgerSignal(listener: (s: LedgerSignal) => void): () => void;
  /** Live totals and context. */
  ledgerSnapshot(): LedgerSnapshot;
  /** Ends the iteration (whole process group: SIGTERM, SIGKILL after the grace); resolves with the exit. */
  kill(reason: string): Promise<IterationExit>;
  /** Resolves when the agent exited, its output is consumed and its process group is empty. Never rejects. */
  readonly done: Promise<IterationExit>;
}

/** Kept for callers of the agents layer; the implementation is shared with the gate runner. */
export { endProcessGroup, processGroupAlive } from '../process/processGroup';

/**
 * Spawns one iteration of `adapter` for `spec`. Never throws: a binary that cannot be started resolves
 * `done` with `spawnError` set (and the outcome naming the problem). Subscribe with `onEvent` /
 * `onLedgerSignal` right after the call: no output is read before the current tick ends.
 */
/**
 * Why an agent's arguments cannot be passed, or `undefined`: an argument with a NUL byte (a task text with `\u0000`)
 * cannot reach a process, and Node's own error prints the whole argument, the prompt included (issue 12). The
 * message names the argument by index, length and the NUL's offset, never its text.
 */
export function nulByteProblem(args: readonly string[]): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const at = args[i]!.indexOf('\0');
    if (at >= 0) return `the agent's argument ${i} (${args[i]!.length} characters${i === args.length - 1 ? ', the prompt' : ''}) contains a NUL byte at offset ${at}: remove it from the task text`;
  }
  return undefined;
}

/**
 * Environment variable that marks every process of one iteration. Claude's Bash tool runs commands in their own
 * process group, so `nohup server &` escapes the agent's group; the marker is inherited all the same, and whatever
 * carries it when the agent has exited is ended too (Linux).
 */
export const ITERATION_MARKER = 'RALPH_ITERATION_TOKEN';

export function spawnIteration(adapter: AgentAdapter, spec: IterationSpec, opts: SpawnOptions = {}): IterationHandle {
  const token = `${process.pid}-${randomBytes(6).toString('hex')}`;
  const invocation = adapter.invocation({ ...spec, env: { ...spec.env, [ITERATION_MARKER]: token } });
  const killGraceMs = opts.killGraceMs ?? 3000;
  const tailMax = opts.stderrTailBytes ?? 64 * 1024;
  const eventListeners = new Set<(e: AgentEvent) => void>();
  const signalListeners = new Set<(s: LedgerSignal) => void>();
  const ledger = new TokenLedger({
    agent: adapter.name,
    model: spec.model ?? null,
    contextWindowTokens: opts.contextWindowTokens,
    thresholds: opts.thresholds,
    estimateContext: adapter.estimatesContext,
  });
  const inspector = new SessionInspector({ contextWindowTokens: opts.contextWindowTokens, thresholds: opts.thresholds }, adapter);
  const dispatch = (e: AgentEvent): void => {
    inspector.apply(e);
    const signals = ledger.apply(e);
    for (const l of eventListeners) l(e);
    for (const s of signals) for (const l of signalListeners) l(s);
  };
  const stream = new AgentStream(dispatch, { adapter, maxLineBytes: opts.maxLineBytes });

  let stderrChunks: Buffer[] = [];
  let stderrBytes = 0;
  const keepStderr = (chunk: Buffer): void => {
    stderrChunks.push(chunk);
    stderrBytes += chunk.length;
    while (stderrBytes - (stderrChunks[0]?.length ?? 0) >= tailMax && stderrChunks.length > 1) stderrBytes -= stderrChunks.shift()!.length;
  };

  const nul = nulByteProblem(invocation.args);
  if (nul) throw new Error(nul);
  let killedBy: string | null = null;
  let leftBehind: number[] = [];
  // Containment (issue 12): in a PID namespace when available, so that ending the iteration ends everything in it;
  // a binary that cannot be found is started bare, so that its spawn error is reported as such.
  // The agent dies with the runner (issue 11, breaker-s5 35: SIGKILL of the runner left it working): setpriv --pdeathsig.
  const containment = resolveContainment(opts.containment);
  const found = commandExists(invocation.file, invocation.env.PATH);
  const deathPrefix = found ? parentDeathPrefix() : null;
  const contained = containment.kind === 'pid-namespace' && found
    ? containedCommand(containment, invocation.file, invocation.args, { graceMs: killGraceMs, token, report: true, deathPrefix })
    : null;
  const started = contained ?? withPrefix(deathPrefix, invocation.file, invocation.args);
  const child = execa(started.file, started.args, {
    cwd: invocation.cwd,
    env: invocation.env,
    extendEnv: false,
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
    detached: true,
    buffer: false,
    reject: false,
    encoding: 'buffer',
    cleanup: false,
  });
  const pid = child.pid;
  if (pid !== undefined) trackProcessGroup(pid);
  trackMarker(ITERATION_MARKER, token);
  child.stdout?.on('data', (chunk: Buffer) => {
    opts.onStdout?.(chunk);
    stream.push(chunk);
  });
  child.stderr?.on('data', keepStderr);
  // When the agent itself exits, whatever it left in its group (background shells) is ended too, so its
  // stdout closes and nothing outlives the iteration.
  child.on('exit', () => {
    if (pid !== undefined) void endProcessGroup(pid, killGraceMs);
  });

  const done: Promise<IterationExit> = (async () => {
    const r = await child;
    stream.end();
    if (pid !== undefined) {
      await endProcessGroup(pid, killGraceMs);
      untrackProcessGroup(pid);
    }
    leftBehind = takeLeftovers(contained?.reportFile ?? null).filter((l) => l.pgrp !== 0).map((l) => l.pid);
    leftBehind.push(...(await endMarkedProcesses(ITERATION_MARKER, token, killGraceMs)));
    untrackMarker(ITERATION_MARKER, token);
    const stderrAll = Buffer.concat(stderrChunks);
    stderrChunks = [];
    const stderr = stderrAll.subarray(Math.max(0, stderrAll.length - tailMax)).toString('utf8');
    const spawnError = pid === undefined ? ((r as { originalMessage?: string }).originalMessage || `could not start ${invocation.file}: ${r.code ?? 'unknown error'}`) : null;
    // Contained, a signal death arrives as 128+n; read back as the signal only when we ended the agent ourselves.
    const status = contained && killedBy !== null ? containedExit(r.exitCode ?? null, r.signal ?? null) : { exitCode: r.exitCode ?? null, signal: r.signal ?? null };
    const exit = { ...status, stderr: spawnError && !stderr ? spawnError : stderr };
    const summary = inspector.finish(adapter, stream.stats, exit);
    return {
      exitCode: exit.exitCode,
      signal: exit.signal,
      killedBy,
      stderr: exit.stderr,
      outcome: summary.outcome,
      ledger: ledger.snapshot(),
      summary,
      decoder: stream.stats,
      spawnError,
      leftBehind,
      containment: contained ? 'pid-namespace' as const : 'marker' as const,
    };
  })();

  return {
    token,
    pid,
    invocation,
    adapter,
    onEvent(listener) {
      eventListeners.add(listener);
      return () => eventListeners.delete(listener);
    },
    onLedgerSignal(listener) {
      signalListeners.add(listener);
      return () => signalListeners.delete(listener);
    },
    ledgerSnapshot: () => ledger.snapshot(),
    async kill(reason: string) {
      killedBy ??= reason;
      if (pid !== undefined) await endProcessGroup(pid, killGraceMs);
      return done;
    },
    done,
  };
}
