import { createHash } from 'node:crypto';
import * as path from 'node:path';
import { userStateDir } from '../store/userStateDir';

/**
 * Where trust is recorded: the user's state folder, outside every workspace (so an agent or a cloned repository
 * cannot trust itself), one file per workspace folder: `$XDG_STATE_HOME/ralph/trust/<sha256 of the folder's real
 * path>.json` (default `~/.local/state/ralph/trust/`, XDG Base Directory: a relative `XDG_STATE_HOME` is ignored).
 * No zod and no I/O: the read limits of every command consult it (readLimitsTrust.ts).
 */
export function trustDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(userStateDir(env), 'trust');
}

/** The trust record file of `folder` (its real path). */
export function trustRecordPath(realFolder: string, env: NodeJS.ProcessEnv = process.env): string {
  return path.join(trustDir(env), `${createHash('sha256').update(realFolder).digest('hex').slice(0, 32)}.json`);
}
