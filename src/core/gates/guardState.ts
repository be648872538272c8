import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync, renameSync } from 'node:fs';
import * as path from 'node:path';
import { GATE_LABELS } from './commandPolicy';
import { pidAlive } from './gateLock';
import type { GateStateSnapshot, GuardEffect } from './guardDecision';
import { ralphFile } from '../model/ralphPaths';
import { userStateDir } from '../store/userStateDir';

/**
 * The gate-without-write state (§3.9 step 6) outside the workspace, where the agent cannot reach it:
 * `$XDG_STATE_HOME/ralph/<sha256 of the workspace path>/` (default `~/.local/state/…`) with `last-write-ts` and
 * `last-gate-ts.<label>`, each an epoch-milliseconds integer (the seed's whole seconds, §3.15-8, let a gate and an
 * edit in the same second tie).
 */

/** The state folder of `workspace` (absolute path, not resolved through symlinks). */
export function guardStateDir(workspace: string, env: NodeJS.ProcessEnv = process.env): string {
  return path.join(userStateDir(env), createHash('sha256').update(path.resolve(workspace)).digest('hex'));
}

function readMs(file: string): number {
  try {
    const n = Number(readFileSync(file, 'utf8').trim());
    return Number.isFinite(n) && n > 0 ? n : 0;
  } catch {
    return 0;
  }
}

/** Reads the snapshot a decision needs: timestamps, `<label>-latest.exit` mtimes, labels whose runner is alive. */
export function readGateState(workspace: string, stateDir: string): GateStateSnapshot {
  const gates = ralphFile(workspace, 'gates');
  const snap: GateStateSnapshot = {
    lastWriteMs: readMs(path.join(stateDir, 'last-write-ts')),
    lastGateMs: {},
    latestExitMs: {},
    runningLabels: [],
  };
  for (const label of GATE_LABELS) {
    const g = readMs(path.join(stateDir, `last-gate-ts.${label}`));
    if (g) snap.lastGateMs[label] = g;
    try {
      snap.latestExitMs[label] = statSync(path.join(gates, `${label}-latest.exit`)).mtimeMs;
    } catch {
      // no verdict yet
    }
  }
  try {
    for (const name of existsSync(gates) ? readdirSync(gates) : []) {
      const m = /^\.(\w+)-[0-9a-f]+\.lock$/.exec(name);
      if (!m) continue;
      const pid = Number(readFileSync(path.join(gates, name, 'pid'), 'utf8').trim());
      if (pidAlive(pid)) snap.runningLabels.push(m[1]!);
    }
  } catch {
    // a lock folder mid-creation: treated as not running (the stricter answer)
  }
  return snap;
}

/** Records the effects of an allowed call (ms now). Writes atomically (temp + rename). */
export function applyGuardEffects(stateDir: string, effects: readonly GuardEffect[], now: number): void {
  if (!effects.length) return;
  mkdirSync(stateDir, { recursive: true });
  for (const e of effects) {
    const file = path.join(stateDir, e.kind === 'write' ? 'last-write-ts' : `last-gate-ts.${e.label}`);
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, String(now));
    renameSync(tmp, file);
  }
}
