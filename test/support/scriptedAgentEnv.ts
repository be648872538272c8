import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ModelServer } from './modelServer';
import { repoRoot } from './repoRoot';

/** The agent CLIs driven against a scripted model server by the helpers below. */
export type ScriptedAgent = 'gemini' | 'copilot';

/** Where scripts/setup-test-env.sh installs the agent CLIs: `.agent-clis/<agent>/node_modules/.bin/<binary>`. */
export const agentClisDir = path.join(repoRoot, '.agent-clis');

/** The real CLI of `agent` installed by the set-up. */
export function agentCli(agent: ScriptedAgent): string {
  return path.join(agentClisDir, agent, 'node_modules', '.bin', agent);
}

/** Throws a clear error when the CLI is not installed (tests that drive it call this first). */
export function requireAgentCli(agent: ScriptedAgent): string {
  const bin = agentCli(agent);
  if (!fs.existsSync(bin))
    throw new Error(`the ${agent} CLI is missing at ${bin}: run scripts/setup-test-env.sh --agents-only`);
  return bin;
}

/** Variables of the outer environment that would point an agent at a real provider or account. */
const PROVIDER_VAR = /^(ANTHROPIC_|CLAUDE_|GEMINI_|GOOGLE_|COPILOT_|GH_|GITHUB_|OPENAI_|XDG_)/;

/**
 * The complete environment that points `agent` at a scripted model server hermetically: the outer environment
 * without provider variables, a temp HOME, the server's URL and a dummy key, set the way a user configures the CLI
 * (more-agents.md). Gemini: `GOOGLE_GEMINI_BASE_URL`, `GEMINI_API_KEY` and `$HOME/.gemini/settings.json` (written
 * here, with `settings` merged in), no relaunch of its own node process. Copilot: bring-your-own-key variables and a
 * shared cache folder (it unpacks 235 MB into `$XDG_CACHE_HOME/copilot` on its first start).
 */
export function scriptedAgentEnv(
  agent: ScriptedAgent,
  server: ModelServer,
  home: string,
  settings: Record<string, unknown> = {},
): Record<string, string> {
  const base = Object.fromEntries(
    Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined && !PROVIDER_VAR.test(e[0])),
  );
  if (agent === 'gemini') {
    fs.mkdirSync(path.join(home, '.gemini'), { recursive: true });
    const s = {
      security: { auth: { selectedType: 'gemini-api-key' } },
      privacy: { usageStatisticsEnabled: false },
      telemetry: { enabled: false },
      ...settings,
    };
    fs.writeFileSync(path.join(home, '.gemini', 'settings.json'), JSON.stringify(s, null, 2));
    return {
      ...base,
      HOME: home,
      GOOGLE_GEMINI_BASE_URL: server.url,
      GEMINI_API_KEY: 'test',
      GEMINI_CLI_NO_RELAUNCH: 'true',
    };
  }
  return {
    ...base,
    HOME: home,
    XDG_CACHE_HOME: path.join(agentClisDir, 'copilot', '.cache'),
    COPILOT_PROVIDER_BASE_URL: server.url,
    COPILOT_PROVIDER_TYPE: 'anthropic',
    COPILOT_PROVIDER_API_KEY: 'test',
    COPILOT_MODEL: 'claude-sonnet-4',
  };
}
