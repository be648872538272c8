/**
 * The one context figure of a run: the context tokens in use, the model's window, the percentage of that window,
 * and the warn and rotate marks, computed here from the run's events and shown as it is by every face (the status
 * bar gauge, the dashboard's header, `ralph status`, `ralph watch`, the activity log and the Output channel), so
 * they never disagree at the same moment. After the run ends the figure stays, marked `last`.
 *
 * Rules (pure, table-tested in test/unit/control/contextFigure.test.ts):
 * - `tokens` events give the figure (the agent's context now); one with no context tokens gives none. `warn` / `rotate` events carry the figure that
 *   crossed the line (the engine rate-limits `tokens` events, so the crossing may be in them only).
 * - The window is the largest any `tokens` event of the run reported: an agent learns its model's window only from
 *   its closing `result` (Claude Code's `modelUsage[…].contextWindow`) and falls back to the configured
 *   `contextWindowTokens` before that, so a later, told window replaces the fallback and is kept.
 * - When an iteration ends, the figure is the highest context that iteration reached (its closing `result` reports
 *   only its last message's usage); a new iteration keeps the previous figure until it reports its own.
 * - A run that ended (or crashed) keeps its last figure, `last: true`.
 * - The percentage is of the window, rounded to a whole number; never of the rotate threshold.
 *
 * Units: tokens. Import-free (no node, no vscode): the extension, the CLI and the engine's recorder all use it.
 */

/** The figure every face shows. */
export interface ContextFigure {
  /** Context tokens in use (the latest, or the iteration's highest once it ended). */
  tokens: number;
  /** The model's context window, tokens; 0 when no event has told it. */
  window: number;
  /** Warn mark (the agent is asked to hand off and yield), tokens; 0 when unknown. */
  warnAt: number;
  /** Rotate mark (the agent is ended, a new iteration carries the handoff), tokens; 0 when unknown. */
  rotateAt: number;
  /** `tokens` as a whole percentage of `window` (0 when the window is unknown). */
  percent: number;
  /** `ok` below the warn mark, `warn` from it, `rotate` from the rotate mark. */
  level: 'ok' | 'warn' | 'rotate';
  /** The lane and iteration the figure is of (the sequential run has lane 0). */
  lane: number;
  iteration: number;
  /** The run has ended: this is its last figure, kept. */
  last: boolean;
}

/** The reducer's state: the figure, and the highest figure of each lane's current iteration. */
export interface ContextTrack {
  figure: ContextFigure | null;
  peaks: ContextFigure[];
  /** The largest window any `tokens` event of the run reported, tokens. */
  window: number;
}

/** The events the figure is made of (a run log entry or an engine event; `lane` absent is lane 0). */
export type ContextEvent =
  | {
      type: 'tokens';
      lane?: number;
      iteration: number;
      contextTokens: number;
      contextWindow: number;
      warnAt: number;
      rotateAt: number;
    }
  | { type: 'warn' | 'rotate'; lane?: number; iteration: number; contextTokens: number; threshold: number }
  | { type: 'iterationStarted' | 'iterationEnded'; lane?: number; iteration: number }
  | { type: 'runEnded' }
  | { type: string };

export function emptyContextTrack(): ContextTrack {
  return { figure: null, peaks: [], window: 0 };
}

/** A figure from its parts (percentage and level computed here). */
export function contextFigure(
  p: Pick<ContextFigure, 'tokens' | 'window' | 'warnAt' | 'rotateAt'> &
    Partial<Pick<ContextFigure, 'lane' | 'iteration' | 'last'>>,
): ContextFigure {
  const tokens = Math.max(0, Math.round(p.tokens));
  const window = Math.max(0, Math.round(p.window));
  return {
    tokens,
    window,
    warnAt: Math.max(0, Math.round(p.warnAt)),
    rotateAt: Math.max(0, Math.round(p.rotateAt)),
    percent: window > 0 ? Math.round((tokens / window) * 100) : 0,
    level: p.rotateAt > 0 && tokens >= p.rotateAt ? 'rotate' : p.warnAt > 0 && tokens >= p.warnAt ? 'warn' : 'ok',
    lane: p.lane ?? 0,
    iteration: p.iteration ?? 0,
    last: p.last ?? false,
  };
}

