import * as z from 'zod/mini';

/**
 * The dashboard's protocol: every message between the extension host and the dashboard page, both ways, as zod
 * schemas (one discriminated union per direction on `type`). Both sides import this module; both parse what they
 * receive with it and refuse anything else.
 *
 * Conversation (ideas: vscode-pull-request-github's `ready`, Roo-Code's sequence numbers, gitlens' typed protocol):
 *   page → host  `ready {v}`                   once the page listens (and again after a reload)
 *   host → page  `snapshot {seq, state}`       the whole dashboard state; `seq` restarts the numbering
 *   host → page  `update {seq, ops}`           small changes, `seq` = previous + 1 (`run` header, `lanes`, `tokens`,
 *                                              `task`, `gate`, `log`, `runs`)
 *   page → host  `resync {lastSeq}`            when an update's seq is not the next one (a gap): the host answers
 *                                              with a fresh snapshot
 *   page → host  `request {id, request}`       a typed request (control, answer, open a log, pick a run)
 *   host → page  `reply {id, ok, error?}`      its outcome
 *   host → page  `reveal {itemId}`             show one work item (Reveal in Dashboard)
 * The host never posts before `ready`, and sends nothing while the panel is hidden (it resends a snapshot when the
 * panel becomes visible).
 */

/** Bumped when a message changes incompatibly; a page of another version is answered with an error reply. */
export const PROTOCOL_VERSION = 2;

/** Most log lines a snapshot carries (the host's ring buffer); older lines stay in the log file. */
export const SNAPSHOT_LOG_LINES = 2_000;
/** Most token points a snapshot carries. */
export const SNAPSHOT_TOKEN_POINTS = 5_000;
/** Longest text a page request may carry (an answer), characters. */
export const MAX_ANSWER_CHARS = 20_000;

const nonNeg = z.number().check(z.nonnegative());
const count = z.int().check(z.nonnegative());
/** Epoch milliseconds. */
const epochMs = nonNeg;

// ---------------------------------------------------------------------------------------------------------------
// Parts of the state

/** What a log line is about; the page filters by it. */
export const LOG_KINDS = ['loop', 'tokens', 'gate', 'guard', 'question', 'error'] as const;
export const logKindSchema = z.enum(LOG_KINDS);
export type LogKind = z.infer<typeof logKindSchema>;

/** One line of the Ralph log (the run's activity). `n`: its number in the run, from 1, without gaps. */
export const logLineSchema = z.strictObject({
  n: z.int().check(z.positive()),
  at: epochMs,
  kind: logKindSchema,
  text: z.string(),
});
export type LogLine = z.infer<typeof logLineSchema>;

/** A run's state as the dashboard shows it. */
export const RUN_STATES = [
  'idle',
  'starting',
  'running',
  'paused',
  'waiting',
  'deferred',
  'stopping',
  'completed',
  'stopped',
  'failed',
  'cancelled',
  'crashed',
] as const;
export const runStateSchema = z.enum(RUN_STATES);
export type RunState = z.infer<typeof runStateSchema>;

/** The work item an iteration works on. */
export const itemRefSchema = z.strictObject({ id: z.string(), title: z.string() });

/** A question of the agent that waits for a person's answer. */
export const questionSchema = z.strictObject({ itemId: z.nullable(z.string()), text: z.string(), askedAt: epochMs });
export type Question = z.infer<typeof questionSchema>;

/** Most workers a header carries (far above a team's count; the rest are left out). */
export const MAX_WORKERS = 256;

/** A worker of remote lanes that is alive: its id (`host:pid`), its host and its process id there. */
export const workerRowSchema = z.strictObject({ id: z.string(), host: z.string(), pid: count });
export type WorkerRow = z.infer<typeof workerRowSchema>;

/**
 * The header of a run: what runs, where it is, and what the controls may do.
 * `attempt` of `maxAttempts` ("k of N"); `progress` done of total items; context in tokens against the warn and
 * rotate lines; `costUsd` the run's cumulative cost (the agent CLI's own estimate, USD).
 */
export const runHeaderSchema = z.strictObject({
  runId: z.string(),
  folder: z.string(),
  state: runStateSchema,
  /** Extra words for the state (e.g. "until 14:05", the end reason). */
  stateDetail: z.optional(z.string()),
  source: z.string(),
  /** The agent CLI of the latest iteration (the run's own until one started; a failover changes it). */
  agent: z.string(),
  item: z.nullable(itemRefSchema),
  attempt: count,
  maxAttempts: z.nullable(count),
  iteration: count,
  maxIterations: z.nullable(count),
  startedAt: z.nullable(epochMs),
  endedAt: z.nullable(epochMs),
  progress: z.strictObject({ done: count, total: count }),
  /**
   * The run's one context figure: tokens of the window, the warn and rotate marks, and `text` as every face writes
   * it (`16k/200k 8%`, `… (last)` once the run ended; the host computes it, the page shows it as it is).
   */
  context: z.strictObject({
    tokens: count,
    window: count,
    warnAt: count,
    rotateAt: count,
    text: z.optional(z.string()),
  }),
  costUsd: nonNeg,
  question: z.nullable(questionSchema),
  /** True when this window's extension host runs the engine (so Cancel can end it now). */
  ownedByThisWindow: z.boolean(),
  /** True when the run is followed live; false for a past run shown from its log. */
  live: z.boolean(),
  /**
   * The workers of the run's remote lanes alive now (`ralph worker`, id `host:pid`, from their heartbeats), while the
   * run is live; absent or null for a run without remote lanes (or once it ended).
   */
  workers: z.optional(z.nullable(z.array(workerRowSchema).check(z.maxLength(MAX_WORKERS)))),
});
export type RunHeader = z.infer<typeof runHeaderSchema>;

