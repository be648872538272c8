import { quota429 } from '../../support/modelServer';
import { opencodeModelEnv } from '../../support/agentEnv';
import { describeAgentScenario } from '../../support/agentScenario';

/**
 * opencode 1.18.33 (npm opencode-ai) through the loop engine, against the Chat Completions dialect of the model server:
 * the `[deny]` row as its own `permission.bash` rule; usage per step.
 */
describeAgentScenario({
  agent: 'opencode',
  modelEnv: (home, server) => opencodeModelEnv(home, server.openaiUrl),
  deny: 'rules',
  usage: 'per-call',
  limit: () => quota429(),
});
