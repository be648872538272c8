/** Where a command line's command word starts, after an optional leading folder option. */
export interface LeadingCwd {
  /** The `-C <dir>` / `--cwd <dir>` / `--cwd=<dir>` value, when given. */
  cwd?: string;
  /** Index in the arguments of the word after the folder option (0 when there is none). */
  at: number;
}

/**
 * Reads an optional leading `-C <dir>` / `--cwd <dir>` / `--cwd=<dir>` (`process.argv.slice(2)`). `undefined` when
 * the option is there without a usable value (missing, empty, or starting with `-`): the small entries then leave
 * the command line to the full commander program, which owns usage errors. The one reader of that option for
 * {@link matchFastCommand}, {@link isWavesCheck}, {@link matchWavesCheck} and {@link isTaskCommand}. Pure.
 */
export function leadingCwd(args: readonly string[]): LeadingCwd | undefined {
  const a0 = args[0];
  if (a0 === '-C' || a0 === '--cwd') {
    const v = args[1];
    return v && !v.startsWith('-') ? { cwd: v, at: 2 } : undefined;
  }
  if (a0?.startsWith('--cwd=')) {
    const v = a0.slice('--cwd='.length);
    return v ? { cwd: v, at: 1 } : undefined;
  }
  return { at: 0 };
}

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
  const lead = leadingCwd(args);
  if (!lead) return undefined;
  const { cwd, at: i } = lead;
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
  const i = leadingCwd(args)?.at;
  if (i === undefined) return false;
  if (args[i] !== 'waves' || args[i + 1] !== 'check') return false;
  return !args.some((a) => a === '-h' || a === '--help' || a === '-V' || a === '--version');
}

/** A `waves check` command line as {@link matchWavesCheck} read it: the raw option values, not yet validated. */
export interface WavesCheckArgs {
  /** `-C` / `--cwd` value, when given. */
  cwd?: string;
  phase: string;
  wave?: string;
  /** `--root` values in order (repeatable). */
  root: string[];
  /** `--orphan-after-ms` / `--inactive-after-ms`: plain decimal digits as written. */
  orphanAfterMs?: string;
  inactiveAfterMs?: string;
  json: boolean;
  watch: boolean;
}

const WAVES_VALUE_OPTIONS: Record<string, 'phase' | 'wave' | 'root' | 'orphanAfterMs' | 'inactiveAfterMs'> = {
  '--phase': 'phase',
  '--wave': 'wave',
  '--root': 'root',
  '--orphan-after-ms': 'orphanAfterMs',
  '--inactive-after-ms': 'inactiveAfterMs',
};

/**
 * Reads the plain forms of `[-C <dir> | --cwd <dir> | --cwd=<dir>] waves check --phase <p> [--wave <id>]
 * [--root <dir>…] [--orphan-after-ms <n>] [--inactive-after-ms <n>] [--json] [--watch]` (`process.argv.slice(2)`;
 * values as the next word or after `=`), so dist/cli.js can run the pass without commander. Anything else is
 * `undefined` and goes to the full commander program, which owns usage errors and help: a missing `--phase`, an
 * unknown or repeated option (`--root` aside), a value that is empty or starts with `-`, a `--json=…`, a
 * positional word, `--`, help or version flags, and windows that are not plain digits. Values are checked by the
 * waves program (src/cli/wavesMain.ts), which hands an invalid one to the full program too. Pure.
 */
export function matchWavesCheck(args: readonly string[]): WavesCheckArgs | undefined {
  const lead = leadingCwd(args);
  if (!lead) return undefined;
  const cwd = lead.cwd;
  let i = lead.at;
  if (args[i] !== 'waves' || args[i + 1] !== 'check') return undefined;
  const got: Partial<Record<'phase' | 'wave' | 'orphanAfterMs' | 'inactiveAfterMs', string>> = {};
  const root: string[] = [];
  let json = false;
  let watch = false;
  for (i += 2; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--json' || a === '--watch') {
      if (a === '--json' ? json : watch) return undefined;
      if (a === '--json') json = true;
      else watch = true;
      continue;
    }
    const eq = a.indexOf('=');
    const name = eq > 0 ? a.slice(0, eq) : a;
    const key = Object.prototype.hasOwnProperty.call(WAVES_VALUE_OPTIONS, name) ? WAVES_VALUE_OPTIONS[name] : undefined;
    if (!key) return undefined;
    let value: string | undefined;
    if (eq > 0) value = a.slice(eq + 1);
    else value = args[++i];
    if (!value || value.startsWith('-')) return undefined;
    if ((key === 'orphanAfterMs' || key === 'inactiveAfterMs') && !/^[0-9]{1,15}$/.test(value)) return undefined;
    if (key === 'root') {
      root.push(value);
      continue;
    }
    if (got[key] !== undefined) return undefined;
    got[key] = value;
  }
  if (got.phase === undefined) return undefined;
  return {
    ...(cwd !== undefined ? { cwd } : {}),
    phase: got.phase,
    ...(got.wave !== undefined ? { wave: got.wave } : {}),
    root,
    ...(got.orphanAfterMs !== undefined ? { orphanAfterMs: got.orphanAfterMs } : {}),
    ...(got.inactiveAfterMs !== undefined ? { inactiveAfterMs: got.inactiveAfterMs } : {}),
    json,
    watch,
  };
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
  const i = leadingCwd(args)?.at;
  if (i === undefined) return false;
  if (args[i] !== 'task' || !TASK_SUBCOMMANDS.has(args[i + 1] ?? '')) return false;
  return !args.some((a) => a === '-h' || a === '--help' || a === '-V' || a === '--version');
}
