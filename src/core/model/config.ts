import { z } from 'zod';
import { AGENT_NAMES } from './agentNames';

export { AGENT_NAMES, type AgentName } from './agentNames';

/**
 * The schema of `.ralph/config.json`, the one configuration read by the CLI and the extension alike.
 * Precedence (ARCHITECTURE.md "Configuration"): command-line flags > VS Code settings (`ralph.<key>`) > this file
 * > the defaults below. Every VS Code setting in package.json has its key and default here (a unit test checks).
 * Unknown keys are kept (passthrough) so a newer file is not damaged by an older build.
 */
const ralphConfigShape = {
  /** Agent CLI the loop drives. */
  agent: z.enum(AGENT_NAMES).default('claude'),
  /** Path or name (looked up on PATH) of the Claude Code CLI. Restricted in untrusted workspaces. */
  claudePath: z.string().min(1).default('claude'),
  /** Path or name of the cursor-agent CLI (also installed as `agent`). Restricted in untrusted workspaces. */
  cursorAgentPath: z.string().min(1).default('cursor-agent'),
  /** Path or name of OpenAI's Codex CLI (`codex`). Restricted in untrusted workspaces. */
  codexPath: z.string().min(1).default('codex'),
  /** Path or name of Google's Gemini CLI (`gemini`). Restricted in untrusted workspaces. */
  geminiPath: z.string().min(1).default('gemini'),
  /** Path or name of the opencode CLI (`opencode`). Restricted in untrusted workspaces. */
  opencodePath: z.string().min(1).default('opencode'),
  /** Path or name of the Qwen Code CLI (`qwen`). Restricted in untrusted workspaces. */
  qwenPath: z.string().min(1).default('qwen'),
  /** Path or name of the GitHub Copilot CLI (`copilot`). Restricted in untrusted workspaces. */
  copilotPath: z.string().min(1).default('copilot'),
  /**
   * `strict`: a run whose `.ralph/command-policy` has rows the chosen agent cannot enforce refuses to start, naming
   * them; `best-effort`: it starts and lists each unenforced row in the run log's first lines (docs/agents.md).
   */
  guard: z.enum(['strict', 'best-effort']).default('strict'),
  /**
   * Agents in failover order (`[]` = `[agent]`): when the running agent hits a usage limit that resets more than
   * `failoverAfterMinutes` away, the next iteration runs the next agent of this list (core/agents/failover.ts).
   */
  agents: z.array(z.enum(AGENT_NAMES)).default([]),
  /** A usage limit resetting within this many minutes is waited out rather than failed over. */
  failoverAfterMinutes: z.number().min(0).default(10),
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
  maxLineBytes: z
    .number()
    .int()
    .positive()
    .default(64 * 1024 * 1024),
  /** Gate commands per tier, used when `.ralph/command-policy` has no `[gates]` (seed-systems.md §3.9). */
  gates: z
    .object({
      basic: z.string().min(1).optional(),
      full: z.string().min(1).optional(),
      final: z.string().min(1).optional(),
    })
    .default({}),
  /** Longest a gate command may run before its process group is ended, ms (seed-systems.md §3.10: 1200 s). */
  gateTimeoutMs: z.number().int().positive().default(1_200_000),
  /** Context tokens at which an iteration is rotated; 0 = the per-agent default (seed-systems.md §3.4, core/stream/thresholds.ts). */
  rotateThresholdTokens: z.number().int().nonnegative().default(0),
  /** Context tokens at which the agent is warned once per iteration; 0 = the default (pinned for `[1m]` models, else 7/8 of rotate). */
  warnThresholdTokens: z.number().int().nonnegative().default(0),
  /** Stop the run once its agents have cost this much, USD (client-side `total_cost_usd`); 0 = no cap. */
  maxCostUsd: z.number().nonnegative().default(0),
  /** Stop the run after this many minutes of wall time; 0 = no cap. */
  maxWallTimeMinutes: z.number().nonnegative().default(0),
  /**
   * Run independent quantum stories at once, each on its own lane in a git worktree `.ql-wt/<id>`
   * (`ralph run --parallel`). Only the quantum source runs in parallel; a parallel run needs a clean git folder.
   */
  parallel: z.boolean().default(false),
  /** Most lanes (stories at once) of a parallel run (`--max-parallel N`). */
  maxParallel: z.number().int().positive().default(4),
  /** Longest one story may take across its iterations in a parallel run, ms (default 15 minutes); its lane is then ended. */
  storyTimeoutMs: z.number().int().positive().default(900_000),
  /**
   * Where a parallel run's lanes run (docs/distributed-lanes.md): `worktree`, git worktrees in this folder, or
   * `bullmq`, jobs on a Redis queue taken by `ralph worker` processes on other machines (needs `redisUrl`).
   */
  laneDispatcher: z.enum(['worktree', 'bullmq']).default('worktree'),
  /**
   * The Redis of remote lanes, `redis://[user]:password@host:port` or `rediss://…` (a password is required);
   * RALPH_REDIS_URL overrides it (keep the password out of shared files).
   */
  redisUrl: z.string().default(''),
  /** The git remote remote lanes fetch the feature branch from and push their branches to (its name in this folder). */
  laneRemote: z.string().min(1).default('origin'),
  /** A remote lane silent this long (no heartbeat, ms) is taken for dead: its attempt fails and is retried. */
  laneStallMs: z.number().int().positive().default(30_000),
  /** After blocking an item that ran out of attempts, go on with other ready work instead of pausing the run. */
  continueOnBlocked: z.boolean().default(false),
  /** Minutes an item waits for the answer to its agent's question before the run stops as stalled; 0 = wait for ever. */
  questionTimeoutMinutes: z.number().nonnegative().default(0),
  /**
   * A shell command line run on every question and at the run's end, with the event as JSON on stdin and a one-line
   * summary in `RALPH_NOTIFY_TEXT` (e.g. a Discord webhook with curl); empty = none. It names a program to run, so a
   * workspace's value is only used once the workspace is trusted.
   */
  notify: z.string().default(''),
  /** Longest `notify` may run before its process group is ended, ms. */
  notifyTimeoutMs: z.number().int().positive().default(10_000),
  /** When every task is done and the final gate is green, run a reviewer iteration whose `<verdict>SHIP|NEEDS_WORK</verdict>` decides. */
  reviewer: z.boolean().default(false),
  /**
   * Delays and limits of the loop, ms unless named otherwise (seed-systems.md §3.6 defaults). Tests shorten them.
   * `betweenIterationsMs` 2000, `killGraceMs` 5000 (SIGTERM → SIGKILL), `stallLimit` 3 natural ends without
   * progress, rate-limit backoff `backoffBaseMs` 15000 doubling to `backoffCapMs` 300000, `resetMarginMs` 15000
   * after a known reset time, at most `maxResetWaitMs` 21600000 (6 h) and `maxQuotaWaits` 8 such waits,
   * `maxDeferrals` 10 in a row before the run stops as stalled.
   */
  timing: z
    .object({
      betweenIterationsMs: z.number().int().nonnegative().optional(),
      killGraceMs: z.number().int().nonnegative().optional(),
      stallLimit: z.number().int().positive().optional(),
      backoffBaseMs: z.number().int().nonnegative().optional(),
      backoffCapMs: z.number().int().nonnegative().optional(),
      resetMarginMs: z.number().int().nonnegative().optional(),
      maxResetWaitMs: z.number().int().nonnegative().optional(),
      maxQuotaWaits: z.number().int().nonnegative().optional(),
      maxDeferrals: z.number().int().positive().optional(),
      /** The watchdog (loop/decide.ts `decideWatchdog`): a silent agent's iteration ends after this, ms (20 min). */
      silenceTimeoutMs: z.number().int().nonnegative().optional(),
      /** Longest an iteration may run, ms; 0 = no limit (default). */
      iterationTimeoutMs: z.number().int().nonnegative().optional(),
      /** Once STOP is requested, an agent silent this long is ended, ms (60000); one still printing finishes. */
      stopGraceMs: z.number().int().nonnegative().optional(),
    })
    .default({}),
  /** Finished runs kept under `.ralph/runs/` (newest first); older ones are deleted at the next run's start. */
  keepRuns: z.number().int().positive().default(20),
  /** Most disk `.ralph/runs/` may take, MB: the oldest finished runs are deleted above it (never the active run). */
  runsMaxMb: z.number().positive().default(1024),
  /**
   * Largest file the readers read, MB, per format (store/readJsonFile.ts `ReadLimits`): `jsonMb` (default 64) for
   * `.json` files, `textMb` (default 16) for the rest. A larger file, or one that is not a regular file, is refused
   * and named as a problem, never read.
   */
  /**
   * Process containment (process/containment.ts): `"auto"` (default) runs each agent iteration and gate command in
   * its own PID namespace when the system allows it (`unshare`), so ending it ends every process started under it;
   * `"marker"` uses only the environment-marker sweep (which misses `setsid env -i …`). Weakening it weakens a
   * guarantee, so a workspace's value is trusted content (trust/trustedContent.ts) and restricted in untrusted workspaces.
   */
  containment: z.enum(['auto', 'marker']).default('auto'),
  readLimits: z
    .object({
      jsonMb: z.number().positive().optional(),
      textMb: z.number().positive().optional(),
    })
    .default({}),
  /**
   * IJFW wave recovery's orphan windows, ms (seed-systems.md §1.10-1, core/waves): a subagent without DONE is an
   * orphan once its checkpoint is older than `orphanAfterMs` (60000) and its last activity older than
   * `inactiveAfterMs` (90000). `ralph waves check --orphan-after-ms / --inactive-after-ms` override them.
   */
  waves: z
    .object({
      orphanAfterMs: z.number().int().nonnegative().optional(),
      inactiveAfterMs: z.number().int().nonnegative().optional(),
    })
    .default({}),
};

