import * as fs from 'node:fs';
import * as path from 'node:path';
import { opencodeConfigDeps } from './agentClis';

/**
 * The environment and config files that point each agent CLI at a scripted model server, written the way a user
 * configures the agent for a model server of their own (more-agents.md): a temporary HOME holding the agent's own
 * config files, plus the variables the agent reads. Ralph passes all of it through unchanged; nothing here is ralph's.
 * Retries are kept low where the agent lets its config say so, so that failure scenarios end quickly.
 */
export interface AgentModelEnv {
  /** Variables to set for the agent (HOME and the agent's own). */
  env: Record<string, string>;
  /** The model name to pass (`--model` / config `model`), or '' for the config's default. */
  model: string;
}

/** Codex: `$CODEX_HOME/config.toml` with a custom Responses-API provider (OPENAI_BASE_URL is ignored by 0.171). */
export function codexModelEnv(home: string, openaiUrl: string, o: { retries?: number } = {}): AgentModelEnv {
  const codexHome = path.join(home, '.codex');
  fs.mkdirSync(codexHome, { recursive: true });
  const retries = o.retries ?? 1;
  fs.writeFileSync(
    path.join(codexHome, 'config.toml'),
    [
      'model = "gpt-5.5"',
      'model_provider = "scripted"',
      '',
      '[model_providers.scripted]',
      'name = "scripted"',
      `base_url = "${openaiUrl}"`,
      'env_key = "SCRIPTED_API_KEY"',
      'wire_api = "responses"',
      `request_max_retries = ${retries}`,
      `stream_max_retries = ${retries}`,
      '',
    ].join('\n'),
  );
  return { env: { HOME: home, CODEX_HOME: codexHome, SCRIPTED_API_KEY: 'dummy-codex-key' }, model: '' };
}

/**
 * opencode: its global config file `$XDG_CONFIG_HOME/opencode/opencode.json` naming an OpenAI-compatible provider, in a
 * config folder that has the plugin package opencode installs at its first start (opencodeConfigDeps).
 */
export function opencodeModelEnv(home: string, openaiUrl: string): AgentModelEnv {
  const xdg = {
    XDG_CONFIG_HOME: path.join(home, '.config'),
    XDG_DATA_HOME: path.join(home, '.local', 'share'),
    XDG_CACHE_HOME: path.join(home, '.cache'),
    XDG_STATE_HOME: path.join(home, '.local', 'state'),
  };
  fs.mkdirSync(path.join(xdg.XDG_CONFIG_HOME, 'opencode'), { recursive: true });
  fs.writeFileSync(
    path.join(xdg.XDG_CONFIG_HOME, 'opencode', 'opencode.json'),
    JSON.stringify(
      {
        $schema: 'https://opencode.ai/config.json',
        provider: {
          scripted: {
            npm: '@ai-sdk/openai-compatible',
            options: { baseURL: openaiUrl, apiKey: '{env:SCRIPTED_API_KEY}' },
            models: { 'fake-model': { tool_call: true } },
          },
        },
        model: 'scripted/fake-model',
        small_model: 'scripted/fake-model',
        share: 'disabled',
        autoupdate: false,
      },
      null,
      2,
    ),
  );
  opencodeConfigDeps(path.join(xdg.XDG_CONFIG_HOME, 'opencode'));
  return {
    env: {
      HOME: home,
      ...xdg,
      OPENCODE_DISABLE_MODELS_FETCH: '1',
      OPENCODE_DISABLE_AUTOUPDATE: '1',
      SCRIPTED_API_KEY: 'dummy-opencode-key',
    },
    model: '',
  };
}

/**
 * Qwen Code: the OpenAI-compatible variables it reads, and `$HOME/.qwen/settings.json` choosing that protocol
 * (`security.auth.selectedType`: without it headless mode has no auth method) with telemetry off.
 */
export function qwenModelEnv(home: string, openaiUrl: string): AgentModelEnv {
  fs.mkdirSync(path.join(home, '.qwen'), { recursive: true });
  fs.writeFileSync(
    path.join(home, '.qwen', 'settings.json'),
    JSON.stringify(
      {
        security: { auth: { selectedType: 'openai' } },
        privacy: { usageStatisticsEnabled: false },
        telemetry: { enabled: false },
      },
      null,
      2,
    ),
  );
  return {
    env: { HOME: home, OPENAI_BASE_URL: openaiUrl, OPENAI_API_KEY: 'dummy-qwen-key', OPENAI_MODEL: 'fake-model' },
    model: '',
  };
}
