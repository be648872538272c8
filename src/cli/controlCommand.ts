import type { Command } from 'commander';
import { pauseRun, resumeRun, stopRun, type ControlAnswer } from '../core/control/runControl';
import { resolveFolder } from './folder';
import { printResult, runReporting } from './jsonResult';

const VERBS: {
  name: 'pause' | 'resume' | 'stop';
  what: string;
  run: (folder: string, runId?: string) => Promise<ControlAnswer>;
  done: string;
}[] = [
  {
    name: 'pause',
    what: 'Pause a run: creates <run dir>/PAUSE (the run waits before its next iteration)',
    run: pauseRun,
    done: 'Paused',
  },
  {
    name: 'resume',
    what: 'Resume a paused run: removes <run dir>/PAUSE (and, for our runs, scripts/ralph/PAUSE)',
    run: resumeRun,
    done: 'Resumed',
  },
  {
    name: 'stop',
    what: 'Stop a run: creates <run dir>/STOP (the run stops before its next iteration; the file is kept for audit)',
    run: stopRun,
    done: 'Stop requested for',
  },
];

/**
 * `ralph pause|resume|stop [--run ID] [--json]` for flow-next runs (`scripts/ralph/runs/<id>/`) and ours
 * (`.ralph/runs/<id>/`), with flowctl's auto-detection and JSON (seed-systems.md §2.7).
 */
export function registerControlCommands(program: Command): void {
  for (const v of VERBS) {
    program
      .command(v.name)
      .description(v.what)
      .option('--run <id>', 'the run (default: the single active run)')
      .option(
        '--json',
        `print {"success":true,"run":"<id>","action":"${v.name === 'pause' ? 'paused' : v.name === 'resume' ? 'resumed' : 'stop_requested'}"}`,
      )
      .addHelpText(
        'after',
        '\nExit codes: 0 done; 1 no active run, several active runs (use --run), or --run not active; 2 usage.',
      )
      .action(async (opts: { run?: string; json?: boolean }, cmd: Command) => {
        const folder = resolveFolder(cmd);
        await runReporting(!!opts.json, async () => {
          const a = await v.run(folder, opts.run);
          printResult(!!opts.json, { success: a.success, run: a.run, action: a.action }, `${v.done} run ${a.run}`);
        });
      });
  }
}
