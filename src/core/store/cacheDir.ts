import * as os from 'node:os';
import * as path from 'node:path';

/**
 * The folder of ralph's caches (the CLI's answer cache): `$XDG_CACHE_HOME/ralph` (an absolute
 * `XDG_CACHE_HOME`, per the XDG base directory spec), else `~/.cache/ralph`. Never inside a workspace.
 */
export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(
    env.XDG_CACHE_HOME && path.isAbsolute(env.XDG_CACHE_HOME) ? env.XDG_CACHE_HOME : path.join(os.homedir(), '.cache'),
    'ralph',
  );
}
