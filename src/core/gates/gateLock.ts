import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { normalizeCommand } from './commandPolicy';
import { gatesDir } from './gateArtifacts';

/**
 * One gate lock per label **and working tree** (seed-systems.md §3.10): the mkdir lock
 * `.ralph/gates/.<label>-<tree>.lock/` (`<tree>` = 12 hex of the sha256 of the tree's real path, so two worktrees
 * running the same command hold different locks) with `pid` (the runner holding it) and `owner.json`. A caller
 * with the same command joins the running gate; a different command is busy. A lock whose pid is dead, or a
 * pid-less lock older than {@link STALE_LOCK_MS}, is stolen — so a killed waiter or runner never blocks the next gate.
 *
 * The engine never joins (the attack: a forged lock and a green verdict left for the engine to join): the lock folder
 * and the verdict files are in the workspace, which the agent can write, so a lock with `pid` 1 and a verdict
 * `exitCode: 0` can be left by it. The engine counts only the result of the gate child it started itself; a lock held
 * by anything else is waited for while its holder is provably a live gate runner ({@link engineLockStep}), else broken
 * as stale.
 */

/** A pid-less lock older than this is stale (`RALPH_GATE_STALE_LOCK_SEC` 2700 s). */
export const STALE_LOCK_MS = 2_700_000;

/** Who holds a lock. */
export interface GateLockOwner {
  pid: number;
  /** Id of the run: its verdict is `.ralph/gates/.run-<runId>.json`. */
  runId: string;
  /** The gated command, whitespace-normalised. */
  command: string;
  label: string;
  startedMs: number;
  /** Real path of the working tree. */
  tree: string;
}

export type LockAttempt =
  | { kind: 'acquired'; owner: GateLockOwner; dir: string }
  | { kind: 'join'; owner: GateLockOwner }
  | { kind: 'busy'; owner: GateLockOwner };

function treeOf(folder: string): string {
  try {
    return realpathSync(folder);
  } catch {
    return path.resolve(folder);
  }
}

/** The lock folder of `label` in the working tree `folder`. */
export function gateLockDir(folder: string, label: string): string {
  const tree = createHash('sha256').update(treeOf(folder)).digest('hex').slice(0, 12);
  return path.join(gatesDir(folder), `.${label}-${tree}.lock`);
}

/**
 * True when `pid` is a live process. A zombie (killed, not yet reaped: a detached runner whose parent died) is dead:
 * `kill(pid, 0)` alone would say alive and its lock would block the next gate.
 */
export function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true; // no /proc: trust kill(0)
  }
}

/** Reads the owner of a lock folder; undefined while it is being written or when it is unreadable. */
export function readLockOwner(dir: string): GateLockOwner | undefined {
  try {
    const owner = JSON.parse(readFileSync(path.join(dir, 'owner.json'), 'utf8')) as GateLockOwner;
    const pid = Number(readFileSync(path.join(dir, 'pid'), 'utf8').trim());
    return { ...owner, pid: Number.isInteger(pid) && pid > 0 ? pid : owner.pid };
  } catch {
    return undefined;
  }
}

/** Writes the pid that holds the lock (the launcher hands the lock to its detached runner). */
export function setLockPid(dir: string, pid: number): void {
  const tmp = path.join(dir, `pid.${process.pid}.tmp`);
  writeFileSync(tmp, String(pid));
  renameSync(tmp, path.join(dir, 'pid'));
}

/** Removes a stale lock atomically (rename first, so two stealers never remove a fresh lock). */
function steal(dir: string): void {
  const aside = `${dir}.stale-${randomBytes(4).toString('hex')}`;
  try {
    renameSync(dir, aside);
  } catch {
    return;
  }
  rmSync(aside, { recursive: true, force: true });
}

/**
 * One attempt at the lock of `label` for `command`. Steals dead locks. Synchronous and quick; the caller retries
 * `busy` until its lock-wait budget ends.
 */
