import type { AgentName } from '../model/agentNames';

/**
 * How to install each agent CLI, as its publisher documents it (npm packages at the names more-agents.md verified;
 * cursor-agent is not on npm). `ralph doctor` and **Ralph: Doctor** print it for an agent that is missing.
 */
export const AGENT_INSTALL: Readonly<Record<AgentName, string>> = {
  claude: 'npm install -g @anthropic-ai/claude-code',
  codex: 'npm install -g @openai/codex',
  gemini: 'npm install -g @google/gemini-cli',
  opencode: 'npm install -g opencode-ai',
  qwen: 'npm install -g @qwen-code/qwen-code',
  copilot: 'npm install -g @github/copilot',
  'cursor-agent': 'curl https://cursor.com/install -fsS | bash',
};
