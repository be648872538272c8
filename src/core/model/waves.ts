/**
 * Waves as `ralph status --json`, the plan graph and `ralph waves check --json` show them (built by core/waves/summary.ts):
 * snake_case, times as ages in ms, paths workspace-relative.
 */

/**
 * A subagent's disposition. RESOLVED: a DONE source exists (§1.5). RESUMED: an orphan with something to resume from
 * (a `next_step` or a `last_action`). STALE: an orphan with nothing useful (unreadable, or neither field, §1.10-3).
 * ACTIVE: not done and within a window (never logged as an orphan). PENDING: on the STATE.md roster without a
 * checkpoint yet (never an orphan, §1.2 step 3).
 */
export type Disposition = 'RESOLVED' | 'RESUMED' | 'STALE' | 'ACTIVE' | 'PENDING';

/** One subagent in JSON. */
export interface SubagentJson {
  sub_id: string;
  disposition: Disposition;
  /** Where DONE was found (§1.5): `checkpoint-status`, `report`, `state-tasks`, `wave-status`. */
  done_source?: string;
  checkpoint_age_ms: number | null;
  last_activity_age_ms: number | null;
  /** ACTIVE only: ms until it becomes an orphan if nothing happens. */
  orphan_in_ms?: number;
  next_step?: string;
  last_action?: string;
  /** Why the checkpoint could not be read. */
  unreadable?: string;
  /** The checkpoint file, workspace-relative (absolute when it lives in a worktree root outside the folder). */
  checkpoint?: string;
  /** The sub's worktree: the `--root` its checkpoint was read from, or the confirmed git worktree its checkpoint names. */
  worktree?: string;
  /** The sub's task summary from its blackboard claim. */
  summary?: string;
}

/** One wave in JSON. */
export interface WaveJson {
  wave_id: string;
  /** STATE.md `status`, or null. */
  status: string | null;
  counts: Record<Disposition, number> & { orphans: number };
  subagents: SubagentJson[];
}
