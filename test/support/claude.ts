import * as fs from 'node:fs';
import * as path from 'node:path';
import { repoRoot } from './repoRoot';

/** The folder holding the real Claude Code CLI installed in the repository (`node_modules/.bin`). */
export const claudeBinDir = path.join(repoRoot, 'node_modules', '.bin');

/** The real Claude Code CLI installed in the repository (2.1.328, a devDependency). */
export const claudeBinary = path.join(claudeBinDir, 'claude');

/** Throws a clear error when the CLI is not installed (tests that drive it call this first). */
export function requireClaude(): void {
  if (!fs.existsSync(claudeBinary))
    throw new Error(
      `the claude CLI is missing at ${claudeBinary}: run npm ci (and scripts/setup-test-env.sh --claude-only)`,
    );
}

/**
 * The variables that point the real claude at a scripted model server (test/support/modelServer.ts) hermetically:
 * a temp HOME, the server's URL, a dummy key, sandbox mode (bypassPermissions as root), no nonessential traffic.
 */
export function scriptedClaudeEnv(serverUrl: string, home: string): Record<string, string> {
  return {
    HOME: home,
    ANTHROPIC_BASE_URL: serverUrl,
    ANTHROPIC_API_KEY: 'test',
    IS_SANDBOX: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  };
}

/** `env` without the outer ANTHROPIC_* and CLAUDE_* variables (so a developer's own login never reaches a test). */
export function withoutClaudeVars(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter(
      (e): e is [string, string] => e[1] !== undefined && !e[0].startsWith('ANTHROPIC_') && !e[0].startsWith('CLAUDE_'),
    ),
  );
}

/**
 * A light stand-in for the CLI (test/support/stubs/scriptedClaude.cjs): it talks to the scripted model server and runs
 * Bash, Write, Edit and Read and the `--settings` PreToolUse hooks as the CLI does, at a tenth of its start-up cost.
 * For tests of the loop's own logic; what only the real CLI shows (its retries, errors and hooks) runs `claudeBinary`.
 */
export const scriptedClaudeStub = path.join(repoRoot, 'test', 'support', 'stubs', 'scriptedClaude.cjs');
