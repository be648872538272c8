import { contextMarksText, contextText, formatTokens, type ContextFigure } from '../../core/control/contextFigure';
import type { TokenCounts } from '../../core/stream/events';

export { formatTokens };

/**
 * What the status bar token gauge shows of one run: a narrow, presentation-side picture the store derives from the
 * core's `RunView` (see `gaugeRunFromView`), so this module stays a pure function of plain data and its tests need no
 * run log. Units: tokens, USD, epoch ms.
 */
export interface GaugeRun {
  runId: string;
  /** Name of the workspace folder the run belongs to (shown in the tooltip of a multi-root workspace). */
  folderName: string;
  /**
   * What the run does now. `starting`: Start was given and no event has been read yet (the spinner shows at once);
   * `pausing`: PAUSE was asked for and the run finishes its iteration first;
   * `ended` / `crashed`: no longer active (the gauge keeps the latest run's figures).
   */
  state: GaugeRunState;
  /** An agent process is running (the spinner turns). */
  agentRunning: boolean;
  /** The agent CLI of the latest iteration (`claude`, `codex`, …; a failover changes it); absent or null when unknown. */
  agent?: string | null;
  /** `deferred`: when the loop goes on (epoch ms), when known. */
  deferredUntil: number | null;
  /** `ended`: how (`completed`, `stopped`, …); shown in the tooltip. */
  endState: string | null;
  /** The run's one context figure (core/control/contextFigure.ts), `last` once the run ended; null before one. */
  context: ContextFigure | null;
  /** The run's cost so far, USD (the agent CLI's client-side estimate); null when the agent reports none. */
  costUsd: number | null;
  /** Per iteration (oldest first): its item, token counts and cost. */
  iterations: GaugeIteration[];
  /** Iterations before the first listed one, summed (long runs keep only their latest iterations one by one). */
  earlier: { count: number; tokens: TokenCounts; costUsd: number } | null;
  /** The run's token totals (sum of its iterations). */
  totals: TokenCounts;
}

export type GaugeRunState =
  'starting' | 'running' | 'pausing' | 'paused' | 'waiting' | 'deferred' | 'stopping' | 'ended' | 'crashed';

export interface GaugeIteration {
  iteration: number;
  itemId: string | null;
  /** The agent CLI that ran it; absent or null when the log does not say. */
  agent?: string | null;
  tokens: TokenCounts;
  costUsd: number | null;
}

/** The two backgrounds VS Code allows a status bar item (vscode API: `StatusBarItem.backgroundColor`). */
export type GaugeBackground = 'warning' | 'error' | null;

/** Everything the status bar item needs; the shell copies it onto the item and does nothing else. */
export interface GaugePresentation {
  /** `$(pulse) 142k/200k 71% · $1.23`, with codicons. */
  text: string;
  background: GaugeBackground;
  /** Markdown with theme icons. */
  tooltip: string;
  /** Screen-reader label (also a stable selector for the e2e tier). */
  ariaLabel: string;
}

/**
 * USD with two decimals, four under a cent (a sub-cent spend would read `$0.00`): `$1.23`, `$0.0042`.
 * Source of the rule: PrimeIntellect-ai/prime-agent#894 (vscode-conventions.md §4).
 */
export function formatUsd(usd: number): string {
  if (usd > 0 && usd < 0.01) return `$${usd.toFixed(4)}`;
  return `$${usd.toFixed(2)}`;
}

/** `HH:MM` in local time (what a person reads off their clock). */
export function formatClock(epochMs: number): string {
  const d = new Date(epochMs);
  return `${String(d.getHours()).padStart(2, '0')}:${String(d.getMinutes()).padStart(2, '0')}`;
}

/**
 * The background from the run's own thresholds: warning from its warn line, error from its rotate line (what the loop
 * acts on; not a fixed 80 % / 95 %). Source: vscode-conventions.md §2.3. No context yet, or a run that has ended
 * (nothing to act on any more) → none.
 */
export function gaugeBackground(run: Pick<GaugeRun, 'context'> & Partial<Pick<GaugeRun, 'state'>>): GaugeBackground {
  const c = run.context;
  if (!c || run.state === 'ended' || run.state === 'crashed') return null;
  if (c.rotateAt > 0 && c.tokens >= c.rotateAt) return 'error';
  if (c.warnAt > 0 && c.tokens >= c.warnAt) return 'warning';
  return null;
}

const STATE_WORDS: Partial<Record<GaugeRunState, string>> = {
  starting: 'starting',
  pausing: 'pausing…',
  paused: 'paused',
  waiting: 'waiting for an answer',
  stopping: 'stopping',
  crashed: 'crashed',
};

/** The state's words in the item's text, or '' while simply running (the figures say enough). */
function stateWords(run: GaugeRun): string {
  if (run.state === 'deferred')
    return run.deferredUntil !== null ? `deferred until ${formatClock(run.deferredUntil)}` : 'deferred';
  if (run.state === 'ended') return run.endState ?? 'ended';
  return STATE_WORDS[run.state] ?? '';
}

/** The leading icon: a spinner while an agent runs (or the run is starting), else one that names the state. */
function icon(run: GaugeRun): string {
  if (
    run.state === 'starting' ||
    (run.agentRunning && (run.state === 'running' || run.state === 'pausing' || run.state === 'stopping'))
  )
    return '$(sync~spin)';
  switch (run.state) {
    case 'paused':
      return '$(debug-pause)';
    case 'waiting':
      return '$(question)';
    case 'deferred':
      return '$(watch)';
    case 'crashed':
      return '$(error)';
    default:
      return '$(pulse)';
  }
}

