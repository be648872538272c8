import * as os from 'node:os';

/** Whether a process id is alive on this host: signal 0 probes without touching it; EPERM means alive. */
export function isPidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** This machine's host name, full and short (`hostname -s`), for matching the host written in a run id/record. */
export function thisHostNames(): string[] {
  const h = os.hostname();
  return [...new Set([h, h.split('.')[0]!])];
}