export function tryGateLock(
  folder: string,
  label: string,
  command: string,
  pid: number = process.pid,
  now: number = Date.now(),
): LockAttempt {
  const dir = gateLockDir(folder, label);
  mkdirSync(path.dirname(dir), { recursive: true });
  const norm = normalizeCommand(command);
  for (let round = 0; round < 5; round++) {
    try {
      mkdirSync(dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const owner = readLockOwner(dir);
      if (!owner) {
        // Being written right now, or left pid-less by a crash: stale only after STALE_LOCK_MS.
        const age = now - (statSafe(dir) ?? now);
        if (age > STALE_LOCK_MS) {
          steal(dir);
          continue;
        }
        return { kind: 'busy', owner: { pid: 0, runId: '', command: '', label, startedMs: now, tree: treeOf(folder) } };
      }
      if (!pidAlive(owner.pid)) {
        steal(dir);
        continue;
      }
      return owner.command === norm ? { kind: 'join', owner } : { kind: 'busy', owner };
    }
    const owner: GateLockOwner = {
      pid,
      runId: `${now.toString(36)}-${randomBytes(4).toString('hex')}`,
      command: norm,
      label,
      startedMs: now,
      tree: treeOf(folder),
    };
    writeFileSync(path.join(dir, 'owner.json'), JSON.stringify(owner));
    setLockPid(dir, pid);
    return { kind: 'acquired', owner, dir };
  }
  throw new Error(`cannot take the gate lock ${dir}: it keeps changing`);
}

function statSafe(dir: string): number | undefined {
  try {
    return statSync(dir).mtimeMs;
  } catch {
    return undefined;
  }
}

/** Releases the lock of `runId` (a lock taken over by another run is left alone). */
export function releaseGateLock(folder: string, label: string, runId: string): void {
  const dir = gateLockDir(folder, label);
  const owner = readLockOwner(dir);
  if (owner && owner.runId !== runId) return;
  steal(dir);
}

/** What the engine does about a lock it did not take (see {@link engineLockStep}). */
export type EngineLockStep = 'wait' | 'steal' | 'runUnlocked';

/** What the engine knows of a lock's holder for {@link engineLockStep}. */
export interface LockHolderFacts {
  /** owner.json and pid could be read. */
  readable: boolean;
  /** The holder's pid is a live process (not a zombie). */
  alive: boolean;
  /**
   * The holder is provably the lock's runner: a `ralph gate --runner <runId>` process whose command line names the
   * lock's runId, or a gate of this very process whose runId it holds in memory ({@link heldHere}). `undefined`: the
   * command line cannot be read (no /proc), so only life can be checked.
   */
  runner: boolean | undefined;
  /** How long the engine has waited for this lock, ms. */
  waitedMs: number;
  /** Its budget for waiting (the gate timeout), ms. */
  budgetMs: number;
}

/** An unreadable lock (no owner.json / pid) is being written for at most this long, ms; after that it is stale to the engine. */
export const UNREADABLE_LOCK_GRACE_MS = 2_000;

/**
 * The engine's rule for a lock held by someone else (against a forged lock and verdict). Pure. Never "join": the
 * verdict files are in the agent's reach. A holder that is dead, or alive but not provably the lock's runner (pid 1,
 * the agent's leftover process, any pid written into the agent-writable `pid` file), is stale: `steal`. A real runner
 * (a person's or bot's `ralph gate`) is waited for until the budget ends, then the engine runs its own gate without the
 * lock (`runUnlocked`); an unreadable lock is waited for {@link UNREADABLE_LOCK_GRACE_MS}, then stolen.
 *
 * | readable | alive | runner | waited < budget | step |
 * |---|---|---|---|---|
 * | no | – | – | < grace | wait |
 * | no | – | – | ≥ grace | steal |
 * | yes | no | – | – | steal |
 * | yes | yes | false | – | steal |
 * | yes | yes | true / unknown | yes | wait |
 * | yes | yes | true / unknown | no | runUnlocked |
 */
export function engineLockStep(h: LockHolderFacts): EngineLockStep {
  if (!h.readable) return h.waitedMs < UNREADABLE_LOCK_GRACE_MS ? 'wait' : 'steal';
  if (!h.alive || h.runner === false) return 'steal';
  return h.waitedMs < h.budgetMs ? 'wait' : 'runUnlocked';
}

/** runIds of the gates this process runs now (the engine's in-process gates): a lock naming one is provably ours. */
export const heldHere = new Set<string>();

/**
 * Whether `owner` is provably the runner of its lock: this process holding a gate of that runId, or a process whose
 * command line (`/proc/<pid>/cmdline`) has `gate`, `--runner` and the runId as separate arguments. `undefined` when
 * the command line cannot be read for a live pid (no /proc: only life is checked there).
 */
export function holderIsRunner(owner: Pick<GateLockOwner, 'pid' | 'runId'>): boolean | undefined {
  if (owner.pid === process.pid) return heldHere.has(owner.runId);
  let argv: string[];
  try {
    argv = readFileSync(`/proc/${owner.pid}/cmdline`, 'latin1').split('\0');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // No /proc at all (macOS): unknown. A pid /proc does not show (another namespace) is not a runner we can see.
    return code === 'ENOENT' && !existsSafe('/proc/self/cmdline') ? undefined : false;
  }
  const at = argv.indexOf('--runner');
  return at > 0 && argv[at + 1] === owner.runId && argv.includes('gate');
}

function existsSafe(file: string): boolean {
  try {
    statSync(file);
    return true;
  } catch {
    return false;
  }
}

/** Steals the lock of `label` in `folder` when it is held by `runId` (the engine's rule said stale). */
export function stealGateLock(folder: string, label: string, runId: string): void {
  const dir = gateLockDir(folder, label);
  const owner = readLockOwner(dir);
  if ((owner?.runId ?? '') !== runId) return;
  steal(dir);
}

/** Steals an unreadable lock of `label` (no owner.json or pid) the engine waited {@link UNREADABLE_LOCK_GRACE_MS} for. */
export function stealUnreadableGateLock(folder: string, label: string): void {
  const dir = gateLockDir(folder, label);
  if (readLockOwner(dir)) return;
  steal(dir);
}
