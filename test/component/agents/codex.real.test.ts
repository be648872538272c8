import { quota429 } from '../../support/modelServer';
import { codexModelEnv } from '../../support/agentEnv';
import { describeAgentScenario } from '../../support/agentScenario';

/** Codex 0.171 (npm @openai/codex) through the loop engine: its Responses-API provider in $CODEX_HOME/config.toml. */
describeAgentScenario({
  agent: 'codex',
  modelEnv: (home, server) => codexModelEnv(home, server.openaiUrl),
  deny: 'hook',
  usage: 'per-turn',
  limit: () => quota429(),
});
