import { existsSync, readFileSync } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import * as path from 'node:path';
import { writeTextAtomic, removeIfExists } from '../store/atomicWrite';
import { GATE_LABELS, GATE_TIERS, normalizeCommand, type GateLabel, type GateTier } from './commandPolicy';
import { gatesDir, latestGatePaths, TAIL_LINES } from './gateArtifacts';
import {
  engineLockStep,
  gateLockDir,
  heldHere,
  holderIsRunner,
  pidAlive,
  readLockOwner,
  releaseGateLock,
  setLockPid,
  stealGateLock,
  stealUnreadableGateLock,
  tryGateLock,
  type GateLockOwner,
} from './gateLock';
import { runGate, type GateResult, type GateRunOptions } from './gateRunner';
import { writeLastGateState } from './handoff';

/**
 * `ralph gate <label> -- <cmd…>` and the locked gate the engine runs (seed-systems.md §3.10): label and
 * tier-pin checks (64), the lock per label and working tree (join the same command, 75 for another), the run
 * (detached runner for the CLI, in process for the engine), the waiter's budget ("STILL RUNNING", 75), the
 * verdict text, and the handoff's "Last gate state" (the agent's "Working set" is never touched).
 */

/** Exit codes of a gate call (§3.10). */
export const EXIT_USAGE = 64;
export const EXIT_BUSY = 75;
export const EXIT_RUNNER_DIED = 70;
/** Waiter's budget (`RALPH_GATE_WAIT` 570 s). */
export const GATE_WAIT_MS = 570_000;
/** How long a caller waits for another command's lock (`RALPH_GATE_LOCK_WAIT` 60 s). */
export const GATE_LOCK_WAIT_MS = 60_000;
const POLL_MS = 200;

/** The verdict file of a run: the whole {@link GateResult}, written by the runner when the gate has ended. */
export function verdictPath(folder: string, runId: string): string {
  return path.join(gatesDir(folder), `.run-${runId}.json`);
}

/** The verdict text (§3.10): header, tail, failing lines, end marker. Pure. */
export function verdictText(
  r: Pick<GateResult, 'label' | 'exitCode' | 'durationMs' | 'logRelPath' | 'tail' | 'failingLines'>,
): string {
  const latest = `.ralph/gates/${r.label}-latest.log`;
  const lines = [
    `=== GATE ${r.label} exit=${r.exitCode} duration=${Math.round(r.durationMs / 1000)}s log=${r.logRelPath} latest=${latest} ===`,
    `--- tail (last ${TAIL_LINES} lines) ---`,
    ...r.tail.slice(-TAIL_LINES),
  ];
  if (r.failingLines.length) lines.push('--- failing-tests (first 80 matches) ---', ...r.failingLines.slice(0, 80));
  lines.push('=== END GATE ===');
  return `${lines.join('\n')}\n`;
}

/** Inputs of a gate call. */
export interface GateCallOptions {
  folder: string;
  label: string;
  command: string;
  /** The `[gates]` pins (a tier label must run its pin: else 64 "STALE TIER PIN"). */
  pins?: Partial<Record<GateTier, string>>;
  /** The file the pins come from, as the refusal names it (default `.ralph/command-policy`). */
  pinFile?: string;
  /** Waiter's budget, ms (default {@link GATE_WAIT_MS}). */
  waitMs?: number;
  /** Budget for another command's lock, ms (default {@link GATE_LOCK_WAIT_MS}). */
  lockWaitMs?: number;
  /** Starts the detached runner of `runId` and returns its pid. */
  startRunner(runId: string): number;
  /** Receives the texts to print (verdict, STILL RUNNING, …). */
  print(text: string): void;
  onActivity?: (text: string) => void;
}

/**
 * Checks label and pin; a message and 64 when the call is refused before anything runs. `pinFile`: the file the pins
 * come from (`.ralph/command-policy` `[gates]`, or `"gates"` of `.ralph/config.json`), named in the refusal.
 */
