/**
 * **Ralph: Start**'s question "one story at a time or several at once?", as pure decisions: whether to
 * ask, what the quick pick offers, and what goes to the engine. No `vscode` here; runController.ts shows the pick.
 */

/** How a quantum run takes its stories: one at a time (the sequential run) or up to `maxParallel` at once in git worktrees. */
export interface ParallelChoice {
  parallel: boolean;
  /** Most stories at work at once (lanes); only with `parallel`. */
  maxParallel?: number;
}

/** `maxParallel` when neither the caller nor the configuration names one. */
export const DEFAULT_MAX_PARALLEL = 4;

/** What Start knows when it decides whether to ask. */
export interface ParallelOfferInput {
  /** The source Start was given or the person picked (`quantum`, `flow`, `checklist`, a path), if any. */
  source: string | undefined;
  /** The kinds of the folder's task sources (`flow-next`, `quantum`, `checklist`…), in Start's order. */
  sourceKinds: readonly string[];
  /** What the caller passed (`StartArgs`): an explicit choice, or a story to begin with. */
  args: { parallel?: boolean; maxParallel?: number; item?: string };
  /** The `parallel` / `maxParallel` of VS Code's settings (only what the person set there; undefined otherwise). */
  setting: { parallel?: unknown; maxParallel?: unknown };
  /** The folder's configured `maxParallel` (`.ralph/config.json`, with defaults), if the configuration knows the key. */
  configuredMaxParallel?: unknown;
}

/**
 * Whether Start asks, and what it passes on otherwise:
 * - `{ ask: false, choice }`: the caller chose (`args.parallel`), passed on as given;
 * - `{ ask: false, choice: null }`: nothing to ask (the source is not quantum.json, a story was named with
 *   `item`, or the person's settings already say `parallel`): the engine's own configuration decides;
 * - `{ ask: true, maxParallel }`: a quantum run with no choice made: the quick pick offers both, parallel "up to
 *   `maxParallel`" (the caller's, else the settings', else the configuration's, else {@link DEFAULT_MAX_PARALLEL}).
 * Pure.
 */
export function parallelOfferOf(
  i: ParallelOfferInput,
): { ask: false; choice: ParallelChoice | null } | { ask: true; maxParallel: number } {
  const max =
    positiveInt(i.args.maxParallel) ??
    positiveInt(i.setting.maxParallel) ??
    positiveInt(i.configuredMaxParallel) ??
    DEFAULT_MAX_PARALLEL;
  if (typeof i.args.parallel === 'boolean') {
    return {
      ask: false,
      choice: i.args.parallel
        ? { parallel: true, maxParallel: positiveInt(i.args.maxParallel) ?? max }
        : { parallel: false },
    };
  }
  if (i.args.item) return { ask: false, choice: null };
  if (!isQuantumRun(i.source, i.sourceKinds)) return { ask: false, choice: null };
  if (typeof i.setting.parallel === 'boolean') return { ask: false, choice: null };
  return { ask: true, maxParallel: max };
}

/** Whether the run's source is quantum.json: named (`quantum`, a path ending in quantum.json), or the folder's only source. */
export function isQuantumRun(source: string | undefined, sourceKinds: readonly string[]): boolean {
  if (source !== undefined) return source === 'quantum' || /(^|[\\/])quantum\.json$/.test(source);
  return sourceKinds.length === 1 && sourceKinds[0] === 'quantum';
}

/** An entry of the quick pick: VS Code's `QuickPickItem` fields and the choice it stands for. */
export interface ParallelPickItem {
  label: string;
  description: string;
  detail: string;
  choice: ParallelChoice;
}

/** The two entries of the quick pick, one at a time first (today's behaviour, the safe default). Pure. */
export function parallelPickItems(maxParallel: number): ParallelPickItem[] {
  return [
    {
      label: '$(list-ordered) Run stories one at a time',
      description: 'sequential',
      detail: "One agent works in this folder, story after story, in quantum.json's order.",
      choice: { parallel: false },
    },
    {
      label: `$(split-horizontal) Run independent stories in parallel (git worktrees, up to ${maxParallel})`,
      description: `--parallel --max-parallel ${maxParallel}`,
      detail:
        'Each ready story gets its own worktree and branch; passing stories are merged into the feature branch. Needs no uncommitted changes to tracked files.',
      choice: { parallel: true, maxParallel },
    },
  ];
}

function positiveInt(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isInteger(v) && v >= 1 ? v : undefined;
}
