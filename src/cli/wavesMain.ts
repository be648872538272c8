import * as path from 'node:path';
import { isValidId } from '../core/waves/checkpoint';
import { PHASE_ID } from '../core/waves/pass';
import type { WavesCheckArgs } from './fastArgs';
import { resolveFolderFrom } from './folder';
import { endQuietlyOnBrokenPipe, reportFailure } from './jsonResult';
import { runWavesCheck } from './wavesAction';

/**
 * dist/cli-waves.js: `ralph [-C dir] waves check …` in its plain forms (a whole pass as one small process),
 * loaded by the small entry (src/cli/entry.ts) when {@link matchWavesCheck} read the command line. No commander:
 * the values are checked here as the command's definition (src/cli/wavesCommand.ts) checks them, and a value it would
 * refuse sends the whole command line to the full program (dist/cli-main.js), which prints the usage error. Failures
 * end as the full program's do (`reportFailure`), so output and exit codes are the same either way
 * (test/component/waves/wavesCli.test.ts).
 */
export async function main(argv: string[], args: WavesCheckArgs): Promise<void> {
  if (!PHASE_ID.test(args.phase) || (args.wave !== undefined && !isValidId(args.wave))) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const full = require(path.join(__dirname, 'cli-main.js')) as { main: (argv: string[]) => Promise<void> };
    await full.main(argv);
    return;
  }
  // One pass creates its new briefs on libuv's threads while it reads the wave (check.ts `pipelineBriefs`). Creates in
  // one folder serialize in the kernel, so more than one thread only contends (more CPU, no less time: four threads,
  // the default, cost ~10 % more CPU than one in paired runs). Read when the pool starts, i.e. at the first
  // asynchronous file operation, which is after this; a value set by the user is kept. `--watch` keeps the default.
  if (!args.watch) process.env.UV_THREADPOOL_SIZE ??= '1';
  // Not installed up front: building process.stdout / process.stderr is a few ms, and one pass prints with
  // writeStdoutSync; runWavesCheck installs it before a watch or an error writes to a stream.
  try {
    const folder = resolveFolderFrom(args.cwd, args.json);
    await runWavesCheck(folder, {
      phase: args.phase,
      ...(args.wave !== undefined ? { wave: args.wave } : {}),
      root: args.root,
      ...(args.json ? { json: true } : {}),
      ...(args.watch ? { watch: true } : {}),
      ...(args.orphanAfterMs !== undefined ? { orphanAfterMs: Number(args.orphanAfterMs) } : {}),
      ...(args.inactiveAfterMs !== undefined ? { inactiveAfterMs: Number(args.inactiveAfterMs) } : {}),
    });
  } catch (err) {
    endQuietlyOnBrokenPipe();
    reportFailure(err);
  }
}
