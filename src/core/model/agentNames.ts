/**
 * Every agent CLI the loop can drive: the values of the `agent` configuration key (model/config.ts), in the order
 * `ralph doctor` and the CLI's `--agent` list them, each with an adapter in core/agents/registry.ts. A leaf without
 * zod, so the CLI can list them before loading any schema.
 */
export const AGENT_NAMES = ['claude', 'codex', 'gemini', 'opencode', 'qwen', 'copilot', 'cursor-agent'] as const;

/** One of {@link AGENT_NAMES}. */
export type AgentName = (typeof AGENT_NAMES)[number];
