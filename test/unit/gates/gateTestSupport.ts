import * as fs from 'node:fs';
import * as path from 'node:path';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

export type { TempFolder } from '../../support/tempFolder';

/** A temporary workspace folder with `.ralph/`; `dispose` removes it. */
export function tempFolder(prefix = 'ralph-gates-'): TempFolder {
  const folder = makeTempFolder(prefix);
  fs.mkdirSync(path.join(folder.dir, '.ralph'));
  return folder;
}

/**
 * Pids of the processes of group `pgid` that can still run (zombies excluded), read from /proc; on a system
 * without /proc, `[pgid]` while `kill(-pgid, 0)` succeeds.
 */
export function liveGroupMembers(pgid: number): number[] {
  let names: string[];
  try {
    names = fs.readdirSync('/proc');
  } catch {
    try {
      process.kill(-pgid, 0);
      return [pgid];
    } catch {
      return [];
    }
  }
  const out: number[] = [];
  for (const n of names) {
    if (!/^\d+$/.test(n)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${n}/stat`, 'utf8');
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(rest[2]) === pgid && rest[0] !== 'Z') out.push(Number(n));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** Resolves once `file` exists (the command under test touches it when it has started). */
export async function waitForFile(file: string): Promise<void> {
  while (!fs.existsSync(file)) await new Promise((r) => setTimeout(r, 20));
}
