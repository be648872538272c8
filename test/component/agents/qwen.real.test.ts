import { qwenModelEnv } from '../../support/agentEnv';
import { describeAgentScenario } from '../../support/agentScenario';
import { toolUse, quota429 } from '../../support/modelServer';

/**
 * Qwen Code 0.24.4 (npm @qwen-code/qwen-code) through the loop engine, against the Chat Completions dialect of the
 * model server: ralph's guard as its PreToolUse hook; usage per call.
 */
describeAgentScenario({
  agent: 'qwen',
  modelEnv: (home, server) => qwenModelEnv(home, server.openaiUrl),
  deny: 'hook',
  usage: 'per-call',
  // Qwen Code refuses a shell command that edits a file it has not read in this session.
  beforeEdit: (file) => [toolUse('read_file', { file_path: file })],
  writeFile: (file, text) => toolUse('write_file', { file_path: file, content: text }),
  limit: () => quota429(),
});
