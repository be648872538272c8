import { contextText } from '../../core/control/contextFigure';
import type { ActivityLine, LaneView, RunView, RunViewState } from '../../core/control/runView';
import {
  MAX_LANES,
  MAX_WORKERS,
  SNAPSHOT_LOG_LINES,
  SNAPSHOT_TOKEN_POINTS,
  type DashboardState,
  type GateRow,
  type LaneRow,
  type LogKind,
  type LogLine,
  type RunHeader,
  type RunState,
  type TaskCost,
  type TokenPoint,
  type UpdateOp,
} from '../../protocol/dashboard';

/** The dashboard state of a view state (the page knows fewer end states: stalled and blocked read as failed). */
const STATE: Record<RunViewState, RunState> = {
  starting: 'starting',
  running: 'running',
  paused: 'paused',
  waiting: 'waiting',
  deferred: 'deferred',
  stopping: 'stopping',
  completed: 'completed',
  failed: 'failed',
  stalled: 'failed',
  blocked: 'failed',
  capReached: 'stopped',
  stopped: 'stopped',
  cancelled: 'cancelled',
  crashed: 'crashed',
};

const ms = (iso: string | null | undefined): number | null => {
  const t = iso ? Date.parse(iso) : NaN;
  return Number.isFinite(t) ? t : null;
};

/** The lane the header shows: the first that waits or works, else the first (the sequential run has one, lane 0). */
export function shownLaneOf(v: RunView): LaneView | undefined {
  return v.lanes.find((l) => l.activity !== 'idle') ?? v.lanes[0];
}

/** The kind of an activity line (from its text, `activityTextOf`'s prefixes). Pure. */
export function logKindOfText(text: string): LogKind {
  if (/^GATE /.test(text)) return 'gate';
  // The guard's lines (guardHook.ts GUARD_DENY / GUARD_REWRITE).
  if (/^GUARD (DENY|REWRITE) /.test(text)) return 'guard';
  if (/^(QUESTION|ANSWERED)\b/.test(text)) return 'question';
  if (/^(WARN|ROTATE):/.test(text)) return 'tokens';
  if (
    /^(ATTEMPT \d+ FAILED|BLOCKED|VANISHED|LANE FAILED|API ERROR|AGENT REFUSED|WARNING:)/.test(text) ||
    /^RALPH STOP — (failed|stalled|blocked|crashed)/.test(text)
  )
    return 'error';
  return 'loop';
}

const whole = (n: number) => Math.max(0, Math.round(n));

/**
 * The dashboard header of a core `RunView` (runView.ts): state, the shown lane's item, "attempt k of N", context
 * gauge (tokens against warn and rotate; a final run keeps only the warn and rotate lines, for its chart), the
 * run's cost (USD), the first waiting question. `startedHere`: this
 * window's engine runs it; `live`: followed by the run store (false for a past run read once). Pure.
 */
export function runHeaderOf(v: RunView, folder: string, opts: { startedHere: boolean; live: boolean }): RunHeader {
  const lane = shownLaneOf(v);
  const c = lane?.context;
  const lastLines = c ?? v.lanes.find((l) => l.context)?.context;
  const f = v.context?.figure ?? null;
  const q = v.questions[0];
  const state = STATE[v.state] ?? 'failed';
  const h: RunHeader = {
    runId: v.runId,
    folder,
    state,
    source: v.source ?? '',
    agent: v.agent ?? '',
    item: lane?.item ? { id: lane.item.id, title: lane.item.title } : null,
    attempt: lane?.attempt?.number ?? 0,
    maxAttempts: lane?.attempt?.max ?? null,
    iteration: v.iteration,
    maxIterations: v.maxIterations,
    startedAt: ms(v.startedAt),
    endedAt: ms(v.end?.at),
    progress: v.progress ?? { done: 0, total: 0 },
    // The run's one context figure (core/control/contextFigure.ts) and its text, the same string the gauge, status
    // and watch show; a run that ended keeps its last figure ("(last)").
    context: f
      ? { tokens: f.tokens, window: f.window, warnAt: f.warnAt, rotateAt: f.rotateAt, text: contextText(f) }
      : { tokens: 0, window: 0, warnAt: lastLines?.warnAt ?? 0, rotateAt: lastLines?.rotateAt ?? 0 },
    costUsd: liveCostOf(v),
    question: q ? { itemId: q.item?.id ?? null, text: q.text, askedAt: ms(q.askedAt) ?? 0 } : null,
    ownedByThisWindow: opts.startedHere && !v.final,
    live: opts.live && !v.final,
  };
  if (v.stateText && v.stateText !== v.state) h.stateDetail = v.stateText.replace(new RegExp(`^${v.state} — `), '');
  // Remote lanes' workers alive, while the run is live (a past run's last heartbeats say nothing of now).
  if (v.workers && !v.final)
    h.workers = v.workers.slice(0, MAX_WORKERS).map((w) => ({ id: w.id, host: w.host, pid: whole(w.pid) }));
  return h;
}

