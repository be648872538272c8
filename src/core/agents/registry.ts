import type { AgentAdapter } from './adapter';
import { claudeAdapter } from './claude';
import { cursorAgentAdapter } from './cursorAgent';

/**
 * Every agent adapter, keyed by agent name (the `agent` config value). Adding an agent = one adapter file
 * plus one entry here; nothing else switches on agent names except the threshold table (thresholds.ts), whose
 * fallback row covers agents it does not list.
 */
export const agentAdapters: Readonly<Record<string, AgentAdapter>> = {
  [claudeAdapter.name]: claudeAdapter,
  [cursorAgentAdapter.name]: cursorAgentAdapter,
};

/** Other names users type for an agent (`agent` is cursor-agent's second binary name). */
const aliases: Readonly<Record<string, string>> = { agent: 'cursor-agent', cursor: 'cursor-agent', 'claude-code': 'claude' };

/** The adapter for a name or alias, or undefined. */
export function findAdapter(name: string): AgentAdapter | undefined {
  return agentAdapters[name] ?? agentAdapters[aliases[name] ?? ''];
}

/** The adapter for a name or alias; throws an Error naming the known agents otherwise. */
export function getAdapter(name: string): AgentAdapter {
  const a = findAdapter(name);
  if (!a) throw new Error(`unknown agent "${name}" (known: ${Object.keys(agentAdapters).join(', ')})`);
  return a;
}

/**
 * Detects which agent wrote a stream from its first decoded lines: the adapter with the most distinctive hits
 * (score 2) wins, then the highest total score; null when no adapter recognises anything (codex, gemini, …).
 */
export function detectAgent(lines: readonly Record<string, unknown>[]): AgentAdapter | null {
  let best: { adapter: AgentAdapter; strong: number; total: number } | null = null;
  for (const adapter of Object.values(agentAdapters)) {
    let strong = 0;
    let total = 0;
    for (const l of lines) {
      const r = adapter.recognise(l);
      if (r === 2) strong++;
      total += r;
    }
    if (total === 0) continue;
    if (!best || strong > best.strong || (strong === best.strong && total > best.total)) best = { adapter, strong, total };
  }
  return best?.adapter ?? null;
}
