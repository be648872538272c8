import { iterationWhat } from './activityText';
import { endReasonText } from './endReason';
import { workersText, type EngineEvent, type RunLogEntry, type UnknownRunLogEntry } from '../model/runEvent';
import type { z } from 'zod';
import {
  contextFigure,
  contextText,
  emptyContextTrack,
  endContext,
  reduceContext,
  type ContextTrack,
} from './contextFigure';
import type { gateTierSchema, runEndStateSchema, tokenCountsSchema, workItemRefSchema } from '../model/runEvent';

/**
 * What anyone sees of one run, computed from its log by a pure reducer: `ralph status` (text, and `--json` under
 * `runs[].view`), `ralph watch`, the extension's run store, token gauge and dashboard all show this one shape.
 *
 * Build it with {@link reduceRunView} over the entries a {@link RunFollower} (runFollower.ts) reports, starting from
 * {@link emptyRunView}; finish with {@link withFollowEnd} when the follower says the run ended or crashed. The
 * reducer never throws, ignores entries whose `seq` it has already seen (so replaying a log twice is harmless),
 * counts gaps in `seq`, and skips unknown event types (counted in `unknownEvents`).
 *
 * Units: tokens are token counts, money is USD, times are ISO-8601 strings (UTC, with ms) as the log has them.
 * Stability: fields are only ever added; a consumer must ignore fields it does not know.
 */

/** A work item as the run log names it: source, id, title. */
export type RunItemRef = z.infer<typeof workItemRefSchema>;
/** A gate tier: basic, full or final. */
export type RunGateTier = z.infer<typeof gateTierSchema>;
/** Token counts as the agent reports them: input, output, cache read, cache creation (tokens). */
export type RunTokenCounts = z.infer<typeof tokenCountsSchema>;
/** A terminal state of the engine (completed, failed, stalled, blocked, capReached, stopped, cancelled). */
export type RunEndViewState = z.infer<typeof runEndStateSchema>;

/**
 * The run's state as a person reads it:
 * - `starting`: no `runStarted` seen yet;
 * - `running`: an iteration, a gate or the pause between them;
 * - `paused`: PAUSE honoured (or a blocked item paused the run), waiting for resume;
 * - `waiting`: every lane waits for a human answer (see `questions`);
 * - `deferred`: waiting out a rate limit until `deferredUntil`;
 * - `stopping`: STOP requested, the current iteration finishes;
 * - a terminal state: `completed`, `failed`, `stalled`, `blocked`, `capReached`, `stopped`, `cancelled`;
 * - `crashed`: the log ended without `runEnded` and the engine process is gone (from the follower).
 */
export type RunViewState =
  'starting' | 'running' | 'paused' | 'waiting' | 'deferred' | 'stopping' | RunEndViewState | 'crashed';

/** States after which nothing more happens in the run. */
export const FINAL_VIEW_STATES: ReadonlySet<RunViewState> = new Set([
  'completed',
  'failed',
  'stalled',
  'blocked',
  'capReached',
  'stopped',
  'cancelled',
  'crashed',
]);

/**
 * The context gauge of a lane's current iteration. `percent`, `warnPercent` and `rotatePercent` are 0–100 of
 * `window` (rounded down to one decimal), so a gauge draws its bar and the warn and rotate lines on one scale.
 */
export interface ContextGauge {
  /** Context used now, tokens. */
  tokens: number;
  /** The model's context window, tokens. */
  window: number;
  /** Warn threshold (the agent is asked to hand off and yield), tokens. */
  warnAt: number;
  /** Rotate threshold (the agent is ended, a new iteration carries the handoff), tokens. */
  rotateAt: number;
  percent: number;
  warnPercent: number;
  rotatePercent: number;
  /** `ok` below warn, `warn` from warn, `rotate` from the rotate threshold. */
  level: 'ok' | 'warn' | 'rotate';
  /** The warn event was reported in this iteration. */
  warned: boolean;
  /** The rotate event was reported in this iteration (the agent is being ended). */
  rotated: boolean;
}

/** "Attempt k of N" at an item. `max` is null when the log does not say (older logs). */
export interface AttemptView {
  number: number;
  max: number | null;
  /** `first`, `fix` or `debug` (the last, root-cause attempt). */
  kind: string;
  /** `1 of 5`, or `2` when `max` is unknown. */
  text: string;
}

