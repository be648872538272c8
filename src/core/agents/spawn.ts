import { execa } from 'execa';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import type { Readable } from 'node:stream';
import {
  commandExists,
  containedCommand,
  containedExit,
  type ContainmentMode,
  mountPlan,
  mountTable,
  parentDeathPrefix,
  protectedCommand,
  resolveContainment,
  resolveProtection,
  takeLeftovers,
  withPrefix,
} from '../process/containment';
import { spawnInWorker } from '../git/gitWorker';
import { protectedPaths, type ProtectedLayout } from '../process/protectedPaths';
import { userStateDir } from '../store/userStateDir';
import {
  endMarkedProcesses,
  endProcessGroup,
  trackMarker,
  trackProcessGroup,
  untrackMarker,
  untrackProcessGroup,
} from '../process/processGroup';
import type { AgentEvent } from '../stream/events';
import type { DecoderStats } from '../stream/lineDecoder';
import { type LedgerSignal, type LedgerSnapshot, TokenLedger } from '../stream/ledger';
import type { Outcome } from '../stream/classify';
import type { ThresholdOverrides } from '../stream/thresholds';
import type { AgentAdapter, Invocation, IterationSpec } from './adapter';
import { AgentStream } from './agentStream';
import { type SessionSummary, SessionInspector } from './inspect';
import { decideTurnEnd } from './turnEnd';

/**
 * Starting one iteration: one agent process in its own process group, stdin closed (cursor-agent waits for
 * EOF otherwise), stdout decoded into events as it arrives, stderr drained concurrently (a full pipe would
 * deadlock the child) and its tail kept. Killing signals the whole group, SIGTERM then SIGKILL after
 * `killGraceMs`; when the agent exits, anything left in its group is ended the same way, and `done` resolves
 * only once the group is empty. Nothing outlives an iteration. A CLI that keeps running after its turn's final event
 * (its adapter's `afterTurn`) is ended the same way a grace after that event (turnEnd.ts decides).
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
  /**
   * How long the agent may run after its turn's final event before it is ended, ms; default the adapter's
   * `afterTurn.graceMs`; null: never (the agent's own exit ends the iteration). Ignored for an adapter without
   * `afterTurn` (it says which event is final).
   */
  afterTurnGraceMs?: number | null;
  /** Config `containment`; default the process's mode (process/containment.ts `setContainmentMode`). */
  containment?: ContainmentMode;
  /**
   * Keep the workspace's protected paths (process/protectedPaths.ts) read-only in the kernel for this iteration, where
   * the system allows it (process/containment.ts `resolveProtection`); `workspace` absolute.
   */
  protect?: { workspace: string };
}

/** How an iteration ended. */
export interface IterationExit {
  exitCode: number | null;
  signal: string | null;
  /** Set when {@link IterationHandle.kill} ended it, with the reason given. */
  killedBy: string | null;
  /**
   * True when the agent was ended because it was still running a grace after its turn's final event (its adapter's
   * `afterTurn`): the turn had ended, and its outcome is the one the stream gave (a normal end, not a kill).
   */
  endedAfterTurn?: boolean;
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
  /** `read-only-mounts` when its protected paths were read-only in the kernel (asked with `protect` and possible). */
  protection?: 'read-only-mounts' | 'not-enforced';
}