/**
 * The gauge's text: icon, context used of the window with its percentage, the run's cost, and the state when it is
 * not plain running. Examples: `$(pulse) 142k/200k 71% · $1.23`, `$(sync~spin) 12k/200k 6% · $0.0042`,
 * `$(debug-pause) 142k/200k 71% · $1.23 · paused`, `$(watch) … · deferred until 14:05`.
 */
export function gaugeText(run: GaugeRun): string {
  const parts: string[] = [];
  const c = run.context;
  if (c) parts.push(contextText(c));
  else if (run.state === 'starting' || run.state === 'running') parts.push('Ralph');
  if (run.costUsd !== null) parts.push(formatUsd(run.costUsd));
  const words = stateWords(run);
  if (words) parts.push(words);
  if (!parts.length) parts.push('Ralph');
  return `${icon(run)} ${parts.join(' · ')}`;
}

function row(label: string, t: TokenCounts, costUsd: number | null): string {
  const cost = costUsd === null ? '—' : formatUsd(costUsd);
  return `| ${label} | ${formatTokens(t.input)} | ${formatTokens(t.output)} | ${formatTokens(t.cacheRead)} | ${formatTokens(t.cacheCreation)} | ${cost} |`;
}

/** At most this many iteration rows; older ones are summed into one row (a tooltip must stay readable). */
export const TOOLTIP_MAX_ITERATIONS = 8;

/**
 * The markdown tooltip: the run and its state, the context against the warn and rotate lines, a table of input /
 * output / cache-read / cache-write tokens and cost per iteration and for the run, and the note that cost is an
 * estimate (the agent CLI computes it client-side from list prices).
 */
export function gaugeTooltip(run: GaugeRun, opts: { multiRoot?: boolean } = {}): string {
  const lines: string[] = [];
  const where = opts.multiRoot ? ` in ${run.folderName}` : '';
  const words = stateWords(run) || (run.agentRunning ? 'agent running' : 'running');
  const agent = run.agent ? ` · agent ${escapeCell(run.agent)}` : '';
  lines.push(`**Ralph run** \`${run.runId}\`${where} — ${words}${agent}`, '');
  const c = run.context;
  if (c) {
    lines.push(`Context: **${contextText(c)}** (${c.tokens.toLocaleString('en-US')} tokens)`, '');
    const marks = contextMarksText(c);
    if (marks) lines.push(`Marks: ${marks}`, '');
  } else {
    lines.push('Context: no figures yet', '');
  }
  if (run.iterations.length) {
    lines.push('| | input | output | cache read | cache write | cost |', '|---|--:|--:|--:|--:|--:|');
    const shown = run.iterations.slice(-TOOLTIP_MAX_ITERATIONS);
    const older = run.iterations.slice(0, run.iterations.length - shown.length);
    if (older.length || run.earlier?.count) {
      const start = run.earlier?.tokens ?? { input: 0, output: 0, cacheRead: 0, cacheCreation: 0 };
      const sum = older.reduce(
        (a, i) => ({
          input: a.input + i.tokens.input,
          output: a.output + i.tokens.output,
          cacheRead: a.cacheRead + i.tokens.cacheRead,
          cacheCreation: a.cacheCreation + i.tokens.cacheCreation,
        }),
        start,
      );
      const cost =
        run.earlier?.count || older.some((i) => i.costUsd !== null)
          ? older.reduce((a, i) => a + (i.costUsd ?? 0), run.earlier?.costUsd ?? 0)
          : null;
      const last = older.at(-1)?.iteration ?? (shown[0] ? shown[0].iteration - 1 : run.earlier!.count);
      lines.push(row(`#1–${last}`, sum, cost));
    }
    // Which agent ran each iteration, once the run has used more than one (a failover).
    const agents = new Set(run.iterations.map((i) => i.agent).filter(Boolean));
    const by = (i: GaugeIteration) => (agents.size > 1 && i.agent ? ` · ${escapeCell(i.agent)}` : '');
    for (const i of shown)
      lines.push(row(`#${i.iteration}${i.itemId ? ` ${escapeCell(i.itemId)}` : ''}${by(i)}`, i.tokens, i.costUsd));
    lines.push(row('**run**', run.totals, run.costUsd));
    lines.push('');
  }
  lines.push("_Cost is an estimate (the agent CLI's client-side figure)._");
  return lines.join('\n');
}

function escapeCell(s: string): string {
  return s.replace(/[|\\`*_[\]]/g, (m) => `\\${m}`);
}

/** Everything the status bar shows for `run`. */
export function presentGauge(run: GaugeRun, opts: { multiRoot?: boolean } = {}): GaugePresentation {
  const text = gaugeText(run);
  const c = run.context;
  const aria = [
    `Ralph run ${run.runId}`,
    stateWords(run) || 'running',
    c ? `context ${contextText(c)}` : '',
    run.costUsd !== null ? `cost ${formatUsd(run.costUsd)}` : '',
  ]
    .filter(Boolean)
    .join(', ');
  return { text, background: gaugeBackground(run), tooltip: gaugeTooltip(run, opts), ariaLabel: aria };
}
