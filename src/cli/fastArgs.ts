/** A command line the small entry (src/cli/entry.ts) answers itself, without loading the full program. */
export interface FastCommand {
  command: 'status' | 'next';
  json: boolean;
  /** `-C` / `--cwd` value, when given. */
  cwd?: string;
}

/**
 * Recognises the command lines bots poll with: `[-C <dir> | --cwd <dir> | --cwd=<dir>] status|next [--json]`
 * (`process.argv.slice(2)`). Anything else (other options, `--help`, a repeated flag, another command) is
 * `undefined` and goes to the full commander program, which owns usage errors and help. Pure.
 */
export function matchFastCommand(args: readonly string[]): FastCommand | undefined {
  let i = 0;
  let cwd: string | undefined;
  const a0 = args[0];
  if (a0 === '-C' || a0 === '--cwd') {
    if (args.length < 2 || args[1]!.startsWith('-')) return undefined;
    cwd = args[1];
    i = 2;
  } else if (a0?.startsWith('--cwd=')) {
    cwd = a0.slice('--cwd='.length);
    if (!cwd) return undefined;
    i = 1;
  }
  const command = args[i];
  if (command !== 'status' && command !== 'next') return undefined;
  const rest = args.slice(i + 1);
  if (rest.length > 1 || (rest.length === 1 && rest[0] !== '--json')) return undefined;
  return { command, json: rest.length === 1, ...(cwd !== undefined ? { cwd } : {}) };
}

/**
 * Whether a command line is `[-C <dir> | --cwd <dir> | --cwd=<dir>] waves check …` without a help or version
 * flag (`-h`, `--help`, `-V`, `--version`) anywhere: the small entry then loads the waves program
 * (src/cli/wavesMain.ts) instead of the full one; its options and usage errors are the same command's. Pure.
 */
export function isWavesCheck(args: readonly string[]): boolean {
  let i = 0;
  const a0 = args[0];
  if (a0 === '-C' || a0 === '--cwd') i = 2;
  else if (a0?.startsWith('--cwd=')) i = 1;
  if (args[i] !== 'waves' || args[i + 1] !== 'check') return false;
  return !args.some((a) => a === '-h' || a === '--help' || a === '-V' || a === '--version');
}

/** The subcommands of `ralph task` (src/cli/taskCommand.ts) that dist/cli-task.js runs. */
const TASK_SUBCOMMANDS: ReadonlySet<string> = new Set(['start', 'done', 'block', 'reset']);

/**
 * Whether a command line is `[-C <dir> | --cwd <dir> | --cwd=<dir>] task start|done|block|reset …` without a help or
 * version flag anywhere: the small entry then loads the task program (src/cli/taskMain.ts) instead of the full one;
 * its options and usage errors are the same command's. `task` alone, another subcommand, or help: the full program.
 * Pure.
 */
export function isTaskCommand(args: readonly string[]): boolean {
  let i = 0;
  const a0 = args[0];
  if (a0 === '-C' || a0 === '--cwd') i = 2;
  else if (a0?.startsWith('--cwd=')) i = 1;
  if (args[i] !== 'task' || !TASK_SUBCOMMANDS.has(args[i + 1] ?? '')) return false;
  return !args.some((a) => a === '-h' || a === '--help' || a === '-V' || a === '--version');
}
