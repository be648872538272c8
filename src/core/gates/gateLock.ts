import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { normalizeCommand } from './commandPolicy';
import { gatesDir } from './gateArtifacts';

/**
 * One gate lock per label **and working tree** (issue 17, seed-systems.md §3.10): the mkdir lock
 * `.ralph/gates/.<label>-<tree>.lock/` (`<tree>` = 12 hex of the sha256 of the tree's real path, so two worktrees
 * running the same command hold different locks) with `pid` (the runner holding it) and `owner.json`. A caller
 * with the same command joins the running gate; a different command is busy. A lock whose pid is dead, or a
 * pid-less lock older than {@link STALE_LOCK_MS}, is stolen — so a killed waiter or runner never blocks the next gate.
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
export function tryGateLock(folder: string, label: string, command: string, pid: number = process.pid, now: number = Date.now()): LockAttempt {
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
    const owner: GateLockOwner = { pid, runId: `${now.toString(36)}-${randomBytes(4).toString('hex')}`, command: norm, label, startedMs: now, tree: treeOf(folder) };
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
