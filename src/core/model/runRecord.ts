import { z } from 'zod';
import { RUN_END_STATE_VALUES, tokenCountsSchema } from './runEvent';

/**
 * `.ralph/runs/<run_id>/run.json`: the record of one of our runs. The loop engine (core/loop) writes it through
 * `writeRunRecord` / `updateRunRecord` (core/control/runRecords.ts); `ralph status` and `pause|resume|stop` read it.
 * Loose: keys a later engine adds are kept.
 *
 * `state` is what the engine last wrote. Readers derive what a person sees (core/control/runs.ts): a non-final
 * state whose `pid` is dead on this `host` is `crashed`; a pending STOP sentinel shows as `stopping`; a PAUSE
 * sentinel as `paused`. `waiting`: an item waits for the answer to its agent's question.
 */
export const RUN_RECORD_STATES = [
  'starting',
  'running',
  'paused',
  'waiting',
  'stopping',
  'stopped',
  'completed',
  'failed',
] as const;
export type RunRecordState = (typeof RUN_RECORD_STATES)[number];

/** States after which the engine no longer runs (the run is never "active" again). */
export const FINAL_RUN_STATES: readonly RunRecordState[] = ['stopped', 'completed', 'failed'];

export const runCurrentItemSchema = z.looseObject({
  source: z.enum(['flow-next', 'quantum', 'checklist']),
  id: z.string(),
  title: z.string().optional(),
});

/** One lane of a parallel run in run.json `lanes[]`. `iteration`: the lane's current one, null before its first. */
export const runLaneRecordSchema = z.looseObject({
  lane: z.number().int(),
  item: z.string(),
  worktree: z.string(),
  branch: z.string(),
  iteration: z.number().int().nullable(),
  agentPgid: z.number().int().nullable(),
  agentToken: z.string().nullable(),
});
export type RunLaneRecord = z.infer<typeof runLaneRecordSchema>;

/** How a run ended, as run.json keeps it: an engine end state, or `crashed` (set by crash recovery). */
export const RUN_END_STATES = [...RUN_END_STATE_VALUES, 'crashed'] as const;

export const runRecordSchema = z.looseObject({
  schemaVersion: z.literal(1).default(1),
  runId: z.string().min(1),
  /** Process id of the engine; with `host`, how a crash is recognised. */
  pid: z.number().int().positive(),
  /** `os.hostname()` of the engine's machine: a pid is only checked on its own host. */
  host: z.string(),
  /** ISO time the run started; global STOP sentinels older than this are ignored. */
  startedAt: z.string(),
  updatedAt: z.string().optional(),
  state: z.enum(RUN_RECORD_STATES),
  /** 1-based number of the current (or last) iteration; 0 before the first. */
  iteration: z.number().int().nonnegative().default(0),
  currentItem: runCurrentItemSchema.nullable().default(null),
  /** Set with a final state: why the run ended (`DONE`, `NO_WORK`, `STOPPED`, `MAX_ITERATIONS`, `FAILED`, …). */
  completion: z.looseObject({ reason: z.string(), at: z.string() }).nullable().optional(),
  /** Agent adapter name (`claude`, `cursor-agent`). */
  agent: z.string().optional(),
  /** The task source the run works on: kind and the label the activity shows. */
  source: z.looseObject({ kind: z.string(), label: z.string() }).optional(),
  /** The caps and options the run started with. `maxCostUsd` USD and `maxWallTimeMs` ms, 0 = none. */
  config: z
    .looseObject({
      maxIterations: z.number(),
      maxCostUsd: z.number(),
      maxWallTimeMs: z.number(),
      model: z.string().optional(),
      noGates: z.boolean().optional(),
    })
    .optional(),
  /** Process group of the running agent (its pid), null between iterations: crash recovery ends it. */
  agentPgid: z.number().int().nullable().optional(),
  /** `RALPH_ITERATION_TOKEN` of the running agent: processes its tools started outside its group carry it. */
  agentToken: z.string().nullable().optional(),
  /** ISO time the running agent started. */
  agentStartedAt: z.string().optional(),
  /**
   * The source's snapshot of the current item taken before the agent ran (`WorkSource.snapshot()`), kept while the
   * item is unverified so crash recovery can undo a claim no gate confirmed; null when no item is open.
   */
  claimBaseline: z.unknown().optional(),
  /**
   * Failed attempts this run counted per item (`<source>:<id>`, checklist `<source>:<box text>`; decide.ts
   * `itemKey`): the larger of this and `.ralph/attempts.json` wins.
   */
  attempts: z.record(z.string(), z.number()).optional(),
  /** The engine's end state (finer than `state`), or `crashed`. */
  endState: z.enum(RUN_END_STATES).optional(),
  /** Why the run ended, one line. */
  endReason: z.string().optional(),
  /** ISO time the run ended. */
  endedAt: z.string().optional(),
  /** Agents' cost so far, USD. */
  costUsd: z.number().optional(),
  /** Agents' token totals so far. */
  tokens: tokenCountsSchema.optional(),
  /** A parallel run: its lane limit and the feature branch the lanes merge into. */
  parallel: z.looseObject({ maxParallel: z.number().int().positive(), featureBranch: z.string() }).optional(),
  /**
   * A parallel run's running lanes (empty once it ended): story, worktree (workspace-relative) and branch of each,
   * and its agent's process group and `RALPH_ITERATION_TOKEN`, so crash recovery can end a lane's agent.
   */
  lanes: z.array(runLaneRecordSchema).optional(),
});
export type RunRecord = z.infer<typeof runRecordSchema>;

/**
 * The crash rule, the one place it is written: a run whose record has no final state, written on one of `hostNames`
 * (this machine), whose engine `pid` is not alive. Runs of other hosts are never judged (their pids mean nothing
 * here). `ralph status` shows such a run as `crashed`; crash recovery at the next start cleans up after it.
 */
export function isCrashedRun(
  rec: Pick<RunRecord, 'state' | 'host' | 'pid'>,
  hostNames: readonly string[],
  isAlive: (pid: number) => boolean,
): boolean {
  return !FINAL_RUN_STATES.includes(rec.state) && hostNames.includes(rec.host) && !isAlive(rec.pid);
}
