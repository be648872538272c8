import { Command, CommanderError } from 'commander';
import { registerDoctorCommand } from './doctorCommand';
import { endQuietlyOnBrokenPipe, reportFailure } from './jsonResult';
import { registerStatusCommand } from './statusCommand';
import { registerNextCommand } from './nextCommand';
import { registerTaskCommand } from './taskCommand';
import { registerStaleCommand } from './staleCommand';
import { registerControlCommands } from './controlCommand';
import { registerSessionCommand } from './sessionCommand';
import { registerRunCommand } from './runCommand';
import { registerWavesCommand } from './wavesCommand';
import { registerWatchCommand } from './watchCommand';
import { registerGateCommand } from './gateCommand';
import { registerGuardCommand } from './guardCommand';
import { registerAnswerCommand } from './answerCommand';
import { registerTrustCommand } from './trustCommand';

declare const RALPH_VERSION: string | undefined;

/**
 * The `ralph` CLI: the terminal face of the same core the extension uses. Every command reads and writes
 * the files under the workspace folder (`--cwd`, default the current directory), so the CLI, the extension
 * and a bot see the same state. Exit codes: 0 ok, 1 failure or not ready, 2 usage error (see README).
 */
export function buildProgram(): Command {
  const program = new Command('ralph')
    .description('Run, watch and steer Ralph loops (autonomous coding-agent loops)')
    .version(typeof RALPH_VERSION === 'string' ? RALPH_VERSION : '0.0.0-dev')
    .option('-C, --cwd <dir>', 'workspace folder to work on (default: the current directory)')
    .showHelpAfterError()
    .exitOverride();
  registerDoctorCommand(program);
  registerStatusCommand(program);
  registerNextCommand(program);
  registerTaskCommand(program);
  registerStaleCommand(program);
  registerControlCommands(program);
  registerSessionCommand(program);
  registerRunCommand(program);
  registerWavesCommand(program);
  registerWatchCommand(program);
  registerGateCommand(program);
  registerGuardCommand(program);
  registerAnswerCommand(program);
  registerTrustCommand(program);
  return program;
}

/** Runs the full program (commander) on `argv` (`process.argv`); dist/cli.js hands every command but the fast ones here. */
export async function main(argv: string[]): Promise<void> {
  endQuietlyOnBrokenPipe();
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      // Usage errors exit 2, except where a command reserves 2 for an outcome (`ralph run`: 64).
      process.exitCode = err.exitCode === 0 ? 0 : err.exitCode === 64 ? 64 : 2;
      return;
    }
    reportFailure(err);
  }
}

if (require.main === module) void main(process.argv);
