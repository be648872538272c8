import { InvalidArgumentError, type Command } from 'commander';
import { loadConfig } from '../core/store/loadConfig';
import { isValidId } from '../core/waves/checkpoint';
import { DEFAULT_WINDOWS } from '../core/waves/classify';
import { checkWave, formatCheckText, resolveRoots, type WaveCheckResult } from '../core/waves/check';
import { PHASE_ID } from '../core/waves/pass';
import { WaveError } from '../core/waves/readWave';
import { resolveFolder } from './folder';

interface WavesCheckOptions {
  phase: string;
  wave?: string;
  root: string[];
  json?: boolean;
  watch?: boolean;
  orphanAfterMs?: number;
  inactiveAfterMs?: number;
}

function msOption(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('expected a whole number of milliseconds ≥ 0');
  return n;
}

/** Exit code of a pass: 0 for PASS and NOTE, 1 for MEDIUM (a STALE orphan). */
export function exitCodeOf(r: Pick<WaveCheckResult, 'severity'>): number {
  return r.severity === 'MEDIUM' ? 1 : 0;
}

/**
 * `ralph waves check --phase <p> [--wave <id>] [--root <dir>…] [--json] [--watch]`: IJFW's ralph-loop-runner as a
 * program (seed-systems.md §1.2). One pass: orphans get resume briefs under `.planning/<phase>/`, the pass is appended
 * to `.planning/<phase>/RALPH-LOG.md`, the gate result goes to stdout. Exit 0 PASS / NOTE, 1 MEDIUM, 2 usage (an
 * invalid id, a wave or root that does not exist). `--watch` re-checks on every `.ijfw/` change and when a subagent
 * crosses its orphan window, until interrupted.
 */
export function registerWavesCommand(program: Command): void {
  const waves = program.command('waves').description('IJFW waves: find truncated subagents, write resume briefs, keep RALPH-LOG.md');
  waves
    .command('check')
    .description('One recovery pass over a wave (the most recently modified .ijfw/wave-<id>/ unless --wave)')
    .requiredOption('--phase <phase>', 'phase: briefs and the log go to .planning/<phase>/', (v) => {
      if (!PHASE_ID.test(v)) throw new InvalidArgumentError("expected letters, digits, '.', '_' or '-' (at most 64, not starting with '.')");
      return v;
    })
    .option('--wave <id>', 'wave id (matches ^[A-Za-z0-9_-]{1,64}$)', (v) => {
      if (!isValidId(v)) throw new InvalidArgumentError('expected an id matching ^[A-Za-z0-9_-]{1,64}$');
      return v;
    })
    .option('--root <dir>', 'an extra worktree root whose .ijfw/ checkpoints are read too (repeatable)', (v: string, acc: string[]) => [...acc, v], [] as string[])
    .option('--orphan-after-ms <ms>', `checkpoint age after which a sub without DONE may be an orphan (default: config waves.orphanAfterMs, else ${DEFAULT_WINDOWS.orphanAfterMs})`, msOption)
    .option('--inactive-after-ms <ms>', `…when its last activity is older than this (default: config waves.inactiveAfterMs, else ${DEFAULT_WINDOWS.inactiveAfterMs})`, msOption)
    .option('--json', 'print the gate result as JSON: {success, severity, findings:[{subId, disposition, checkpoint_age_ms, next_step, brief_path}], wave_id, phase, wave, log_path, briefs_written, gate_result, problems}')
    .option('--watch', 're-check on every checkpoint, events or STATE.md change and when a subagent crosses its orphan window, until interrupted (one result per pass that changed)')
    .addHelpText('after', '\nExit codes: 0 PASS or NOTE, 1 MEDIUM (a STALE orphan), 2 usage (bad id, unknown wave or root).\nNever modifies a checkpoint and never dispatches: it suggests `ralph run --source <brief>`.')
    .action(async (opts: WavesCheckOptions, cmd: Command) => {
      const folder = resolveFolder(cmd);
      // Flags > `waves` of .ralph/config.json > IJFW's 60 s / 90 s.
      const configured = (await loadConfig(folder)).waves;
      const windows = {
        orphanAfterMs: opts.orphanAfterMs ?? configured.orphanAfterMs ?? DEFAULT_WINDOWS.orphanAfterMs,
        inactiveAfterMs: opts.inactiveAfterMs ?? configured.inactiveAfterMs ?? DEFAULT_WINDOWS.inactiveAfterMs,
      };
      const print = (r: WaveCheckResult) => process.stdout.write(opts.json ? JSON.stringify(r) + '\n' : formatCheckText(r));
      try {
        const roots = resolveRoots(folder, opts.root).slice(1);
        const pass = (unlessSameAs?: string) => checkWave({ folder, phase: opts.phase, waveId: opts.wave, roots, windows, unlessSameAs });
        let last = await pass();
        print(last);
        process.exitCode = exitCodeOf(last);
        if (!opts.watch) return;
        await watchWaves(folder, roots, opts.wave, windows, async () => {
          const r = await pass(last.pass_key);
          if (!r.logged) return;
          last = r;
          print(r);
          process.exitCode = exitCodeOf(r);
        });
      } catch (err) {
        if (!(err instanceof WaveError)) throw err;
        if (opts.json) process.stdout.write(JSON.stringify({ success: false, error: err.message }) + '\n');
        else process.stderr.write(`ralph: ${err.message}\n`);
        process.exitCode = 2;
      }
    });
}

/** Runs `pass` after every monitor update (file event or orphan-window timer), one at a time, until SIGINT / SIGTERM. */
async function watchWaves(folder: string, roots: string[], waveId: string | undefined, windows: { orphanAfterMs: number; inactiveAfterMs: number }, pass: () => Promise<void>): Promise<void> {
  // Loaded only for --watch: one pass needs no file watcher (chokidar).
  const { WaveMonitor } = await import('../core/waves/monitor');
  const monitor = new WaveMonitor({ folder, roots, waveId, windows });
  let running: Promise<void> = Promise.resolve();
  let again = false;
  let busy = false;
  const trigger = () => {
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    running = (async () => {
      do {
        again = false;
        await pass().catch((err: Error) => process.stderr.write(`ralph: ${err.message}\n`));
      } while (again);
      busy = false;
    })();
  };
  monitor.on('update', (u) => {
    if (u.reason !== 'initial') trigger();
  });
  monitor.on('error', (err) => process.stderr.write(`ralph: ${err.message}\n`));
  await monitor.start();
  await new Promise<void>((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  await monitor.close();
  await running;
}
