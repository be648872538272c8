import type { FileProblem } from './fileProblem';
import type { WaveJson } from './waves';

/**
 * The plan graph: one immutable picture of every task source of a workspace folder (ARCHITECTURE.md "Data flow").
 * Roots are epics / specs (flow-next), the quantum project, and checkbox files; items are their tasks, stories
 * and boxes. Readers build it (`loadPlan` in core/sources); the CLI, the tree view and the loop engine consume it.
 */

/** Which seed format an item or root comes from. */
export type SourceId = 'flow-next' | 'quantum' | 'checklist';

/**
 * The normalized status every face shows. Mapping:
 * flow-next todo/in_progress/blocked/done as is; quantum pending→todo, passed→done, failed→failed, and
 * failed with attempts ≥ maxAttempts→blocked (§4.2: "treat exhausted as blocked"); checklist `[ ]`→todo,
 * `[x]`/`[X]`→done (§3.15-5). An unknown raw status maps to `unknown` and is never counted.
 */
export type ItemStatus = 'todo' | 'in_progress' | 'done' | 'blocked' | 'failed' | 'unknown';

/** One unit of work: a flow-next task, a quantum story or a checkbox line. */
export interface PlanItem {
  source: SourceId;
  kind: 'task' | 'story' | 'checkbox';
  /** flow task id (`fn-1-abc.2`), story id (`US-003`), or `<path>:<line>` for a checkbox. */
  id: string;
  /** Id of the root it belongs to. */
  rootId: string;
  title: string;
  status: ItemStatus;
  /** The status text exactly as the file says (`pending`, `todo`, `x`…). */
  rawStatus: string;
  /** flow-next only: where `status` was read from (later flowctl's `status_source`, §2.4). */
  statusSource?: 'flow-state' | 'committed';
  dependsOn: string[];
  /** quantum: `retries.attempts` / `maxAttempts`. */
  attempts?: number;
  maxAttempts?: number;
  /** Lower runs first; `undefined` when the file has none (sorts last). */
  priority?: number;
  /** ISO strings as written. */
  startedAt?: string;
  updatedAt?: string;
  completedAt?: string;
  /** Why a blocked or failed item stopped: flow `blocked_reason` / md `Blocked:` text, quantum's last failure. */
  reason?: string;
  /** flow-next claim owner. */
  assignee?: string;
  /** Checklist: the `[risky]` mark (§3.13: needs the full gate). */
  risky?: boolean;
  /** Workspace-relative file holding the item, and for checkboxes its 1-based line. */
  file: string;
  line?: number;
}

/** A root of the tree: an epic / spec, the quantum project, or a checkbox file. */
export interface PlanRoot {
  source: SourceId;
  kind: 'epic' | 'project' | 'checklist';
  id: string;
  title: string;
  /** flow epic `open`/`done`; quantum project `done` when every story passed; checklist `done` when every box is. */
  status: 'open' | 'done';
  rawStatus?: string;
  dependsOn: string[];
  file: string;
  itemIds: string[];
  /** quantum: the file's `staleThresholdMinutes` (§4.7), when it sets one. */
  staleThresholdMinutes?: number;
}

/** The snapshot `loadPlan(folder)` returns. Items are in file order within each root. */
export interface PlanSnapshot {
  folder: string;
  roots: PlanRoot[];
  items: PlanItem[];
  /** Unparseable files, schema errors and dependency cycles; each names file, line and column when it can. */
  problems: FileProblem[];
  /** Dependency cycles found, each as the list of ids around the cycle (first id repeated at the end). */
  cycles: string[][];
  /** IJFW waves (`.ijfw/wave-<id>/`, newest first) with their subagents and dispositions; set by `loadPlan`. */
  waves?: WaveJson[];
}
