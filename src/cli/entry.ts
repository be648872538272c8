import { statSync } from 'node:fs';
import * as path from 'node:path';
import { matchFastCommand } from './fastArgs';
import { endQuietlyOnBrokenPipe } from './brokenPipe';
import { workspaceRoot } from '../core/store/workspaceRoot';
import { cacheDir } from '../core/store/cacheDir';
import { buildKey, readSnapshot, recordFsReads, snapshotEnvKey, snapshotsEnabled, type SnapshotKey } from '../core/store/snapshotCache';
import type { runFast } from './readEntry';

/**
 * dist/cli.js, the `ralph` entry, kept tiny (no schemas, no readers): `ralph [-C dir] status [--json]` is answered
 * here from the snapshot cache (core/store/snapshotCache.ts) when nothing status read has changed; otherwise the
 * commands bots poll (`status`, `next`, see {@link matchFastCommand}) load dist/cli-read.js (src/cli/readEntry.ts,
 * no commander, engine or agents), which records what status reads and stores the answer; every other command line
 * loads the full program (dist/cli-main.js, src/cli/main.ts), which owns usage errors and help. Same output and
 * exit codes every way (test/component/cli/botParity.test.ts, test/component/cli/snapshotCache.test.ts).
 */
async function entry(argv: string[]): Promise<void> {
  const fast = matchFastCommand(argv.slice(2));
  if (!fast) {
    // A runtime path, so esbuild keeps the full program in its own file, loaded only here.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const full = require(path.join(__dirname, 'cli-main.js')) as { main: (argv: string[]) => Promise<void> };
    await full.main(argv);
    return;
  }
  const readBundle = path.join(__dirname, 'cli-read.js');
  let key: SnapshotKey | undefined;
  let changed: string | undefined;
  if (fast.command === 'status' && snapshotsEnabled()) {
    const folder = quickFolder(fast.cwd);
    if (folder !== undefined) {
      key = { folder, command: 'status', build: buildKey([__filename, readBundle]), env: snapshotEnvKey() };
      const found = readSnapshot(key);
      const out = found.answer?.outputs[fast.json ? 'json' : 'text'];
      if (found.answer && out !== undefined) {
        endQuietlyOnBrokenPipe();
        process.stdout.write(out);
        process.exitCode = found.answer.exitCode;
        return;
      }
      changed = found.changed;
    }
  }
  // Recording starts before the readers are loaded, so a library that copies `fs` at load time copies the wrappers.
  const recording = key ? recordFsReads([cacheDir(), __dirname]) : undefined;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const read = require(readBundle) as { runFast: typeof runFast };
  await read.runFast(fast, key && recording ? { key, recording, ...(changed !== undefined ? { changed } : {}) } : undefined);
}

/** The workspace folder of `-C` / the current directory (src/cli/folder.ts's rule), or `undefined` when it is not a folder (the full path reports that). */
function quickFolder(cwd: string | undefined): string | undefined {
  const start = path.resolve(cwd ?? process.cwd());
  try {
    if (!statSync(start).isDirectory()) return undefined;
  } catch {
    return undefined;
  }
  return workspaceRoot(start);
}

void entry(process.argv);