/** One lane: the sequential run has exactly one, lane 0. */
export interface LaneView {
  lane: number;
  /** What the lane does now. `idle` between iterations; `waiting` for an answer to its question. */
  activity: 'idle' | 'agent' | 'gate' | 'waiting';
  /** Number of its current (or last) iteration, run-wide numbering; null before the first. */
  iteration: number | null;
  /** `work` on an item, `finalFix` after a red final gate, `review`. */
  purpose: 'work' | 'finalFix' | 'review' | null;
  item: RunItemRef | null;
  attempt: AttemptView | null;
  /** Agent process id of the current iteration. */
  agentPid: number | null;
  /**
   * The agent CLI of the lane's current (or last) iteration (`claude`, `codex`, …) as its `agentStarted` names it: a
   * failover to the next agent of `agents` shows here; null before the lane's first agent started.
   */
  agent: string | null;
  context: ContextGauge | null;
  /** Cost of the current (or last) iteration so far, USD. */
  iterationCostUsd: number;
  /**
   * Tokens of the current (or last) iteration so far (its agent's totals from the last `tokens` event, then the
   * iteration's totals from `iterationEnded`); null before the first figure of the iteration.
   */
  iterationTokens: RunTokenCounts | null;
  /** How the last iteration of the lane ended (`complete`, `natural`, `rotation`, `question`, …) and its detail. */
  lastEnding: { iteration: number; ending: string; detail: string } | null;
  /** A remote lane's worker (`host:pid`, from its iteration's start); null for a lane on this machine. */
  worker: string | null;
}

/** A worker of remote lanes that is alive (`workers` event): its id (`host:pid`), host and pid. */
export interface WorkerView {
  id: string;
  host: string;
  pid: number;
}

/** The latest result of one gate tier. `running` while its command runs (then `passed`/`exitCode` are of the previous run, or null). */
export interface GateView {
  tier: RunGateTier;
  command: string;
  running: boolean;
  passed: boolean | null;
  exitCode: number | null;
  durationMs: number | null;
  /** Workspace-relative log of the last run. */
  logPath: string | null;
  /** First failing lines of the last run (empty when it passed). */
  failingLines: string[];
  /** Time of the last result. */
  at: string | null;
}

/** A question of the agent that waits for a human answer. */
export interface QuestionView {
  id: string;
  lane: number;
  iteration: number;
  item: RunItemRef | null;
  /** The question, verbatim. */
  text: string;
  /** Where an answer can be written (absolute path); `ralph answer` writes it. */
  answerFile: string;
  askedAt: string;
}

/** Cost of one iteration, USD. */
export interface IterationCost {
  iteration: number;
  lane: number;
  itemId: string | null;
  costUsd: number;
}

/**
 * Spend of one item over every ended iteration at it: cost (USD), tokens (summed from each iteration's
 * `iterationEnded.totals.tokens`) and how many iterations ended at it. An iteration still running is not in it
 * (its lane's `iterationCostUsd` / `iterationTokens` are).
 */
export interface ItemCost {
  /** `<source>:<id>`. */
  key: string;
  item: RunItemRef;
  costUsd: number;
  tokens: RunTokenCounts;
  iterations: number;
}

/** Cost of the run, USD: in total, per item (every iteration at it) and per iteration (the last {@link ITERATION_COSTS_KEPT}). */
export interface CostView {
  runUsd: number;
  /** Per item, keyed `<source>:<id>`, in order of the first iteration that ended at it. */
  byItem: ItemCost[];
  byIteration: IterationCost[];
}

/** One line of the activity: the same kind of text `ralph run` prints, with its entry's `seq`, time and lane. */
export interface ActivityLine {
  seq: number;
  at: string;
  lane: number;
  text: string;
}

/** How the run ended. `exitCode` is the `ralph run` exit code (0 complete … 130 interrupted; 1 for a crash). */
export interface RunEndView {
  state: RunEndViewState | 'crashed';
  reason: string;
  completionReason: string | null;
  exitCode: number;
  at: string | null;
}

