import * as path from 'node:path';
import { matchFastCommand } from './fastArgs';
import { resolveFolderFrom } from './folder';
import { endQuietlyOnBrokenPipe, reportFailure } from './jsonResult';
import { printNext } from './nextCommand';
import { printStatus } from './statusCommand';

/**
 * dist/cli.js, the `ralph` entry. The commands bots poll (`status`, `next`, see {@link matchFastCommand}) run here,
 * from a bundle without commander, the loop engine, the agents and the process libraries; every other command line
 * loads the full program (dist/cli-main.js, src/cli/main.ts), which owns usage errors and help. Same output and
 * exit codes either way (test/component/cli/botParity.test.ts).
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
  endQuietlyOnBrokenPipe();
  try {
    const folder = resolveFolderFrom(fast.cwd, fast.json);
    if (fast.command === 'status') printStatus(folder, fast.json);
    else await printNext(folder, { json: fast.json });
  } catch (err) {
    reportFailure(err);
  }
}

void entry(process.argv);