export function checkGateCall(
  label: string,
  command: string,
  pins: Partial<Record<GateTier, string>> = {},
  pinFile = '.ralph/command-policy',
): string | undefined {
  if (!(GATE_LABELS as readonly string[]).includes(label))
    return `unknown gate label "${label}" (expected ${GATE_LABELS.join(', ')})`;
  if (normalizeCommand(command) === '') return 'no command given: ralph gate <label> -- <command…>';
  if ((GATE_TIERS as readonly string[]).includes(label)) {
    const pin = pins[label as GateTier];
    if (pin !== undefined && normalizeCommand(pin) !== normalizeCommand(command))
      return `STALE TIER PIN: the ${label} gate is pinned to \`${normalizeCommand(pin)}\` in ${pinFile}, not \`${normalizeCommand(command)}\`; nothing ran`;
  }
  return undefined;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The CLI's gate call: returns the exit code to exit with. */
export async function gateCall(o: GateCallOptions): Promise<number> {
  const refused = checkGateCall(o.label, o.command, o.pins, o.pinFile);
  if (refused) {
    o.print(`${refused}\n`);
    return EXIT_USAGE;
  }
  const lockDeadline = Date.now() + (o.lockWaitMs ?? GATE_LOCK_WAIT_MS);
  for (;;) {
    const at = tryGateLock(o.folder, o.label, o.command);
    if (at.kind === 'acquired') {
      let pid: number;
      try {
        pid = o.startRunner(at.owner.runId);
      } catch (err) {
        releaseGateLock(o.folder, o.label, at.owner.runId);
        throw err;
      }
      setLockPid(at.dir, pid);
      return waitForVerdict(o, { ...at.owner, pid });
    }
    if (at.kind === 'join') {
      o.onActivity?.(`GATE join label=${o.label} pid=${at.owner.pid}`);
      return waitForVerdict(o, at.owner);
    }
    if (Date.now() >= lockDeadline) {
      o.print(
        `=== GATE ${o.label} BUSY: another command holds the ${o.label} gate of this tree (pid=${at.owner.pid} cmd=${at.owner.command || '?'}) ===\n`,
      );
      return EXIT_BUSY;
    }
    await sleep(500);
  }
}

async function waitForVerdict(o: GateCallOptions, owner: GateLockOwner): Promise<number> {
  const start = Date.now();
  const budget = o.waitMs ?? GATE_WAIT_MS;
  const file = verdictPath(o.folder, owner.runId);
  let deadPolls = 0;
  for (;;) {
    const r = readVerdict(file);
    if (r) {
      o.print(verdictText(r));
      return r.exitCode;
    }
    const holder = readLockOwner(gateLockDir(o.folder, o.label));
    const alive = holder?.runId === owner.runId ? pidAlive(holder.pid) : pidAlive(owner.pid);
    if (!alive) {
      // Give a just-finished runner a moment to land its verdict.
      if (++deadPolls > 5) {
        o.print(
          `=== GATE ${o.label} RUNNER DIED without a verdict (pid=${owner.pid}) log=${path.relative(o.folder, latestGatePaths(o.folder, o.label).log)} ===\n`,
        );
        return EXIT_RUNNER_DIED;
      }
    }
    const waited = Date.now() - start;
    if (waited >= budget) {
      o.print(
        `=== GATE ${o.label} STILL RUNNING pid=${owner.pid} waited=${Math.round(waited / 1000)}s log=.ralph/gates/${o.label}-latest.log ===\nThe gate goes on; run the same command again to wait for its verdict.\n`,
      );
      return EXIT_BUSY;
    }
    await sleep(Math.min(POLL_MS, Math.max(1, budget - waited)));
  }
}

/** Verdict files older than {@link VERDICT_KEEP_MS} are removed (their waiters are long gone). */
export const VERDICT_KEEP_MS = 3_600_000;

async function pruneVerdicts(folder: string): Promise<void> {
  const dir = gatesDir(folder);
  let names: string[] = [];
  try {
    names = await readdir(dir);
  } catch {
    return;
  }
  const now = Date.now();
  for (const n of names) {
    if (!/^\.run-[\w-]+\.json$/.test(n)) continue;
    const file = path.join(dir, n);
    const m = await stat(file).then(
      (s) => s.mtimeMs,
      () => now,
    );
    if (now - m > VERDICT_KEEP_MS) await removeIfExists(file).catch(() => false);
  }
}

function readVerdict(file: string): GateResult | undefined {
  if (!existsSync(file)) return undefined;
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as GateResult;
  } catch {
    return undefined;
  }
}

