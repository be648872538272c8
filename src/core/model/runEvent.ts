import { z } from 'zod';
import type { FileProblem } from './fileProblem';

/**
 * The run log: `.ralph/runs/<run_id>/events.jsonl`, one JSON object per line, append-only, written only by the
 * engine's process (core/loop/recorder.ts through `EventsWriter`). Every line is an envelope
 * `{"seq":N,"at":"<ISO with ms>","lane":L,"type":…,…}`:
 *
 * - `seq`: 1, 2, 3 … per run, no gaps (the writer counts; a reader can tell a missing line from a late one);
 * - `at`: ISO-8601 UTC time with milliseconds (`2026-12-01T09:20:36.123Z`) when the event was written;
 * - `lane`: the lane that produced it; the sequential run is lane 0, run-level events are lane 0 too;
 * - the event itself ({@link engineEventSchema}, a union discriminated by `type`).
 *
 * This module is the one schema of that file: the writer builds lines from {@link RunLogEntry}, every reader
 * (the follower, `ralph status`, `ralph watch`, the extension) parses them with {@link parseRunLogLine}.
 * A line whose `type` this version does not know (written by a newer Ralph) is kept as an
 * {@link UnknownRunLogEntry} and skipped by the reducer: never fatal.
 */

// ---------------------------------------------------------------------------------------------------------------
// Shared shapes

/** Token counts of one agent process (stream/events.ts `TokenCounts`). */
export const tokenCountsSchema = z.object({
  input: z.number(),
  output: z.number(),
  cacheRead: z.number(),
  cacheCreation: z.number(),
});

/** An iteration's totals (stream/ledger.ts `IterationTotals`): tokens and cost in USD (0 when the agent reports none). */
export const iterationTotalsSchema = z.object({ tokens: tokenCountsSchema, costUsd: z.number() });

/** A work item as events name it: source, id, title. */
export const workItemRefSchema = z.object({
  source: z.enum(['flow-next', 'quantum', 'checklist']),
  id: z.string(),
  title: z.string(),
});
/** A work item as events name it. */
export type WorkItemRef = z.infer<typeof workItemRefSchema>;

/** A gate tier (basic / full / final), from the command policy's `[gates]`. */
export const gateTierSchema = z.enum(['basic', 'full', 'final']);

/** Why an iteration ran: work on an item, fixing a red final gate, or the reviewer pass. */
export const iterationPurposeSchema = z.enum(['work', 'finalFix', 'review']);

/**
 * How an iteration ended; `question`: the agent asked a human (a `<question>` tag, or
 * the plain-question rule), and the item waits for an answer.
 */
export const iterationEndingSchema = z.enum([
  'complete',
  'stuck',
  'yield',
  'natural',
  'rotation',
  'deferred',
  'error',
  'cancelled',
  'question',
]);

/**
 * The run's terminal state. Exit codes ({@link EXIT_CODES}): 0 completed, 1 failed / stalled / blocked, 2 a cap
 * reached, 3 stopped by the user, 130 cancelled (Ctrl-C, **Ralph: Cancel**).
 */
/** How a run ended (the engine's end states). */
export const RUN_END_STATE_VALUES = [
  'completed',
  'failed',
  'stalled',
  'blocked',
  'capReached',
  'stopped',
  'cancelled',
] as const;
export const runEndStateSchema = z.enum(RUN_END_STATE_VALUES);

/** The CLI exit code of each terminal state (`ralph run`, `ralph watch`). */
export const EXIT_CODES: Record<z.infer<typeof runEndStateSchema>, number> = {
  completed: 0,
  failed: 1,
  stalled: 1,
  blocked: 1,
  capReached: 2,
  stopped: 3,
  cancelled: 130,
};

// ---------------------------------------------------------------------------------------------------------------
// Events

/** The `type` of every event built with `ev` (all of them are options of {@link engineEventSchema}). */
const eventTypes: string[] = [];
const ev = <T extends string, S extends z.ZodRawShape>(type: T, shape: S) => {
  eventTypes.push(type);
  return z.object({ type: z.literal(type), ...shape });
};

/**
 * Every event the loop engine reports. Units: tokens are token counts, `costUsd` USD, `*Ms` milliseconds,
 * `resetsAt` ms since the epoch. Fields added later are optional so older logs still parse.
 */