/** Applies one event (see the module docstring). Returns the same object when nothing changed. Never throws. */
export function reduceContext(t: ContextTrack, e: ContextEvent): ContextTrack {
  switch (e.type) {
    case 'tokens': {
      const x = e as Extract<ContextEvent, { type: 'tokens' }>;
      const window = Math.max(t.window, x.contextWindow);
      // No context reported yet (an agent that ended before its first model call): no figure, only the window.
      if (x.contextTokens <= 0) return window === t.window ? t : { ...t, window };
      const f = contextFigure({
        tokens: x.contextTokens,
        window,
        warnAt: x.warnAt,
        rotateAt: x.rotateAt,
        lane: x.lane ?? 0,
        iteration: x.iteration,
      });
      return { figure: f, peaks: withPeak(t.peaks, f, window), window };
    }
    case 'warn':
    case 'rotate': {
      const x = e as Extract<ContextEvent, { type: 'warn' | 'rotate' }>;
      const lane = x.lane ?? 0;
      const prev =
        t.figure && t.figure.lane === lane && t.figure.iteration === x.iteration
          ? t.figure
          : t.peaks.find((p) => p.lane === lane && p.iteration === x.iteration);
      const f = contextFigure({
        tokens: x.contextTokens,
        window: t.window,
        warnAt: x.type === 'warn' ? x.threshold : (prev?.warnAt ?? 0),
        rotateAt: x.type === 'rotate' ? x.threshold : (prev?.rotateAt ?? 0),
        lane,
        iteration: x.iteration,
      });
      return { ...t, figure: f, peaks: withPeak(t.peaks, f, t.window) };
    }
    case 'iterationStarted': {
      const lane = (e as { lane?: number }).lane ?? 0;
      if (!t.peaks.some((p) => p.lane === lane)) return t;
      return { ...t, peaks: t.peaks.filter((p) => p.lane !== lane) };
    }
    case 'iterationEnded': {
      const x = e as { lane?: number; iteration: number };
      const top = t.peaks.find((p) => p.lane === (x.lane ?? 0) && p.iteration === x.iteration);
      if (!top) return t;
      return { ...t, figure: contextFigure({ ...top, window: t.window }) };
    }
    case 'runEnded':
      return t.figure && !t.figure.last ? { ...t, figure: { ...t.figure, last: true } } : t;
    default:
      return t;
  }
}

/** The track of a run whose follower saw it end without a `runEnded` (crashed): its figure is the last. */
export function endContext(t: ContextTrack): ContextTrack {
  return reduceContext(t, { type: 'runEnded' });
}

function withPeak(peaks: ContextFigure[], f: ContextFigure, window: number): ContextFigure[] {
  const prev = peaks.find((p) => p.lane === f.lane && p.iteration === f.iteration);
  if (prev && prev.tokens >= f.tokens) {
    if (prev.window === window) return peaks;
    return peaks.map((p) => (p === prev ? contextFigure({ ...p, window }) : p));
  }
  return [...peaks.filter((p) => p.lane !== f.lane), f].sort((a, b) => a.lane - b.lane);
}

/** `1234` → `1.2k`, `142000` → `142k`, `1000000` → `1M`; tokens. */
export function formatTokens(n: number): string {
  if (n < 1000) return String(Math.round(n));
  if (n < 10_000) return `${trim((n / 1000).toFixed(1))}k`;
  if (n < 1_000_000) return `${Math.round(n / 1000)}k`;
  return `${trim((n / 1_000_000).toFixed(n < 10_000_000 ? 2 : 1))}M`;
}

function trim(s: string): string {
  return s.replace(/\.0+$/, '').replace(/(\.\d*?)0+$/, '$1');
}

/**
 * The figure as every face writes it: `16k/200k 8%`, `16k/200k 8% (last)` once the run has ended, `16k` while the
 * window is unknown; '' for no figure.
 */
export function contextText(f: ContextFigure | null): string {
  if (!f) return '';
  const used =
    f.window > 0 ? `${formatTokens(f.tokens)}/${formatTokens(f.window)} ${f.percent}%` : formatTokens(f.tokens);
  return f.last ? `${used} (last)` : used;
}

/** The marks: `warn 149k · rotate 170k` (a mark not known yet is left out); '' for none. */
export function contextMarksText(f: ContextFigure | null): string {
  if (!f) return '';
  return [f.warnAt ? `warn ${formatTokens(f.warnAt)}` : '', f.rotateAt ? `rotate ${formatTokens(f.rotateAt)}` : '']
    .filter(Boolean)
    .join(' · ');
}

/** The figure with its marks, for a line of its own: `16k/200k 8% (warn 149k · rotate 170k)`. */
export function contextLine(f: ContextFigure | null): string {
  const marks = contextMarksText(f);
  return `${contextText(f)}${marks ? ` (${marks})` : ''}`;
}