/**
 * The runner's part (`ralph gate --runner <runId> …`, and the engine in process): runs the gate, writes the
 * handoff's "Last gate state", the verdict file, then releases the lock. Old verdict files are removed.
 */
export async function runLockedGate(opts: GateRunOptions & { runId: string }): Promise<GateResult> {
  let r: GateResult;
  await pruneVerdicts(opts.folder);
  try {
    r = await runGate(opts);
    await writeLastGateState(opts.folder, {
      label: r.label,
      exitCode: r.exitCode,
      summary: r.summary,
      command: r.command,
      durationMs: r.durationMs,
      logRelPath: r.logRelPath,
      failingLines: r.failingLines,
    }).catch(() => undefined);
    await writeTextAtomic(verdictPath(opts.folder, opts.runId), JSON.stringify(r));
  } finally {
    releaseGateLock(opts.folder, opts.label, opts.runId);
  }
  return r;
}

/**
 * The engine's gate: takes the lock of the label in this tree, runs the command as its own child in process, and
 * returns that child's result. It never joins another run and never reads a verdict file (a forged lock and verdict
 * must not pass for a green gate: the lock and `.run-<id>.json` are in the agent's reach): a lock held by someone else
 * is waited for while its holder is provably a live gate runner, else stolen as stale (gateLock.ts `engineLockStep`);
 * past the budget the gate runs without the lock. `onLockBroken` hears each stale lock broken (the engine warns). Same
 * artifacts as {@link runGate}.
 */
export async function runGateExclusive(
  opts: GateRunOptions,
  onLockBroken?: (text: string) => void,
): Promise<GateResult> {
  const budgetMs = opts.timeoutMs ?? 1_200_000;
  const start = Date.now();
  for (;;) {
    if (opts.signal?.aborted) return runGate(opts);
    const at = tryGateLock(opts.folder, opts.label, opts.command);
    if (at.kind === 'acquired') {
      heldHere.add(at.owner.runId);
      try {
        const r = await runLockedGate({ ...opts, runId: at.owner.runId });
        // The engine keeps its result; its verdict file only serves `ralph gate` joiners that may still be polling.
        setTimeout(
          () => void removeIfExists(verdictPath(opts.folder, at.owner.runId)).catch(() => undefined),
          5_000,
        ).unref();
        return r;
      } finally {
        heldHere.delete(at.owner.runId);
      }
    }
    const owner = at.owner;
    const readable = owner.runId !== '';
    const step = engineLockStep({
      readable,
      alive: readable && pidAlive(owner.pid),
      runner: readable ? holderIsRunner(owner) : undefined,
      waitedMs: Date.now() - start,
      budgetMs,
    });
    if (step === 'runUnlocked') return runGate(opts);
    if (step === 'steal') {
      onLockBroken?.(
        `the ${opts.label} gate lock (pid ${owner.pid || '?'}${owner.command ? `, command \`${owner.command}\`` : ''}) is not held by a live gate runner: broken as stale, the engine runs its own gate`,
      );
      if (readable) stealGateLock(opts.folder, opts.label, owner.runId);
      else stealUnreadableGateLock(opts.folder, opts.label);
      continue;
    }
    await sleep(POLL_MS);
  }
}

export type { GateLabel };