export const engineEventSchema = z.discriminatedUnion('type', [
  /** The run began: what it works on, with which agent, caps and the gates frozen for the run. */
  ev('runStarted', {
    runId: z.string(),
    folder: z.string(),
    source: z.string(),
    agent: z.string(),
    maxIterations: z.number(),
    gates: z.record(z.string(), z.string()),
    /** Cost cap, USD (0 = none). */
    maxCostUsd: z.number().optional(),
    /** Engine process id (crash detection by followers). */
    pid: z.number().optional(),
  }),
  /**
   * An iteration (one agent process) began. `attempt` is 1-based; `maxAttempts` is the item's limit ("attempt k of
   * N"); `attemptKind` `first` | `fix` | `debug`; for an item that waited on a question, `answered` is true.
   */
  ev('iterationStarted', {
    iteration: z.number(),
    item: workItemRefSchema.nullable(),
    attempt: z.number(),
    attemptKind: z.string(),
    purpose: iterationPurposeSchema,
    maxAttempts: z.number().optional(),
    /** A remote lane's worker (`host:pid`): the machine its iteration runs on (docs/distributed-lanes.md). */
    worker: z.string().optional(),
  }),
  /** The agent process started: which agent, its pid (also its process group) and the command line without the prompt. */
  ev('agentStarted', {
    iteration: z.number(),
    agent: z.string().optional(),
    pid: z.number().nullable(),
    command: z.string(),
  }),
  /**
   * Context and spend so far in the iteration: `contextTokens` of `contextWindow`, the warn and rotate thresholds
   * (tokens), the iteration's token totals and its cost so far (USD, null when the agent reports none yet).
   */
  ev('tokens', {
    iteration: z.number(),
    contextTokens: z.number(),
    contextWindow: z.number(),
    rotateAt: z.number(),
    warnAt: z.number(),
    totals: tokenCountsSchema,
    costUsd: z.number().nullable(),
  }),
  /** The context passed the warn threshold (tokens): the agent is asked to write its handoff and yield. */
  ev('warn', { iteration: z.number(), contextTokens: z.number(), threshold: z.number() }),
  /** The context passed the rotate threshold (tokens): the agent is ended, a new iteration carries the handoff. */
  ev('rotate', { iteration: z.number(), contextTokens: z.number(), threshold: z.number() }),
  /** A tag in the agent's own text (`<promise>`, `<ralph>`, `<quantum>`, `<verdict>`): stream/signals.ts. */
  ev('agentSignal', { iteration: z.number(), kind: z.string(), value: z.string(), reason: z.string().optional() }),
  /** The iteration ended: how, a one-line detail, its totals (tokens, USD) and the process exit code. */
  ev('iterationEnded', {
    iteration: z.number(),
    ending: iterationEndingSchema,
    detail: z.string(),
    totals: iterationTotalsSchema,
    exitCode: z.number().nullable(),
  }),
  /** A gate command started. */
  ev('gateStarted', { tier: gateTierSchema, command: z.string() }),
  /** A gate command ended: exit code, duration (ms), whether it passed, its log (workspace-relative) and the first failing lines. */
  ev('gateResult', {
    tier: gateTierSchema,
    command: z.string(),
    exitCode: z.number(),
    durationMs: z.number(),
    passed: z.boolean(),
    logPath: z.string(),
    failingLines: z.array(z.string()),
  }),
  /** An item's completion was confirmed (by the gate of `tier`, or with no gate configured: `tier` null). */
  ev('verified', { item: workItemRefSchema, tier: gateTierSchema.nullable() }),
  /** An attempt at an item failed verification. */
  ev('attemptFailed', { item: workItemRefSchema, attempt: z.number(), approach: z.string(), reason: z.string() }),
  /**
   * Items claimed done that no green gate confirmed were put back: the agent
   * (or an earlier run) claimed them; `reason` says why they do not count. `how`: one line per file the agent had
   * made hard to edit (read-only, not UTF-8, a link out of the workspace) and how it was put back anyway
   * (`<file>: <how>`, writePlan.ts `decideWrite`).
   */
  ev('claimPutBack', { items: z.array(workItemRefSchema), reason: z.string(), how: z.array(z.string()).optional() }),
  /**
   * A task file that no longer parses after an agent process (a duplicate key hides a
   * `passed` from ralph's writer but not from `JSON.parse`) was set aside and restored to its content at the
   * iteration's start: `file` (workspace-relative) now holds that content, `aside` (workspace-relative, in the run
   * folder) the agent's bytes; `problem`: why it was not readable.
   */
  ev('fileRestored', { file: z.string(), aside: z.string(), problem: z.string() }),
  /**
   * Items of the run's source vanished since the run saw them (a story, task or box deleted makes the
   * total smaller and progress look done); `items` are their keys (ids, or a box's `<text> #<n>`). The run does not
   * complete while any is gone.
   */
  ev('itemsVanished', { source: z.string(), items: z.array(z.string()) }),
  /** An item was blocked (out of attempts, or the agent gave up). */
  ev('itemBlocked', { item: workItemRefSchema, reason: z.string() }),
  /** Items done over all items of the run's source. */
  ev('progress', { done: z.number(), total: z.number(), text: z.string() }),
  /** A PAUSE sentinel appeared: the iteration finishes, then the run waits. */
  ev('pauseRequested', { file: z.string() }),
  /** The run waits (PAUSE, or a blocked item without `continueOnBlocked`). */
  ev('paused', {}),
  /** The run goes on after a pause. */
  ev('resumed', {}),
  /** A STOP sentinel (or `stop-requested`, `graceful`: the agent yields at its next commit) appeared. */
  ev('stopRequested', { file: z.string(), graceful: z.boolean() }),
  /** A rate limit or transient API error: the run waits `waitMs` (ms); `resetsAt` (ms since the epoch) when known. */
  ev('deferred', { reason: z.string(), waitMs: z.number(), resetsAt: z.number().nullable(), inARow: z.number() }),
  /**
   * The agent `from` hit a usage limit resetting at `resetsAt` (epoch ms, null unknown): the next iteration runs `to`
   * (config `agents`, core/agents/failover.ts), with the same prompt, attempt history and handoff.
   */
  ev('failover', { from: z.string(), to: z.string(), reason: z.string(), resetsAt: z.number().nullable() }),
  /** The reviewer's verdict (`SHIP`, `NEEDS_WORK`, …, `NONE`). */
  ev('reviewVerdict', { verdict: z.string() }),
  /**
   * The agent asked a human: the item waits for an answer. `answerFile` is the absolute path where the answer
   * may be written (or use `ralph answer`); `id` names the question within the run.
   */
  ev('question', {
    id: z.string(),
    iteration: z.number(),
    item: workItemRefSchema.nullable(),
    text: z.string(),
    answerFile: z.string(),
  }),
  /** A question got its answer (verbatim); the item may go on. */
  ev('answered', { id: z.string(), item: workItemRefSchema.nullable(), text: z.string() }),
  /** A question waited longer than `questionTimeoutMinutes`: the wait ends as stalled. */
  ev('questionTimedOut', { id: z.string(), item: workItemRefSchema.nullable(), waitedMs: z.number() }),
  /** The `notify` command ran (for a question or the run's end); `ok` false with the reason when it failed. */
  ev('notified', { about: z.string(), ok: z.boolean(), detail: z.string().optional() }),
  /** Something went wrong that does not end the run (a record that could not be written, a process left behind …). */
  ev('warning', { message: z.string() }),
  /** The command guard denied or rewrote an agent's tool call; `text` is the activity line. */
  ev('guard', {
    decision: z.enum(['deny', 'rewrite']),
    tool: z.string(),
    subject: z.string(),
    reason: z.string(),
    command: z.string().optional(),
    text: z.string(),
  }),
  /**
   * A line of a followed run's output that is not an engine event (flow-next driver runs: the iteration log).
   * Never written by our engine; the follower produces it.
   */
  ev('output', { iteration: z.number().nullable(), text: z.string() }),
  /**
   * A parallel run's lane came back: its story's branch `branch` was merged into the feature branch
   * (`merged`), or not: `conflict` (the merge was aborted; `files` the conflicting paths, the branch kept),
   * `regression` (the feature branch's gate went red after the merge: the merge was undone), `failed` (the story
   * failed in its lane), `released` (stopped or cancelled: the story is pending again, its branch kept). `durationMs`:
   * the merge and the feature branch's gate, ms (0 when nothing was merged).
   */
  ev('laneMerge', {
    item: workItemRefSchema,
    branch: z.string(),
    outcome: z.enum(['merged', 'conflict', 'regression', 'failed', 'released']),
    reason: z.string(),
    files: z.array(z.string()).optional(),
    durationMs: z.number(),
  }),
  /**
   * The workers of a parallel run's remote lanes that are alive (their heartbeat in Redis is fresh): each one's id
   * (`host:pid`), host and pid; reported when the set changes (docs/distributed-lanes.md).
   */
  ev('workers', {
    alive: z.array(z.object({ id: z.string(), host: z.string(), pid: z.number() })),
  }),
  /** The run ended: terminal state, reason, progress.txt completion reason, exit code, totals (USD). */
  ev('runEnded', {
    state: runEndStateSchema,
    reason: z.string(),
    completionReason: z.string(),
    exitCode: z.number(),
    iterations: z.number(),
    costUsd: z.number(),
    done: z.number(),
    total: z.number(),
  }),
]);

