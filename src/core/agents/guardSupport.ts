import type { CommandPolicy } from '../gates/commandPolicy';
import type { AgentName } from '../model/agentNames';

/**
 * What each agent CLI can enforce of `.ralph/command-policy` (docs/agents.md, "The guard per agent"). Claude Code and
 * Codex run ralph's own PreToolUse hook (the guard server's analyzer) before every shell command: every section is
 * enforced. The others have no hook ralph can hand them a decision through; until a row is translated into what
 * their CLI enforces, it is not enforced, and a run whose policy has such rows refuses to start (config `guard:
 * "strict"`, the default) or lists them in its run log's first lines (`guard: "best-effort"`). The protected paths
 * (process/protectedPaths.ts) are kept read-only by the kernel for every agent alike and are not in this table.
 */

/** The kinds of policy row the guard applies to an agent's commands. */
export const GUARD_ROW_KINDS = ['deny', 'protect', 'wrap', 'rewrite', 'gate-without-write'] as const;
export type GuardRowKind = (typeof GUARD_ROW_KINDS)[number];

export type GuardLevel = 'enforced' | 'approximated' | 'not-enforced';

/** How one agent handles one kind of row. */
export interface GuardSupport {
  level: GuardLevel;
  /** The mechanism (enforced / approximated) or why not (not enforced), one sentence. */
  how: string;
}

const hook = (agent: string): Record<GuardRowKind, GuardSupport> => ({
  deny: { level: 'enforced', how: `${agent} runs ralph's PreToolUse hook before every shell command: denied` },
  protect: { level: 'enforced', how: 'the same hook denies the command in a pipe or redirection' },
  wrap: { level: 'enforced', how: 'the same hook rewrites the command to run through the gate runner' },
  rewrite: { level: 'enforced', how: 'the same hook replaces the command (updatedInput)' },
  'gate-without-write': {
    level: 'enforced',
    how: 'the same hook routes a pinned gate command through the gate runner, which holds a re-run without an edit',
  },
});

const none = (why: string): Record<GuardRowKind, GuardSupport> =>
  Object.fromEntries(GUARD_ROW_KINDS.map((k) => [k, { level: 'not-enforced', how: why }])) as Record<
    GuardRowKind,
    GuardSupport
  >;

/** The table: per agent, per kind of row. */
export const GUARD_SUPPORT: Readonly<Record<AgentName, Readonly<Record<GuardRowKind, GuardSupport>>>> = {
  claude: hook('Claude Code'),
  codex: hook('Codex (its PreToolUse hook on the shell tool, handed over with -c hooks.PreToolUse)'),
  gemini: none('not translated for Gemini CLI yet'),
  opencode: none(
    "not translated for opencode yet (its permission.bash patterns could deny a prefix; ralph does not write them into the user's config)",
  ),
  qwen: none(
    'not translated for Qwen Code yet (it runs Claude-style PreToolUse hooks, but only from settings files ralph does not write)',
  ),
  copilot: none('not translated for Copilot CLI yet'),
  'cursor-agent': none('cursor-agent has no hook or policy ralph can hand a decision to'),
};

/** One policy row the chosen agent does not enforce. */
export interface GuardGap {
  kind: GuardRowKind;
  /** Line in `.ralph/command-policy`. */
  line: number;
  /** The row as the user reads it (`[deny] git push`). */
  row: string;
  /** Why (the table's `how`). */
  why: string;
}

/**
 * The rows of `policy` that `agent` does not enforce (level `not-enforced`), in file order. `[gates]` pins count as
 * `gate-without-write` rows (the engine runs the gates itself for every agent; what the agent cannot be held to is
 * running a pinned gate command outside the gate runner, and re-running it without an edit). Pure.
 */
export function guardGaps(agent: string, policy: CommandPolicy | null | undefined): GuardGap[] {
  if (!policy) return [];
  const support = (GUARD_SUPPORT as Record<string, Record<GuardRowKind, GuardSupport>>)[agent] ?? none('unknown agent');
  const rows: { kind: GuardRowKind; line: number; row: string }[] = [
    ...policy.deny.map((r) => ({ kind: 'deny' as const, line: r.line, row: `[deny] ${r.prefix}` })),
    ...policy.protect.map((r) => ({ kind: 'protect' as const, line: r.line, row: `[protect] ${r.prefix}` })),
    ...policy.wrap.map((r) => ({ kind: 'wrap' as const, line: r.line, row: `[wrap] ${r.prefix} | ${r.label}` })),
    ...policy.rewrite.map((r) => ({ kind: 'rewrite' as const, line: r.line, row: `[rewrite] ${r.pattern}` })),
    ...Object.values(policy.gates).map((g) => ({
      kind: 'gate-without-write' as const,
      line: g!.line,
      row: `[gates] ${g!.tier} | ${g!.command}`,
    })),
  ];
  return rows
    .filter((r) => support[r.kind].level === 'not-enforced')
    .sort((a, b) => a.line - b.line)
    .map((r) => ({ ...r, why: support[r.kind].how }));
}

/** The refusal of a strict run (several lines): the agent, each row with its line, and the two ways on. */
export function guardRefusal(agent: string, file: string, gaps: readonly GuardGap[]): string {
  return [
    `The ${agent} agent cannot enforce ${gaps.length === 1 ? 'this row' : 'these rows'} of ${file} (docs/agents.md, "The guard per agent"):`,
    ...gaps.map((g) => `  line ${g.line}: ${g.row} (${g.why})`),
    `Run with an agent that enforces them (claude, codex), remove the rows, or set "guard": "best-effort" in .ralph/config.json to run without them (each is then listed in the run log).`,
  ].join('\n');
}

/** The run-log warning of a best-effort run for one row it does not enforce. */
export function guardGapWarning(agent: string, g: GuardGap): string {
  return `guard: not enforced for ${agent}: line ${g.line}: ${g.row} (${g.why})`;
}
