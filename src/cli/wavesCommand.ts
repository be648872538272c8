import { InvalidArgumentError, type Command } from 'commander';
import { isValidId } from '../core/waves/checkpoint';
import { DEFAULT_WINDOWS } from '../core/waves/classify';
import { PHASE_ID } from '../core/waves/pass';
import { resolveFolder } from './folder';
import { runWavesCheck, type WavesCheckOptions } from './wavesAction';

export { exitCodeOf } from './wavesAction';

function msOption(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('expected a whole number of milliseconds ≥ 0');
  return n;
}

/**
 * `ralph waves check --phase <p> [--wave <id>] [--root <dir>…] [--json] [--watch]`: IJFW's ralph-loop-runner as a
 * program (seed-systems.md §1.2). One pass: orphans get resume briefs under `.planning/<phase>/`, the pass is appended
 * to `.planning/<phase>/RALPH-LOG.md`, the gate result goes to stdout. Exit 0 PASS / NOTE, 1 MEDIUM, 2 usage (an
 * invalid id, a wave or root that does not exist). `--watch` re-checks on every `.ijfw/` change and when a subagent
 * crosses its orphan window, until interrupted.
 */
export function registerWavesCommand(program: Command): void {
  const waves = program
    .command('waves')
    .description('IJFW waves: find truncated subagents, write resume briefs, keep RALPH-LOG.md');
  waves
    .command('check')
    .description('One recovery pass over a wave (the most recently modified .ijfw/wave-<id>/ unless --wave)')
    .requiredOption('--phase <phase>', 'phase: briefs and the log go to .planning/<phase>/', (v) => {
      if (!PHASE_ID.test(v))
        throw new InvalidArgumentError("expected letters, digits, '.', '_' or '-' (at most 64, not starting with '.')");
      return v;
    })
    .option('--wave <id>', 'wave id (matches ^[A-Za-z0-9_-]{1,64}$)', (v) => {
      if (!isValidId(v)) throw new InvalidArgumentError('expected an id matching ^[A-Za-z0-9_-]{1,64}$');
      return v;
    })
    .option(
      '--root <dir>',
      'an extra worktree root whose .ijfw/ checkpoints are read too (repeatable)',
      (v: string, acc: string[]) => [...acc, v],
      [] as string[],
    )
    .option(
      '--orphan-after-ms <ms>',
      `checkpoint age after which a sub without DONE may be an orphan (default: config waves.orphanAfterMs, else ${DEFAULT_WINDOWS.orphanAfterMs})`,
      msOption,
    )
    .option(
      '--inactive-after-ms <ms>',
      `…when its last activity is older than this (default: config waves.inactiveAfterMs, else ${DEFAULT_WINDOWS.inactiveAfterMs})`,
      msOption,
    )
    .option(
      '--json',
      'print the gate result as JSON: {success, severity, findings:[{subId, disposition, checkpoint_age_ms, next_step, brief_path}], wave_id, phase, wave, log_path, briefs_written, gate_result, problems}',
    )
    .option(
      '--watch',
      're-check on every checkpoint, events or STATE.md change and when a subagent crosses its orphan window, until interrupted (one result per pass that changed)',
    )
    .addHelpText(
      'after',
      '\nExit codes: 0 PASS or NOTE, 1 MEDIUM (a STALE orphan), 2 usage (bad id, unknown wave or root).\nNever modifies a checkpoint and never dispatches: it suggests `ralph run --source <brief>`.',
    )
    .action(async (opts: WavesCheckOptions, cmd: Command) => runWavesCheck(resolveFolder(cmd), opts));
}