/** One engine event (without the log envelope). */
export type EngineEvent = z.infer<typeof engineEventSchema>;
/** The `type` of every event this version knows. */
export type EngineEventType = EngineEvent['type'];
/** The event of one type. */
export type EngineEventOf<T extends EngineEventType> = Extract<EngineEvent, { type: T }>;

/** The activity line of a `workers` event: `WORKERS 2 alive: build1:4242, build2:977`. Pure. */
export function workersText(alive: readonly { id: string }[]): string {
  return `WORKERS ${alive.length} alive${alive.length ? `: ${alive.map((w) => w.id).join(', ')}` : ''}`;
}

/** Every known event type (the discriminator values of {@link engineEventSchema}). */
export const ENGINE_EVENT_TYPES: ReadonlySet<string> = new Set(eventTypes);

// ---------------------------------------------------------------------------------------------------------------
// The envelope

/** The fields every log line carries besides the event. */
export const runLogEnvelopeSchema = z.object({
  /** 1-based, per run, no gaps. */
  seq: z.number().int().positive(),
  /** ISO-8601 UTC with milliseconds. */
  at: z.string(),
  /** 0 for the sequential run. */
  lane: z.number().int().nonnegative(),
});
export type RunLogEnvelope = z.infer<typeof runLogEnvelopeSchema>;

