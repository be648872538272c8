import type { FastCommand } from './fastArgs';
import { resolveFolderFrom } from './folder';
import { endQuietlyOnBrokenPipe, reportFailure } from './jsonResult';
import { printNext } from './nextCommand';
import { printStatus, type SnapshotRecording } from './statusCommand';
import { useKnownStats } from '../core/store/parseCache';

/**
 * dist/cli-read.js: the commands bots poll (`status`, `next`), loaded by the small entry (src/cli/entry.ts) when
 * the snapshot cache cannot answer; a bundle without commander, the loop engine, the agents and the process
 * libraries. `recorded`: status is computed while the entry records its reads, and its answer is stored.
 */
export async function runFast(fast: FastCommand, recorded?: SnapshotRecording): Promise<void> {
  endQuietlyOnBrokenPipe();
  // Files the entry's snapshot lookup found unchanged are served from the parse cache without a second stat; the
  // recording counts them as read (they are inputs of the new answer).
  if (recorded?.known) useKnownStats(recorded.known, (file) => recorded.recording.paths.add(file));
  try {
    const folder = resolveFolderFrom(fast.cwd, fast.json);
    if (fast.command === 'status') printStatus(folder, fast.json, recorded);
    else
      await printNext(
        folder,
        { json: fast.json, ...(recorded?.actor !== undefined ? { actor: recorded.actor } : {}) },
        recorded,
      );
  } catch (err) {
    reportFailure(err);
  } finally {
    recorded?.recording.stop();
    useKnownStats(undefined);
  }
}