/** The view of one run. Fields are only ever added; see the module docstring. */
export interface RunView {
  runId: string;
  /** `ralph` (our engine, events.jsonl) or `flow-next` (flow-next's ralph.sh, followed through progress.txt). */
  kind: 'ralph' | 'flow-next';
  state: RunViewState;
  /** One line for a status line: `running`, `paused`, `waiting for an answer (fn-1.2)`, `deferred until 14:05`, `completed — …`. */
  stateText: string;
  /** True once `state` is terminal. */
  final: boolean;
  /** ISO time a deferral ends, while `state` is `deferred`. */
  deferredUntil: string | null;
  /** A PAUSE sentinel was seen and the run has not paused yet. */
  pauseRequested: boolean;
  /** A STOP sentinel was seen. */
  stopRequested: boolean;
  /**
   * The source label and caps from `runStarted`; `agent`: the run's agent from `runStarted`, then the agent of the
   * latest iteration to start (a failover changes it; each lane's own is {@link LaneView.agent}).
   */
  source: string | null;
  agent: string | null;
  maxIterations: number | null;
  /** Cost cap, USD; null when none or unknown. */
  maxCostUsd: number | null;
  /** Engine process id, when the log says. */
  pid: number | null;
  /** Gate commands of the run per tier, frozen at start. */
  gateCommands: Partial<Record<RunGateTier, string>>;
  startedAt: string | null;
  /** Time of the newest entry. */
  lastEventAt: string | null;
  /** The highest iteration number started. */
  iteration: number;
  /** Items done over all items of the source, from the last `progress` event. */
  progress: { done: number; total: number } | null;
  /**
   * Lanes by lane number (the sequential run: one, lane 0). A lane of a parallel run is dropped at its `laneMerge`
   * (its end), so these are the lanes at work (status, watch, the tree and the dashboard show them live).
   */
  lanes: LaneView[];
  /** The workers of the run's remote lanes alive now (from the last `workers` event); null when it has none. */
  workers: WorkerView[] | null;
  /**
   * The run's one context figure (`context.figure`: tokens in use of the window, its percentage, the warn and rotate
   * marks; `last` once the run ended) with what its reducer keeps (contextFigure.ts). Every face shows this figure.
   */
  context: ContextTrack;
  cost: CostView;
  /** Latest result per tier, in the order basic, full, final. */
  gates: GateView[];
  /** Questions not answered yet. */
  questions: QuestionView[];
  /** The last {@link ACTIVITY_LINES_KEPT} lines of activity. */
  activity: ActivityLine[];
  /** The last few warnings (newest last). */
  warnings: string[];
  end: RunEndView | null;
  /** The highest `seq` applied. */
  lastSeq: number;
  /** `seq` numbers skipped over (lines lost or not yet written when a later one was read). */
  missingSeqs: number;
  /** Entries of event types this version does not know (skipped). */
  unknownEvents: number;
}

/** Activity lines a view keeps. */
export const ACTIVITY_LINES_KEPT = 20;
/** Iteration costs a view keeps. */
export const ITERATION_COSTS_KEPT = 50;
/** Warnings a view keeps. */
export const WARNINGS_KEPT = 5;

const GATE_ORDER: readonly RunGateTier[] = ['basic', 'full', 'final'];

/** The view of a run before any entry: `starting`, no lanes. */
export function emptyRunView(runId: string, kind: RunView['kind'] = 'ralph'): RunView {
  return {
    runId,
    kind,
    state: 'starting',
    stateText: 'starting',
    final: false,
    deferredUntil: null,
    pauseRequested: false,
    stopRequested: false,
    source: null,
    agent: null,
    maxIterations: null,
    maxCostUsd: null,
    pid: null,
    gateCommands: {},
    startedAt: null,
    lastEventAt: null,
    iteration: 0,
    progress: null,
    lanes: [],
    workers: null,
    context: emptyContextTrack(),
    cost: { runUsd: 0, byItem: [], byIteration: [] },
    gates: [],
    questions: [],
    activity: [],
    warnings: [],
    end: null,
    lastSeq: 0,
    missingSeqs: 0,
    unknownEvents: 0,
  };
}

function emptyLane(lane: number): LaneView {
  return {
    lane,
    activity: 'idle',
    iteration: null,
    purpose: null,
    item: null,
    attempt: null,
    agentPid: null,
    agent: null,
    context: null,
    iterationCostUsd: 0,
    iterationTokens: null,
    lastEnding: null,
    worker: null,
  };
}

const pct = (n: number, of: number) => (of > 0 ? Math.floor((n * 1000) / of) / 10 : 0);
const itemKey = (i: RunItemRef) => `${i.source}:${i.id}`;
const firstLine = (s: string) => s.split('\n')[0] ?? '';

