import type { Command } from 'commander';
import { mkdir } from 'node:fs/promises';
import * as path from 'node:path';
import { editGuardSettings } from '../core/gates/guardInstall';
import { handleHook } from '../core/gates/guardHook';
import { guardInstall, guardSettings } from '../core/gates/guardServer';
import { readTextIfExists, writeTextAtomic } from '../core/store/atomicWrite';
import { resolveFolder } from './folder';
import { writeOut, writeErr } from './terminalOut';

function readStdin(): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    process.stdin.on('data', (c: Buffer) => chunks.push(c));
    process.stdin.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    process.stdin.on('error', reject);
  });
}

/**
 * `ralph guard` (the PreToolUse hook, in process: JSON on stdin, Claude Code's answer on stdout, exit 2 on any
 * internal error) and `ralph guard install [--uninstall]` (our hook in the project's `.claude/settings.json`).
 */
export function registerGuardCommand(program: Command): void {
  const guard = program
    .command('guard')
    .description(
      'The command-policy guard as a Claude Code PreToolUse hook: reads the hook JSON on stdin, prints allow / deny / rewrite',
    )
    .action(async (_opts: unknown, cmd: Command) => {
      const ws = cmd.optsWithGlobals<{ cwd?: string }>().cwd;
      let a: { stdout: string; stderr: string; exitCode: number };
      try {
        const install = guardInstall();
        a = await handleHook(await readStdin(), {
          workspace: ws ? path.resolve(ws) : undefined,
          gateRunner: { node: install.node, cliPath: install.cli, electron: install.electron },
          writeActivity: true,
        });
      } catch (err) {
        // Never fail open: a guard that cannot run blocks the call.
        a = { stdout: '', stderr: `Ralph guard: ${(err as Error).message} (the call is blocked)\n`, exitCode: 2 };
      }
      if (a.stderr) writeErr(a.stderr);
      writeOut(a.stdout);
      process.exitCode = a.exitCode;
    });
  guard
    .command('install')
    .description("Add the guard hook to the project's .claude/settings.json (idempotent; other settings kept)")
    .option('--uninstall', 'remove only the guard hook')
    .action(async (opts: { uninstall?: boolean }, cmd: Command) => {
      const folder = resolveFolder(cmd);
      const file = path.join(folder, '.claude', 'settings.json');
      const install = guardInstall();
      const group = (guardSettings(install).hooks as { PreToolUse: Record<string, unknown>[] }).PreToolUse[0]!;
      const next = editGuardSettings(file, await readTextIfExists(file), group, !!opts.uninstall);
      if (next === undefined) {
        writeOut(`${file}: ${opts.uninstall ? 'no guard hook to remove' : 'guard hook already installed'}\n`);
        return;
      }
      await mkdir(path.dirname(file), { recursive: true });
      await writeTextAtomic(file, next);
      writeOut(
        `${file}: guard hook ${opts.uninstall ? 'removed' : 'installed'} (PreToolUse: Bash, Write, Edit, MultiEdit, NotebookEdit)\n`,
      );
    });
}
