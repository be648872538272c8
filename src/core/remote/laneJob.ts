import { z } from 'zod';

/**
 * What crosses Redis between a parallel run's coordinator and `ralph worker` processes (docs/distributed-lanes.md).
 * A job is data only: which repository (its remote address), which commit, which story, which attempt and its fencing
 * token. Nothing in it is run: no command, no agent setting, no credential (the worker's own configuration and
 * environment give those). Every message is checked with these schemas on arrival; what does not parse is refused.
 */

/** The BullMQ queue lane jobs go through. */
export const LANE_QUEUE = 'ralph-lanes';
/** The key prefix of BullMQ's own keys and of ours (`ralph:<run>:…`), so that a run's keys can be listed and removed. */
export const KEY_PREFIX = 'ralph';
/** The stream of a run's lane events (XADD by workers, XREAD by the coordinator). */
export const eventsKey = (runId: string): string => `${KEY_PREFIX}:run:${runId}:events`;
/** The key holding a lane's control word (`stop`, `pause`, `cancel`, `run`), read by its worker every half second. */
export const controlKey = (runId: string, storyId: string): string => `${KEY_PREFIX}:run:${runId}:control:${storyId}`;
/**
 * The key holding the fencing token of a story's current dispatch (its lease). A worker whose job names another token
 * (superseded) or finds the key gone (the run ended) stops its lane and pushes nothing.
 */
export const leaseKey = (runId: string, storyId: string): string => `${KEY_PREFIX}:run:${runId}:lease:${storyId}`;
/**
 * The key holding how many stories of a run are still to be dispatched (quantum.json `pending`), set at each
 * dispatch: a worker makes a spare tree for a next job only while some are (remote/worker.ts).
 */
export const pendingKey = (runId: string): string => `${KEY_PREFIX}:run:${runId}:pending`;
/** The hash of live workers: worker id → JSON {host, pid, at (ms since epoch)} (heartbeats). */
export const WORKERS_KEY = `${KEY_PREFIX}:workers`;

/**
 * The pub/sub channel of the feature branch's news (a channel, not a key: nothing of it stays in Redis): the
 * coordinator says when it pushed its feature branch to the lane remote (`moved`) and when its run ended (`ended`).
 * Workers keep their mirror and their spare tree current with it while idle, and remove what they keep for a run once
 * it ended. Lost messages cost speed only: a job still names its commit, and a worker also sees a run's end by its
 * stream's key being gone.
 */
export const FEATURE_CHANNEL = `${KEY_PREFIX}:feature`;

/** A run id as the engine makes them (startRun.ts): letters, digits, `-`, `_`, `.`; no key separator. */
const runIdSchema = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/, 'a run id: letters, digits, . _ -');
/** A quantum story id as a branch name part (`ql-wt/<id>`): no spaces, no `..`, no leading `-`. */
const storyIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/, 'a story id: letters, digits, . _ -')
  .refine((s) => !s.includes('..'), 'a story id without ".."');
/**
 * A git remote address: an https/ssh/git/file URL, an scp-like `user@host:path`, or an absolute path (a bare
 * repository on this machine). Never an option (`-…`), never a `ext::` transport (which runs a command), no control
 * characters.
 */
export const remoteSchema = z
  .string()
  .min(1)
  .max(2000)
  .refine((s) => !/[\0-\x1f\x7f]/.test(s), 'no control characters')
  .refine((s) => !s.startsWith('-'), 'not an option')
  .refine(
    (s) =>
      /^(https?|ssh|git|file):\/\/[^\s]+$/.test(s) ||
      /^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^\s]+$/.test(s) ||
      /^\//.test(s),
    'an https://, ssh://, git://, file:// URL, user@host:path, or an absolute path',
  );

/**
 * A lane job (BullMQ job data). `token`: the fencing token of this dispatch, a number the coordinator increases with
 * every dispatch of the run; only the story's newest token may report or be merged (decide.ts `decideFencing`).
 * `attempt`: 1-based, the attempt quantum.json counts (the coordinator's; the engine's own retries are off).
 * `sha`: the feature branch's commit the lane starts from (40 hex digits: never a branch name, so a merge meanwhile
 * cannot change it). `featureBranch`: only for the lane's branch and messages.
 */
export const laneJobSchema = z
  .object({
    v: z.literal(1),
    runId: runIdSchema,
    remote: remoteSchema,
    sha: z.string().regex(/^[0-9a-f]{40}$/, 'a full commit SHA (40 hex digits)'),
    featureBranch: z.string().min(1).max(200),
    storyId: storyIdSchema,
    title: z.string().max(500).default(''),
    attempt: z.number().int().min(1).max(1000),
    token: z.number().int().min(1),
    /** The lane's time limit (the run's storyTimeoutMs), ms. */
    storyTimeoutMs: z.number().int().positive(),
    /** How often the worker reports that the lane lives, ms (a third of the run's laneStallMs). */
    heartbeatMs: z.number().int().positive(),
  })
  .strict();