/** `HH:MM` (UTC when `utc`, else local) of an ISO time; the time as given when it does not parse. */
export function clockOf(iso: string, utc = false): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const p = (n: number) => String(n).padStart(2, '0');
  return utc ? `${p(d.getUTCHours())}:${p(d.getUTCMinutes())}` : `${p(d.getHours())}:${p(d.getMinutes())}`;
}

/**
 * The `stateText` of a view: the state in words, with the item a question waits on, the time a deferral ends
 * (local `HH:MM`), or the end reason. Pure apart from the local time zone.
 */
export function stateTextOf(v: Pick<RunView, 'state' | 'deferredUntil' | 'questions' | 'end'>): string {
  switch (v.state) {
    case 'waiting': {
      const ids = v.questions.map((q) => q.item?.id).filter((x): x is string => !!x);
      return `waiting for an answer${ids.length ? ` (${ids.join(', ')})` : ''}`;
    }
    case 'deferred':
      return v.deferredUntil ? `deferred until ${clockOf(v.deferredUntil)}` : 'deferred';
    default:
      return v.end ? `${v.state} — ${endReasonText(firstLine(v.end.reason))}` : v.state;
  }
}

/** The running state of a view that is not final: waiting when every lane waits on a question, else running. */
function liveState(v: RunView): RunViewState {
  if (v.state === 'paused' || v.state === 'stopping') return v.state;
  if (v.lanes.length && v.lanes.every((l) => l.activity === 'waiting')) return 'waiting';
  return 'running';
}

function setLane(lanes: LaneView[], lane: number, f: (l: LaneView) => LaneView): LaneView[] {
  const i = lanes.findIndex((l) => l.lane === lane);
  if (i < 0) return [...lanes, f(emptyLane(lane))].sort((a, b) => a.lane - b.lane);
  const out = lanes.slice();
  out[i] = f(lanes[i]!);
  return out;
}

function pushKept<T>(list: readonly T[], item: T, keep: number): T[] {
  const out = list.length >= keep ? list.slice(list.length - keep + 1) : list.slice();
  out.push(item);
  return out;
}

/**
 * The activity text of an event, or null for events that make no line (tokens). Short forms of what `ralph run`
 * prints (activityText.ts `ActivityFormatter`), without its clock-dependent TOKENS throttling. Pure.
 */