export interface IterationHandle {
  /** The value of {@link ITERATION_MARKER} in this iteration's environment (crash recovery ends what carries it). */
  readonly token: string;
  /**
   * The agent's pid, which is also its process group id; undefined when it could not start, and until {@link started}
   * has resolved when it was started from the helper process (a parallel run).
   */
  readonly pid: number | undefined;
  /** Resolves once {@link pid} is known (at once when started from this process). Never rejects. */
  readonly started: Promise<void>;
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
 * cannot reach a process, and Node's own error prints the whole argument, the prompt included. The
 * message names the argument by index, length and the NUL's offset, never its text.
 */
export function nulByteProblem(args: readonly string[]): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const at = args[i]!.indexOf('\0');
    if (at >= 0)
      return `the agent's argument ${i} (${args[i]!.length} characters${i === args.length - 1 ? ', the prompt' : ''}) contains a NUL byte at offset ${at}: remove it from the task text`;
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
  const inspector = new SessionInspector(
    { contextWindowTokens: opts.contextWindowTokens, thresholds: opts.thresholds },
    adapter,
  );
  // The turn's final event (adapter.afterTurn): the agent is ended if it is still running a grace after it.
  const afterTurn = adapter.afterTurn;
  const afterTurnGraceMs = afterTurn
    ? opts.afterTurnGraceMs === undefined
      ? afterTurn.graceMs
      : opts.afterTurnGraceMs
    : null;
  let finalAt: number | null = null;
  /** Lines decoded up to the final event's, and whether a chunk arrived after it (a line not yet complete). */
  let finalLines = 0;
  let outputAfterFinal = false;
  let endedAfterTurn = false;
  let exited = false;
  let turnEndTimer: NodeJS.Timeout | undefined;
  const checkTurnEnd = (): void => {
    clearTimeout(turnEndTimer);
    const v = decideTurnEnd(
      {
        now: Date.now(),
        finalAt,
        outputAfterFinal: outputAfterFinal || stream.stats.lines > finalLines,
        ending: exited || killedBy !== null || endedAfterTurn,
      },
      afterTurnGraceMs,
    );
    if (v.kind === 'wait') turnEndTimer = setTimeout(checkTurnEnd, Math.max(0, v.checkAt - Date.now())).unref();
    else if (v.kind === 'end') {
      endedAfterTurn = true;
      void started$.then(() => (pid !== undefined ? endProcessGroup(pid, killGraceMs) : undefined));
    }
  };
  const dispatch = (e: AgentEvent): void => {
    if (afterTurn && e.type === 'result' && !e.subagent && afterTurn.isFinal(e)) {
      finalAt = Date.now();
      finalLines = stream.stats.lines;
      outputAfterFinal = false;
      // Decided on a later tick: the lines after it in the same chunk are mapped first.
      clearTimeout(turnEndTimer);
      if (afterTurnGraceMs !== null) turnEndTimer = setTimeout(checkTurnEnd, afterTurnGraceMs).unref();
    }
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
    while (stderrBytes - (stderrChunks[0]?.length ?? 0) >= tailMax && stderrChunks.length > 1)
      stderrBytes -= stderrChunks.shift()!.length;
  };

  const nul = nulByteProblem(invocation.args);
  if (nul) throw new Error(nul);
  let killedBy: string | null = null;
  let leftBehind: number[] = [];
  // Containment: in a PID namespace when available, so that ending the iteration ends everything in it;
  // a binary that cannot be found is started bare, so that its spawn error is reported as such.
  // The agent dies with the runner (SIGKILL of the runner left it working): setpriv --pdeathsig.
  const containment = resolveContainment(opts.containment);
  const found = commandExists(invocation.file, invocation.env.PATH);
  const deathPrefix = found ? parentDeathPrefix() : null;
  // Protected paths read-only in the kernel (destroying the policy with gzip, sort -o, tar --remove-files … fails with
  // EROFS whatever the command): a mount namespace set up by the namespace's PID 1 before the agent starts.
  const protection =
    opts.protect && containment.kind === 'pid-namespace' && found ? resolveProtection(opts.containment) : null;
  const prepared =
    protection?.kind === 'read-only-mounts' ? prepareProtected(opts.protect!.workspace, invocation.env, token) : null;
  const containOpts = { graceMs: killGraceMs, token, report: true, deathPrefix, tableFile: prepared?.tableFile };
  const contained =
    containment.kind === 'pid-namespace' && found
      ? prepared && protection?.kind === 'read-only-mounts'
        ? protectedCommand(protection, invocation.file, invocation.args, prepared.plan, containOpts)
        : containedCommand(containment, invocation.file, invocation.args, containOpts)
      : null;
  const started = contained ?? withPrefix(deathPrefix, invocation.file, invocation.args);
  // In a parallel run, from the small helper process (git/gitWorker.ts): a fork of this large process stalls the
  // one thread every lane's engine runs on. Elsewhere (and if the helper has failed) from here, as always.
  const child = startChild(started.file, started.args, invocation);
  let pid = child.pid;
  const started$ = child.started.then((p) => {
    pid = p;
    if (p !== undefined) trackProcessGroup(p);
  });
  trackMarker(ITERATION_MARKER, token);
  child.stdout?.on('data', (chunk: Buffer) => {
    // Output after the final event (a line that maps to no event, like opencode's next `step_start`): still working.
    if (finalAt !== null) outputAfterFinal = true;
    opts.onStdout?.(chunk);
    stream.push(chunk);
  });
  child.stderr?.on('data', keepStderr);
  // When the agent itself exits, whatever it left in its group (background shells) is ended too, so its
  // stdout closes and nothing outlives the iteration.
  // A process outside the group that holds the agent's stdout open (`setsid cmd &` without redirection, marker
  // containment) would keep `done` waiting until it ends by itself, maybe never: output still open a grace after the
  // exit, whatever carries the iteration's marker is ended too (and reported in leftBehind).
  let resultSettled = false;
  void child.result.then(() => {
    resultSettled = true;
  });
  let endedEarly: Promise<number[]> = Promise.resolve([]);
  child.onExit(() => {
    exited = true;
    clearTimeout(turnEndTimer);
    endedEarly = started$.then(async () => {
      if (pid !== undefined) await endProcessGroup(pid, killGraceMs);
      await Promise.race([child.result, new Promise((r) => setTimeout(r, killGraceMs).unref())]);
      return resultSettled || contained ? [] : endMarkedProcesses(ITERATION_MARKER, token, killGraceMs);
    });
  });

