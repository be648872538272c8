import type { ControlAction, RunHeader, RunState } from '../../src/protocol/dashboard';

/** States in which a run is still going (the engine or flow-next's driver is alive). */
export const ACTIVE_STATES: readonly RunState[] = ['starting', 'running', 'paused', 'waiting', 'deferred', 'stopping'];

/**
 * Which header controls are enabled for the shown run: Start when nothing runs; Pause while it runs,
 * waits or is deferred; Resume when paused; Stop while active and not already stopping; Cancel only for a run this
 * window's extension host owns (a run started in a terminal gets Stop). A past run shown statically enables only
 * Start.
 */
export function enabledControls(run: RunHeader | null): Record<ControlAction, boolean> {
  const active = !!run && run.live && ACTIVE_STATES.includes(run.state);
  const st = run?.state;
  return {
    start: !active,
    pause: active && (st === 'running' || st === 'waiting' || st === 'deferred' || st === 'starting'),
    resume: active && st === 'paused',
    stop: active && st !== 'stopping',
    cancel: active && !!run?.ownedByThisWindow,
  };
}