export function activityTextOf(e: EngineEvent): string | null {
  switch (e.type) {
    case 'runStarted':
      return `═══ RALPH START — run ${e.runId} · source ${e.source} · agent ${e.agent} · max ${e.maxIterations} iterations`;
    case 'iterationStarted': {
      const what = iterationWhat(e);
      const attempt =
        e.attempt > 1 || e.maxAttempts ? ` · attempt ${e.attempt}${e.maxAttempts ? ` of ${e.maxAttempts}` : ''}` : '';
      return `LOOP ${e.iteration} START — ${what}${attempt}${e.worker ? ` · on ${e.worker}` : ''}`;
    }
    case 'agentStarted':
      return `SESSION START: ${e.agent ? `${e.agent} ` : ''}pid=${e.pid ?? '?'}`;
    case 'tokens':
      return null;
    case 'warn':
      return `WARN: context ${e.contextTokens} ≥ ${e.threshold} tokens: handoff requested`;
    case 'rotate':
      return `ROTATE: context ${e.contextTokens} ≥ ${e.threshold} tokens`;
    case 'agentSignal':
      return `signal ${e.kind} ${e.value}${e.reason ? ` — ${e.reason}` : ''}`;
    case 'iterationEnded':
      return `LOOP ${e.iteration} END — ${e.ending} (${e.detail}; $${e.totals.costUsd.toFixed(4)})`;
    case 'gateStarted':
      return `GATE start ${e.tier}: ${e.command}`;
    case 'gateResult':
      return `GATE ${e.passed ? 'passed' : 'FAILED'} ${e.tier} exit=${e.exitCode} ${(e.durationMs / 1000).toFixed(1)}s`;
    case 'verified':
      return `${e.tier ? 'VERIFIED' : 'DONE'} ${e.item.id} — ${e.item.title}`;
    case 'attemptFailed':
      return `ATTEMPT ${e.attempt} FAILED ${e.item.id} — ${firstLine(e.reason)}`;
    case 'itemBlocked':
      return `BLOCKED ${e.item.id} — ${firstLine(e.reason)}`;
    case 'itemsVanished':
      return `VANISHED from ${e.source}: ${e.items.join(', ')} — the run will not complete`;
    case 'laneMerge':
      return `LANE ${e.outcome.toUpperCase()} ${e.item.id} (${e.branch}) — ${firstLine(e.reason)}${e.files?.length ? ` [${e.files.join(', ')}]` : ''}`;
    case 'claimPutBack':
      return `PUT BACK ${e.items.map((i) => i.id).join(', ')} — claimed done; ${firstLine(e.reason)}${e.how?.length ? ` (${e.how.join('; ')})` : ''}`;
    case 'fileRestored':
      return `RESTORED ${e.file} — ${firstLine(e.problem)}; its content at the iteration's start is back, the agent's bytes are in ${e.aside}`;
    case 'progress':
      return `Tasks: ${e.done}/${e.total} complete`;
    case 'pauseRequested':
      return 'PAUSE requested';
    case 'paused':
      return 'PAUSED';
    case 'resumed':
      return 'RESUMED';
    case 'stopRequested':
      return `STOP REQUESTED${e.graceful ? ' (graceful)' : ''}`;
    case 'deferred':
      return `DEFER — ${e.reason}; waiting ${Math.round(e.waitMs / 1000)}s`;
    case 'failover':
      return `FAILOVER — ${e.reason}`;
    case 'reviewVerdict':
      return `REVIEW verdict: ${e.verdict}`;
    case 'question':
      return `QUESTION${e.item ? ` ${e.item.id}` : ''} — ${firstLine(e.text)}`;
    case 'answered':
      return `ANSWERED${e.item ? ` ${e.item.id}` : ''} — ${firstLine(e.text)}`;
    case 'questionTimedOut':
      return `QUESTION TIMED OUT${e.item ? ` ${e.item.id}` : ''}`;
    case 'notified':
      return e.ok ? null : `WARNING: notify failed (${e.about}): ${e.detail ?? ''}`;
    case 'warning':
      return `WARNING: ${firstLine(e.message)}`;
    case 'guard':
      return e.text;
    case 'output':
      return e.text;
    case 'workers':
      return workersText(e.alive);
    case 'runEnded':
      return `RALPH STOP — ${e.state}: ${firstLine(e.reason)} · ${e.done}/${e.total} done · ${e.iterations} iterations · $${e.costUsd.toFixed(4)} · exit ${e.exitCode}`;
  }
}

/**
 * Applies one log entry to a view and returns the new view (the input is not changed; unchanged parts are shared).
 * Entries with a `seq` at or below `lastSeq` are ignored; an unknown event type only counts. Never throws.
 */
