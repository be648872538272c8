import * as path from 'node:path';
import * as vscode from 'vscode';
import type { DiscoveredAgent, VersionCache } from '../core/agents/discover';
import type { RalphConfig } from '../core/model/config';

/**
 * Which agent **Ralph: Start** runs when the caller names none: the agent CLIs found on this machine are offered in a
 * quick pick (name, version, path) when there are several, and the choice is remembered per workspace folder in the
 * workspace's state, so the next Start asks nothing. **Ralph: Choose Agent…** asks again and remembers the new
 * choice. An agent named in the settings or in `.ralph/config.json` is the user's decision: Start never asks over it.
 * The decision is {@link agentChoiceOf} (pure); {@link AgentChooser} shows the pick and keeps the memory.
 */

/** The workspace-state key of the remembered agents: folder path → agent name. */
export const AGENT_MEMORY_KEY = 'ralph.startAgent';

/** An agent CLI found on this machine, under the name Ralph drives it by. */
export interface FoundAgent {
  /** The adapter's name (`claude`, `codex`, …), as `ralph run --agent` takes it. */
  agent: string;
  /** What `--version` printed, or null (see `note`). */
  version: string | null;
  /** Absolute path of the executable. */
  path: string;
  /** Why there is no version, when there is none. */
  note?: string;
}

/** What the decision knows. */
export interface AgentChoiceInput {
  /** The caller's agent (`StartArgs.agent`, the LM tool's). */
  given: string | undefined;
  /** The agent the settings or `.ralph/config.json` name (undefined when neither does). */
  configured: string | undefined;
  /** The agent remembered for this folder, if any. */
  remembered: string | undefined;
  /** The agent CLIs found, in Ralph's order. */
  found: readonly FoundAgent[];
  /** True for **Ralph: Choose Agent…**: ask even when a choice is remembered or configured. */
  change?: boolean;
}

/**
 * What Start does about the agent. Pure.
 * - `given`: the caller named it; nothing is asked or remembered.
 * - `configured`: the settings or config file name one; the engine's configuration decides (no pick, no memory).
 * - `remembered`: the folder's remembered agent is still on this machine: run it without asking.
 * - `ask`: more than one agent CLI is found (or `change`): offer them, `remembered` marked.
 * - `default`: none or one found: the engine's default (`agent`, `claude`), whose absence the engine reports.
 */
export type AgentChoice =
  | { kind: 'given' | 'remembered'; agent: string }
  | { kind: 'configured' | 'default' }
  | { kind: 'ask'; found: readonly FoundAgent[]; remembered: string | undefined };

export function agentChoiceOf(i: AgentChoiceInput): AgentChoice {
  if (i.given) return { kind: 'given', agent: i.given };
  if (i.change && i.found.length) return { kind: 'ask', found: i.found, remembered: i.remembered ?? i.configured };
  if (i.configured) return { kind: 'configured' };
  if (i.remembered && i.found.some((f) => f.agent === i.remembered)) return { kind: 'remembered', agent: i.remembered };
  if (i.found.length > 1) return { kind: 'ask', found: i.found, remembered: undefined };
  return { kind: 'default' };
}

/** An entry of the agent pick: VS Code's `QuickPickItem` fields and the agent it stands for. */
export interface AgentPickItem {
  label: string;
  description: string;
  detail: string;
  agent: string;
}

/**
 * The entries of the pick, version and path on each, in Ralph's order; the current agent (remembered or configured)
 * last and marked: **Choose Agent…** is asked to change it, so Enter takes another. Pure.
 */
export function agentPickItems(found: readonly FoundAgent[], current: string | undefined): AgentPickItem[] {
  const sorted = [...found].sort((a, b) => Number(a.agent === current) - Number(b.agent === current));
  return sorted.map((f) => ({
    label: f.agent,
    description: [f.version ?? f.note ?? 'version unknown', f.agent === current ? '(current)' : '']
      .filter(Boolean)
      .join(' '),
    detail: f.path,
    agent: f.agent,
  }));
}

/** The agents found under their adapters' names, one per adapter (the first binary found), in Ralph's order. Pure. */
export function foundAgentsOf(
  discovered: readonly DiscoveredAgent[],
  binaries: readonly { binary: string; adapter: { name: string } }[],
): FoundAgent[] {
  const out: FoundAgent[] = [];
  for (const b of binaries) {
    const d = discovered.find((x) => x.name === b.binary || x.name === path.basename(b.binary));
    if (!d || out.some((o) => o.agent === b.adapter.name)) continue;
    out.push({ agent: b.adapter.name, version: d.version, path: d.path, ...(d.note ? { note: d.note } : {}) });
  }
  return out;
}

/** What the chooser asks of its surroundings (tests give a fixed list instead of running `--version`). */
export interface AgentChooserDeps {
  /** The workspace's state (`ExtensionContext.workspaceState`). */
  memory: vscode.Memento;
  /** The agent CLIs on this machine for `folder` under `config` (default: each adapter's binary, `--version` run). */
  find?(folder: string, config: RalphConfig): Promise<FoundAgent[]>;
}

