import type { WorkItemRef } from '../events';
import type { LaneStorySource } from './laneSource';
import type { LaneGreen } from './rules';

/** One running lane. */
export interface RunningLane {
  index: number;
  story: WorkItemRef;
  tree: string;
  branch: string;
  source: LaneStorySource;
  abort: AbortController;
  timedOut: boolean;
  done: Promise<void>;
  iteration: number | null;
  agentPgid: number | null;
  agentToken: string | null;
  /** Its end is being recorded: no longer one of quantum.json's `activeWorktrees`. */
  settled: boolean;
  /**
   * Its engine still runs (the agent's lane is taken). False once the engine returned: the story then waits for its
   * merge, still a running story for the rounds (its files taken, its dependents waiting), but its lane is free for
   * the next story at once, not after the merge queue.
   */
  working: boolean;
  /** The lane's last green gate on a clean tree, when its final gate was not repeated (engine.ts `onGreenTree`). */
  green: LaneGreen | null;
}

/** A lane as it starts: its story's tree and branch made, nothing run yet, its engine about to work. Pure. */
export function startingLane(at: Pick<RunningLane, 'index' | 'story' | 'tree' | 'branch' | 'source'>): RunningLane {
  return {
    ...at,
    abort: new AbortController(),
    timedOut: false,
    done: Promise.resolve(),
    iteration: null,
    agentPgid: null,
    agentToken: null,
    settled: false,
    working: true,
    green: null,
  };
}