export function reduceRunView(view: RunView, entry: RunLogEntry | UnknownRunLogEntry): RunView {
  if (entry.seq <= view.lastSeq) return view;
  const v: RunView = { ...view, lastSeq: entry.seq, lastEventAt: entry.at };
  if (entry.seq > view.lastSeq + 1) v.missingSeqs += entry.seq - view.lastSeq - 1;
  if ('unknown' in entry) {
    v.unknownEvents++;
    return v;
  }
  const e = entry as RunLogEntry;
  const lane = e.lane;
  v.context = reduceContext(view.context ?? emptyContextTrack(), e);
  switch (e.type) {
    case 'runStarted':
      Object.assign(v, {
        state: 'running',
        source: e.source,
        agent: e.agent,
        maxIterations: e.maxIterations,
        maxCostUsd: e.maxCostUsd ? e.maxCostUsd : null,
        pid: e.pid ?? null,
        gateCommands: e.gates,
        startedAt: e.at,
      });
      if (e.runId) v.runId = e.runId;
      break;
    case 'iterationStarted':
      v.iteration = Math.max(v.iteration, e.iteration);
      v.lanes = setLane(v.lanes, lane, (l) => ({
        ...l,
        activity: 'agent',
        iteration: e.iteration,
        purpose: e.purpose,
        item: e.item,
        agentPid: null,
        context: null,
        iterationCostUsd: 0,
        iterationTokens: null,
        worker: e.worker ?? null,
        attempt:
          e.purpose === 'work'
            ? {
                number: e.attempt,
                max: e.maxAttempts ?? null,
                kind: e.attemptKind,
                text: e.maxAttempts ? `${e.attempt} of ${e.maxAttempts}` : String(e.attempt),
              }
            : null,
      }));
      if (v.state === 'deferred' || v.state === 'starting' || v.state === 'waiting' || v.state === 'paused')
        v.state = 'running';
      v.deferredUntil = null;
      break;
    case 'agentStarted':
      v.lanes = setLane(v.lanes, lane, (l) => ({ ...l, agentPid: e.pid, agent: e.agent ?? l.agent ?? v.agent }));
      if (e.agent) v.agent = e.agent;
      break;
    case 'tokens':
      v.lanes = setLane(v.lanes, lane, (l) => ({
        ...l,
        iterationCostUsd: e.costUsd ?? l.iterationCostUsd,
        iterationTokens: e.totals,
        context: {
          tokens: e.contextTokens,
          window: e.contextWindow,
          warnAt: e.warnAt,
          rotateAt: e.rotateAt,
          percent: pct(e.contextTokens, e.contextWindow),
          warnPercent: pct(e.warnAt, e.contextWindow),
          rotatePercent: pct(e.rotateAt, e.contextWindow),
          level: e.contextTokens >= e.rotateAt ? 'rotate' : e.contextTokens >= e.warnAt ? 'warn' : 'ok',
          warned: l.context?.warned ?? false,
          rotated: l.context?.rotated ?? false,
        },
      }));
      break;
    case 'warn':
    case 'rotate':
      v.lanes = setLane(v.lanes, lane, (l) =>
        l.context
          ? { ...l, context: { ...l.context, ...(e.type === 'warn' ? { warned: true } : { rotated: true }) } }
          : l,
      );
      break;
    case 'iterationEnded': {
      const l0 = v.lanes.find((l) => l.lane === lane);
      const item = l0?.iteration === e.iteration ? l0.item : null;
      const usd = e.totals.costUsd;
      v.lanes = setLane(v.lanes, lane, (l) => ({
        ...l,
        activity: e.ending === 'question' ? 'waiting' : 'idle',
        agentPid: null,
        iterationCostUsd: usd,
        iterationTokens: e.totals.tokens,
        lastEnding: { iteration: e.iteration, ending: e.ending, detail: e.detail },
      }));
      const byItem = item ? addItemCost(v.cost.byItem, item, usd, e.totals.tokens) : v.cost.byItem;
      v.cost = {
        runUsd: v.cost.runUsd + usd,
        byItem,
        byIteration: pushKept(
          v.cost.byIteration,
          { iteration: e.iteration, lane, itemId: item?.id ?? null, costUsd: usd },
          ITERATION_COSTS_KEPT,
        ),
      };
      break;
    }
    case 'gateStarted':
      v.gates = setGate(v.gates, e.tier, (g) => ({ ...g, command: e.command, running: true }));
      v.lanes = setLane(v.lanes, lane, (l) => (l.activity === 'waiting' ? l : { ...l, activity: 'gate' }));
      break;
    case 'gateResult':
      v.gates = setGate(v.gates, e.tier, () => ({
        tier: e.tier,
        command: e.command,
        running: false,
        passed: e.passed,
        exitCode: e.exitCode,
        durationMs: e.durationMs,
        logPath: e.logPath,
        failingLines: e.failingLines,
        at: e.at,
      }));
      v.lanes = setLane(v.lanes, lane, (l) => (l.activity === 'gate' ? { ...l, activity: 'idle' } : l));
      break;
    case 'progress':
      v.progress = { done: e.done, total: e.total };
      break;
    case 'pauseRequested':
      v.pauseRequested = true;
      break;
    case 'paused':
      v.state = 'paused';
      v.pauseRequested = false;
      break;
    case 'resumed':
      v.state = 'running';
      v.state = liveState(v);
      break;
    case 'stopRequested':
      v.stopRequested = true;
      if (!v.final) v.state = 'stopping';
      break;
    case 'deferred':
      v.state = 'deferred';
      v.deferredUntil = new Date((Date.parse(e.at) || 0) + e.waitMs).toISOString();
      break;
    case 'question':
      v.questions = [
        ...v.questions.filter((q) => q.id !== e.id),
        { id: e.id, lane, iteration: e.iteration, item: e.item, text: e.text, answerFile: e.answerFile, askedAt: e.at },
      ];
      v.lanes = setLane(v.lanes, lane, (l) => ({ ...l, activity: 'waiting' }));
      if (v.state === 'running') v.state = liveState(v);
      break;
    case 'answered':
    case 'questionTimedOut': {
      const q = v.questions.find((x) => x.id === e.id);
      v.questions = v.questions.filter((x) => x.id !== e.id);
      if (q) v.lanes = setLane(v.lanes, q.lane, (l) => (l.activity === 'waiting' ? { ...l, activity: 'idle' } : l));
      if (v.state === 'waiting') v.state = liveState(v);
      break;
    }
    case 'workers':
      v.workers = e.alive.map((w) => ({ id: w.id, host: w.host, pid: w.pid }));
      break;
    case 'laneMerge':
      // The lane of a parallel run ended (merged, or its story failed or went back): it is no longer shown; its
      // number may be used again by a later lane.
      v.lanes = v.lanes.filter((l) => l.lane !== lane);
      break;
    case 'warning':
      v.warnings = pushKept(v.warnings, e.message, WARNINGS_KEPT);
      break;
    case 'runEnded':
      v.state = e.state;
      v.end = {
        state: e.state,
        reason: e.reason,
        completionReason: e.completionReason,
        exitCode: e.exitCode,
        at: e.at,
      };
      v.progress = e.total ? { done: e.done, total: e.total } : v.progress;
      v.iteration = Math.max(v.iteration, e.iterations);
      // The engine's own total wins when the log lost an iterationEnded (a second Ctrl-C); never lower.
      if (e.costUsd > v.cost.runUsd) v.cost = { ...v.cost, runUsd: e.costUsd };
      v.questions = [];
      v.deferredUntil = null;
      v.lanes = v.lanes.map((l) =>
        l.activity === 'idle' && l.agentPid === null ? l : { ...l, activity: 'idle', agentPid: null },
      );
      break;
    default:
      break;
  }
  const text = activityTextOf(e);
  if (text !== null) v.activity = pushKept(v.activity, { seq: e.seq, at: e.at, lane, text }, ACTIVITY_LINES_KEPT);
  // Most entries (tokens) change none of what the state's words depend on.
  if (
    v.state !== view.state ||
    v.questions !== view.questions ||
    v.end !== view.end ||
    v.deferredUntil !== view.deferredUntil
  ) {
    v.final = FINAL_VIEW_STATES.has(v.state);
    v.stateText = stateTextOf(v);
  }
  return v;
}