/** The versions of this extension host session, per binary (`--version` runs again once a binary's file changes). */
let agentVersions: VersionCache | undefined;

/**
 * Finds each adapter's binary as `config` names it and asks it for `--version` (as **Ralph: Doctor** does), once per
 * binary and file state in this extension host session ({@link VersionCache}).
 */
export async function findAgents(folder: string, config: RalphConfig): Promise<FoundAgent[]> {
  const [{ discoverAgents, VersionCache }, { configuredAgentBinaries }] = await Promise.all([
    import('../core/agents/discover'),
    import('../core/agents/registry'),
  ]);
  agentVersions ??= new VersionCache();
  const binaries = configuredAgentBinaries(config, folder);
  return foundAgentsOf(
    await discoverAgents({ names: binaries.map((b) => b.binary), versionCache: agentVersions }),
    binaries,
  );
}

/** The agent the folder's `.ralph/config.json` or the VS Code settings name, undefined when neither does. */
export async function configuredAgentOf(folder: string, settings: { agent?: unknown }): Promise<string | undefined> {
  if (typeof settings.agent === 'string') return settings.agent;
  const [{ configPath }, { readTextSync }, { parseJsonText }] = await Promise.all([
    import('../core/store/loadConfig'),
    import('../core/store/readJsonFile'),
    import('../core/store/parseError'),
  ]);
  // The file's own keys, not the schema's (its defaults would name `claude` for a file that names no agent).
  const text = readTextSync(configPath(folder));
  const parsed = text === undefined ? undefined : parseJsonText(configPath(folder), text);
  const agent = parsed?.ok ? (parsed.value as { agent?: unknown } | null)?.agent : undefined;
  return typeof agent === 'string' ? agent : undefined;
}

/** A workspace state kept in memory (a controller made without the extension's context: tests, other hosts). */
export function memoryState(): vscode.Memento {
  const values = new Map<string, unknown>();
  return {
    keys: () => [...values.keys()],
    get: <T>(key: string, fallback?: T) => (values.has(key) ? (values.get(key) as T) : fallback),
    update: async (key: string, value: unknown) => {
      if (value === undefined) values.delete(key);
      else values.set(key, value);
    },
  } as vscode.Memento;
}

/** Start's agent: the pick, the memory per workspace folder, and **Ralph: Choose Agent…**. */
export class AgentChooser {
  constructor(private readonly deps: AgentChooserDeps) {}

  /** The agent remembered for `folder`, if any. */
  remembered(folder: string): string | undefined {
    return this.deps.memory.get<Record<string, string>>(AGENT_MEMORY_KEY)?.[folder];
  }

  /**
   * The agent Start runs in `folder`: `{ agent, why }` (agent undefined: the engine's configuration decides; `why`
   * for the log) or `null` when the person dismissed the pick. `configured` is the agent the settings or the config file name, if any.
   */
  async choose(o: {
    folder: string;
    config: RalphConfig;
    given: string | undefined;
    configured: string | undefined;
    change?: boolean;
  }): Promise<{ agent: string | undefined; why: string } | null> {
    // Only what the decision needs: a named or configured agent runs no `--version` at all.
    if (o.given) return { agent: o.given, why: 'named by the caller' };
    if (o.configured && !o.change) return { agent: undefined, why: `${o.configured}, as configured` };
    const found = await (this.deps.find ?? findAgents)(o.folder, o.config);
    const c = agentChoiceOf({ ...o, remembered: this.remembered(o.folder), found });
    switch (c.kind) {
      case 'given':
      case 'remembered':
        return { agent: c.agent, why: c.kind === 'given' ? 'named by the caller' : 'remembered for this folder' };
      case 'configured':
      case 'default':
        return {
          agent: undefined,
          why: `the configured default (${found.length} agent CLI${found.length === 1 ? '' : 's'} found)`,
        };
      case 'ask': {
        const pick = await vscode.window.showQuickPick(agentPickItems(c.found, c.remembered), {
          title: o.change ? 'Ralph: Choose Agent — which agent runs in this folder?' : 'Ralph: Start — which agent?',
          placeHolder: `Remembered for ${path.basename(o.folder)}; Ralph: Choose Agent… changes it`,
        });
        if (!pick) return null;
        await this.remember(o.folder, pick.agent);
        return { agent: pick.agent, why: `picked among ${c.found.map((f) => f.agent).join(', ')}` };
      }
    }
  }

  /** Forgets the agent remembered for `folder`: the next Start asks again. */
  async forget(folder: string): Promise<void> {
    const { [folder]: _gone, ...rest } = this.deps.memory.get<Record<string, string>>(AGENT_MEMORY_KEY) ?? {};
    await this.deps.memory.update(AGENT_MEMORY_KEY, rest);
  }

  /** Remembers `agent` for `folder` (the workspace's state). */
  async remember(folder: string, agent: string): Promise<void> {
    const all = { ...(this.deps.memory.get<Record<string, string>>(AGENT_MEMORY_KEY) ?? {}), [folder]: agent };
    await this.deps.memory.update(AGENT_MEMORY_KEY, all);
  }
}
