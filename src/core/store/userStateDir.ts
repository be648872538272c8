import * as os from 'node:os';
import * as path from 'node:path';

/**
 * The user's Ralph state folder, outside every workspace (an agent or a cloned repository cannot write its own
 * trust or baseline there by accident): `$XDG_STATE_HOME/ralph` (XDG Base Directory; a relative `XDG_STATE_HOME` is
 * ignored), default `~/.local/state/ralph`. Holds `trust/` (trustStore.ts) and `baselines/` (baselineMirror.ts).
 * No zod and no I/O: the status path imports it.
 */
export function userStateDir(env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env.XDG_STATE_HOME;
  const base = xdg && path.isAbsolute(xdg) ? xdg : path.join(env.HOME || os.homedir(), '.local', 'state');
  return path.join(base, 'ralph');
}
