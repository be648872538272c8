import { ActivityFormatter } from '../../core/loop/recorder';
import type { EngineEvent, RunEndState } from '../../core/loop/events';
import {
  SNAPSHOT_LOG_LINES, SNAPSHOT_TOKEN_POINTS,
  type DashboardState, type GateRow, type LogKind, type LogLine, type RunHeader, type RunState, type TaskCost, type TokenPoint, type UpdateOp,
} from '../../protocol/dashboard';

/** An engine event as read back from `events.jsonl` or received live: `at` is ISO time or epoch ms when known. */
export type TimedEvent = EngineEvent & { at?: string | number };

/** The kind of the Ralph log line(s) an event gives (the page filters by it). */
export function logKindOf(e: EngineEvent): LogKind {
  switch (e.type) {
    case 'tokens': case 'warn': case 'rotate':
      return 'tokens';
    case 'gateStarted': case 'gateResult':
      return 'gate';
    case 'warning':
      return 'error';
    case 'iterationEnded':
      return e.ending === 'error' ? 'error' : 'loop';
    case 'runEnded':
      return e.state === 'completed' || e.state === 'stopped' ? 'loop' : 'error';
    case 'attemptFailed': case 'itemBlocked':
      return 'error';
    default:
      return 'loop';
  }
}

const END_STATE: Record<RunEndState, RunState> = {
  completed: 'completed', failed: 'failed', stalled: 'failed', blocked: 'failed', capReached: 'stopped', stopped: 'stopped', cancelled: 'cancelled',
};

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
 * The dashboard's view of one run, built from its engine events (live, or replayed from `events.jsonl`): the
 * header, the token points, cost and tokens per task, the gate runs and the newest log lines (bounded: the
 * snapshot holds at most {@link SNAPSHOT_LOG_LINES} lines and {@link SNAPSHOT_TOKEN_POINTS} points; memory stays
 * bounded however long the run). `apply` returns the small updates the page needs for that event.
 * Log texts are the activity stream's (`ActivityFormatter`), so the page reads like `.ralph/activity.log`.
 */
export class RunFeed {
  private header: RunHeader;
  private readonly points = new Recent<TokenPoint>(SNAPSHOT_TOKEN_POINTS);
  private readonly log = new Recent<LogLine>(SNAPSHOT_LOG_LINES);
  private logCount = 0;
  private readonly tasks = new Map<string, TaskCost>();
  private readonly gates: (GateRow & { logPath?: string })[] = [];
  private readonly formatter: ActivityFormatter;
  private eventAt = 0;
  /** Cost of the iterations that ended (USD); the running one adds its own live figure. */
  private endedCost = 0;
  private iterationCost = 0;
  private nextPointRotated = false;
  private currentItem: { id: string; title: string } | null = null;

  constructor(runId: string, folder: string, opts: { ownedByThisWindow: boolean; live: boolean }) {
    this.header = {
      runId, folder, state: 'starting', source: '', agent: '', item: null, attempt: 0, maxAttempts: null, iteration: 0, maxIterations: null,
      startedAt: null, endedAt: null, progress: { done: 0, total: 0 }, context: { tokens: 0, window: 0, warnAt: 0, rotateAt: 0 },
      costUsd: 0, question: null, ownedByThisWindow: opts.ownedByThisWindow, live: opts.live,
    };
    this.formatter = new ActivityFormatter(30_000, () => this.eventAt);
  }

  get runId(): string {
    return this.header.runId;
  }

  get run(): RunHeader {
    return this.header;
  }

  /** Log lines seen in all (the page's `logTotal`). */
  get logTotal(): number {
    return this.logCount;
  }

  /** The log file of gate row `id` (the host opens it; the page only knows the id). */
  gateLogPath(id: string): string | undefined {
    return this.gates.find((g) => g.id === id)?.logPath;
  }

  /** Marks whether this window's host runs the engine and whether the run is followed live; returns the header op. */
  setOwnership(ownedByThisWindow: boolean, live: boolean): UpdateOp[] {
    if (this.header.ownedByThisWindow === ownedByThisWindow && this.header.live === live) return [];
    this.header = { ...this.header, ownedByThisWindow, live };
    return [{ op: 'run', run: this.header }];
  }

  /** The state a snapshot carries (without the run list, which the hub adds). */
  state(): Omit<DashboardState, 'runs' | 'pinnedRunId'> {
    return {
      run: this.header, tokens: this.points.last(), tasks: [...this.tasks.values()], gates: this.gates.map(publicGate),
      log: this.log.last(), logTotal: this.logCount,
    };
  }