/** The run's cost now, USD: the ended iterations' plus what every lane's running agent has spent so far. Pure. */
export function liveCostOf(v: RunView): number {
  let usd = v.cost.runUsd;
  for (const l of v.lanes) if (l.activity === 'agent') usd += l.iterationCostUsd;
  return Math.max(0, usd);
}

/**
 * The lane rows of a view, by lane number (at most {@link MAX_LANES}): item, attempt, iteration, context gauge
 * (zeros when unknown or once the run is final), the running iteration's cost (0 unless its agent runs), how the
 * last iteration ended. Pure.
 */
export function laneRowsOf(v: RunView): LaneRow[] {
  return v.lanes.slice(0, MAX_LANES).map((l) => {
    const c = !v.final && l.activity !== 'idle' ? l.context : null;
    return {
      lane: l.lane,
      activity: l.activity,
      purpose: l.purpose,
      item: l.item ? { id: l.item.id, title: l.item.title } : null,
      attempt: l.attempt?.number ?? 0,
      maxAttempts: l.attempt?.max ?? null,
      iteration: l.iteration,
      context: c
        ? { tokens: whole(c.tokens), window: whole(c.window), warnAt: whole(c.warnAt), rotateAt: whole(c.rotateAt) }
        : { tokens: 0, window: 0, warnAt: 0, rotateAt: 0 },
      costUsd: l.activity === 'agent' ? Math.max(0, l.iterationCostUsd) : 0,
      lastEnding: l.lastEnding?.ending ?? null,
      agent: l.agent,
      ...(l.worker ? { worker: l.worker } : {}),
    };
  });
}

/**
 * Per-item rows of the cost table: every ended iteration's tokens (input, output, cache read, cache creation) and
 * cost (USD) at the item, from the view's `cost.byItem`, plus the figures so far of an iteration running at it on
 * any lane (so the row grows live; it is counted among the iterations once it ends). Pure.
 */
export function taskCostsOf(v: RunView): TaskCost[] {
  const rows = new Map<string, TaskCost>();
  for (const c of v.cost.byItem) {
    rows.set(c.item.id, {
      itemId: c.item.id,
      title: c.item.title,
      iterations: c.iterations,
      input: c.tokens.input,
      output: c.tokens.output,
      cacheRead: c.tokens.cacheRead,
      cacheCreation: c.tokens.cacheCreation,
      costUsd: c.costUsd,
    });
  }
  for (const l of v.lanes) {
    if (l.activity !== 'agent' || !l.item || (!l.iterationTokens && !l.iterationCostUsd)) continue;
    const t = l.iterationTokens;
    const r = rows.get(l.item.id) ?? {
      itemId: l.item.id,
      title: l.item.title,
      iterations: 0,
      input: 0,
      output: 0,
      cacheRead: 0,
      cacheCreation: 0,
      costUsd: 0,
    };
    rows.set(l.item.id, {
      ...r,
      input: r.input + (t?.input ?? 0),
      output: r.output + (t?.output ?? 0),
      cacheRead: r.cacheRead + (t?.cacheRead ?? 0),
      cacheCreation: r.cacheCreation + (t?.cacheCreation ?? 0),
      costUsd: r.costUsd + l.iterationCostUsd,
    });
  }
  return [...rows.values()].map((r) => ({
    ...r,
    input: whole(r.input),
    output: whole(r.output),
    cacheRead: whole(r.cacheRead),
    cacheCreation: whole(r.cacheCreation),
    costUsd: Math.max(0, r.costUsd),
  }));
}

/** The gate row of a view's gate tier (`id` given by the caller; the host opens its log by it). Pure. */
export function gateRowOf(g: RunView['gates'][number], id: string, fallbackAt: number): GateRow {
  return {
    id,
    tier: g.tier,
    command: g.command,
    exitCode: g.running ? null : g.exitCode,
    passed: g.running ? null : g.passed,
    durationMs: g.running ? null : g.durationMs,
    at: ms(g.at) ?? fallbackAt,
    failingLines: g.failingLines.slice(0, 20),
    hasLog: !g.running && !!g.logPath,
  };
}

/** Most gate rows a track keeps (the oldest go first). */
export const GATE_ROWS_KEPT = 200;

