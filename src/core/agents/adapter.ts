import type { CommandPolicy } from '../gates/commandPolicy';
import type { AgentEvent } from '../stream/events';
import type { AfterTurn } from './turnEnd';

/**
 * One agent CLI behind one interface: how to start an iteration (arguments, environment) and how to map its
 * stream-json lines into {@link AgentEvent}s. Adding an agent means adding one adapter file and one line in
 * `registry.ts`. Processes are started by `spawnIteration` (spawn.ts), identically for every adapter: own
 * process group, stdin closed, stderr drained concurrently.
 */
export interface AgentAdapter {
  /** Registry key and the `agent` config value: `claude`, `cursor-agent`. */
  readonly name: string;
  /** Binary looked up on PATH when the configuration names none. */
  readonly defaultBinary: string;
  /** The configuration key naming this agent's binary (`claudePath`, `cursorAgentPath`): a string key of RalphConfig, read through registry.ts. */
  readonly configKey: string;
  /**
   * True when the CLI runs ralph's guard hook (Claude Code's PreToolUse shape, or Gemini CLI's BeforeTool): the run
   * then starts its guard server and hands the hook over (`--settings`, `-c`, or {@link prepareGuard}).
   */
  readonly guardHook: boolean;
  /**
   * How the run's command guard reaches a CLI that takes it neither on its command line nor by Claude's `--settings`
   * (guardSupport.ts has what each enforces). Called before every start; may write files into `g.dir` (the run
   * folder). Throws naming a user file it cannot read rather than start the agent without the guard.
   */
  prepareGuard?(g: GuardPreparation): Promise<GuardAdditions>;
  /** True when the agent reports no live per-call usage, so context is the byte estimate (seed-systems.md §3.4). */
  readonly estimatesContext: boolean;
  /**
   * Set when the CLI keeps running after its turn's final event: it is ended a grace after that event (turnEnd.ts),
   * and the iteration counts as the turn it printed. Absent: the CLI's own exit ends the iteration.
   */
  readonly afterTurn?: AfterTurn;
  /** The command line and environment of one iteration. Pure: no I/O. */
  invocation(spec: IterationSpec): Invocation;
  /** A fresh mapper for one stream (mappers keep per-stream state, e.g. tool ids → names). */
  createMapper(): StreamMapper;
  /**
   * How strongly one decoded line says "this agent wrote it": 0 (no idea), 1 (compatible), 2 (distinctive).
   * `session inspect` uses it to detect the agent of a recorded stream.
   */
  recognise(line: Record<string, unknown>): 0 | 1 | 2;
}

/** What {@link AgentAdapter.prepareGuard} is given. */
export interface GuardPreparation {
  /** The guard hook of the run (Claude's `--settings` shape), undefined when no guard server runs. */
  settings: Record<string, unknown> | undefined;
  /** `.ralph/command-policy` as the run loaded (and trusted) it at its start; null without one. */
  policy: CommandPolicy | null;
  /** The agent's environment (the user's variables, e.g. a config the CLI reads from one). */
  env: Readonly<Record<string, string | undefined>>;
  /** A folder of the run the adapter may write its guard files into. */
  dir: string;
}

/** What the guard adds to one start: variables and arguments (placed before `extraArgs`). */
export interface GuardAdditions {
  env?: Record<string, string>;
  args?: string[];
}

/** Maps decoded JSON lines to events. Never throws: a line it cannot map becomes an `unknown` event. */
export interface StreamMapper {
  map(line: Record<string, unknown>): AgentEvent[];
  /** Maps a line that is not JSON (cursor prints some errors as bare text). Default: no event. */
  mapText?(text: string): AgentEvent[];
  /** The stream ended: events the mapper still holds (Gemini joins text pieces per segment). Default: none. */
  end?(): AgentEvent[];
}

/** What the loop engine asks for when it starts one iteration (one agent process). */
export interface IterationSpec {
  /** The prompt, passed as the last argument (stdin stays closed). */
  prompt: string;
  /** Working directory of the agent: the workspace folder. */
  cwd: string;
  /** Binary path or name; default the adapter's `defaultBinary` (config `claudePath` / `cursorAgentPath`). */
  binary?: string;
  /** `--model`; empty or absent means the agent's default. */
  model?: string;
  /** `--resume <session id>`. */
  resume?: string;
  /** Arguments of the command guard (AgentAdapter.prepareGuard), placed before `extraArgs`. */
  guardArgs?: readonly string[];
  /** Extra arguments placed before the prompt (config `agentArgs`). */
  extraArgs?: readonly string[];
  /** Environment the agent inherits; default `process.env` (users rely on `ANTHROPIC_*`, proxies). */
  baseEnv?: Readonly<Record<string, string | undefined>>;
  /** Variables set on top of `baseEnv` (a value of `undefined` removes the variable). */
  env?: Readonly<Record<string, string | undefined>>;
  /** Claude: `--permission-mode` (config `permissionMode`). */
  permissionMode?: string;
  /** Claude: `--append-system-prompt`. */
  appendSystemPrompt?: string;
  /** Claude: `--max-turns`. */
  maxTurns?: number;
  /**
   * Claude: settings passed inline with `--settings '<json>'` for this run only, e.g. `{ hooks: { PreToolUse: … } }`.
   * The user's settings files are never edited (agent-streams.md §3.1).
   */
  settings?: Record<string, unknown>;
  /**
   * Claude: `ignore` passes `--setting-sources user --strict-mcp-config`, so Claude Code reads no project settings
   * (`.claude/settings*.json`) and no `.mcp.json`: the engine sets it when those files changed since the run's trust
   * check (core/trust/agentConfig.ts). `--settings` (the guard) still applies.
   */
  projectSettings?: 'load' | 'ignore';
  /** cursor-agent: the isolated `CURSOR_CONFIG_DIR` (its `--model` choice persists there); default `<cwd>/.ralph/cursor-config`. */
  cursorConfigDir?: string;
}

/** A fully resolved command line. */
export interface Invocation {
  file: string;
  args: string[];
  /** The complete environment of the child (not merged again). */
  env: Record<string, string>;
  cwd: string;
}

/** Merges `spec.baseEnv` (default `process.env`) with `spec.env` and `extra`; `undefined` deletes. */
export function mergeEnv(
  spec: IterationSpec,
  extra: Readonly<Record<string, string | undefined>> = {},
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(spec.baseEnv ?? process.env)) if (v !== undefined) out[k] = v;
  for (const layer of [spec.env ?? {}, extra]) {
    for (const [k, v] of Object.entries(layer)) {
      if (v === undefined) delete out[k];
      else out[k] = v;
    }
  }
  return out;
}

/** Text of a value that may be a string, an array of content blocks, or anything else. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    const parts: string[] = [];
    for (const c of content) {
      if (typeof c === 'string') parts.push(c);
      else if (c && typeof c === 'object' && typeof (c as { text?: unknown }).text === 'string')
        parts.push((c as { text: string }).text);
    }
    return parts.join('\n');
  }
  if (content === null || content === undefined) return '';
  try {
    return JSON.stringify(content);
  } catch {
    return String(content);
  }
}

/** A finite number or null (lenient: ints and floats; anything else is null). */
export function numOrNull(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

export function strOrNull(v: unknown): string | null {
  return typeof v === 'string' ? v : null;
}
