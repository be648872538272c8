import * as path from 'node:path';
import { AGENT_NAMES } from '../model/agentNames';
import type { RalphConfig } from '../model/config';
import type { AgentAdapter } from './adapter';
import { claudeAdapter } from './claude';
import { codexAdapter } from './codex';
import { copilotAdapter } from './copilot';
import { cursorAgentAdapter } from './cursorAgent';
import { geminiAdapter } from './gemini';
import { opencodeAdapter } from './opencode';
import { qwenAdapter } from './qwen';

/**
 * Every agent adapter, keyed by agent name (the `agent` config value, model/config.ts `AGENT_NAMES`, in that order).
 * Adding an agent = one adapter file plus one entry here (and its name in `AGENT_NAMES` and its path key in
 * model/config.ts, the leaf); nothing else switches on agent names except the threshold table (thresholds.ts), whose
 * fallback row covers agents it does not list, and the guard table (guardSupport.ts). The engine, doctor, the CLI and
 * the run controller ask the functions below which binary an agent uses.
 */
export const agentAdapters: Readonly<Record<string, AgentAdapter>> = Object.fromEntries(
  AGENT_NAMES.map((name) => [
    name,
    [claudeAdapter, codexAdapter, geminiAdapter, opencodeAdapter, qwenAdapter, copilotAdapter, cursorAgentAdapter].find(
      (a) => a.name === name,
    )!,
  ]),
);

/** Other names users type for an agent (`agent` is cursor-agent's second binary name). */
const aliases: Readonly<Record<string, string>> = {
  agent: 'cursor-agent',
  cursor: 'cursor-agent',
  'claude-code': 'claude',
};

/** The adapter for a name or alias, or undefined. */
export function findAdapter(name: string): AgentAdapter | undefined {
  return agentAdapters[name] ?? agentAdapters[aliases[name] ?? ''];
}

/** The adapter for a name or alias, ready to run; throws an Error naming the known agents for an unknown name. */
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
    if (!best || strong > best.strong || (strong === best.strong && total > best.total))
      best = { adapter, strong, total };
  }
  return best?.adapter ?? null;
}

/** The agent's binary as the configuration names it (`config[adapter.configKey]`, e.g. `claudePath`). */
export interface AgentBinary {
  adapter: AgentAdapter;
  /** The configuration key that names it. */
  key: string;
  /** The value as configured: a name looked up on PATH, or a path. */
  configured: string;
  /** What to look up: a configured path resolved against the workspace folder (as `-C` and the extension see it), or the bare name. */
  binary: string;
}

/** Which binary `adapter` runs in `folder` under `config`. Pure. Throws when the configuration has no such string key (a programming error: the schema gives every path key a default). */
export function agentBinary(adapter: AgentAdapter, config: RalphConfig, folder: string): AgentBinary {
  const configured = (config as Record<string, unknown>)[adapter.configKey];
  if (typeof configured !== 'string')
    throw new Error(`the configuration has no "${adapter.configKey}" for the ${adapter.name} agent`);
  return {
    adapter,
    key: adapter.configKey,
    configured,
    binary: configured.includes('/') ? path.resolve(folder, configured) : configured,
  };
}

/** The binaries of every adapter under `config`, in registry order (doctor looks for all of them). Pure. */
export function configuredAgentBinaries(config: RalphConfig, folder: string): AgentBinary[] {
  return Object.values(agentAdapters).map((a) => agentBinary(a, config, folder));
}
