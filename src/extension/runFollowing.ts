import type { GaugeRun, GaugeRunState } from './gauge/gaugeText';

/**
 * The core's reduction of a run's log (`RunView`). Until the run-log issue lands, the store treats it as opaque.
 */
export type RunView = unknown;

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
