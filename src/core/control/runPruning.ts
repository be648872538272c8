import { createReadStream, createWriteStream, readdirSync, rmSync, statSync, unlinkSync } from 'node:fs';
import * as path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { FINAL_RUN_STATES } from '../model/runRecord';
import { ralphFile } from '../model/ralphPaths';
import { listRunRecords } from './runRecords';

/** One run folder as the pruning decision sees it. */
export interface RunFolderFacts {
  runId: string;
  /** The run has ended (run.json final): its files may be compressed or removed. */
  finished: boolean;
  /** Bytes on disk of the whole folder. */
  bytes: number;
}

/** Defaults of `keepRuns` / `runsMaxMb` (1.3 GB for one 60-iteration run). */
export const DEFAULT_KEEP_RUNS = 20;
export const DEFAULT_RUNS_MAX_MB = 1024;

/**
 * Which finished runs to delete (pure). `runs` newest first (run ids sort by start). Never an unfinished run (the
 * active run's files are never deleted, nor those of a run another process is driving). Keeps the newest
 * `keepRuns` finished runs, then deletes the oldest finished ones while the total is above `maxBytes`, keeping the
 * newest finished run in any case. Returns the run ids to delete, oldest first.
 */
export function planRunPruning(
  runs: readonly RunFolderFacts[],
  opts: { keepRuns: number; maxBytes: number },
): string[] {
  const finished = runs.filter((r) => r.finished);
  const remove = new Set(finished.slice(Math.max(opts.keepRuns, 1)).map((r) => r.runId));
  let total = runs.reduce((n, r) => n + (remove.has(r.runId) ? 0 : r.bytes), 0);
  for (let i = finished.length - 1; i >= 1 && total > opts.maxBytes; i--) {
    const r = finished[i]!;
    if (remove.has(r.runId)) continue;
    remove.add(r.runId);
    total -= r.bytes;
  }
  return finished
    .filter((r) => remove.has(r.runId))
    .map((r) => r.runId)
    .reverse();
}

function folderBytes(dir: string): number {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) n += folderBytes(p);
    else if (e.isFile()) n += statSync(p).size;
  }
  return n;
}

/**
 * Keeps `.ralph/runs/` bounded: compresses the raw agent streams (`iter-NNN.jsonl` → `.jsonl.gz`) of
 * finished runs, then deletes finished runs as {@link planRunPruning} decides. Runs that are not finished (the
 * active one included) and folders without a valid run.json are never touched. Returns what it did.
 */
export async function pruneRuns(
  folder: string,
  opts: { keepRuns?: number; runsMaxMb?: number } = {},
): Promise<{ compressed: string[]; removed: string[] }> {
  const { records } = listRunRecords(folder);
  const compressed: string[] = [];
  const facts: RunFolderFacts[] = [];
  for (const { dir, record } of [...records].sort((a, b) => (a.record.runId < b.record.runId ? 1 : -1))) {
    const finished = FINAL_RUN_STATES.includes(record.state);
    if (finished) {
      for (const name of readdirSync(dir)) {
        if (!/^iter-\d+\.jsonl$/.test(name)) continue;
        const file = path.join(dir, name);
        await pipeline(createReadStream(file), createGzip(), createWriteStream(`${file}.gz`));
        unlinkSync(file);
        compressed.push(path.relative(folder, file));
      }
    }
    facts.push({ runId: record.runId, finished, bytes: folderBytes(dir) });
  }
  const removed = planRunPruning(facts, {
    keepRuns: opts.keepRuns ?? DEFAULT_KEEP_RUNS,
    maxBytes: (opts.runsMaxMb ?? DEFAULT_RUNS_MAX_MB) * 1024 * 1024,
  });
  for (const id of removed) rmSync(path.join(ralphFile(folder, 'runs'), id), { recursive: true, force: true });
  return { compressed, removed };
}
