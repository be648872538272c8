import { LitElement, html } from 'lit';
import uPlot from 'uplot';
import type { TokenPoint } from '../../src/protocol/dashboard';
import { laneChartData, rotationMarks, timeRangeOf, tokenAxisMax, usdAxisMax } from '../model/chartData';
import { formatClock, formatTokens, formatUsd } from '../model/format';
import { LANE_COLOR_VARS, laneColorVar } from '../model/lanes';

/** A `--vscode-*` colour from the page's theme (VS Code sets them on the document element). */
function themeColor(name: string, fallbackVar = '--vscode-foreground'): string {
  const s = getComputedStyle(document.documentElement);
  return s.getPropertyValue(name).trim() || s.getPropertyValue(fallbackVar).trim() || 'gray';
}

/**
 * Context tokens per iteration over time (uPlot; one line per lane in a parallel run), against the warn and rotate lines, with a vertical marker where
 * an iteration began after a rotation, and the run's cumulative cost on a second axis. Colours come from the VS
 * Code theme's chart variables; the chart re-reads them when the theme changes.
 */
export class RalphTokenChart extends LitElement {
  points: readonly TokenPoint[] = [];
  warnAt = 0;
  rotateAt = 0;
  /** The run's cost now (the header's, USD): the cost axis reaches at least this far. */
  costUsd = 0;
  private plot: uPlot | undefined;
  /** The lanes the chart has a series for (`1,2,3`); another set re-creates the chart. */
  private laneKey = '';
  private resize: ResizeObserver | undefined;
  private themeObserver: MutationObserver | undefined;

  protected override createRenderRoot(): HTMLElement {
    return this;
  }

  protected override render(): unknown {
    return html`<div class="chart-host" data-testid="token-chart" data-points=${this.points.length}></div>`;
  }

  override disconnectedCallback(): void {
    super.disconnectedCallback();
    this.resize?.disconnect();
    this.themeObserver?.disconnect();
    this.plot?.destroy();
    this.plot = undefined;
  }

  protected override firstUpdated(): void {
    const host = this.querySelector<HTMLElement>('.chart-host')!;
    this.resize = new ResizeObserver(() => this.plot?.setSize({ width: Math.max(200, host.clientWidth), height: 180 }));
    this.resize.observe(host);
    // A theme change (body class) re-creates the chart with the new colours.
    this.themeObserver = new MutationObserver(() => this.rebuild());
    this.themeObserver.observe(document.body, { attributes: true, attributeFilter: ['class'] });
    this.rebuild();
  }

  protected override updated(): void {
    if (!this.plot) return;
    const { lanes, data } = laneChartData(this.points);
    if (lanes.join(',') !== this.laneKey) this.rebuild();
    else {
      this.plot.setData(data as uPlot.AlignedData);
      showLatest(this.plot);
    }
  }

