import { Command, CommanderError } from 'commander';
import { endQuietlyOnBrokenPipe, reportFailure } from './jsonResult';

declare const RALPH_VERSION: string | undefined;

/**
 * The `ralph` program without its commands: name, description, version, the global `-C/--cwd` option, help after
 * an error, no `process.exit` from commander. The full program (src/cli/main.ts) and the one-command programs of
 * the small bundles (src/cli/wavesMain.ts) start from it, so usage errors and help read the same from either.
 */
export function baseProgram(): Command {
  return new Command('ralph')
    .description('Run, watch and steer Ralph loops (autonomous coding-agent loops)')
    .version(typeof RALPH_VERSION === 'string' ? RALPH_VERSION : '0.0.0-dev')
    .option('-C, --cwd <dir>', 'workspace folder to work on (default: the current directory)')
    .showHelpAfterError()
    .exitOverride();
}

/**
 * Runs `program` on `argv` (`process.argv`): usage errors exit 2 (except where a command reserves 2 for an
 * outcome: `ralph run` uses 64), other failures through {@link reportFailure}; a vanished reader ends quietly.
 */
export async function runProgram(program: Command, argv: string[]): Promise<void> {
  endQuietlyOnBrokenPipe();
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      process.exitCode = err.exitCode === 0 ? 0 : err.exitCode === 64 ? 64 : 2;
      return;
    }
    reportFailure(err);
  }
}
