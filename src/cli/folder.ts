import type { Command } from 'commander';
import { statSync } from 'node:fs';
import * as path from 'node:path';
import { applyFolderReadLimits } from '../core/store/loadConfig';

/** `-C/--cwd` names a folder that does not exist (or a file): every command refuses it with exit 1. */
export class FolderNotFoundError extends Error {
  /** `json`: the command was given `--json`, so the refusal is printed as `{"success":false,"error":…}` on stdout. */
  constructor(message: string, readonly json: boolean) {
    super(message);
    this.name = 'FolderNotFoundError';
  }
}

/**
 * The workspace folder a command works on: the global `--cwd` option, else the current directory. Throws
 * {@link FolderNotFoundError} (`folder not found: <path>`, the path as given) when it is missing or not a folder,
 * before any command reads or writes under it.
 */
export function resolveFolder(cmd: Command): string {
  const opts = cmd.optsWithGlobals<{ cwd?: string; json?: boolean }>();
  const folder = path.resolve(opts.cwd ?? process.cwd());
  let isDir = false;
  try {
    isDir = statSync(folder).isDirectory();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT' && (err as NodeJS.ErrnoException).code !== 'ENOTDIR') throw err;
    throw new FolderNotFoundError(`folder not found: ${opts.cwd ?? folder}`, !!opts.json);
  }
  if (!isDir) throw new FolderNotFoundError(`not a folder: ${opts.cwd ?? folder}`, !!opts.json);
  applyFolderReadLimits(folder);
  return folder;
}
