import { loadConfig } from '../core/store/loadConfig';
import { DEFAULT_WINDOWS } from '../core/waves/classify';
import { checkWave, formatCheckText, resolveRoots, type WaveCheckResult } from '../core/waves/check';
import { WaveError } from '../core/waves/readWave';
import { endQuietlyOnBrokenPipe, writeStdoutSync } from './brokenPipe';
import { writeOut, writeErr } from './terminalOut';

/**
 * The body of `ralph waves check` without commander (src/cli/wavesCommand.ts defines the command line; the small
 * entry's fast path, src/cli/wavesMain.ts, reads the plain forms itself): one pass or `--watch`, printed as text or
 * JSON, exit code from the severity. Loads no commander, so dist/cli-waves.js does not carry it.
 */

/** The options of `ralph waves check` once read and checked (windows in ms). */
export interface WavesCheckOptions {
  phase: string;
  wave?: string;
  root: string[];
  json?: boolean;
  watch?: boolean;
  orphanAfterMs?: number;
  inactiveAfterMs?: number;
}

/** Exit code of a pass: 0 for PASS and NOTE, 1 for MEDIUM (a STALE orphan). */
export function exitCodeOf(r: Pick<WaveCheckResult, 'severity'>): number {
  return r.severity === 'MEDIUM' ? 1 : 0;
}

/**
 * Runs `ralph waves check` on the workspace `folder` (already resolved from `-C`): windows from the flags, else
 * `waves` of .ralph/config.json, else IJFW's 60 s / 90 s; prints each pass; sets `process.exitCode` (0 PASS / NOTE,
 * 1 MEDIUM, 2 for a {@link WaveError}: an invalid id, a wave or root that does not exist). With `watch`, re-checks on
 * every `.ijfw/` change and orphan-window crossing until SIGINT / SIGTERM. Installs {@link endQuietlyOnBrokenPipe}
 * before it writes to a stream (one pass writes fd 1 directly: {@link writeStdoutSync}). Other errors (a config file that does not
 * parse) are thrown to the caller's `reportFailure`.
 */
export async function runWavesCheck(folder: string, opts: WavesCheckOptions): Promise<void> {
  // Flags > `waves` of .ralph/config.json > IJFW's 60 s / 90 s.
  const configured = (await loadConfig(folder)).waves;
  const windows = {
    orphanAfterMs: opts.orphanAfterMs ?? configured.orphanAfterMs ?? DEFAULT_WINDOWS.orphanAfterMs,
    inactiveAfterMs: opts.inactiveAfterMs ?? configured.inactiveAfterMs ?? DEFAULT_WINDOWS.inactiveAfterMs,
  };
  const print = (r: WaveCheckResult) =>
    writeOut(opts.json ? JSON.stringify(r, null, opts.watch ? undefined : 2) + '\n' : formatCheckText(r));
  try {
    const roots = resolveRoots(folder, opts.root).slice(1);
    const pass = (unlessSameAs?: string) =>
      checkWave({ folder, phase: opts.phase, waveId: opts.wave, roots, windows, unlessSameAs });
    let last = await pass();
    if (!opts.watch) {
      // One pass prints once: straight to fd 1, without building process.stdout (a net.Socket for a pipe). The exit
      // code is set first, so a reader that went away ends the process with it (brokenPipe.ts).
      process.exitCode = exitCodeOf(last);
      writeStdoutSync(opts.json ? JSON.stringify(last, null, 2) + '\n' : formatCheckText(last));
      return;
    }
    endQuietlyOnBrokenPipe();
    print(last);
    process.exitCode = exitCodeOf(last);
    await watchWaves(folder, roots, opts.wave, windows, async () => {
      const r = await pass(last.pass_key);
      if (!r.logged) return;
      last = r;
      print(r);
      process.exitCode = exitCodeOf(r);
    });
  } catch (err) {
    if (!(err instanceof WaveError)) throw err;
    endQuietlyOnBrokenPipe();
    if (opts.json) writeOut(JSON.stringify({ success: false, error: err.message }, null, 2) + '\n');
    else writeErr(`ralph: ${err.message}\n`);
    process.exitCode = 2;
  }
}

/** Runs `pass` after every monitor update (file event or orphan-window timer), one at a time, until SIGINT / SIGTERM. */
async function watchWaves(
  folder: string,
  roots: string[],
  waveId: string | undefined,
  windows: { orphanAfterMs: number; inactiveAfterMs: number },
  pass: () => Promise<void>,
): Promise<void> {
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
        await pass().catch((err: Error) => writeErr(`ralph: ${err.message}\n`));
      } while (again);
      busy = false;
    })();
  };
  // The initial evaluation too: a checkpoint written after the first pass but before the watcher was ready has no
  // event of its own (the bench's first sample waited forever under load). A pass that decides what the last one
  // did writes and prints nothing, so this costs one read of the wave.
  monitor.on('update', () => trigger());
  monitor.on('error', (err) => writeErr(`ralph: ${err.message}\n`));
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
