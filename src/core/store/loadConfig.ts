import { readFile } from 'node:fs/promises';
import { ralphConfigSchema, restrictedConfigKeys, type RalphConfig } from '../model/config';
import { ralphFile } from '../model/ralphPaths';
import { FileProblemError } from './parseError';
import { parseJsonWithSchema } from './readJsonFile';

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
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw new FileProblemError({ file, line: 0, column: 0, message: `cannot read: ${(err as Error).message}` });
    }
  }
  if (text !== undefined) fromFile = parseJsonWithSchema(file, text, ralphConfigSchema.partial().loose()) as Record<string, unknown>;
  const settings: Record<string, unknown> = { ...(layers.settings ?? {}) };
  if (layers.trusted === false) {
    for (const k of restrictedConfigKeys) {
      delete fromFile[k];
      delete settings[k];
    }
  }
  return ralphConfigSchema.parse({ ...stripUndefined(fromFile), ...stripUndefined(settings), ...stripUndefined(layers.flags ?? {}) });
}

function stripUndefined(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}
