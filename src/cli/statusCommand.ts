import type { Command } from 'commander';
import { buildStatus, formatStatusText } from '../core/control/status';
import { resolveFolder } from './folder';
import { jsonDocument } from './jsonResult';
import { escapeControls } from '../core/control/terminalText';

/** `ralph status [--json]`: task counts, progress, in-progress / blocked / last completed items, every run. Exit 0. */
export function registerStatusCommand(program: Command): void {
  program
    .command('status')
    .description('Show task counts of every source (flow-next, quantum-loop, checklists), progress and runs')
    .option('--json', "print flowctl's status JSON (epics/specs, tasks, runs) plus stories, checklists, progress, in_progress, last_completed, blocked, problems")
    .addHelpText('after', '\nExit codes: 0 always (file problems are listed under "problems"); 2 on a usage error.')
    .action((opts: { json?: boolean }, cmd: Command) => printStatus(resolveFolder(cmd), !!opts.json));
}

/** The body of `ralph status`: the snapshot (read through the parse cache) as indented JSON or text; exit 0. */
export function printStatus(folder: string, json: boolean): void {
  const snapshot = buildStatus(folder, { cached: true });
  process.stdout.write(json ? jsonDocument(snapshot) : escapeControls(formatStatusText(snapshot)));
  process.exitCode = 0;
}
