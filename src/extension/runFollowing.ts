import type { RunFollower } from '../core/control/runFollower';
import type { RunInfo } from '../core/control/runs';
import type { emptyRunTokens, reduceRunTokens, RunTokens } from '../core/control/runTokens';
import type { emptyRunView, reduceRunView, RunView, withFollowEnd } from '../core/control/runView';
import type { GaugeRun, GaugeRunState } from './gauge/gaugeText';

export type { RunView } from '../core/control/runView';

/**
 * How the store follows runs: the core's `RunFollower` (tails any run's log, whoever started it), the `RunView`
 * reducer and the per-iteration token reducer, mapped to what the store, the context keys and the gauge need.
 * Pure mappings here ({@link runFactsOf}, {@link gaugeRunOf}); the follower itself is started by {@link followRun}.
 */

/** What the store, the context keys and the notifications need to know of a run, read off its `RunView`. */
export interface RunFacts {
  /** The run has not ended and its engine is alive. */
  active: boolean;
  /** The gauge's word for what it does now. */
  state: GaugeRunState;
  paused: boolean;
  deferred: boolean;
  /** ISO time the run started, when known (orders runs). */
  startedAt: string | null;
  /** Questions the run waits on, oldest first. */
  questions: { id: string; text: string; itemId: string | null; answerFile: string }[];
}

/** One update of a followed run: the view, its facts, and the gauge's picture of it. */
export interface RunUpdate {
  view: RunView;
  facts: RunFacts;
  gauge(folderName: string): GaugeRun;
}

/** The gauge's state word of a view state (terminal states are `ended`, with the state in `endState`). */
export function gaugeStateOf(v: RunView): GaugeRunState {
  // PAUSE is honoured after the iteration: until then the run is "pausing…", not paused, not plainly running.
  if (v.state === 'running' && v.pauseRequested) return 'pausing';
  switch (v.state) {
    case 'starting':
    case 'running':
    case 'paused':
    case 'waiting':
    case 'deferred':
    case 'stopping':
    case 'crashed':
      return v.state;
    default:
      return 'ended';
  }
}

/** Facts of a view; `info` (the run's record as listed) fills the start time while the log has not said it. */
export function runFactsOf(v: RunView, info?: Pick<RunInfo, 'startedAt'>): RunFacts {
  return {
    active: !v.final,
    state: gaugeStateOf(v),
    paused: v.state === 'paused',
    deferred: v.state === 'deferred',
    startedAt: v.startedAt ?? info?.startedAt ?? null,
    questions: v.questions.map((q) => ({
      id: q.id,
      text: q.text,
      itemId: q.item?.id ?? null,
      answerFile: q.answerFile,
    })),
  };
}

/**
 * The gauge's picture of a run: the run's one context figure (the lane that reported last), the
 * run's cost so far (ended iterations plus the running ones), tokens per iteration from `tokens`.
 */
export function gaugeRunOf(v: RunView, tokens: RunTokens, folderName: string): GaugeRun {
  const lanes = v.lanes;
  // The run's one context figure (core/control/contextFigure.ts): the same the dashboard, status and watch show.
  const ctx = v.context?.figure ?? null;
  const running = lanes.filter((l) => l.activity === 'agent');
  const costUsd = v.cost.runUsd + running.reduce((a, l) => a + l.iterationCostUsd, 0);
  const hasCost = costUsd > 0 || tokens.iterations.some((i) => i.costUsd !== null);
  return {
    runId: v.runId,
    folderName,
    state: gaugeStateOf(v),
    agentRunning: running.length > 0,
    agent: v.agent,
    deferredUntil: v.deferredUntil ? Date.parse(v.deferredUntil) : null,
    endState: v.end ? v.end.state : null,
    context: ctx,
    costUsd: hasCost ? costUsd : null,
    iterations: tokens.iterations.map((i) => ({
      iteration: i.iteration,
      itemId: i.itemId,
      agent: i.agent,
      tokens: i.tokens,
      costUsd: i.costUsd,
    })),
    earlier: tokens.older.count ? tokens.older : null,
    totals: tokens.total,
  };
}

/** The update of a run as listed, before its log is read: the list's state (so a finished run never flashes "running"). */
export function listedRunUpdate(info: RunInfo, view: RunView, tokens: RunTokens): RunUpdate {
  const facts = runFactsOf(view, info);
  const listedState: GaugeRunState =
    info.state === 'running'
      ? 'running'
      : info.state === 'paused'
        ? 'paused'
        : info.state === 'stopping'
          ? 'stopping'
          : info.state === 'crashed'
            ? 'crashed'
            : 'ended';
  const f: RunFacts = { ...facts, active: info.active, state: listedState, paused: info.state === 'paused' };
  return {
    view,
    facts: f,
    gauge: (name) => ({
      ...gaugeRunOf(view, tokens, name),
      state: listedState,
      endState: info.active ? null : info.state,
    }),
  };
}

/**
 * Follows one run with the core's `RunFollower` (timer + `fs.watch`), reducing its entries into a `RunView` and
 * `RunTokens`, and calls `onUpdate` after each batch and at its end. Core modules are loaded by the caller (the
 * extension imports them on first use); `dispose` closes the follower.
 */
export function followRun(
  core: {
    RunFollower: typeof RunFollower;
    emptyRunView: typeof emptyRunView;
    reduceRunView: typeof reduceRunView;
    withFollowEnd: typeof withFollowEnd;
    emptyRunTokens: typeof emptyRunTokens;
    reduceRunTokens: typeof reduceRunTokens;
  },
  folder: string,
  info: RunInfo,
  onUpdate: (u: RunUpdate) => void,
  onProblem?: (message: string) => void,
): { dispose(): void } {
  let view = core.emptyRunView(info.id, info.kind);
  let tokens = core.emptyRunTokens();
  const update = () =>
    onUpdate({ view, facts: runFactsOf(view, info), gauge: (name) => gaugeRunOf(view, tokens, name) });
  const follower = new core.RunFollower(folder, info.id, { kind: info.kind });
  follower.on('entries', (entries) => {
    for (const e of entries) {
      view = core.reduceRunView(view, e);
      tokens = core.reduceRunTokens(tokens, e);
    }
    update();
  });
  follower.on('problem', (p) => onProblem?.(`${p.file}:${p.line}: ${p.message}`));
  follower.on('end', (end) => {
    view = core.withFollowEnd(view, end);
    update();
  });
  follower.start();
  return { dispose: () => follower.close() };
}
