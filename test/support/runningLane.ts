import { startingLane, type RunningLane } from '../../src/core/loop/parallel/runningLane';

/**
 * A {@link RunningLane} of quantum story `id` at lane `index`, for unit tests of the coordinator's parts: no tree on
 * disk (`/nowhere/.ql-wt/<id>`), no source, no iteration, working unless `working` says otherwise.
 */
export function laneFixture(index: number, id: string, working = true): RunningLane {
  return {
    ...startingLane({
      index,
      story: { source: 'quantum', id, title: id },
      tree: `/nowhere/.ql-wt/${id}`,
      branch: `ql-wt/${id}`,
      source: {} as RunningLane['source'],
    }),
    working,
  };
}
