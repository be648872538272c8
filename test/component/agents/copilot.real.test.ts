import { describeAgentScenario } from '../../support/agentScenario';
import { type Turn, quota429 } from '../../support/modelServer';
import { copilotModelEnv } from '../../support/scriptedAgentEnv';

/**
 * Copilot CLI 1.0.102 (npm @github/copilot) with its own key through the loop engine, against the Chat Completions
 * dialect of the model server: the `[deny]` row as its own `--deny-tool` rule; no token counts in its stream, so the
 * context is estimated from bytes.
 */
describeAgentScenario({
  agent: 'copilot',
  modelEnv: (home, server) => copilotModelEnv(home, server.openaiUrl),
  deny: 'rules',
  usage: 'none',
  writeFile: (file, text): Turn => ({
    kind: 'toolUse',
    calls: [{ name: 'create', input: { path: file, file_text: text } }],
  }),
  limit: () => quota429(),
});
