import { closeSync, openSync, readdirSync, readFileSync, readSync } from 'node:fs';

/**
 * Process-group ownership shared by everything that spawns (agent iterations, gates): each child runs in its own
 * group (`detached`), is ended as a group (SIGTERM, a grace, then SIGKILL), and is SIGKILLed if this process exits
 * first. Nothing we start may outlive its owner.
 */

/**
 * True while group `pgid` has a member that is not a zombie. A zombie whose parent never reaps it (a container
 * whose pid 1 is not an init) cannot run, so it does not count; on systems without /proc any member counts.
 */
export function processGroupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return true;
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue;
    }
    // Fields after the parenthesised command: state ppid pgrp …
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(rest[2]) === pgid && rest[0] !== 'Z') return true;
  }
  return false;
}

/** Whether a process id is alive on this host: signal 0 probes without touching it; EPERM means alive. */
export function isPidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Sends `signal` to every member of group `pgid`; a group that is already gone is not an error. */
export function signalProcessGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: nothing left in the group.
  }
}

const delay = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** How long {@link endProcessGroup} waits for a SIGKILLed group to be empty, ms. */
const KILLED_EXIT_WAIT_MS = 30_000;

/**
 * SIGTERM to the group, SIGKILL after `graceMs` (ms) if a member is left, then wait (at most 30 s) until it is empty
 * (zombies do not count: they are dead, their parent or init reaps them).
 */
export async function endProcessGroup(pgid: number, graceMs: number): Promise<void> {
  if (!processGroupAlive(pgid)) return;
  signalProcessGroup(pgid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (processGroupAlive(pgid) && Date.now() < deadline) await delay(20);
  if (!processGroupAlive(pgid)) return;
  signalProcessGroup(pgid, 'SIGKILL');
  // A killed process still has to run to exit (a large agent unmaps its memory first), which on a loaded machine can
  // take seconds: wait for that, bounded only against a process stuck in the kernel (a hung mount).
  const hard = Date.now() + KILLED_EXIT_WAIT_MS;
  while (processGroupAlive(pgid) && Date.now() < hard) await delay(10);
}

/** Groups still running; SIGKILLed if this process exits first. */
const liveGroups = new Set<number>();
const liveMarkers = new Map<string, number>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const g of liveGroups) signalProcessGroup(g, 'SIGKILL');
    // Processes that left the group (a tool's own shell group, `setsid`) still carry the marker: ended too, so an
    // immediate exit (Ctrl-C twice, `process.exit`) leaves nothing running.
    for (const needle of liveMarkers.keys()) {
      const eq = needle.indexOf('=');
      for (const pid of processesWithEnv(needle.slice(0, eq), needle.slice(eq + 1))) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          /* gone */
        }
      }
    }
  });
}

/** Remembers a group to SIGKILL if this process exits while it runs; `untrackProcessGroup` when it ended. */
export function trackProcessGroup(pgid: number): void {
  liveGroups.add(pgid);
  installExitHook();
}

export function untrackProcessGroup(pgid: number): void {
  liveGroups.delete(pgid);
}

/**
 * Remembers an environment marker (`name=value`, see {@link processesWithEnv}) whose processes are SIGKILLed if this
 * process exits before `untrackMarker` (Linux `/proc`; elsewhere nothing is found). Counted: tracking the same
 * marker twice needs two untracks.
 */
export function trackMarker(name: string, value: string): void {
  const key = `${name}=${value}`;
  liveMarkers.set(key, (liveMarkers.get(key) ?? 0) + 1);
  installExitHook();
}

export function untrackMarker(name: string, value: string): void {
  const key = `${name}=${value}`;
  const n = (liveMarkers.get(key) ?? 0) - 1;
  if (n > 0) liveMarkers.set(key, n);
  else liveMarkers.delete(key);
}

/**
 * Pids of processes (other than this one) whose environment holds `name=value`, read from `/proc/<pid>/environ`
 * (Linux; elsewhere none are found). An environment variable is inherited by every descendant, including those that
 * leave the process group (`setsid`, `nohup … &` from a tool's own shell group), so a marker set on an agent finds
 * everything the agent started. A process caught in the middle of an `exec` reads as an empty environment (the kernel
 * fills the new image's environment last): such a process is read again a few times before it is passed over.
 */
export function processesWithEnv(name: string, value: string): number[] {
  const want = Buffer.from(`${name}=${value}`, 'latin1');
  const { found, unsure } = sweepEnv(want);
  for (let round = 0; unsure.length && round < 50; round++)
    unsure.splice(0, unsure.length, ...rereadEnv(unsure, want, found));
  return found;
}

/**
 * One pass over `/proc`: the pids whose environment holds `want`, and the `unsure` ones — live user processes whose
 * environment read as empty, which is what a process between an `exec`'s new image and its environment looks like
 * (measured here: 14 of 300 sweeps right after `(setsid sleep N &)` saw the detached process so, and missed it).
 */
function sweepEnv(want: Buffer): { found: number[]; unsure: number[] } {
  const found: number[] = [];
  const unsure: number[] = [];
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return { found, unsure };
  }
  for (const n of names) {
    if (!/^\d+$/.test(n) || Number(n) === process.pid) continue;
    const pid = Number(n);
    try {
      const environ = readProcFile(`/proc/${n}/environ`);
      if (environ.length) {
        if (environHolds(environ, want)) found.push(pid);
      } else {
        const looked = lookAgain(pid, want);
        if (looked === 'marked') found.push(pid);
        else if (looked === 'unsure') unsure.push(pid);
      }
    } catch {
      // gone, or another user's
    }
  }
  return { found, unsure };
}

