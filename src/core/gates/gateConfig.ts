import { type RalphConfig } from '../model/config';
import { configPath, loadConfig } from '../store/loadConfig';
import { GATE_TIERS, commandPolicyPath, loadCommandPolicy, type GateTier, type PolicyProblem } from './commandPolicy';

/**
 * Which gate commands a workspace pins, and where they come from (done is verified by a gate, never claimed):
 * the `[gates]` section of `.ralph/command-policy` (seed-systems.md §3.9) when it has at least one row, else the
 * `gates` key of the configuration (`.ralph/config.json`, overridden by the `ralph.gates` setting or flags).
 * With neither the result is `null`, and the engine refuses to start unless `--no-gates` is given.
 *
 * The seed refuses to start unless all three tiers are pinned; we accept any non-empty subset and let a missing
 * tier fall back to another one ({@link gateCommandFor}), so a project with one test command needs one line.
 */
export interface ResolvedGates {
  /** `command-policy` when `[gates]` supplied them, else `config`. */
  source: 'command-policy' | 'config';
  /** The file they were read from (`.ralph/command-policy` or `.ralph/config.json`; settings may have supplied config values). */
  file: string;
  /** Commands per tier as written (at least one present). */
  commands: Partial<Record<GateTier, string>>;
  /** Warnings from the command policy (ignored rows, unknown sections), positioned at file:line:column. */
  warnings: PolicyProblem[];
}

/**
 * Resolves the gates of `folder`. `config` is the already-layered configuration (flags > settings > file); when
 * omitted, `.ralph/config.json` is loaded. Returns `null` when no gate is configured anywhere.
 * Throws `FileProblemError` (file:line:column) when the command policy has an error row (a malformed `[gates]`
 * row or an unusable `[rewrite]` pattern) or `.ralph/config.json` does not parse.
 */
export async function resolveGates(folder: string, config?: Pick<RalphConfig, 'gates'>): Promise<ResolvedGates | null> {
  const loaded = await loadCommandPolicy(folder);
  const warnings = loaded?.warnings ?? [];
  if (loaded) {
    const commands: Partial<Record<GateTier, string>> = {};
    for (const tier of GATE_TIERS) {
      const row = loaded.policy.gates[tier];
      if (row) commands[tier] = row.command;
    }
    if (Object.keys(commands).length > 0)
      return { source: 'command-policy', file: commandPolicyPath(folder), commands, warnings };
  }
  const gates = (config ?? (await loadConfig(folder))).gates;
  const commands: Partial<Record<GateTier, string>> = {};
  for (const tier of GATE_TIERS) {
    const c = gates[tier]?.trim();
    if (c) commands[tier] = c;
  }
  if (Object.keys(commands).length === 0) return null;
  return { source: 'config', file: configPath(folder), commands, warnings };
}

/** How to give a workspace a gate: the fix `ralph run` and `ralph doctor` name when it has none. */
export const HOW_TO_ADD_A_GATE =
  'add a [gates] section to .ralph/command-policy or "gates" to .ralph/config.json (e.g. {"gates": {"basic": "npm test"}})';

/** Order in which tiers stand in for a missing one: the next heavier tier first, then the lighter ones. */
const FALLBACK: Record<GateTier, readonly GateTier[]> = {
  basic: ['basic', 'full', 'final'],
  full: ['full', 'final', 'basic'],
  final: ['final', 'full', 'basic'],
};

/**
 * The command to run for `tier`, and the tier whose command it is: the tier's own command, else the next
 * heavier configured tier, else the next lighter one (a heavier gate is never weakened silently when it exists).
 * `undefined` only when no tier is configured.
 */
export function gateCommandFor(
  gates: Pick<ResolvedGates, 'commands'>,
  tier: GateTier,
): { tier: GateTier; command: string } | undefined {
  for (const t of FALLBACK[tier]) {
    const command = gates.commands[t];
    if (command) return { tier: t, command };
  }
  return undefined;
}

/** One line for the activity log and `ralph run`: `gates (command-policy): basic=…, full=…, final=…`. */
export function describeGates(gates: ResolvedGates | null): string {
  if (!gates) return 'gates: none';
  return `gates (${gates.source}): ${GATE_TIERS.filter((t) => gates.commands[t])
    .map((t) => `${t}=${gates.commands[t]}`)
    .join(', ')}`;
}