  const done: Promise<IterationExit> = (async () => {
    await started$;
    const r = await child.result;
    exited = true;
    clearTimeout(turnEndTimer);
    stream.end();
    if (pid !== undefined) {
      await endProcessGroup(pid, killGraceMs);
      untrackProcessGroup(pid);
    }
    leftBehind = takeLeftovers(contained?.reportFile ?? null)
      .filter((l) => l.pgrp !== 0)
      .map((l) => l.pid);
    const early = await endedEarly;
    // In a PID namespace the kernel has ended every process of the iteration with its init (process/containment.ts):
    // the marker sweep, a read of every process's environment on the machine (~3 ms at 170 processes, twice an
    // iteration), is the net of marker containment only (docs/decisions/0009-pid-namespace-containment.md).
    if (!contained)
      leftBehind.push(
        ...early,
        ...(await endMarkedProcesses(ITERATION_MARKER, token, killGraceMs)).filter((p) => !early.includes(p)),
      );
    untrackMarker(ITERATION_MARKER, token);
    if (prepared?.tableFile) rmSync(prepared.tableFile, { force: true });
    const stderrAll = Buffer.concat(stderrChunks);
    stderrChunks = [];
    const stderr = stderrAll.subarray(Math.max(0, stderrAll.length - tailMax)).toString('utf8');
    const spawnError = pid === undefined ? r.spawnError || `could not start ${invocation.file}: unknown error` : null;
    // Contained, a signal death arrives as 128+n; read back as the signal only when we ended the agent ourselves.
    const status =
      contained && (killedBy !== null || endedAfterTurn)
        ? containedExit(r.exitCode, r.signal)
        : { exitCode: r.exitCode, signal: r.signal };
    // Started and then lost (the helper process that started it ended first): said at the end of its stderr.
    const lost =
      pid !== undefined && r.spawnError ? `${stderr && !stderr.endsWith('\n') ? '\n' : ''}${r.spawnError}` : '';
    const exit = { ...status, stderr: spawnError && !stderr ? spawnError : stderr + lost };
    const summary = inspector.finish(adapter, stream.stats, exit);
    return {
      exitCode: exit.exitCode,
      signal: exit.signal,
      killedBy,
      endedAfterTurn,
      stderr: exit.stderr,
      outcome: summary.outcome,
      ledger: ledger.snapshot(),
      summary,
      decoder: stream.stats,
      spawnError,
      leftBehind,
      containment: contained ? ('pid-namespace' as const) : ('marker' as const),
      ...(opts.protect ? { protection: prepared ? ('read-only-mounts' as const) : ('not-enforced' as const) } : {}),
    };
  })();

  return {
    token,
    get pid() {
      return pid;
    },
    started: started$,
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
      await started$;
      if (pid !== undefined) await endProcessGroup(pid, killGraceMs);
      return done;
    },
    done,
  };
}

/**
 * The plan's mount table (containment.ts `mountTable`) in ralph's user state, a folder every protected iteration sees
 * read-only (so no agent, of this lane or another, can change the table between its writing and its mount), named by
 * the iteration's token; removed when the iteration ends. Null when it cannot be written: the init then mounts the
 * plan line by line.
 */
function writeMountTable(plan: readonly string[], token: string): string | null {
  try {
    const dir = path.join(userStateDir(process.env), 'protect');
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const file = path.join(dir, `${token}.fstab`);
    writeFileSync(file, mountTable(plan), { mode: 0o600, flag: 'wx' });
    return file;
  } catch {
    return null;
  }
}