/** Token counts `a + b`, field by field. Pure. */
export function addTokenCounts(a: RunTokenCounts, b: RunTokenCounts): RunTokenCounts {
  return {
    input: a.input + b.input,
    output: a.output + b.output,
    cacheRead: a.cacheRead + b.cacheRead,
    cacheCreation: a.cacheCreation + b.cacheCreation,
  };
}

/** No tokens. */
export const NO_TOKENS: Readonly<RunTokenCounts> = Object.freeze({
  input: 0,
  output: 0,
  cacheRead: 0,
  cacheCreation: 0,
});

function addItemCost(
  list: CostView['byItem'],
  item: RunItemRef,
  usd: number,
  tokens: RunTokenCounts,
): CostView['byItem'] {
  const key = itemKey(item);
  const i = list.findIndex((x) => x.key === key);
  if (i < 0) return [...list, { key, item, costUsd: usd, tokens: addTokenCounts(NO_TOKENS, tokens), iterations: 1 }];
  const out = list.slice();
  const c = list[i]!;
  out[i] = { ...c, costUsd: c.costUsd + usd, tokens: addTokenCounts(c.tokens, tokens), iterations: c.iterations + 1 };
  return out;
}

function setGate(gates: GateView[], tier: RunGateTier, f: (g: GateView) => GateView): GateView[] {
  const i = gates.findIndex((g) => g.tier === tier);
  const base: GateView =
    i >= 0
      ? gates[i]!
      : {
          tier,
          command: '',
          running: false,
          passed: null,
          exitCode: null,
          durationMs: null,
          logPath: null,
          failingLines: [],
          at: null,
        };
  const out = gates.filter((g) => g.tier !== tier);
  out.push(f(base));
  return out.sort((a, b) => GATE_ORDER.indexOf(a.tier) - GATE_ORDER.indexOf(b.tier));
}

/** Folds every entry into a view: `entries.reduce(reduceRunView, emptyRunView(runId, kind))`. */
export function runViewOf(
  runId: string,
  entries: Iterable<RunLogEntry | UnknownRunLogEntry>,
  kind: RunView['kind'] = 'ralph',
): RunView {
  let v = emptyRunView(runId, kind);
  for (const e of entries) v = reduceRunView(v, e);
  return v;
}

