import * as fs from 'node:fs';

/** One process as /proc shows it: pid, process group, state letter, command line (NULs as spaces) and cwd. */
export interface ProcInfo {
  pid: number;
  pgid: number;
  state: string;
  cmdline: string;
  cwd: string | null;
}

/**
 * Every process of this machine readable through /proc, this test process excluded. The one /proc parser of the
 * tests (`/proc/<pid>/stat` fields after the command name: state, ppid, pgrp). Throws when there is no /proc.
 */
export function listProcesses(): ProcInfo[] {
  const out: ProcInfo[] = [];
  for (const n of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(n) || Number(n) === process.pid) continue;
    try {
      const stat = fs.readFileSync(`/proc/${n}/stat`, 'utf8');
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const cmdline = fs.readFileSync(`/proc/${n}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
      let cwd: string | null = null;
      try {
        cwd = fs.readlinkSync(`/proc/${n}/cwd`);
      } catch {
        // not ours to read
      }
      out.push({ pid: Number(n), state: rest[0] ?? '', pgid: Number(rest[2]), cmdline, cwd });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/**
 * Pids of the processes of group `pgid` that can still run (zombies excluded), read from /proc; on a system
 * without /proc, `[pgid]` while `kill(-pgid, 0)` succeeds.
 */
export function liveGroupMembers(pgid: number): number[] {
  if (!fs.existsSync('/proc')) {
    try {
      process.kill(-pgid, 0);
      return [pgid];
    } catch {
      return [];
    }
  }
  return listProcesses()
    .filter((p) => p.pgid === pgid && p.state !== 'Z')
    .map((p) => p.pid);
}

/** Pids of processes running in, or naming, a folder under `root` (to prove none is left behind). */
export function processesUnder(root: string): number[] {
  return listProcesses()
    .filter((p) => (p.cwd !== null && p.cwd.startsWith(root)) || p.cmdline.includes(root))
    .map((p) => p.pid);
}

/** Pids of processes whose whole command line is `cmdline`. */
export function processesRunning(cmdline: string): number[] {
  return listProcesses()
    .filter((p) => p.cmdline === cmdline)
    .map((p) => p.pid);
}

/**
 * Pids of processes whose environment contains `text` (e.g. a test's own temp folder in `XDG_STATE_HOME`): what a
 * test started, however deep, without touching another file's processes. Processes whose environment this user may
 * not read are not listed.
 */
export function processesWithEnvironment(text: string): number[] {
  const out: number[] = [];
  for (const n of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(n) || Number(n) === process.pid) continue;
    try {
      if (fs.readFileSync(`/proc/${n}/environ`, 'latin1').includes(text)) out.push(Number(n));
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return out;
}

/** Resolves once `until()` is true, looking every 20 ms (mocha's timeout catches a hang). */
export async function waitUntil(until: () => boolean): Promise<void> {
  while (!until()) await new Promise((r) => setTimeout(r, 20));
}

/** Resolves once `file` exists (the command under test touches it when it has started). */
export async function waitForFile(file: string): Promise<void> {
  while (!fs.existsSync(file)) await new Promise((r) => setTimeout(r, 20));
}

/**
 * Runs `fn` and counts the calls of this thread's `child_process.spawn` meanwhile (the module object that bundled
 * code reads at each call, so a count of processes started here, not by a helper process). Restores `spawn` after.
 */
export async function spawnsDuring<T>(fn: () => Promise<T>): Promise<{ value: T; spawns: number }> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const cp = require('node:child_process') as Record<string, unknown>;
  const orig = cp.spawn as (...a: unknown[]) => unknown;
  let spawns = 0;
  cp.spawn = function (this: unknown, ...a: unknown[]) {
    spawns++;
    return orig.apply(this, a);
  };
  try {
    return { value: await fn(), spawns };
  } finally {
    cp.spawn = orig;
  }
}