/**
 * The mount plan of a protected iteration for `workspace`: ralph's user state is created so it can be bound. `.ralph/`
 * itself stays writable but becomes a mount point (it cannot be renamed or removed), and every entry in it that
 * exists now and is not one the agent may write is bound read-only: the agent can add a file (its handoff: Claude
 * Code's Write refuses to overwrite a file it has not read, so none is made for it) but not change, replace or delete
 * one ralph keeps. Null when the plan cannot be made (the iteration then runs unprotected and records so).
 */
function prepareProtected(
  workspace: string,
  agentEnv: NodeJS.ProcessEnv,
  token: string,
): { plan: string[]; tableFile: string | null } | null {
  try {
    const layout: ProtectedLayout = protectedPaths(workspace, process.env);
    // The agent's own environment may name another state folder: that one too.
    const agentState = userStateDir({ HOME: process.env.HOME, ...agentEnv });
    if (!layout.readOnly.some((r) => r.path === agentState))
      layout.readOnly.push({ path: agentState, what: "ralph's user state of the agent's environment" });
    mkdirSync(userStateDir(process.env), { recursive: true, mode: 0o700 });
    mkdirSync(agentState, { recursive: true, mode: 0o700 });
    const ralph = path.join(workspace, '.ralph');
    mkdirSync(ralph, { recursive: true });
    const writable = new Set(layout.writable.map((w) => w.path));
    const readOnly = layout.readOnly.flatMap((r) =>
      r.path === ralph
        ? readdirSync(ralph)
            .map((name) => path.join(ralph, name))
            .filter((p) => !writable.has(p))
            .map((p) => ({ path: p }))
        : [r],
    );
    const exists = (p: string) => {
      try {
        statSync(p);
        return true;
      } catch {
        return false;
      }
    };
    // `.ralph/` is an ancestor of its entries: bound onto itself (kept writable), so it cannot be renamed away.
    const plan = mountPlan({ readOnly, writable: [] }, exists);
    if (!plan.includes(`self:${ralph}`))
      plan.unshift(
        ...mountPlan({ readOnly: [{ path: ralph }], writable: [] }, exists).filter((l) => l.startsWith('self:')),
        `self:${ralph}`,
      );
    return { plan, tableFile: writeMountTable(plan, token) };
  } catch {
    return null;
  }
}

/** A started agent, from this process (execa) or from the helper (git/gitWorker.ts `spawnInWorker`). */
interface StartedChild {
  /** The pid when known at once (started here). */
  pid: number | undefined;
  /** Resolves with the pid (undefined: it did not start). */
  started: Promise<number | undefined>;
  stdout: Readable | null;
  stderr: Readable | null;
  /** Calls `listener` when the agent itself exits (its output may still be held open). */
  onExit(listener: () => void): void;
  /** Resolves once it has exited and its output ended; spawnError set when it did not start. Never rejects. */
  result: Promise<{ exitCode: number | null; signal: NodeJS.Signals | null; spawnError: string | null }>;
}

function startChild(file: string, args: readonly string[], invocation: Invocation): StartedChild {
  // PWD says the working folder, as a shell would set it: a CLI that trusts PWD over its real folder (opencode runs
  // its tools in $PWD) would otherwise work in the folder ralph was started from.
  const env = { ...invocation.env, PWD: invocation.cwd };
  const remote = spawnInWorker(file, args, { cwd: invocation.cwd, env, stdout: 'pipe', stderr: 'pipe' });
  if (remote) {
    return {
      pid: undefined,
      started: remote.pid,
      stdout: remote.stdout,
      stderr: remote.stderr,
      onExit: (l) => remote.onExited(l),
      result: remote.exit,
    };
  }
  const child = execa(file, args, {
    cwd: invocation.cwd,
    env,
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
  return {
    pid: child.pid,
    started: Promise.resolve(child.pid),
    stdout: child.stdout,
    stderr: child.stderr,
    onExit: (l) => {
      child.on('exit', l);
    },
    result: child.then((r) => ({
      exitCode: r.exitCode ?? null,
      signal: (r.signal ?? null) as NodeJS.Signals | null,
      spawnError:
        child.pid === undefined
          ? (r as { originalMessage?: string }).originalMessage ||
            `could not start ${file}: ${r.code ?? 'unknown error'}`
          : null,
    })),
  };
}
