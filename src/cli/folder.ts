import type { Command } from 'commander';
import { statSync } from 'node:fs';
import * as path from 'node:path';
import { workspaceRoot } from '../core/store/workspaceRoot';
import { applyFolderReadLimits } from '../core/store/loadConfig';

/** `-C/--cwd` names a folder that does not exist (or a file): every command refuses it with exit 1. */
export class FolderNotFoundError extends Error {
  /** `json`: the command was given `--json`, so the refusal is printed as `{"success":false,"error":…}` on stdout. */
  constructor(
    message: string,
    readonly json: boolean,
  ) {
    super(message);
    this.name = 'FolderNotFoundError';
  }
}

/**
 * The workspace folder a command works on, as flowctl finds it: the git top level of the starting folder (the
 * global `--cwd` option, else the current directory), else the starting folder itself (see core/store/workspaceRoot.ts).
 * Throws {@link FolderNotFoundError} (`folder not found: <path>`, the path as given) when the starting folder is
 * missing or not a folder, before any command reads or writes under it.
 */
export function resolveFolder(cmd: Command): string {
  const opts = cmd.optsWithGlobals<{ cwd?: string; json?: boolean }>();
  return resolveFolderFrom(opts.cwd, !!opts.json);
}

/** {@link resolveFolder} for a `-C` value already parsed (`undefined`: the current directory). */
export function resolveFolderFrom(cwd: string | undefined, json: boolean): string {
  const folder = path.resolve(cwd ?? process.cwd());
  let isDir = false;
  try {
    isDir = statSync(folder).isDirectory();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT' && (err as NodeJS.ErrnoException).code !== 'ENOTDIR')
      throw err;
    throw new FolderNotFoundError(`folder not found: ${cwd ?? folder}`, json);
  }
  if (!isDir) throw new FolderNotFoundError(`not a folder: ${cwd ?? folder}`, json);
  const root = workspaceRoot(folder);
  applyFolderReadLimits(root);
  return root;
}
