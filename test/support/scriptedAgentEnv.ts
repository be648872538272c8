import * as fs from 'node:fs';
import * as path from 'node:path';
import { repoRoot } from './repoRoot';

/**
 * The environment and config files that point the Gemini CLI and the Copilot CLI at a scripted model server, written
 * the way a user configures them for a model server of their own (more-agents.md): a temporary HOME holding the
 * agent's own config files, plus the variables the agent reads. Ralph passes all of it through unchanged.
 */
export interface ScriptedAgentEnv {
  /** Variables to set for the agent (HOME and the agent's own). */
  env: Record<string, string>;
  /** The model to pass (config `model`), or '' for the agent's default. */
  model: string;
}

/** Variables of the outer environment that would point an agent at a real provider or account. */
const PROVIDER_VAR = /^(GEMINI_|GOOGLE_|COPILOT_|GH_|GITHUB_)/;

/** `undefined` for every provider variable of this process's environment: merged last, they remove them. */
export function withoutProviderVars(): Record<string, undefined> {
  return Object.fromEntries(Object.keys(process.env).flatMap((k) => (PROVIDER_VAR.test(k) ? [[k, undefined]] : [])));
}

/**
 * Gemini CLI: `GOOGLE_GEMINI_BASE_URL` and `GEMINI_API_KEY`, and `$HOME/.gemini/settings.json` choosing API-key auth
 * (without it the base URL selects "gateway" auth, which headless mode rejects) with telemetry off; `settings` are
 * merged in (`general.maxAttempts`, say). `GEMINI_CLI_NO_RELAUNCH` saves the CLI relaunching its own node process.
 */
export function geminiModelEnv(home: string, url: string, settings: Record<string, unknown> = {}): ScriptedAgentEnv {
  fs.mkdirSync(path.join(home, '.gemini'), { recursive: true });
  const s = {
    security: { auth: { selectedType: 'gemini-api-key' } },
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
    ...settings,
  };
  fs.writeFileSync(path.join(home, '.gemini', 'settings.json'), JSON.stringify(s, null, 2));
  return {
    env: {
      HOME: home,
      GOOGLE_GEMINI_BASE_URL: url,
      GEMINI_API_KEY: 'dummy-gemini-key',
      GEMINI_CLI_NO_RELAUNCH: 'true',
    },
    model: 'gemini-2.5-flash',
  };
}

/**
 * Copilot CLI, bring-your-own-key over Chat Completions (`copilot help providers`): no GitHub login. Its cache is
 * shared between tests (it unpacks 235 MB into `$XDG_CACHE_HOME/copilot` on its first start). `COPILOT_OFFLINE=true`
 * (`copilot help environment`: no GitHub authentication, telemetry, web tools or update lookup; needs a local
 * provider) is what a user of a local model sets: without it each start spends about a minute on GitHub lookups that
 * cannot succeed here (its release lookup waits for a circuit breaker), 112 s a turn against 16 s measured.
 */
export function copilotModelEnv(home: string, openaiUrl: string): ScriptedAgentEnv {
  return {
    env: {
      HOME: home,
      XDG_CACHE_HOME: path.join(repoRoot, '.agent-clis', 'copilot', '.cache'),
      COPILOT_PROVIDER_BASE_URL: openaiUrl,
      COPILOT_PROVIDER_API_KEY: 'dummy-copilot-key',
      COPILOT_MODEL: 'fake-model',
      COPILOT_OFFLINE: 'true',
    },
    model: '',
  };
}
