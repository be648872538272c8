import { z } from 'zod';

/**
 * The schema of `.ralph/config.json`, the one configuration read by the CLI and the extension alike.
 * Precedence (ARCHITECTURE.md "Configuration"): command-line flags > VS Code settings (`ralph.<key>`) > this file
 * > the defaults below. Every VS Code setting in package.json has its key and default here (a unit test checks).
 * Unknown keys are kept (passthrough) so a newer file is not damaged by an older build.
 */
export const ralphConfigSchema = z.looseObject({
  /** Agent CLI the loop drives. */
  agent: z.enum(['claude', 'cursor-agent']).default('claude'),
  /** Path or name (looked up on PATH) of the Claude Code CLI. Restricted in untrusted workspaces. */
  claudePath: z.string().min(1).default('claude'),
  /** Path or name of the cursor-agent CLI (also installed as `agent`). Restricted in untrusted workspaces. */
  cursorAgentPath: z.string().min(1).default('cursor-agent'),
  /** Extra arguments appended to every agent invocation. Restricted in untrusted workspaces. */
  agentArgs: z.array(z.string()).default([]),
  /** Model name passed with `--model`; empty means the agent's default. */
  model: z.string().default(''),
  /** Claude Code `--permission-mode` for unattended runs. */
  permissionMode: z.enum(['default', 'acceptEdits', 'bypassPermissions', 'plan']).default('bypassPermissions'),
  /** Iterations (agent processes) per run before the run stops with "max iterations". */
  maxIterations: z.number().int().positive().default(25),
  /** Context window in tokens when neither the stream nor the model name tells it. */
  contextWindowTokens: z.number().int().positive().default(200_000),
  /** Longest agent output line kept, in bytes; longer lines are dropped and counted (default 64 MiB). */
  maxLineBytes: z.number().int().positive().default(64 * 1024 * 1024),
  /** Gate commands per tier, used when `.ralph/command-policy` has no `[gates]` (issue 5; seed-systems.md §3.9). */
  gates: z.object({ basic: z.string().min(1).optional(), full: z.string().min(1).optional(), final: z.string().min(1).optional() }).default({}),
  /** Longest a gate command may run before its process group is ended, ms (seed-systems.md §3.10: 1200 s). */
  gateTimeoutMs: z.number().int().positive().default(1_200_000),
  /** Context tokens at which an iteration is rotated; 0 = the per-agent default (seed-systems.md §3.4, core/stream/thresholds.ts). */
  rotateThresholdTokens: z.number().int().nonnegative().default(0),
  /** Context tokens at which the agent is warned once per iteration; 0 = the default (pinned for `[1m]` models, else 7/8 of rotate). */
  warnThresholdTokens: z.number().int().nonnegative().default(0),
});

/** A complete configuration after defaults are applied. */
export type RalphConfig = z.infer<typeof ralphConfigSchema>;

/** The defaults, i.e. what an empty `.ralph/config.json` means. */
export const defaultConfig: RalphConfig = ralphConfigSchema.parse({});

/** Keys a user may set (the schema's own keys, without passthrough extras). */
export const configKeys = Object.keys(ralphConfigSchema.shape) as (keyof RalphConfig)[];

/** Keys that name programs or arguments to run: never taken from an untrusted workspace's settings. */
export const restrictedConfigKeys: readonly (keyof RalphConfig)[] = ['claudePath', 'cursorAgentPath', 'agentArgs', 'gates'];
