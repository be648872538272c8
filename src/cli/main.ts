import type { Command } from 'commander';
import { baseProgram, runProgram } from './program';
import { registerDoctorCommand } from './doctorCommand';
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
import { registerWorkerCommand } from './workerCommand';

/**
 * The `ralph` CLI: the terminal face of the same core the extension uses. Every command reads and writes
 * the files under the workspace folder (`--cwd`, default the current directory), so the CLI, the extension
 * and a bot see the same state. Exit codes: 0 ok, 1 failure or not ready, 2 usage error (docs/cli.md).
 */
export function buildProgram(): Command {
  const program = baseProgram();
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
  registerWorkerCommand(program);
  return program;
}

/** Runs the full program (commander) on `argv` (`process.argv`); dist/cli.js hands every command but the fast ones here. */
export async function main(argv: string[]): Promise<void> {
  await runProgram(buildProgram(), argv);
}

if (require.main === module) void main(process.argv);
