import { statSync } from 'node:fs';
import * as path from 'node:path';
import { isTaskCommand, isWavesCheck, matchFastCommand, matchWavesCheck, type WavesCheckArgs } from './fastArgs';
import { writeStdoutSync } from './brokenPipe';
import { workspaceRoot } from '../core/store/workspaceRoot';
import { resolveActor } from '../core/sources/actor';
import {
  buildKey,
  readSnapshot,
  snapshotEnvKey,
  snapshotsEnabled,
  type SnapshotKey,
} from '../core/store/snapshotCache';
import type { runFast } from './readEntry';

/**
 * dist/cli.js, the `ralph` entry, kept tiny (no schemas, no readers): `ralph [-C dir] status|next [--json]` is
 * answered here from the snapshot cache (core/store/snapshotCache.ts) when nothing it read has changed; otherwise the
 * commands bots poll (`status`, `next`, see {@link matchFastCommand}) load dist/cli-read.js (src/cli/readEntry.ts,
 * no commander, engine or agents), which computes the answer and stores it with the inputs the command names; `waves check` in its plain forms
 * loads dist/cli-waves.js (src/cli/wavesMain.ts, that command alone, no commander); `task start|done|block|reset` loads
 * dist/cli-task.js (src/cli/taskMain.ts, the `task` command alone); every other command line loads the full program (dist/cli-main.js, src/cli/main.ts), which owns usage errors and help. Same output and
 * exit codes every way (test/component/cli/botParity.test.ts, test/component/cli/snapshotCache.test.ts).
 */
export async function entry(argv: string[]): Promise<void> {
  const fast = matchFastCommand(argv.slice(2));
  if (!fast) {
    // Runtime paths, so esbuild keeps each program in its own file, loaded only here. `waves check` in its plain
    // forms has a program of its own, without commander; everything else the full one.
    const waves = isWavesCheck(argv.slice(2)) ? matchWavesCheck(argv.slice(2)) : undefined;
    if (waves) {
      /* eslint-disable @typescript-eslint/no-require-imports */
      await (
        require(path.join(__dirname, 'cli-waves.js')) as {
          main: (argv: string[], args: WavesCheckArgs) => Promise<void>;
        }
      ).main(argv, waves);
      /* eslint-enable @typescript-eslint/no-require-imports */
      return;
    }
    const program = isTaskCommand(argv.slice(2)) ? 'cli-task.js' : 'cli-main.js';
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const full = require(path.join(__dirname, program)) as { main: (argv: string[]) => Promise<void> };
    await full.main(argv);
    return;
  }
  const readBundle = path.join(__dirname, 'cli-read.js');
  let key: SnapshotKey | undefined;
  let actor: string | undefined;
  const folder = snapshotsEnabled() ? quickFolder(fast.cwd) : undefined;
  if (folder !== undefined) {
    // `next` answers for an actor (FLOW_ACTOR, else git's user.email / user.name from git's own config files), so the
    // actor is part of its key and handed down; the answer is stored per output form.
    if (fast.command === 'next') actor = resolveActor(folder);
    const command = fast.command === 'status' ? 'status' : fast.json ? 'next-json' : 'next-text';
    key = {
      folder,
      command,
      build: buildKey([__filename, readBundle]),
      env: snapshotEnvKey() + (actor !== undefined ? `\0actor=${actor}` : ''),
    };
    const found = readSnapshot(key);
    const out = found.answer?.outputs[fast.command === 'next' ? 'out' : fast.json ? 'json' : 'text'];
    if (found.answer && out !== undefined) {
      process.exitCode = found.answer.exitCode; // first: a broken pipe ends the process with it
      writeStdoutSync(out);
      return;
    }
  }
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const read = require(readBundle) as { runFast: typeof runFast };
  await read.runFast(fast, key ? { key, ...(actor !== undefined ? { actor } : {}) } : undefined);
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

// Run as the `ralph` bin. Required as a module (the component tests' in-process calls, test/support/cli.ts), it
// only exports `entry`: the same code path with the caller's argv.
if (require.main === module) void entry(process.argv);
