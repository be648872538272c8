import type { LaneActivity, LaneRow } from '../../src/protocol/dashboard';
import { formatTokens } from './format';

/** What the page draws for one lane row: words and the context gauge on a 0–100 scale. */
export interface LaneDisplay {
  lane: number;
  /** `US-1 Login form`, `final review`, `fix after final verification`, or `—`. */
  item: string;
  /** `1 of 3`, `2`, or `—` (no attempt: review, final fix, before the first iteration). */
  attempt: string;
  /** `4`, or `—` before the lane's first iteration. */
  iteration: string;
  /** The state in words: `working`, `at a gate`, `waiting for an answer`, `idle (last: rotation)`. */
  state: string;
  activity: LaneActivity;
  /** Context used, warn and rotate lines, percent of the window (one decimal); all 0 without a figure. */
  percent: number;
  warnPercent: number;
  rotatePercent: number;
  /** `ok` below warn, `warn` from warn, `rotate` from rotate; `none` without a figure. */
  level: 'none' | 'ok' | 'warn' | 'rotate';
  /** `140k / 200k (70%)`, or `—`. */
  contextText: string;
  /** The agent CLI of its current (or last) iteration, or `—`. */
  agent: string;
  /** The worker running a remote lane (`host:pid`), or `—` for a lane on the run's machine. */
  worker: string;
}

const STATE_WORDS: Record<LaneActivity, string> = {
  idle: 'idle',
  agent: 'working',
  gate: 'at a gate',
  waiting: 'waiting for an answer',
};
const pct = (n: number, of: number) => (of > 0 ? Math.floor((n * 1000) / of) / 10 : 0);

/** The display of one lane row. Pure. */
export function laneDisplayOf(l: LaneRow): LaneDisplay {
  const c = l.context;
  const has = c.window > 0;
  const item = l.item
    ? `${l.item.id}${l.item.title && l.item.title !== l.item.id ? ` ${l.item.title}` : ''}`
    : l.purpose === 'review'
      ? 'final review'
      : l.purpose === 'finalFix'
        ? 'fix after final verification'
        : '—';
  return {
    lane: l.lane,
    item,
    activity: l.activity,
    attempt: l.attempt ? `${l.attempt}${l.maxAttempts ? ` of ${l.maxAttempts}` : ''}` : '—',
    iteration: l.iteration === null ? '—' : String(l.iteration),
    state: l.activity === 'idle' && l.lastEnding ? `idle (last: ${l.lastEnding})` : STATE_WORDS[l.activity],
    percent: has ? Math.min(100, pct(c.tokens, c.window)) : 0,
    warnPercent: has ? Math.min(100, pct(c.warnAt, c.window)) : 0,
    rotatePercent: has ? Math.min(100, pct(c.rotateAt, c.window)) : 0,
    level: !has
      ? 'none'
      : c.rotateAt > 0 && c.tokens >= c.rotateAt
        ? 'rotate'
        : c.warnAt > 0 && c.tokens >= c.warnAt
          ? 'warn'
          : 'ok',
    contextText: has
      ? `${formatTokens(c.tokens)} / ${formatTokens(c.window)} (${Math.round(pct(c.tokens, c.window))}%)`
      : '—',
    agent: l.agent ?? '—',
    worker: l.worker ?? '—',
  };
}

/** Does any lane run on a worker (the lane table then has a Worker column)? Pure. */
export function hasRemoteLanes(lanes: readonly LaneRow[]): boolean {
  return lanes.some((l) => !!l.worker);
}

/**
 * The workers alive in words: `3 alive: host-a:41, host-b:7, host-c:9` (`none alive` for an empty list), for the
 * header. Pure.
 */
export function workersTextOf(workers: readonly { id: string }[]): string {
  return workers.length ? `${workers.length} alive: ${workers.map((w) => w.id).join(', ')}` : 'none alive';
}

/** `3 lanes: 1 working, 1 at a gate, 1 waiting` (kinds with none are left out; `1 lane: idle`). Pure. */
export function lanesSummaryOf(lanes: readonly LaneRow[]): string {
  const n = (a: LaneActivity) => lanes.filter((l) => l.activity === a).length;
  const parts = (
    [
      ['agent', 'working'],
      ['gate', 'at a gate'],
      ['waiting', 'waiting'],
      ['idle', 'idle'],
    ] as const
  )
    .map(([a, w]) => [n(a), w] as const)
    .filter(([k]) => k > 0)
    .map(([k, w]) => `${k} ${w}`);
  return `${lanes.length} lane${lanes.length === 1 ? '' : 's'}${parts.length ? `: ${parts.join(', ')}` : ''}`;
}

/** Theme colours of the lanes' lines in the chart, in turn; the lane table shows the same colour beside each lane. */
export const LANE_COLOR_VARS = [
  '--vscode-charts-blue',
  '--vscode-charts-purple',
  '--vscode-charts-orange',
  '--vscode-foreground',
] as const;

/** The colour variable of a lane: lane 0 (the sequential run) and lane 1 blue, then purple, orange, foreground, in turn (green is the cost line's). Pure. */
export function laneColorVar(lane: number): string {
  return LANE_COLOR_VARS[Math.max(0, lane - 1) % LANE_COLOR_VARS.length]!;
}
