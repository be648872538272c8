import type { Command } from 'commander';
import { formatStatusText, loadStatusBasis } from '../core/control/status';
import { composeStatus } from '../core/control/statusCompose';
import { resolveFolder } from './folder';
import { jsonDocument } from './jsonResult';
import { escapeControls } from '../core/control/terminalText';
import { writeSnapshot, type FsRecording, type KnownStat, type SnapshotKey } from '../core/store/snapshotCache';
import { writeOut } from './terminalOut';

/** A status or next answer computed while the small entry records the paths it reads (src/cli/entry.ts), to store it. */
export interface SnapshotRecording {
  key: SnapshotKey;
  recording: FsRecording;
  /** The input the entry's lookup found changed, if any (examined first when storing). */
  changed?: string;
  /**
   * The inputs the entry's lookup found unchanged, with their identity (size, mtime, inode): the parse cache serves
   * them without a `stat` of its own (store/parseCache.ts `useKnownStats`), so only the changed files are re-read.
   */
  known?: ReadonlyMap<string, KnownStat>;
  /** `next`: the actor the entry resolved (part of the key). */
  actor?: string;
}

/** `ralph status [--json]`: task counts, progress, in-progress / blocked / last completed items, every run. Exit 0. */
export function registerStatusCommand(program: Command): void {
  program
    .command('status')
    .description('Show task counts of every source (flow-next, quantum-loop, checklists), progress and runs')
    .option(
      '--json',
      "print flowctl's status JSON (epics/specs, tasks, runs) plus stories, checklists, progress, in_progress, last_completed, blocked, problems",
    )
    .addHelpText('after', '\nExit codes: 0 always (file problems are listed under "problems"); 2 on a usage error.')
    .action((opts: { json?: boolean }, cmd: Command) => printStatus(resolveFolder(cmd), !!opts.json));
}

/**
 * The body of `ralph status`: the snapshot (read through the parse cache) as indented JSON or text; exit 0. With
 * `recorded`, both forms are stored in the snapshot cache (core/store/snapshotCache.ts) when the answer is a
 * function of files alone: no runs and no waves (their state depends on live processes and the clock), the folder
 * the one the entry keyed it by, and no asynchronous read.
 */
export function printStatus(folder: string, json: boolean, recorded?: SnapshotRecording): void {
  const { basis } = loadStatusBasis(folder, { cached: true });
  const snapshot = composeStatus(basis);
  const jsonOut = json || recorded ? jsonDocument(snapshot) : '';
  const textOut = !json || recorded ? escapeControls(formatStatusText(snapshot)) : '';
  writeOut(json ? jsonOut : textOut);
  process.exitCode = 0;
  if (!recorded) return;
  recorded.recording.stop();
  const fileOnly = !snapshot.runs.length && !snapshot.recent_runs.length && !snapshot.waves.length;
  if (fileOnly && folder === recorded.key.folder && !recorded.recording.tainted) {
    writeSnapshot(
      recorded.key,
      recorded.recording.paths,
      { outputs: { json: jsonOut, text: textOut }, exitCode: 0 },
      recorded.changed !== undefined ? { checkFirst: recorded.changed } : {},
    );
  }
}