/** What a lane does now: between iterations, in its agent, at a gate, or waiting for an answer to its question. */
export const LANE_ACTIVITIES = ['idle', 'agent', 'gate', 'waiting'] as const;
export const laneActivitySchema = z.enum(LANE_ACTIVITIES);
export type LaneActivity = z.infer<typeof laneActivitySchema>;

/** Most lanes a state carries (a parallel run has `maxParallel` of them; far below this). */
export const MAX_LANES = 256;

/**
 * One lane of the run (the sequential run has one, lane 0; a parallel run one per story at work): its item,
 * "attempt k of N", its current iteration (run-wide numbering), its context now (tokens against the warn and
 * rotate lines; zeros when unknown or between iterations), the current iteration's cost so far (USD), and how
 * its last iteration ended (`complete`, `rotation`, …; null before the first).
 */
export const laneRowSchema = z.strictObject({
  lane: count,
  activity: laneActivitySchema,
  /** `work`, `finalFix`, `review`; null before the lane's first iteration. */
  purpose: z.nullable(z.string()),
  item: z.nullable(itemRefSchema),
  attempt: count,
  maxAttempts: z.nullable(count),
  iteration: z.nullable(count),
  context: z.strictObject({ tokens: count, window: count, warnAt: count, rotateAt: count }),
  costUsd: nonNeg,
  lastEnding: z.nullable(z.string()),
  /** The agent CLI of the lane's current (or last) iteration (a failover changes it); absent or null before one. */
  agent: z.optional(z.nullable(z.string())),
  /** The worker running a remote lane's current (or last) iteration (`host:pid`); absent or null on this machine. */
  worker: z.optional(z.nullable(z.string())),
});
export type LaneRow = z.infer<typeof laneRowSchema>;

/** One measurement of context for the chart: the iteration, when, context tokens, the run's cost so far (USD), the lane (absent: 0). */
export const tokenPointSchema = z.strictObject({
  iteration: count,
  at: epochMs,
  contextTokens: count,
  costUsd: nonNeg,
  rotated: z.optional(z.boolean()),
  lane: z.optional(count),
});
export type TokenPoint = z.infer<typeof tokenPointSchema>;

/**
 * Tokens and cost of one task (work item) over all its iterations: tokens as the agent reports them (input,
 * output, cache read, cache creation), cost in USD; an iteration still running counts with its figures so far.
 */
export const taskCostSchema = z.strictObject({
  itemId: z.string(),
  title: z.string(),
  iterations: count,
  input: count,
  output: count,
  cacheRead: count,
  cacheCreation: count,
  costUsd: nonNeg,
});
export type TaskCost = z.infer<typeof taskCostSchema>;

/** One gate run: tier or label, exit code, duration (ms), when it ended, the command, the first failing lines. */
export const gateRowSchema = z.strictObject({
  /** The host's handle for this row (the page asks to open its log by it, never by a path). */
  id: z.string(),
  tier: z.string(),
  command: z.string(),
  exitCode: z.nullable(z.int()),
  passed: z.nullable(z.boolean()),
  durationMs: z.nullable(nonNeg),
  at: epochMs,
  failingLines: z.array(z.string()),
  hasLog: z.boolean(),
});
export type GateRow = z.infer<typeof gateRowSchema>;

/** A run that can be picked (live or past). */
export const runChoiceSchema = z.strictObject({
  runId: z.string(),
  folder: z.string(),
  label: z.string(),
  state: z.string(),
  active: z.boolean(),
});
export type RunChoice = z.infer<typeof runChoiceSchema>;

/** Everything the page shows. `run` is null when no run was ever recorded in the workspace. */
export const dashboardStateSchema = z.strictObject({
  run: z.nullable(runHeaderSchema),
  /** The run's lanes by lane number (empty before its first iteration, or with no run). */
  lanes: z.array(laneRowSchema).check(z.maxLength(MAX_LANES)),
  tokens: z.array(tokenPointSchema).check(z.maxLength(SNAPSHOT_TOKEN_POINTS)),
  tasks: z.array(taskCostSchema),
  gates: z.array(gateRowSchema),
  log: z.array(logLineSchema).check(z.maxLength(SNAPSHOT_LOG_LINES)),
  /** Lines the run's log holds in all (the page shows how many are not in its buffer). */
  logTotal: count,
  runs: z.array(runChoiceSchema),
  /** The run picked by the person; null follows the active (or latest) run. */
  pinnedRunId: z.nullable(z.string()),
});
export type DashboardState = z.infer<typeof dashboardStateSchema>;