/** `.ralph/config.json` (loose: unknown keys are kept). */
export const ralphConfigSchema = z.looseObject(ralphConfigShape);

/** A complete configuration after defaults are applied. */
export type RalphConfig = z.infer<typeof ralphConfigSchema>;

/** The defaults, i.e. what an empty `.ralph/config.json` means (built on call: no schema work at module load). */
export function defaultConfig(): RalphConfig {
  return ralphConfigSchema.parse({});
}

/**
 * The defaults as a literal, built without the schema (what `ralphConfigSchema.parse({})` returns, key order
 * included; test/unit/core/config.test.ts holds them equal): `loadConfig` of a folder without a config file, settings
 * or flags returns this, so a CLI command that needs only the defaults does not load zod (src/cli/lazyZod.ts).
 */
export function defaultConfigLiteral(): RalphConfig {
  return {
    agent: 'claude',
    claudePath: 'claude',
    cursorAgentPath: 'cursor-agent',
    codexPath: 'codex',
    geminiPath: 'gemini',
    opencodePath: 'opencode',
    qwenPath: 'qwen',
    copilotPath: 'copilot',
    guard: 'strict',
    agents: [],
    failoverAfterMinutes: 10,
    agentArgs: [],
    model: '',
    permissionMode: 'bypassPermissions',
    maxIterations: 25,
    contextWindowTokens: 200000,
    maxLineBytes: 67108864,
    gates: {},
    gateTimeoutMs: 1200000,
    rotateThresholdTokens: 0,
    warnThresholdTokens: 0,
    maxCostUsd: 0,
    maxWallTimeMinutes: 0,
    parallel: false,
    maxParallel: 4,
    storyTimeoutMs: 900000,
    laneDispatcher: 'worktree',
    redisUrl: '',
    laneRemote: 'origin',
    laneStallMs: 30000,
    continueOnBlocked: false,
    questionTimeoutMinutes: 0,
    notify: '',
    notifyTimeoutMs: 10000,
    reviewer: false,
    timing: {},
    keepRuns: 20,
    runsMaxMb: 1024,
    containment: 'auto',
    readLimits: {},
    waves: {},
  };
}

/** Keys a user may set (the schema's own keys, without passthrough extras). */
export const configKeys = Object.keys(ralphConfigShape) as (keyof RalphConfig)[];

/** Keys that name programs or arguments to run: never taken from an untrusted workspace's settings. */
export const restrictedConfigKeys: readonly (keyof RalphConfig)[] = [
  'claudePath',
  'cursorAgentPath',
  'codexPath',
  'geminiPath',
  'opencodePath',
  'qwenPath',
  'copilotPath',
  'guard',
  'agentArgs',
  'gates',
  'notify',
  'containment',
];
