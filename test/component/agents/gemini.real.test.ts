import { describeAgentScenario } from '../../support/agentScenario';
import { geminiWrite } from '../../support/modelDialects/gemini';
import { geminiModelEnv } from '../../support/scriptedAgentEnv';

/**
 * Gemini CLI 0.61 (npm @google/gemini-cli) through the loop engine, against the Gemini API dialect of the model
 * server: the `[deny]` row as its own policy rule; usage only in each turn's result, the context estimated from bytes.
 */
describeAgentScenario({
  agent: 'gemini',
  modelEnv: (home, server) => geminiModelEnv(home, server.url),
  deny: 'rules',
  usage: 'per-turn',
  writeFile: (file, text) => geminiWrite(file, text),
});
