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