  private rebuild(): void {
    const host = this.querySelector<HTMLElement>('.chart-host');
    if (!host) return;
    this.plot?.destroy();
    const fg = themeColor('--vscode-foreground');
    const grid = themeColor('--vscode-editorWidget-border', '--vscode-panel-border');
    const { lanes, data } = laneChartData(this.points);
    this.laneKey = lanes.join(',');
    const single = lanes.length <= 1 && (lanes[0] ?? 0) === 0;
    const costColor = themeColor('--vscode-charts-green');
    const warnColor = themeColor('--vscode-charts-yellow');
    const rotateColor = themeColor('--vscode-charts-red');
    const font = `11px ${themeColor('--vscode-font-family')}`;
    const axis = { stroke: fg, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid }, font };
    const opts: uPlot.Options = {
      width: Math.max(200, host.clientWidth),
      height: 180,
      // No legend before the first point (it would read "Time: --"); without the pointer on the chart it shows the
      // latest values, not dashes.
      legend: { show: lanes.length > 0 },
      cursor: { drag: { x: false, y: false } },
      scales: {
        x: { time: true, range: (u) => timeRangeOf(u.data[0], Date.now() / 1000) },
        tokens: { auto: true, range: (_u, _min, max) => [0, tokenAxisMax(max ?? 0, this.warnAt, this.rotateAt)] },
        // Scaled to the data and the header's cost (never a fixed floor above them): $0.08 of cost tops near $0.09.
        usd: { auto: true, range: (_u, _min, max) => [0, usdAxisMax(Math.max(max ?? 0, this.costUsd))] },
      },
      series: [
        {
          label: 'time',
          value: (u, v, _s, idx) => {
            const x = idx == null ? latest(u.data[0]) : v;
            return x == null ? '–' : formatClock(x * 1000);
          },
        },
        ...(lanes.length ? lanes : [0]).map((lane): uPlot.Series => ({
          label: single ? 'context' : `lane ${lane}`,
          scale: 'tokens',
          stroke: themeColor(laneColorVar(lane)),
          width: 1.5,
          spanGaps: true,
          ...(lane > LANE_COLOR_VARS.length ? { dash: [2, 2] } : {}),
          value: (u, v, sidx, idx) => {
            const y = idx == null ? latest(u.data[sidx]) : v;
            return y == null ? '–' : formatTokens(y);
          },
        })),
        {
          label: 'cost',
          scale: 'usd',
          stroke: costColor,
          width: 1,
          dash: [4, 3],
          value: (u, v, sidx, idx) => {
            const y = idx == null ? latest(u.data[sidx]) : v;
            return y == null ? '–' : formatUsd(y);
          },
        },
      ],
      axes: [
        { ...axis },
        { ...axis, scale: 'tokens', values: (_u, vals) => vals.map((v) => formatTokens(v)), size: 50 },
        {
          ...axis,
          scale: 'usd',
          side: 1,
          grid: { show: false },
          values: (_u, vals) => vals.map((v) => formatUsd(v)),
          size: 60,
        },
      ],
      hooks: {
        draw: [
          (u) => {
            // What the axes show, for tests and people reading the DOM (a canvas has no text).
            host.dataset.usdMax = String(u.scales.usd?.max ?? 0);
            host.dataset.tokensMax = String(u.scales.tokens?.max ?? 0);
            const c = u.ctx;
            const { left, top, width, height } = u.bbox;
            const hline = (value: number, color: string, label: string) => {
              if (!value) return;
              const y = Math.round(u.valToPos(value, 'tokens', true));
              if (y < top || y > top + height) return;
              c.save();
              c.strokeStyle = color;
              c.setLineDash([6, 4]);
              c.lineWidth = devicePixelRatio;
              c.beginPath();
              c.moveTo(left, y);
              c.lineTo(left + width, y);
              c.stroke();
              c.fillStyle = color;
              c.font = `${10 * devicePixelRatio}px sans-serif`;
              c.fillText(label, left + 4, y - 3);
              c.restore();
            };
            hline(this.warnAt, warnColor, `warn ${formatTokens(this.warnAt)}`);
            hline(this.rotateAt, rotateColor, `rotate ${formatTokens(this.rotateAt)}`);
            for (const x of rotationMarks(this.points)) {
              const px = Math.round(u.valToPos(x, 'x', true));
              if (px < left || px > left + width) continue;
              c.save();
              c.strokeStyle = rotateColor;
              c.lineWidth = devicePixelRatio;
              c.beginPath();
              c.moveTo(px, top);
              c.lineTo(px, top + height);
              c.stroke();
              c.restore();
            }
          },
        ],
      },
    };
    this.plot = new uPlot(opts, (lanes.length ? data : [[], [], []]) as uPlot.AlignedData, host);
    showLatest(this.plot);
  }
}

/** The last value of a column that is not null, or null. */
function latest(col: ArrayLike<number | null | undefined> | undefined): number | null {
  if (!col) return null;
  for (let i = col.length - 1; i >= 0; i--) {
    const v = col[i];
    if (typeof v === 'number' && Number.isFinite(v)) return v;
  }
  return null;
}

/** The legend shows the latest point's values while the pointer is not on the chart. */
function showLatest(u: uPlot): void {
  const n = u.data[0]?.length ?? 0;
  if (n && u.cursor.idx == null) u.setLegend({ idx: n - 1 });
}

customElements.define('ralph-token-chart', RalphTokenChart);
