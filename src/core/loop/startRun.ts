import { EventEmitter } from 'node:events';
import * as path from 'node:path';
import { newRunId } from '../control/runRecords';
import type { EngineEvent } from './events';
import { LaneRun } from './laneRun';
import { parallelApplies, runParallel } from './parallel/runParallel';
import type { EngineOptions, RunResult } from './runOptions';

export { EngineRefusal, NoGatesRefusal, StorageRefusal, type EngineOptions, type RunResult } from './runOptions';

/** The events of a run: each with its lane (undefined or 0: the run's own; 1… a parallel run's lanes). */
export type RunEvents = { event: [event: EngineEvent, lane?: number] };

/** A run that was started: its id, its events and the promise of its result (rejected with an `EngineRefusal`). */
export interface StartedRun {
  runId: string;
  events: EventEmitter<RunEvents>;
  result: Promise<RunResult>;
  /**
   * The shell around the lane of a sequential run (laneRun.ts) once it is made (undefined for a parallel run): what a
   * test reaches into.
   */
  lane?: LaneRun;
}

/**
 * Starts a run: the only entry of the CLI (`ralph run`) and the extension (**Ralph: Start**). A parallel run when it
 * is asked for (`parallel`, or the configuration's) and the source is quantum (parallel/runParallel.ts), else the
 * sequential run of one lane in the folder itself (laneRun.ts). Nothing happens before the caller's next turn, so
 * listeners added to `events` right after the call see every event; the refusals reject `result`.
 */
export function startRun(o: EngineOptions): StartedRun {
  const runId = o.runId ?? newRunId();
  const events = new EventEmitter<RunEvents>();
  const emit = (e: EngineEvent, lane?: number) => events.emit('event', e, lane);
  const started: StartedRun = { runId, events, result: Promise.resolve(null as unknown as RunResult) };
  started.result = Promise.resolve().then(() => {
    if (!o.lane && (o.parallel ?? o.config.parallel) && parallelApplies(path.resolve(o.folder), o))
      return runParallel(o, runId, emit);
    const lane = new LaneRun({ ...o, runId });
    started.lane = lane;
    lane.on('event', (e) => emit(e));
    return lane.run();
  });
  return started;
}

/**
 * A run as an event emitter, for faces that subscribe first and start later: `run()` calls {@link startRun} once
 * and passes its events on. The same run id before and after `run()`.
 */
export class LoopEngine extends EventEmitter<RunEvents> {
  readonly runId: string;
  /** The run once started ({@link startRun}). */
  started: StartedRun | null = null;

  constructor(private readonly o: EngineOptions) {
    super();
    this.runId = o.runId ?? newRunId();
  }

  /** Starts the run and resolves with its result; rejects with an `EngineRefusal` when it cannot start. */
  run(): Promise<RunResult> {
    const started = startRun({ ...this.o, runId: this.runId });
    this.started = started;
    started.events.on('event', (e, lane) => this.emit('event', e, lane));
    return started.result;
  }
}
