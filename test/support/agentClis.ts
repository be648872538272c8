import * as fs from 'node:fs';
import * as path from 'node:path';
import { repoRoot } from './repoRoot';

/**
 * The agent CLIs scripts/setup-test-env.sh installs at pinned versions into the git-ignored `.agent-clis/` (one folder
 * each). Tests start them by these paths, never from PATH, so a user's own install never answers instead.
 */
export const AGENT_CLIS = {
  codex: { dir: 'codex', bin: 'codex', version: '0.171.0' },
  opencode: { dir: 'opencode', bin: 'opencode', version: '1.18.33' },
  qwen: { dir: 'qwen', bin: 'qwen', version: '0.24.4' },
  gemini: { dir: 'gemini', bin: 'gemini', version: '0.61.0' },
  copilot: { dir: 'copilot', bin: 'copilot', version: '1.0.102' },
} as const;

export type InstalledAgent = keyof typeof AGENT_CLIS;

/** The absolute path of an installed agent CLI; throws naming the set-up command when it is missing. */
export function agentCliPath(agent: InstalledAgent): string {
  const a = AGENT_CLIS[agent];
  const file = path.join(repoRoot, '.agent-clis', a.dir, 'node_modules', '.bin', a.bin);
  if (!fs.existsSync(file))
    throw new Error(`${file} is missing: run \`bash scripts/setup-test-env.sh --agents-only\` (npm test does)`);
  return file;
}

/**
 * Gives an opencode config folder (`$XDG_CONFIG_HOME/opencode`) the `@opencode-ai/plugin` that opencode installs there
 * at its start when the folder's package-lock.json does not name it: the copy scripts/setup-test-env.sh installed once
 * (`.agent-clis/opencode-plugin`), linked, with its package.json and lock. Without it each start in a fresh HOME
 * downloads and installs it (30 MB, about 12 s of CPU), cut off when the run ends: the state of an opencode that has
 * never run, where a user's has run before. Idempotent (a HOME's config folder is reused run after run).
 */
export function opencodeConfigDeps(configDir: string): void {
  const shared = path.join(repoRoot, '.agent-clis', 'opencode-plugin');
  if (!fs.existsSync(path.join(shared, 'package-lock.json')))
    throw new Error(`${shared} is missing: run \`bash scripts/setup-test-env.sh --agents-only\` (npm test does)`);
  fs.mkdirSync(configDir, { recursive: true });
  if (!fs.existsSync(path.join(configDir, 'node_modules')))
    fs.symlinkSync(path.join(shared, 'node_modules'), path.join(configDir, 'node_modules'));
  for (const f of ['package.json', 'package-lock.json']) fs.copyFileSync(path.join(shared, f), path.join(configDir, f));
}