export type LaneJob = z.infer<typeof laneJobSchema>;

/** One message on {@link FEATURE_CHANNEL}: the run's feature branch is at `sha` on `remote` now, or the run ended. */
export const featureNoteSchema = z
  .object({
    v: z.literal(1),
    kind: z.enum(['moved', 'ended']),
    runId: runIdSchema,
    remote: remoteSchema,
    featureBranch: z.string().min(1).max(200),
    sha: z.string().regex(/^[0-9a-f]{40}$/, 'a full commit SHA (40 hex digits)'),
  })
  .strict();
export type FeatureNote = z.infer<typeof featureNoteSchema>;

/** How a remote lane ended, as its worker reports it (the BullMQ job's return value and the last stream entry). */
export const laneResultSchema = z
  .object({
    state: z.enum(['completed', 'failed', 'stopped', 'cancelled', 'stalled', 'refused']),
    reason: z.string(),
    /** The story's gate was green in the lane. */
    verified: z.boolean(),
    /** Why the lane blocked the story, or null. */
    blocked: z.string().nullable(),
    /** The lane branch's commit the worker pushed (null: nothing pushed). */
    sha: z
      .string()
      .regex(/^[0-9a-f]{40}$/)
      .nullable(),
    timedOut: z.boolean().default(false),
    /**
     * The lane's last green gate on a clean tree, when its final gate was a repeat of it (runOptions.ts
     * `onGreenTree`): the command and the tree state (git.ts `treeState`) it passed on. The coordinator skips its
     * feature gate after the merge when that gate would run the same command on the same tree, as for a local lane
     * (rules.ts `featureGateRepeats`).
     */
    green: z
      .object({ command: z.string().max(10_000), state: z.string().max(4_000_000) })
      .strict()
      .nullable()
      .default(null),
  })
  .strict();
export type LaneResult = z.infer<typeof laneResultSchema>;

/**
 * One entry of a run's event stream. `kind`: `event` (an engine event of the lane, `event` its JSON), `heartbeat`
 * (the lane lives), `started` (the worker took the job: its worktree is made), `result` (the lane's end, `result`).
 * `laneSeq` numbers one lane attempt's entries from 1 (duplicates are dropped by it).
 */
export const streamEntrySchema = z
  .object({
    kind: z.enum(['started', 'event', 'heartbeat', 'result']),
    storyId: storyIdSchema,
    attempt: z.number().int().min(1),
    token: z.number().int().min(1),
    worker: z.string().min(1).max(300),
    laneSeq: z.number().int().min(1),
    event: z.record(z.string(), z.unknown()).optional(),
    result: laneResultSchema.optional(),
  })
  .strict();
export type StreamEntry = z.infer<typeof streamEntrySchema>;

/** Outcome of checking received data: the value, or why it was refused (one line, zod's paths and messages). */
export type Checked<T> = { ok: true; value: T } | { ok: false; reason: string };

function check<T>(schema: z.ZodType<T>, data: unknown, what: string): Checked<T> {
  const r = schema.safeParse(data);
  if (r.success) return { ok: true, value: r.data };
  const why = r.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
  return { ok: false, reason: `${what} refused: ${why}` };
}

/** Checks a job's data (never trusted: anyone who can write to Redis can add a job). Pure. */
export const parseLaneJob = (data: unknown): Checked<LaneJob> => check(laneJobSchema, data, 'lane job');

/** Checks a message of {@link FEATURE_CHANNEL} (never trusted, as a job is not). Pure. */
export function parseFeatureNote(message: string): Checked<FeatureNote> {
  let data: unknown;
  try {
    data = JSON.parse(message);
  } catch (err) {
    return { ok: false, reason: `feature note refused: ${(err as Error).message}` };
  }
  return check(featureNoteSchema, data, 'feature note');
}

/** Checks one stream entry as XADD stored it: field `m` holds its JSON. Pure. */
export function parseStreamEntry(fields: readonly string[]): Checked<StreamEntry> {
  const i = fields.indexOf('m');
  if (i < 0 || i + 1 >= fields.length) return { ok: false, reason: 'stream entry refused: no field m' };
  let data: unknown;
  try {
    data = JSON.parse(fields[i + 1]!);
  } catch (err) {
    return { ok: false, reason: `stream entry refused: ${(err as Error).message}` };
  }
  return check(streamEntrySchema, data, 'stream entry');
}