/** One line of the run log: envelope + a known event. */
export type RunLogEntry = RunLogEnvelope & EngineEvent;

/**
 * A line with a valid envelope whose `type` this version does not know (a newer writer). `raw` is the whole
 * parsed object, kept so a tool can pass it on (`ralph watch --json` prints it as read).
 */
export interface UnknownRunLogEntry extends RunLogEnvelope {
  type: string;
  unknown: true;
  raw: Record<string, unknown>;
}

/** What {@link parseRunLogLine} makes of one line. */
export type ParsedRunLogLine =
  | { kind: 'entry'; entry: RunLogEntry }
  | { kind: 'unknown'; entry: UnknownRunLogEntry }
  | { kind: 'problem'; problem: FileProblem };

/**
 * Parses one line of a run log. `file` and `line` (1-based) name the place in a problem. A line without `seq`
 * (written before the envelope existed) gets `fallbackSeq`, without `lane` lane 0; without `at` it is a problem.
 * Never throws.
 */
export function parseRunLogLine(text: string, file: string, line: number, fallbackSeq: number): ParsedRunLogLine {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    return { kind: 'problem', problem: { file, line, column: 1, message: `not JSON: ${(err as Error).message}` } };
  }
  if (!v || typeof v !== 'object' || Array.isArray(v))
    return { kind: 'problem', problem: { file, line, column: 1, message: 'not a JSON object' } };
  const o = v as Record<string, unknown>;
  // The envelope is checked by hand (every line has one; a schema parse of it doubled the cost per line).
  const seq = o.seq ?? fallbackSeq;
  const lane = o.lane ?? 0;
  const bad =
    !Number.isInteger(seq) || (seq as number) < 1
      ? 'seq: expected a whole number ≥ 1'
      : typeof o.at !== 'string'
        ? 'at: expected an ISO time'
        : !Number.isInteger(lane) || (lane as number) < 0
          ? 'lane: expected a whole number ≥ 0'
          : typeof o.type !== 'string'
            ? 'type: expected a string'
            : null;
  if (bad) return { kind: 'problem', problem: { file, line, column: 1, message: `not a run log event: ${bad}` } };
  const env: RunLogEnvelope = { seq: seq as number, at: o.at as string, lane: lane as number };
  const type = o.type as string;
  if (!ENGINE_EVENT_TYPES.has(type)) return { kind: 'unknown', entry: { ...env, type, unknown: true, raw: o } };
  const e = engineEventSchema.safeParse(o);
  if (!e.success) {
    const why = e.error.issues.map((i) => `${i.path.join('.') || '(line)'}: ${i.message}`).join('; ');
    return { kind: 'problem', problem: { file, line, column: 1, message: `bad ${type} event: ${why}` } };
  }
  // The event schema strips the envelope's keys (and any unknown ones); the envelope goes back on.
  return { kind: 'entry', entry: Object.assign(e.data, env) as RunLogEntry };
}

/** The line written for an entry: compact JSON, envelope first, then the event, then `\n`. */
export function runLogLine(seq: number, at: string, lane: number, event: EngineEvent): string {
  return `${JSON.stringify({ seq, at, lane, ...event })}\n`;
}
