import { spawn, spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { repoRoot } from './repoRoot';
import { testCacheHome } from './tempFolder';

/** The bundled CLI the tests drive (built by `node esbuild.mjs --only=cli`). */
export const cliPath = path.join(repoRoot, 'dist', 'cli.js');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  json: () => Record<string, unknown>;
}

/** Runs `node dist/cli.js -C <folder> …args` and waits for it. */
export function runCli(folder: string, args: string[], env: NodeJS.ProcessEnv = {}): CliResult {
  const r = spawnSync(process.execPath, [cliPath, '-C', folder, ...args], {
    encoding: 'utf8',
    env: { ...process.env, XDG_CACHE_HOME: testCacheHome(), FLOW_ACTOR: 'tester', ...env },
  });
  return {
    code: r.status,
    stdout: r.stdout,
    stderr: r.stderr,
    json: () => JSON.parse(r.stdout) as Record<string, unknown>,
  };
}

/** As {@link runCli}, without blocking the event loop (for concurrent processes). */
export function runCliAsync(folder: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [cliPath, '-C', folder, ...args], {
      env: { ...process.env, XDG_CACHE_HOME: testCacheHome(), FLOW_ACTOR: 'tester', ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += String(d);
    });
    child.stderr.on('data', (d) => {
      stderr += String(d);
    });
    child.on('close', (code) =>
      resolve({ code, stdout, stderr, json: () => JSON.parse(stdout) as Record<string, unknown> }),
    );
  });
}

/**
 * As {@link runCli} with the child's address space capped by `prlimit --as` (default 2 GB) and a 60 s timeout, for
 * inputs that could make a broken build read until memory runs out (issue 12: a task source linked to /dev/zero).
 * A child killed by the cap or the timeout has `code` null.
 */
export function runCliCapped(folder: string, args: string[], o: { asBytes?: number } = {}): CliResult {
  const r = spawnSync(
    'prlimit',
    [`--as=${o.asBytes ?? 2_000_000_000}`, process.execPath, cliPath, '-C', folder, ...args],
    { encoding: 'utf8', timeout: 60_000, env: { ...process.env, FLOW_ACTOR: 'tester' } },
  );
  return {
    code: r.status,
    stdout: r.stdout,
    stderr: r.stderr,
    json: () => JSON.parse(r.stdout) as Record<string, unknown>,
  };
}
