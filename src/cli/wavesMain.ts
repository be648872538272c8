import { baseProgram, runProgram } from './program';
import { registerWavesCommand } from './wavesCommand';

/**
 * dist/cli-waves.js: `ralph [-C dir] waves check …` (issue 18's one pass as a whole process), loaded by the small
 * entry (src/cli/entry.ts, see {@link matchWavesCheck}) instead of the full program: the same commander
 * definition of the command (src/cli/wavesCommand.ts) on the same base program, without every other command's
 * modules to compile and initialise. Help goes to the full program.
 */
export async function main(argv: string[]): Promise<void> {
  const program = baseProgram();
  registerWavesCommand(program);
  await runProgram(program, argv);
}
