import { mkdir, readFile } from 'node:fs/promises';
import * as path from 'node:path';
import { type ParseError, parse as parseJsonc, printParseErrorCode } from 'jsonc-parser';
import { writeTextAtomic } from '../store/atomicWrite';
import { asRecord } from './lineParts';

/**
 * Hands the run's command guard (ralph's PreToolUse hook command, guardServer.ts `guardSettings`) to a CLI that reads
 * hooks only from its settings files (Qwen Code). It takes no settings on its command line, and the user's files are
 * the user's, so the hook goes into the one layer an environment variable can move, its system settings file: ralph
 * writes `<dir>/<agent>-system-settings.json` holding the user's own system settings (the file the variable named, or
 * the platform's default path) plus the hook, and points the variable at it. The system-defaults file, which the CLI
 * looks for beside the system settings file unless its own variable names it, keeps its place through that variable.
 * The file is written again before every start, so an agent that edits it changes nothing for the next iteration.
 * (Gemini CLI has the same layers but ignores a system file that root does not own: gemini.ts uses its policy rules.)
 */

/** One hook command of the run, Claude's shape. */
export interface HookCommand {
  command: string;
  /** Seconds. */
  timeout?: number;
}

/** The commands of `settings.hooks.PreToolUse[*].hooks[*]` (Claude's `--settings` shape), in order. Pure. */
export function preToolUseCommands(settings: Record<string, unknown> | undefined): HookCommand[] {
  const entries = asRecord(asRecord(settings).hooks).PreToolUse;
  if (!Array.isArray(entries)) return [];
  return entries.flatMap((e) => {
    const hooks = asRecord(e).hooks;
    return (Array.isArray(hooks) ? hooks.map(asRecord) : [])
      .filter((h) => typeof h.command === 'string' && h.command !== '')
      .map((h) => ({
        command: h.command as string,
        ...(typeof h.timeout === 'number' ? { timeout: h.timeout } : {}),
      }));
  });
}

/** Where and how one CLI reads its system settings and hooks. */
export interface SystemSettingsLayer {
  /** Used in the file name and in errors: `gemini`, `qwen`. */
  agent: string;
  /** The variable naming the system settings file (`GEMINI_CLI_SYSTEM_SETTINGS_PATH`). */
  settingsVar: string;
  /** The variable naming the system-defaults file (`GEMINI_CLI_SYSTEM_DEFAULTS_PATH`). */
  defaultsVar: string;
  /** The system settings file when the variable is unset, per `process.platform`. */
  defaultPath(platform: NodeJS.Platform): string;
  /** The hook event that runs before a tool (`BeforeTool`, `PreToolUse`). */
  event: string;
  /** The matcher of the guard's tools, in the CLI's names. */
  matcher: string;
  /** The unit of a command hook's `timeout`. */
  timeoutUnit: 'ms' | 's';
  /** Settings that make sure hooks run (merged over the user's: a system file that turns hooks off would drop the guard). */
  enableHooks: Record<string, unknown>;
}

/**
 * The system settings a guarded start reads: the user's (`user`, null without a file) with the run's hooks added
 * after the user's own for {@link SystemSettingsLayer.event}, and the keys that turn hooks on. Pure.
 */
export function withGuardHooks(
  user: Record<string, unknown> | null,
  hooks: readonly HookCommand[],
  layer: SystemSettingsLayer,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...(user ?? {}) };
  for (const [k, v] of Object.entries(layer.enableHooks))
    out[k] = v && typeof v === 'object' && !Array.isArray(v) ? { ...asRecord(out[k]), ...v } : v;
  const userHooks = asRecord(out.hooks);
  const own = Array.isArray(userHooks[layer.event]) ? (userHooks[layer.event] as unknown[]) : [];
  out.hooks = {
    ...userHooks,
    [layer.event]: [
      ...own,
      {
        matcher: layer.matcher,
        hooks: hooks.map((h, i) => ({
          type: 'command',
          name: i === 0 ? 'ralph-guard' : `ralph-guard-${i + 1}`,
          command: h.command,
          timeout: (h.timeout ?? 60) * (layer.timeoutUnit === 'ms' ? 1000 : 1),
        })),
      },
    ],
  };
  return out;
}

/** Largest system settings file ralph reads, bytes. */
const SETTINGS_READ_MAX = 1024 * 1024;

/** The user's system settings file as JSON with comments; null when it does not exist. Throws naming the file and line. */
async function readUserSettings(file: string): Promise<Record<string, unknown> | null> {
  let text: string;
  try {
    const buf = await readFile(file);
    if (buf.length > SETTINGS_READ_MAX) throw new Error(`${file} is larger than ${SETTINGS_READ_MAX} bytes`);
    text = buf.toString('utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  const errors: ParseError[] = [];
  const v: unknown = parseJsonc(text, errors, { allowTrailingComma: true });
  if (errors.length) {
    const e = errors[0]!;
    const line = text.slice(0, e.offset).split('\n').length;
    throw new Error(`${file}: line ${line}: ${printParseErrorCode(e.error)}: cannot add the command guard to it`);
  }
  if (v !== undefined && (typeof v !== 'object' || v === null || Array.isArray(v)))
    throw new Error(`${file}: not a JSON object: cannot add the command guard to it`);
  return (v as Record<string, unknown> | undefined) ?? null;
}

/**
 * Writes the guarded system settings of `layer` into `dir` and returns the variables that point the CLI at them (none
 * without hooks in `settings`). `env` is the agent's environment (the user's variables are honoured). Throws when the
 * user's system settings file cannot be read or parsed (naming it and the line), never dropping it silently.
 */
export async function writeGuardSettings(
  layer: SystemSettingsLayer,
  settings: Record<string, unknown> | undefined,
  env: Readonly<Record<string, string | undefined>>,
  dir: string,
  platform: NodeJS.Platform = process.platform,
): Promise<Record<string, string>> {
  const hooks = preToolUseCommands(settings);
  if (!hooks.length) return {};
  const userFile = env[layer.settingsVar] || layer.defaultPath(platform);
  const file = path.join(dir, `${layer.agent}-system-settings.json`);
  await mkdir(dir, { recursive: true });
  // A file ralph wrote before (a variable inherited from an outer run) is not the user's.
  const user = path.resolve(userFile) === path.resolve(file) ? null : await readUserSettings(userFile);
  await writeTextAtomic(file, `${JSON.stringify(withGuardHooks(user, hooks, layer), null, 2)}\n`, { mode: 0o600 });
  return {
    [layer.settingsVar]: file,
    [layer.defaultsVar]: env[layer.defaultsVar] || path.join(path.dirname(userFile), 'system-defaults.json'),
  };
}