/**
 * A second look at a process whose environment read as empty. The kernel gives a new image its arguments and then
 * its environment in one step, so once the command line is there the environment is too: read again then, it is
 * the process's own (empty for `env -i`). With no command line yet the process may be in the middle of an `exec`
 * (`unsure`), unless it is a kernel thread (PF_KTHREAD in `/proc/<pid>/stat`'s flags) or a zombie.
 */
function lookAgain(pid: number, want: Buffer): 'marked' | 'unmarked' | 'unsure' {
  try {
    if (readProcFile(`/proc/${pid}/cmdline`).length) {
      const environ = readProcFile(`/proc/${pid}/environ`);
      return environ.length && environHolds(environ, want) ? 'marked' : 'unmarked';
    }
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[0] === 'Z' || (Number(fields[6]) & 0x00200000) !== 0 ? 'unmarked' : 'unsure';
  } catch {
    return 'unmarked';
  }
}

/**
 * Looks again at the `unsure` pids (see {@link lookAgain}): the marked join `found`; those still unsure are returned.
 */
function rereadEnv(pids: readonly number[], want: Buffer, found: number[]): number[] {
  const still: number[] = [];
  for (const pid of pids) {
    const looked = lookAgain(pid, want);
    if (looked === 'marked') found.push(pid);
    else if (looked === 'unsure') still.push(pid);
  }
  return still;
}

/** The buffer {@link readProcFile} reads into, grown when a file fills it. */
let procBuf = Buffer.allocUnsafe(64 * 1024);

/**
 * A `/proc` file's bytes, read into one reused buffer (`readFileSync` allocates 64 KiB per file whose size the
 * kernel reports as 0, and the sweeps read one file per process). The answer is a view of that buffer, valid until
 * the next call. Throws as `readFileSync` does.
 */
function readProcFile(file: string): Buffer {
  const fd = openSync(file, 'r');
  try {
    let len = 0;
    for (;;) {
      if (len === procBuf.length) {
        const bigger = Buffer.allocUnsafe(procBuf.length * 2);
        procBuf.copy(bigger, 0, 0, len);
        procBuf = bigger;
      }
      const n = readSync(fd, procBuf, len, procBuf.length - len, null);
      if (n === 0) return procBuf.subarray(0, len);
      len += n;
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * Whether `environ` (a `/proc/<pid>/environ`: `NAME=value` entries, each ended by a NUL) holds the entry `entry`
 * exactly, searched in the bytes (no string per process: the sweep reads every process's environment after each
 * agent and gate). Pure.
 */
export function environHolds(environ: Buffer, entry: Buffer): boolean {
  for (let at = environ.indexOf(entry); at >= 0; at = environ.indexOf(entry, at + 1)) {
    const end = at + entry.length;
    if ((at === 0 || environ[at - 1] === 0) && (end === environ.length || environ[end] === 0)) return true;
  }
  return false;
}

/**
 * Whether a member of group `pgid` carries `name=value` in its environment (`/proc/<pid>/environ`): the proof that a
 * group recorded in a run record is that run's agent and not an unrelated group that now has the number, or that a
 * hostile record names. False without /proc.
 */
export function groupCarriesEnv(pgid: number, name: string, value: string): boolean {
  const needle = `${name}=${value}`;
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return false;
  }
  for (const n of names) {
    if (!/^\d+$/.test(n)) continue;
    try {
      const stat = readFileSync(`/proc/${n}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]) !== pgid) continue;
      if (environHolds(readProcFile(`/proc/${n}/environ`), Buffer.from(needle, 'latin1'))) return true;
    } catch {
      // gone, or another user's
    }
  }
  return false;
}

/**
 * Ends every process marked with `name=value` (see {@link processesWithEnv}): SIGTERM, then SIGKILL after
 * `graceMs` for those left, then waits (at most 30 s) for them to go; then looks again, since a marked process may
 * have started another between the look and its end (at most three rounds). Returns the pids that were found.
 */
export async function endMarkedProcesses(name: string, value: string, graceMs: number): Promise<number[]> {
  const want = Buffer.from(`${name}=${value}`, 'latin1');
  const all: number[] = [];
  for (let round = 0; round < 3; round++) {
    const fresh = (await markedProcesses(want)).filter((pid) => !all.includes(pid));
    if (!fresh.length) break;
    all.push(...fresh);
    await endPids(fresh, graceMs);
  }
  return all;
}

/** The pids whose environment holds `want`, reading again those caught in the middle of an `exec`. */
async function markedProcesses(want: Buffer): Promise<number[]> {
  const { found, unsure } = sweepEnv(want);
  // The new image has its environment microseconds to a few ms after the look; one that stays empty is given up
  // after about 100 ms.
  for (let round = 0; unsure.length && round < 20; round++) {
    await delay(5);
    unsure.splice(0, unsure.length, ...rereadEnv(unsure, want, found));
  }
  return found;
}

/** SIGTERM to `pids`, SIGKILL after `graceMs` to those left, then a wait of at most 30 s for them to go. */
async function endPids(pids: readonly number[], graceMs: number): Promise<void> {
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
    } catch {
      return false;
    }
  };
  const kill = (pid: number, sig: NodeJS.Signals) => {
    try {
      process.kill(pid, sig);
    } catch {
      // gone
    }
  };
  for (const pid of pids) kill(pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (pids.some(alive) && Date.now() < deadline) await delay(20);
  for (const pid of pids.filter(alive)) kill(pid, 'SIGKILL');
  const hard = Date.now() + KILLED_EXIT_WAIT_MS;
  while (pids.some(alive) && Date.now() < hard) await delay(10);
}
