import type { CommandPolicy } from '../gates/commandPolicy';
import type { AgentName } from '../model/agentNames';

/**
 * What each agent CLI can enforce of `.ralph/command-policy` (docs/agents.md, "The guard per agent"). Claude Code,
 * Codex and Qwen Code run ralph's own hook (the guard server's analyzer) before every shell command and file write:
 * every section is enforced. Gemini CLI, opencode and Copilot CLI have no hook ralph can hand a decision through;
 * their own permission rules approximate `[deny]` rows (gemini.ts, opencode.ts, copilot.ts), and the other sections
 * are not enforced. A run whose policy has rows its agent does not enforce refuses to start (config `guard: "strict"`, the
 * default) or lists them in its run log's first lines (`guard: "best-effort"`). The protected paths
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
  /** Rows of this kind the mechanism cannot express (by their command prefix): not enforced, for `why`. */
  except?: { test(prefix: string): boolean; why: string };
}

const hook = (agent: string): Record<GuardRowKind, GuardSupport> => ({
  deny: { level: 'enforced', how: `${agent} runs ralph's guard hook before every shell command: denied` },
  protect: { level: 'enforced', how: 'the same hook denies the command in a pipe or redirection' },
  wrap: { level: 'enforced', how: 'the same hook rewrites the command to run through the gate runner' },
  rewrite: { level: 'enforced', how: "the same hook replaces the command (the hook's updated tool input)" },
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

/** `except` of a permission rule that matches commands by their words: prefixes it cannot express. */
const notExpressible = (pattern: RegExp, why: string): { except: { test(prefix: string): boolean; why: string } } => ({
  except: { test: (prefix) => !pattern.test(prefix), why },
});

/** The table: per agent, per kind of row. */
export const GUARD_SUPPORT: Readonly<Record<AgentName, Readonly<Record<GuardRowKind, GuardSupport>>>> = {
  claude: hook('Claude Code'),
  codex: hook('Codex (its PreToolUse hook on the shell tool, handed over with -c hooks.PreToolUse)'),
  gemini: {
    ...none(
      'Gemini CLI takes hooks only from settings files ralph does not write (its system layer, which a variable could move, must be owned by root); its policy rules only allow, ask or deny',
    ),
    deny: {
      level: 'approximated',
      how: 'a --policy rule per row: run_shell_command with the row as commandPrefix, deny at the top of the user tier: Gemini checks each command of a chained call, not one inside sh -c, a script or a variable',
    },
  },
  qwen: hook(
    'Qwen Code (its PreToolUse hook, in the system settings file ralph points QWEN_CODE_SYSTEM_SETTINGS_PATH at)',
  ),
  opencode: {
    ...none('opencode has no hook ralph can hand a decision to; its permission patterns only allow, ask or deny'),
    deny: {
      level: 'approximated',
      how: 'permission.bash deny patterns "<prefix>" and "<prefix> *" added through OPENCODE_CONFIG_CONTENT: opencode matches each command of a call, not one inside sh -c, a script or a variable',
      ...notExpressible(/^[^*?]+$/, 'a prefix with * or ? would be read as a wildcard by opencode'),
    },
  },
  copilot: {
    ...none('Copilot CLI has no hook ralph can hand a decision to; its tool rules only allow or deny'),
    deny: {
      level: 'approximated',
      how: "--deny-tool 'shell(<prefix>)' (a denial wins over --allow-all-tools): Copilot matches a command's name and first subcommand, not one inside sh -c or a script",
      ...notExpressible(
        /^[A-Za-z0-9_./+-]+(?: [A-Za-z0-9][A-Za-z0-9_.-]*)?$/,
        "Copilot's shell rules name a command and at most one subcommand",
      ),
    },
  },
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
  const rows: { kind: GuardRowKind; line: number; row: string; prefix?: string }[] = [
    ...policy.deny.map((r) => ({ kind: 'deny' as const, line: r.line, row: `[deny] ${r.prefix}`, prefix: r.prefix })),
    ...policy.protect.map((r) => ({ kind: 'protect' as const, line: r.line, row: `[protect] ${r.prefix}` })),
    ...policy.wrap.map((r) => ({ kind: 'wrap' as const, line: r.line, row: `[wrap] ${r.prefix} | ${r.label}` })),
    ...policy.rewrite.map((r) => ({ kind: 'rewrite' as const, line: r.line, row: `[rewrite] ${r.pattern}` })),
    ...Object.values(policy.gates).map((g) => ({
      kind: 'gate-without-write' as const,
      line: g!.line,
      row: `[gates] ${g!.tier} | ${g!.command}`,
    })),
  ];
  const why = (r: (typeof rows)[number]): string | null => {
    const s = support[r.kind];
    if (s.level === 'not-enforced') return s.how;
    return s.except && r.prefix !== undefined && s.except.test(r.prefix) ? s.except.why : null;
  };
  return rows
    .flatMap(({ prefix: _prefix, ...r }) => {
      const w = why({ ...r, prefix: _prefix });
      return w === null ? [] : [{ ...r, why: w }];
    })
    .sort((a, b) => a.line - b.line);
}

/** The refusal of a strict run (several lines): the agent, each row with its line, and the two ways on. */
export function guardRefusal(agent: string, file: string, gaps: readonly GuardGap[]): string {
  return [
    `The ${agent} agent cannot enforce ${gaps.length === 1 ? 'this row' : 'these rows'} of ${file} (docs/agents.md, "The guard per agent"):`,
    ...gaps.map((g) => `  line ${g.line}: ${g.row} (${g.why})`),
    `Run with an agent that enforces them (claude, codex, qwen), remove the rows, or set "guard": "best-effort" in .ralph/config.json to run without them (each is then listed in the run log).`,
  ].join('\n');
}

/** The run-log warning of a best-effort run for one row it does not enforce. */
export function guardGapWarning(agent: string, g: GuardGap): string {
  return `guard: not enforced for ${agent}: line ${g.line}: ${g.row} (${g.why})`;
}
