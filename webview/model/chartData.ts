import type { TokenPoint } from '../../src/protocol/dashboard';

/** uPlot's columns: x = seconds since epoch, context tokens, cumulative cost (USD). */
export type ChartColumns = [number[], number[], number[]];

/** The chart's data from the token points, oldest first; points at the same second keep the last. */
export function chartColumns(points: readonly TokenPoint[]): ChartColumns {
  const xs: number[] = [];
  const ctx: number[] = [];
  const cost: number[] = [];
  for (const p of points) {
    const x = p.at / 1000;
    if (xs.length && x <= xs[xs.length - 1]!) {
      // uPlot needs increasing x: a point in the same millisecond replaces the previous one.
      ctx[ctx.length - 1] = p.contextTokens;
      cost[cost.length - 1] = p.costUsd;
      continue;
    }
    xs.push(x);
    ctx.push(p.contextTokens);
    cost.push(p.costUsd);
  }
  return [xs, ctx, cost];
}

/** Times (seconds) where a new iteration began after a rotation, for the chart's markers. */
export function rotationMarks(points: readonly TokenPoint[]): number[] {
  return points.filter((p) => p.rotated).map((p) => p.at / 1000);
}

/**
 * The chart's data with one context series per lane (a parallel run draws each lane's line; the sequential run has
 * lane 0 only and gets exactly {@link chartColumns}' columns): `lanes` by number, `data` = [seconds, context of each
 * lane in `lanes` order (null where a point is another lane's), cumulative cost]. Points at the same or an earlier
 * second than the last row fill that row. Pure.
 */
export function laneChartData(points: readonly TokenPoint[]): { lanes: number[]; data: (number | null)[][] } {
  const lanes = [...new Set(points.map((p) => p.lane ?? 0))].sort((a, b) => a - b);
  const index = new Map(lanes.map((l, i) => [l, i]));
  const xs: number[] = [];
  const ctx: (number | null)[][] = lanes.map(() => []);
  const cost: number[] = [];
  for (const p of points) {
    const x = p.at / 1000;
    const i = index.get(p.lane ?? 0)!;
    if (!xs.length || x > xs[xs.length - 1]!) {
      xs.push(x);
      for (const c of ctx) c.push(null);
      cost.push(p.costUsd);
    } else {
      cost[cost.length - 1] = p.costUsd;
    }
    ctx[i]![xs.length - 1] = p.contextTokens;
  }
  return { lanes, data: [xs, ...ctx, cost] };
}

/** Seconds of time axis a lone point (or none) gets on each side, so the axis reads in seconds, not years. */
export const LONE_POINT_SPAN_S = 30;

/**
 * The chart's time range, seconds, from its x column (increasing): first to last point, widened around a lone point
 * (uPlot's own default for one time point spans 1,000 days at second resolution) or ending at `nowS` when there is no
 * point. Pure.
 */
export function timeRangeOf(xs: ArrayLike<number | null | undefined>, nowS: number): [number, number] {
  const first = xs.length ? xs[0] : null;
  const last = xs.length ? xs[xs.length - 1] : null;
  if (typeof first !== 'number' || typeof last !== 'number' || !Number.isFinite(first) || !Number.isFinite(last))
    return [nowS - 2 * LONE_POINT_SPAN_S, nowS];
  if (last - first < 1) return [first - LONE_POINT_SPAN_S, last + LONE_POINT_SPAN_S];
  return [first, last];
}

/**
 * The top of the cost axis, USD, for the largest cost shown (`maxUsd`, the data's and the header's): 10 % above it on
 * a round step (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8 × a power of ten), so the axis is scaled to the run ($0.08 → $0.10,
 * $3.40 → $4), and $0.01 when
 * there is no cost yet. Pure.
 */
export function usdAxisMax(maxUsd: number): number {
  if (!(maxUsd > 0)) return 0.01;
  const want = maxUsd * 1.1;
  const step = 10 ** Math.floor(Math.log10(want));
  for (const m of [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (step * m >= want - 1e-12) return +(step * m).toPrecision(6);
  return want;
}

/**
 * The top of the context axis, tokens: the data's highest point or a little above the rotate mark (else the warn
 * mark), whichever is higher, so both marks are always drawn at their own height, for any window (200k, 1M). Pure.
 */
export function tokenAxisMax(maxTokens: number, warnAt: number, rotateAt: number): number {
  return Math.max(maxTokens, Math.max(rotateAt, warnAt) * 1.05, 1);
}
