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
