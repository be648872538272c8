import { codexModelEnv } from '../../support/agentEnv';
import { describeAgentScenario } from '../../support/agentScenario';

/** Codex 0.171 (npm @openai/codex) through the loop engine: its Responses-API provider in $CODEX_HOME/config.toml. */
describeAgentScenario({
  agent: 'codex',
  modelEnv: (home, url) => codexModelEnv(home, url),
  enforcesDeny: true,
  // The byte estimate: (3000 + 8000 shell output characters) / 4 = 2750 tokens after the shell call.
  rotateAt: 2000,
});
