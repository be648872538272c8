import type { SourceId } from '../model/plan';
import type { WaveJson } from '../model/waves';
import type { FileProblem } from '../store/parseError';
import type { RunInfo, RunState } from './runs';
import type { LaneView, RunView } from './runView';
import type { UnverifiedClaim } from './unverifiedClaims';

/** A run as `status --json` prints it: flowctl's keys (§2.6, both `current_epic` and `current_spec`) plus ours. */
export interface StatusRun {
  id: string;
  kind: RunInfo['kind'];
  state: RunState;
  active: boolean;
  reason: string | null;
  iteration: number | null;
  current_epic: string | null;
  current_spec: string | null;
  current_task: string | null;
  current_item: RunInfo['currentItem'];
  paused: boolean;
  stopped: boolean;
  started_at: string | null;
  /**
   * What the run's log says (the same {@link RunView} `ralph watch` and the extension show): state, lanes with
   * item, attempt and context gauge, cost, gates, open questions, the last activity lines.
   */
  view: RunView;
  /**
   * A parallel run's lanes at work, one per running story, by lane number: the same lanes as
   * `view.lanes`, in short. Absent for a sequential run.
   */
  lanes?: StatusLane[];
}

/** One lane of a parallel run in `ralph status`: its story, iteration (run-wide numbering), attempt and what it does. */
export interface StatusLane {
  lane: number;
  story: string | null;
  title: string | null;
  iteration: number | null;
  /** `1 of 3`, or null before the lane's first iteration. */
  attempt: string | null;
  /** `agent` (its agent runs), `gate`, `waiting` (for an answer) or `idle` (between iterations). */
  state: LaneView['activity'];
  /** A remote lane's worker (`host:pid`); null for a lane on this machine. */
  worker: string | null;
}

/**
 * The `ralph status --json` snapshot. flow-next keys are flowctl's (seed-systems.md §2.6), under both the v0.8
 * names (`epics`) and HEAD's (`specs`) so bots written for either work; `tasks` counts flow-next tasks only, with
 * statuses from the flow-state overlay when present (§2.4); unknown statuses are not counted.
 */
export interface StatusSnapshot {
  success: true;
  flow_exists: boolean;
  /** `epics` for v0.x folders, `specs` for v1+ (meta `schema_version` 3); null without `.flow/`. */
  flow_dialect: 'epics' | 'specs' | null;
  epics: { open: number; done: number };
  specs: { open: number; done: number };
  tasks: { todo: number; in_progress: number; blocked: number; done: number };
  quantum_exists: boolean;
  /** quantum-loop stories by raw status (§4.1). */
  stories: { pending: number; in_progress: number; passed: number; failed: number; blocked: number };
  checklists: { path: string; done: number; total: number }[];
  /** "X/Y": done items over all items of every source, items claimed done but not verified left out of X. */
  progress: string;
  /**
   * Items claimed done that no gate verified: done now but not in the claim baseline (run.json
   * `claimBaseline`) of a run that is going on or ended leaving its claims open, a person's own marks left out.
   */
  unverified_claims: UnverifiedClaim[];
  /** Item files that cannot be read (flow-next task / epic files that do not parse): the source is not complete. */
  unreadable_items: number;
  /**
   * Items in progress. `stale_after_minutes`: a quantum story past its stale threshold (minutes; quantum.json
   * `staleThresholdMinutes`, else 20) while no run of the folder is active — the Plan tree's "stale" row; `ralph stale
   * --apply` fails or blocks it.
   */
  in_progress: {
    source: SourceId;
    id: string;
    title: string;
    since: string | null;
    assignee?: string;
    stale_after_minutes?: number;
  }[];
  /** The newest completion over flow-next tasks (`completed_at`, else `updated_at`) and passed stories (`updatedAt`, `story_passed` progress entries). */
  last_completed: { source: SourceId; id: string; title: string; at: string } | null;
  blocked: { source: SourceId; id: string; title: string; reason: string | null }[];
  /** Active runs only, as flowctl lists them (running, paused, stopping), sorted by id. */
  runs: StatusRun[];
  /** IJFW waves, newest first, with every subagent's disposition (core/waves; seed-systems.md §1.10-1). */
  waves: WaveJson[];
  /** Finished runs (completed, failed, stopped, crashed), newest first (`started_at`, else id). */
  recent_runs: StatusRun[];
  problems: FileProblem[];
}