/** How a follower saw a run end: its log ended with `runEnded`, or the engine died first. */
export type FollowEnd =
  { kind: 'ended'; exitCode: number } | { kind: 'crashed'; reason: string; at: string | null; exitCode: number };

/**
 * Applies what the follower knows beyond the log: a run whose engine died before writing `runEnded` becomes
 * `crashed` (exit code 1), with the lanes idle and the questions dropped. A view that already ended is returned as
 * is. Pure.
 */
export function withFollowEnd(view: RunView, end: FollowEnd): RunView {
  if (end.kind !== 'crashed' || view.end) return view;
  const v: RunView = {
    ...view,
    state: 'crashed',
    final: true,
    deferredUntil: null,
    questions: [],
    end: { state: 'crashed', reason: end.reason, completionReason: 'CRASHED', exitCode: end.exitCode, at: end.at },
    context: endContext(view.context ?? emptyContextTrack()),
    lanes: view.lanes.map((l) => ({ ...l, activity: 'idle' as const, agentPid: null })),
  };
  v.stateText = stateTextOf(v);
  return v;
}

/**
 * The view with what the run's sentinel files say now: a PAUSE (or STOP) file the run has not honoured yet is a
 * request (`pauseRequested` / `stopRequested`), so the view and the run's listing, shown side by side by
 * `ralph status --json`, never disagree. A run that paused, or ended, is left as it is. Pure.
 */
export function withSentinels(v: RunView, s: { paused: boolean; stopped: boolean }): RunView {
  if (v.final) return v;
  const pauseRequested = v.pauseRequested || (s.paused && v.state !== 'paused');
  const stopRequested = v.stopRequested || s.stopped;
  if (pauseRequested === v.pauseRequested && stopRequested === v.stopRequested) return v;
  return { ...v, pauseRequested, stopRequested };
}

/** `█████░░░░░` for a percentage (0–100), `width` cells. */
export function gaugeBar(percent: number, width = 10): string {
  const full = Math.max(0, Math.min(width, Math.round((percent / 100) * width)));
  return '█'.repeat(full) + '░'.repeat(width - full);
}

/**
 * The one-line status `ralph watch` keeps at the bottom: state, iteration, the lane's item and attempt (a lane of a
 * parallel run also its iteration and activity), its context gauge and the run's cost; several lanes (`#n`) are
 * joined with ` · `. Pure (local time zone aside).
 * Example: `running · LOOP 3/25 · fn-1.2 Add login (attempt 2 of 5) · context 62k/200k 31% · $0.4210`.
 */
export function statusLineOf(v: RunView): string {
  const head = [v.stateText, `LOOP ${v.iteration}${v.maxIterations ? `/${v.maxIterations}` : ''}`];
  const parallel = v.lanes.length > 1;
  const lanes = v.lanes
    .map((l) => {
      const parts: string[] = [];
      if (parallel) parts.push(`#${l.lane}`);
      // A lane of a parallel run (numbered from 1) also says its iteration and what it does.
      const more =
        l.lane > 0
          ? [
              ...(l.iteration !== null ? [`iteration ${l.iteration}`] : []),
              l.activity,
              ...(l.worker ? [`on ${l.worker}`] : []),
            ]
          : [];
      const detail = [...(l.attempt ? [`attempt ${l.attempt.text}`] : []), ...more];
      if (l.item)
        parts.push(
          `${l.item.id}${l.item.title && l.item.title !== l.item.id ? ` ${l.item.title}` : ''}${detail.length ? ` (${detail.join(', ')})` : ''}`,
        );
      else if (l.purpose && l.purpose !== 'work') parts.push(l.purpose === 'review' ? 'final review' : 'final fix');
      if (parallel && l.context && !v.final)
        parts.push(
          `context ${contextText(contextFigure({ ...l.context, window: Math.max(l.context.window, v.context.window) }))}`,
        );
      return parts.join(' · ');
    })
    .filter(Boolean);
  // The run's one context figure (contextFigure.ts), the same string the gauge, the dashboard and status show.
  const ctx = !parallel && v.context?.figure ? [`context ${contextText(v.context.figure)}`] : [];
  return [...head, ...lanes, ...ctx, `$${v.cost.runUsd.toFixed(4)}`].join(' · ');
}