// ---------------------------------------------------------------------------------------------------------------
// host → page

/** One small change of the state. */
export const updateOpSchema = z.discriminatedUnion('op', [
  z.strictObject({ op: z.literal('run'), run: z.nullable(runHeaderSchema) }),
  /** Every lane, replacing the page's list (lanes are few; one changed lane resends all). */
  z.strictObject({ op: z.literal('lanes'), lanes: z.array(laneRowSchema).check(z.maxLength(MAX_LANES)) }),
  z.strictObject({ op: z.literal('tokens'), points: z.array(tokenPointSchema).check(z.minLength(1)) }),
  z.strictObject({ op: z.literal('task'), task: taskCostSchema }),
  z.strictObject({ op: z.literal('gate'), gate: gateRowSchema }),
  z.strictObject({ op: z.literal('log'), lines: z.array(logLineSchema).check(z.minLength(1)), total: count }),
  z.strictObject({ op: z.literal('runs'), runs: z.array(runChoiceSchema), pinnedRunId: z.nullable(z.string()) }),
]);
export type UpdateOp = z.infer<typeof updateOpSchema>;

const seq = z.int().check(z.nonnegative());
const requestId = z.int().check(z.nonnegative());
const shortId = z.string().check(z.maxLength(200));

export const hostMessageSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('snapshot'), v: z.literal(PROTOCOL_VERSION), seq, state: dashboardStateSchema }),
  z.strictObject({ type: z.literal('update'), seq, ops: z.array(updateOpSchema).check(z.minLength(1)) }),
  z.strictObject({ type: z.literal('reply'), id: requestId, ok: z.boolean(), error: z.optional(z.string()) }),
  /** **Reveal in Dashboard** on a work item: the page filters its log by the item and shows its task row. */
  z.strictObject({ type: z.literal('reveal'), itemId: z.nullable(z.string()) }),
]);
export type HostMessage = z.infer<typeof hostMessageSchema>;

// ---------------------------------------------------------------------------------------------------------------
// page → host

/** The controls of the header. `cancel` ends this window's run at once; the others go through the sentinels. */
export const CONTROL_ACTIONS = ['start', 'pause', 'resume', 'stop', 'cancel'] as const;
export const controlActionSchema = z.enum(CONTROL_ACTIONS);
export type ControlAction = z.infer<typeof controlActionSchema>;

/** What the page may ask of the host. Paths never come from the page: logs are named by the host's handles. */
export const pageRequestSchema = z.discriminatedUnion('method', [
  z.strictObject({ method: z.literal('control'), action: controlActionSchema, runId: z.nullable(shortId) }),
  z.strictObject({
    method: z.literal('answer'),
    runId: shortId,
    itemId: z.nullable(z.string().check(z.maxLength(500))),
    text: z.string().check(z.trim(), z.minLength(1), z.maxLength(MAX_ANSWER_CHARS)),
  }),
  z.strictObject({ method: z.literal('openGateLog'), gateId: shortId }),
  z.strictObject({ method: z.literal('openFullLog') }),
  z.strictObject({ method: z.literal('pickRun'), runId: z.nullable(shortId) }),
]);
export type PageRequest = z.infer<typeof pageRequestSchema>;

export const pageMessageSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('ready'), v: z.int() }),
  z.strictObject({ type: z.literal('resync'), lastSeq: z.nullable(seq) }),
  z.strictObject({ type: z.literal('request'), id: requestId, request: pageRequestSchema }),
]);
export type PageMessage = z.infer<typeof pageMessageSchema>;

// ---------------------------------------------------------------------------------------------------------------
// Parsing at both boundaries

/** The result of parsing a message: the typed message, or why it was refused (short, for a log line). */
export type Parsed<T> = { ok: true; message: T } | { ok: false; error: string };

function parseWith<T>(schema: z.ZodMiniType<T>, raw: unknown): Parsed<T> {
  const r = schema.safeParse(raw);
  if (r.success) return { ok: true, message: r.data };
  const first = r.error.issues[0];
  const where = first?.path.length ? first.path.join('.') : '(message)';
  const type =
    raw && typeof raw === 'object' && 'type' in raw ? String((raw as { type: unknown }).type).slice(0, 40) : typeof raw;
  return { ok: false, error: `refused ${type} message: ${where}: ${first?.message ?? 'invalid'}` };
}

/** Parses a message the page sent (the host calls it before acting on anything). */
export function parsePageMessage(raw: unknown): Parsed<PageMessage> {
  return parseWith(pageMessageSchema, raw);
}

/** Parses a message the host sent (the page calls it on every `message` event). */
export function parseHostMessage(raw: unknown): Parsed<HostMessage> {
  return parseWith(hostMessageSchema, raw);
}
