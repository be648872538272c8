import { defaultConfigLiteral, ralphConfigSchema, restrictedConfigKeys, type RalphConfig } from '../model/config';
import { ralphFile } from '../model/ralphPaths';
import { setContainmentMode } from '../process/containment';
import { FileProblemError, parseJsonText } from './parseError';
import { readTextSync, schemaProblem, setReadLimits } from './readJsonFile';
import { workspaceReadLimits } from '../trust/readLimitsTrust';

/** Path of the configuration file of a workspace folder (`.ralph/config.json`). */
export function configPath(folder: string): string {
  return ralphFile(folder, 'config');
}

export interface ConfigLayers {
  /** Values from VS Code settings (only keys the user actually set); ignored by the CLI. */
  settings?: Partial<RalphConfig>;
  /** Values from command-line flags; highest precedence. */
  flags?: Partial<RalphConfig>;
  /** When false (an untrusted workspace), restricted keys from the file and settings are ignored. */
  trusted?: boolean;
}

/**
 * Loads `.ralph/config.json` of `folder` (absent means all defaults) and applies the layers:
 * flags > settings > file > defaults. Throws {@link FileProblemError} with file:line:column when the file
 * does not parse or does not match the schema.
 */
export async function loadConfig(folder: string, layers: ConfigLayers = {}): Promise<RalphConfig> {
  const file = configPath(folder);
  let fromFile: Record<string, unknown> = {};
  let text: string | undefined;
  try {
    text = readTextSync(file);
  } catch (err) {
    if (err instanceof FileProblemError) throw err;
    throw new FileProblemError({ file, line: 0, column: 0, message: `cannot read: ${(err as Error).message}` });
  }
  if (text !== undefined) fromFile = configFileValues(file, text);
  // The file's readLimits may only lower the bounds unless the user trusted the raise (trust/readLimitsTrust.ts).
  if (fromFile.readLimits !== undefined)
    fromFile.readLimits = workspaceReadLimits(folder, fromFile.readLimits as RalphConfig['readLimits']);
  const settings: Record<string, unknown> = { ...(layers.settings ?? {}) };
  if (layers.trusted === false) {
    for (const k of restrictedConfigKeys) {
      delete fromFile[k];
      delete settings[k];
    }
  }
  const input = { ...stripUndefined(fromFile), ...stripUndefined(settings), ...stripUndefined(layers.flags ?? {}) };
  // Nothing set anywhere: the defaults, without building the schema (the CLI then never loads zod for them).
  const config = Object.keys(input).length ? ralphConfigSchema.parse(input) : defaultConfigLiteral();
  applyReadLimits(config.readLimits);
  setContainmentMode(config.containment);
  return config;
}

/**
 * The settings `.ralph/config.json` sets itself (`text` is its content; `file` names it in problems), validated:
 * exactly the keys present in the file, each parsed by its schema (a nested object gets its own defaults). zod 4's
 * `.partial()` fills every absent key that has a default, so its output alone would make a default look set by the
 * file. Throws {@link FileProblemError} naming the file, line and column.
 */
export function configFileValues(file: string, text: string): Record<string, unknown> {
  const raw = parseJsonText(file, text);
  if (!raw.ok) throw new FileProblemError(raw.problem);
  const parsed = ralphConfigSchema.partial().loose().safeParse(raw.value);
  if (!parsed.success) throw new FileProblemError(schemaProblem(file, text, parsed.error));
  const present = raw.value as Record<string, unknown>;
  return Object.fromEntries(Object.entries(parsed.data).filter(([k]) => Object.hasOwn(present, k)));
}

/** Makes `readLimits` (MB) the store's read limits for this process (store/readJsonFile.ts `setReadLimits`). */
export function applyReadLimits(limits: RalphConfig['readLimits'] | undefined): void {
  setReadLimits({
    ...(limits?.jsonMb ? { jsonBytes: Math.round(limits.jsonMb * 1024 * 1024) } : {}),
    ...(limits?.textMb ? { textBytes: Math.round(limits.textMb * 1024 * 1024) } : {}),
  });
}

/**
 * Applies the folder's `readLimits` before a command reads its files, synchronously and forgivingly: a config file
 * that is absent, refused or does not parse leaves the defaults (the command that loads the configuration reports it).
 * A raise above a default holds only once trusted (trust/readLimitsTrust.ts).
 */
export function applyFolderReadLimits(folder: string): void {
  try {
    const text = readTextSync(configPath(folder));
    if (text === undefined) return applyReadLimits(undefined);
    const parsed = ralphConfigSchema.pick({ readLimits: true }).safeParse(JSON.parse(text));
    applyReadLimits(parsed.success ? workspaceReadLimits(folder, parsed.data.readLimits) : undefined);
  } catch {
    applyReadLimits(undefined);
  }
}

function stripUndefined(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}
