import { z } from 'zod';

/**
 * The fields of an IJFW subagent checkpoint (`.ijfw/wave-<id>/subagent-<id>.checkpoint.json`, seed-systems.md §1.4)
 * that Ralph reads, as a schema for editors: the JSON schema of `contributes.jsonValidation` is built from it by
 * jsonSchemas.ts. Reading never uses it: `parseCheckpoint` (core/waves/checkpoint.ts) takes the three shapes from the
 * file's text field by field and ignores a field of the wrong type, because real checkpoints are free-form. This
 * schema says what each field should be, so an editor flags a wrong type before a wave check passes over it.
 * Every object is loose (unknown keys are allowed): IJFW adds fields between versions.
 */
/** An ISO 8601 time as core/model/time.ts `parseIsoTime` reads it (a date alone, a time without a zone as UTC). */
const isoTime = z.string();

const payloadShape = {
  /** Shape A (the v1 envelope) carries `schema_version: 1`. */
  schema_version: z.number().int().optional(),
  /** Shape A's time (ISO 8601). */
  ts: isoTime.describe('When the checkpoint was written (ISO 8601).').optional(),
  /** The time IJFW's own writer names it (ISO 8601). */
  timestamp: isoTime.optional(),
  /** The wave the file claims (reported, never trusted: the folder name is the wave's identity). */
  wave_id: z.string().optional(),
  wave: z.string().optional(),
  /** The subagent the file claims (reported, never trusted: the file name is the subagent's identity). */
  sub_id: z.string().optional(),
  subagent_id: z.string().optional(),
  /** `DONE` or `DONE_WITH_CONCERNS` count as done; `NEEDS_CONTEXT`, `BLOCKED` or anything else do not. */
  status: z
    .string()
    .describe('`DONE` or `DONE_WITH_CONCERNS` count as done; `NEEDS_CONTEXT`, `BLOCKED` or anything else do not.')
    .optional(),
  /** A stored agent report whose last `Status:` line (and `Commit:` line) count like `status`. */
  report: z
    .string()
    .describe(
      'A stored agent report: its last `Status:` line counts like `status`, its `Commit:` line names the commit.',
    )
    .optional(),
  /** What the subagent would do next: a resume brief starts from it. */
  next_step: z.string().describe('What the subagent would do next: a resume brief starts from it.').optional(),
  /** What the subagent did last. */
  last_action: z.string().optional(),
  tool_use_count: z.number().int().nonnegative().optional(),
  files_created: z.array(z.string()).optional(),
  files_modified: z.array(z.string()).optional(),
  files_changed: z.array(z.string()).optional(),
  /** Commits (shape A's `commits_made`, shape C's `commits`). */
  commits_made: z.array(z.string()).optional(),
  commits: z.array(z.string()).optional(),
  blockers: z.string().optional(),
  branch: z.string().optional(),
  /** The subagent's git worktree, an absolute path (used only once it is confirmed to be a worktree of the workspace). */
  worktree: z.string().describe("The subagent's git worktree, an absolute path.").optional(),
  worktree_path: z.string().optional(),
  worktreePath: z.string().optional(),
};

/** One checkpoint file: shape A (v1 envelope), B (`{waveId, subagentId, checkpoint, updated_at}`) or C (retroactive). */
export const waveCheckpointSchema = z.looseObject({
  ...payloadShape,
  /** Shape B (the state-SDK verb): the wave and subagent, the payload in `checkpoint`, its time in `updated_at`. */
  waveId: z.string().optional(),
  subagentId: z.string().optional(),
  checkpoint: z.looseObject(payloadShape).optional(),
  updated_at: isoTime.optional(),
  /** Shape C (hand-written after the fact): `retroactive: true`, its time in `recorded_at`. */
  retroactive: z.boolean().optional(),
  recorded_at: isoTime.optional(),
});
