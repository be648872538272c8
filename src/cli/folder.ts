import type { Command } from 'commander';
import * as path from 'node:path';

/** The workspace folder a command works on: the global `--cwd` option, else the current directory. */
export function resolveFolder(cmd: Command): string {
  const opts = cmd.optsWithGlobals<{ cwd?: string }>();
  return path.resolve(opts.cwd ?? process.cwd());
}
