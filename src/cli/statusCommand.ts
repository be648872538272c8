import type { Command } from 'commander';
import { formatStatusText, loadStatusBasis } from '../core/control/status';
import { composeStatus } from '../core/control/statusCompose';
import { resolveFolder } from './folder';
import { jsonDocument } from './jsonResult';
import { escapeControls } from '../core/control/terminalText';
import { answerInputs } from '../core/control/answerInputs';
import { writeSnapshot, type SnapshotKey } from '../core/store/snapshotCache';
import { writeOut } from './terminalOut';
import { withListings } from '../core/store/readJsonFile';

/** A status or next answer to store in the answer cache (src/cli/entry.ts looked it up and missed). */
export interface AnswerToStore {
  key: SnapshotKey;
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
 * The body of `ralph status`: the snapshot as indented JSON or text; exit 0. With `store`, both forms are stored in
 * the answer cache (core/store/snapshotCache.ts) with the inputs status names (control/answerInputs.ts) when the
 * answer is a function of files alone: no runs and no waves (their state depends on live processes and the clock),
 * and the folder the one the entry keyed it by.
 */
export function printStatus(folder: string, json: boolean, store?: AnswerToStore): void {
  const sinceMs = Date.now();
  withListings(() => {
    const { basis } = loadStatusBasis(folder);
    const snapshot = composeStatus(basis);
    const jsonOut = json || store ? jsonDocument(snapshot) : '';
    const textOut = !json || store ? escapeControls(formatStatusText(snapshot)) : '';
    writeOut(json ? jsonOut : textOut);
    process.exitCode = 0;
    const fileOnly = !snapshot.runs.length && !snapshot.recent_runs.length && !snapshot.waves.length;
    if (store && fileOnly && folder === store.key.folder)
      writeSnapshot(
        store.key,
        answerInputs(folder),
        { outputs: { json: jsonOut, text: textOut }, exitCode: 0 },
        sinceMs,
      );
  });
}