  /** Applies one event; returns the updates for the page (possibly none). */
  apply(e: TimedEvent): UpdateOp[] {
    const at = typeof e.at === 'number' ? e.at : typeof e.at === 'string' ? Date.parse(e.at) : Date.now();
    this.eventAt = Number.isFinite(at) ? at : Date.now();
    const ops: UpdateOp[] = [];
    const h0 = this.header;
    let h = h0;
    switch (e.type) {
      case 'runStarted':
        h = { ...h, runId: e.runId || h.runId, source: e.source, agent: e.agent, maxIterations: e.maxIterations, startedAt: this.eventAt, state: 'running' };
        break;
      case 'iterationStarted':
        this.currentItem = e.item ? { id: e.item.id, title: e.item.title } : null;
        this.iterationCost = 0;
        h = { ...h, iteration: e.iteration, item: this.currentItem, attempt: e.attempt, state: h.state === 'paused' || h.state === 'stopping' ? h.state : 'running', stateDetail: undefined };
        break;
      case 'tokens': {
        this.iterationCost = e.costUsd ?? this.iterationCost;
        const cost = this.endedCost + this.iterationCost;
        h = { ...h, context: { tokens: e.contextTokens, window: e.contextWindow, warnAt: e.warnAt, rotateAt: e.rotateAt }, costUsd: cost };
        if (e.contextTokens > 0) {
          const point: TokenPoint = { iteration: e.iteration, at: this.eventAt, contextTokens: e.contextTokens, costUsd: cost };
          if (this.nextPointRotated) point.rotated = true;
          this.nextPointRotated = false;
          this.points.push(point);
          ops.push({ op: 'tokens', points: [point] });
        }
        break;
      }
      case 'iterationEnded': {
        this.endedCost += e.totals.costUsd ?? 0;
        this.iterationCost = 0;
        if (e.ending === 'rotation') this.nextPointRotated = true;
        h = { ...h, costUsd: this.endedCost };
        if (this.currentItem) {
          const t = this.tasks.get(this.currentItem.id) ?? { itemId: this.currentItem.id, title: this.currentItem.title, iterations: 0, input: 0, output: 0, cacheRead: 0, cacheCreation: 0, costUsd: 0 };
          const tk = e.totals.tokens;
          const next: TaskCost = { ...t, iterations: t.iterations + 1, input: t.input + tk.input, output: t.output + tk.output, cacheRead: t.cacheRead + tk.cacheRead, cacheCreation: t.cacheCreation + tk.cacheCreation, costUsd: t.costUsd + (e.totals.costUsd ?? 0) };
          this.tasks.set(next.itemId, next);
          ops.push({ op: 'task', task: next });
        }
        break;
      }
      case 'gateStarted': {
        const row = { id: `g${this.gates.length + 1}`, tier: e.tier, command: e.command, exitCode: null, passed: null, durationMs: null, at: this.eventAt, failingLines: [], hasLog: false };
        this.gates.push(row);
        ops.push({ op: 'gate', gate: publicGate(row) });
        break;
      }
      case 'gateResult': {
        let row = [...this.gates].reverse().find((g) => g.passed === null && g.tier === e.tier && g.command === e.command);
        if (!row) {
          row = { id: `g${this.gates.length + 1}`, tier: e.tier, command: e.command, exitCode: null, passed: null, durationMs: null, at: this.eventAt, failingLines: [], hasLog: false };
          this.gates.push(row);
        }
        Object.assign(row, { exitCode: e.exitCode, passed: e.passed, durationMs: e.durationMs, at: this.eventAt, failingLines: e.failingLines.slice(0, 20), hasLog: !!e.logPath, logPath: e.logPath || undefined });
        ops.push({ op: 'gate', gate: publicGate(row) });
        break;
      }
      case 'progress':
        h = { ...h, progress: { done: e.done, total: e.total } };
        break;
      case 'pauseRequested':
        h = { ...h, stateDetail: 'pause requested: the iteration finishes first' };
        break;
      case 'paused':
        h = { ...h, state: 'paused', stateDetail: undefined };
        break;
      case 'resumed':
        h = { ...h, state: 'running', stateDetail: undefined };
        break;
      case 'stopRequested':
        h = { ...h, state: 'stopping', stateDetail: e.graceful ? 'the agent yields at its next commit' : 'ends after this iteration' };
        break;
      case 'deferred':
        h = { ...h, state: 'deferred', stateDetail: e.resetsAt ? `until ${clock(e.resetsAt)}` : `for ${Math.round(e.waitMs / 1000)} s` };
        break;
      case 'runEnded':
        h = { ...h, state: END_STATE[e.state] ?? 'failed', stateDetail: e.reason, endedAt: this.eventAt, costUsd: e.costUsd, progress: { done: e.done, total: e.total }, live: false };
        break;
      default:
        break;
    }
    if (h !== h0) {
      this.header = h;
      ops.unshift({ op: 'run', run: h });
    }
    const texts = this.formatter.format(e);
    if (texts.length) {
      const kind = logKindOf(e);
      const lines = texts.map((text) => ({ n: ++this.logCount, at: this.eventAt, kind, text }));
      this.log.push(...lines);
      ops.push({ op: 'log', lines, total: this.logCount });
    }
    return ops;
  }
}

function publicGate(g: GateRow & { logPath?: string }): GateRow {
  const { logPath: _logPath, ...row } = g;
  return { ...row, failingLines: [...row.failingLines] };
}

function clock(ms: number): string {
  const d = new Date(ms);
  return `${String(d.getHours()).padStart(2, '0')}:${String(d.getMinutes()).padStart(2, '0')}`;
}

/**
 * Merges queued updates into fewer ops (the host batches what arrived within one flush): consecutive `log` ops
 * join, consecutive `tokens` ops join, and only the last `run` header and `runs` list of the batch are kept (at
 * the place of the last one). Order among the others is kept.
 */
export function coalesceOps(ops: readonly UpdateOp[]): UpdateOp[] {
  const lastRun = ops.map((o) => o.op).lastIndexOf('run');
  const lastRuns = ops.map((o) => o.op).lastIndexOf('runs');
  const out: UpdateOp[] = [];
  ops.forEach((op, i) => {
    if ((op.op === 'run' && i !== lastRun) || (op.op === 'runs' && i !== lastRuns)) return;
    const prev = out[out.length - 1];
    if (op.op === 'log' && prev?.op === 'log') out[out.length - 1] = { op: 'log', lines: [...prev.lines, ...op.lines], total: op.total };
    else if (op.op === 'tokens' && prev?.op === 'tokens') out[out.length - 1] = { op: 'tokens', points: [...prev.points, ...op.points] };
    else out.push(op);
  });
  return out;
}