/** Bounded FIFO: the newest `cap` items. */
class Recent<T> {
  items: T[] = [];
  constructor(private readonly cap: number) {}
  push(...xs: T[]): void {
    this.items.push(...xs);
    if (this.items.length > this.cap * 1.5) this.items = this.items.slice(this.items.length - this.cap);
  }
  last(): T[] {
    return this.items.length > this.cap ? this.items.slice(this.items.length - this.cap) : this.items.slice();
  }
}

/**
 * The dashboard's picture of one run, fed with the successive `RunView`s the run store (or a one-off read) gives:
 * the header ({@link runHeaderOf}), cost by item, gates, plus what a view keeps only briefly and the page charts or
 * scrolls: a context point per new token figure and the activity lines (numbered from 1 without gaps; bounded to
 * {@link SNAPSHOT_LOG_LINES} lines and {@link SNAPSHOT_TOKEN_POINTS} points). `update` returns the small ops the page
 * needs. A view keeps its last 20 activity lines, so a run first seen mid-way starts its log there.
 */
export class RunTrack {
  private header: RunHeader;
  private view: RunView;
  private readonly points = new Recent<TokenPoint>(SNAPSHOT_TOKEN_POINTS);
  private readonly log = new Recent<LogLine>(SNAPSHOT_LOG_LINES);
  private logCount = 0;
  private lastActivitySeq = 0;
  private tasks: TaskCost[] = [];
  private lanes: LaneRow[] = [];
  private gates: GateRow[] = [];
  /** Gate row id → its log (workspace-relative or absolute). */
  private readonly gateLogs = new Map<string, string>();
  private gateCount = 0;
  /** Per tier: the row shown for its current or last run, and the result time (`at`) that row holds. */
  private readonly gateByTier = new Map<string, { id: string; running: boolean; at: string | null }>();

  constructor(
    readonly folder: string,
    view: RunView,
    private opts: { startedHere: boolean; live: boolean },
  ) {
    this.view = view;
    this.header = runHeaderOf(view, folder, opts);
    this.lanes = laneRowsOf(view);
    this.take(view);
  }

  get runId(): string {
    return this.view.runId;
  }

  get run(): RunHeader {
    return this.header;
  }

  /** The latest view applied. */
  get runView(): RunView {
    return this.view;
  }

  /** The log file of gate row `id` (workspace-relative or absolute; the page only knows the id). */
  gateLogPath(id: string): string | undefined {
    return this.gateLogs.get(id);
  }

  /** The state a snapshot carries (without the run list, which the hub adds). */
  state(): Omit<DashboardState, 'runs' | 'pinnedRunId'> {
    return {
      run: this.header,
      lanes: this.lanes.slice(),
      tokens: this.points.last(),
      tasks: this.tasks.slice(),
      gates: this.gates.slice(),
      log: this.log.last(),
      logTotal: this.logCount,
    };
  }

  /** Applies a newer view (and whether the run is still followed / this window's); returns the ops for the page. */
  update(view: RunView, opts: { startedHere: boolean; live: boolean } = this.opts): UpdateOp[] {
    this.opts = opts;
    const ops: UpdateOp[] = [];
    const header = this.keepLines(runHeaderOf(view, this.folder, opts));
    if (JSON.stringify(header) !== JSON.stringify(this.header)) ops.push({ op: 'run', run: header });
    this.header = header;
    const lanes = laneRowsOf(view);
    if (JSON.stringify(lanes) !== JSON.stringify(this.lanes)) ops.push({ op: 'lanes', lanes });
    this.lanes = lanes;
    const prevTasks = new Map(this.tasks.map((t) => [t.itemId, JSON.stringify(t)]));
    const prevGates = new Map(this.gates.map((g) => [g.id, JSON.stringify(g)]));
    const prevGateRows = this.gates;
    const { points, lines } = this.take(view);
    for (const t of this.tasks) if (prevTasks.get(t.itemId) !== JSON.stringify(t)) ops.push({ op: 'task', task: t });
    for (const g of this.gates)
      if (prevGateRows !== this.gates && prevGates.get(g.id) !== JSON.stringify(g)) ops.push({ op: 'gate', gate: g });
    if (points.length) ops.push({ op: 'tokens', points });
    if (lines.length) ops.push({ op: 'log', lines, total: this.logCount });
    return ops;
  }

  /**
   * The header with the warn and rotate lines of the previous one when the view has none now (a new iteration has no
   * context figure until its first `tokens` event): the chart keeps its lines between iterations.
   */
  private keepLines(h: RunHeader): RunHeader {
    const prev = this.header.context;
    if (h.context.warnAt || h.context.rotateAt || !(prev.warnAt || prev.rotateAt)) return h;
    return { ...h, context: { ...h.context, warnAt: prev.warnAt, rotateAt: prev.rotateAt } };
  }

