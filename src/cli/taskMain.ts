import { baseProgram, runProgram } from './program';
import { registerTaskCommand } from './taskCommand';

/**
 * dist/cli-task.js: `ralph [-C dir] task start|done|block|reset …` (the commands bots change tasks with),
 * loaded by the small entry (src/cli/entry.ts, see `isTaskCommand` in src/cli/fastArgs.ts) instead of the full
 * program: the same commander definition of the command (src/cli/taskCommand.ts) on the same base program, without
 * every other command's modules (the loop engine, the agents, execa) to read, compile and initialise. Help and
 * `--version` go to the full program.
 */
export async function main(argv: string[]): Promise<void> {
  const program = baseProgram();
  registerTaskCommand(program);
  await runProgram(program, argv);
}
