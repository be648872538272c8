import * as path from 'node:path';

/**
 * Folders of this process whose files are scratch: nothing reads them after a crash of this process or its machine,
 * so their writes skip fsync (a rename is still atomic for every reader while the machine runs). A `ralph worker`'s
 * lane trees and lane state are such (remote/worker.ts): a lane lost with its worker is failed and dispatched again
 * by the coordinator, which keeps the run's records, and the worker never reads a lane it did not run. A lane writes
 * run.json, its claims, baselines, handoff and gate files about forty times a story, each an fsync of the file and
 * of its folder (3 ms on this machine quiet, 100 ms and more under load) on the lane's path to its agent and result.
 * Empty (every write synced) unless a process marks a folder.
 */
const scratchRoots: string[] = [];

/** Marks folder `root` (and everything under it) as scratch for the rest of this process. */
export function markScratch(root: string): void {
  const r = path.resolve(root) + path.sep;
  if (!scratchRoots.includes(r)) scratchRoots.push(r);
}

/** Must a write of `file` reach the disk before it counts (fsync)? No only under a folder marked scratch. */
export function needsSync(file: string): boolean {
  if (!scratchRoots.length) return true;
  const f = path.resolve(file);
  return !scratchRoots.some((r) => f.startsWith(r));
}