  /**
   * The gate table: a view keeps the last result per tier, the page lists every gate run. A tier whose command
   * starts, or whose result time changes, opens a new row; the result fills the open row of its tier.
   */
  private takeGates(view: RunView, at: number): void {
    let rows = this.gates;
    for (const g of view.gates) {
      const cur = this.gateByTier.get(g.tier);
      const same = cur && (g.running ? cur.running : cur.running || cur.at === g.at);
      if (same && !g.running && !cur.running && cur.at === g.at) continue;
      if (same && g.running) continue;
      const id = same ? cur.id : `g${++this.gateCount}`;
      const row = gateRowOf(g, id, at);
      rows = rows === this.gates ? rows.slice() : rows;
      const i = rows.findIndex((r) => r.id === id);
      if (i >= 0) rows[i] = row;
      else rows.push(row);
      if (!g.running && g.logPath) this.gateLogs.set(id, g.logPath);
      this.gateByTier.set(g.tier, { id, running: g.running, at: g.at });
    }
    if (rows.length > GATE_ROWS_KEPT) {
      for (const r of rows.slice(0, rows.length - GATE_ROWS_KEPT)) this.gateLogs.delete(r.id);
      rows = rows.slice(rows.length - GATE_ROWS_KEPT);
    }
    this.gates = rows;
  }

  /** Takes a view in: new token points and activity lines. */
  private take(view: RunView): { points: TokenPoint[]; lines: LogLine[] } {
    const prev = this.view;
    this.view = view;
    this.tasks = taskCostsOf(view);
    const at = ms(view.lastEventAt) ?? Date.now();
    this.takeGates(view, at);
    const points: TokenPoint[] = [];
    const costUsd = liveCostOf(view);
    // A cost that moved with the context standing still (an iteration's result) is a point too: the chart's cost
    // line then ends at the header's cost.
    const lastCost = this.points.items.length ? this.points.items[this.points.items.length - 1]!.costUsd : null;
    for (const l of view.lanes) {
      if (!l.context || l.context.tokens <= 0 || l.iteration === null) continue;
      const before = prev.lanes.find((p) => p.lane === l.lane);
      const first = !this.points.items.length;
      if (
        !first &&
        before?.iteration === l.iteration &&
        before.context?.tokens === l.context.tokens &&
        (lastCost === costUsd || points.length)
      )
        continue;
      const point: TokenPoint = {
        iteration: l.iteration,
        at,
        contextTokens: l.context.tokens,
        costUsd,
      };
      if (l.lane) point.lane = l.lane;
      if (before && before.iteration !== l.iteration && l.lastEnding?.ending === 'rotation') point.rotated = true;
      if (
        l.lastEnding?.ending === 'rotation' &&
        l.lastEnding.iteration === l.iteration - 1 &&
        before?.iteration !== l.iteration
      )
        point.rotated = true;
      points.push(point);
    }
    this.points.push(...points);
    const lines = view.activity
      .filter((a: ActivityLine) => a.seq > this.lastActivitySeq)
      .map((a) => ({ n: ++this.logCount, at: ms(a.at) ?? at, kind: logKindOfText(a.text), text: a.text }));
    if (view.activity.length)
      this.lastActivitySeq = Math.max(this.lastActivitySeq, view.activity[view.activity.length - 1]!.seq);
    this.log.push(...lines);
    return { points, lines };
  }
}

/**
 * Merges queued updates into fewer ops (the host batches what arrived within one flush): consecutive `log` ops
 * join, consecutive `tokens` ops join, and only the last `run` header, `lanes` list and `runs` list of the batch are kept (at
 * the place of the last one). Order among the others is kept.
 */
export function coalesceOps(ops: readonly UpdateOp[]): UpdateOp[] {
  const lastRun = ops.map((o) => o.op).lastIndexOf('run');
  const lastRuns = ops.map((o) => o.op).lastIndexOf('runs');
  const lastLanes = ops.map((o) => o.op).lastIndexOf('lanes');
  const out: UpdateOp[] = [];
  ops.forEach((op, i) => {
    if (
      (op.op === 'run' && i !== lastRun) ||
      (op.op === 'runs' && i !== lastRuns) ||
      (op.op === 'lanes' && i !== lastLanes)
    )
      return;
    const prev = out[out.length - 1];
    if (op.op === 'log' && prev?.op === 'log')
      out[out.length - 1] = { op: 'log', lines: [...prev.lines, ...op.lines], total: op.total };
    else if (op.op === 'tokens' && prev?.op === 'tokens')
      out[out.length - 1] = { op: 'tokens', points: [...prev.points, ...op.points] };
    else out.push(op);
  });
  return out;
}
