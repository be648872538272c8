import * as assert from 'node:assert/strict';
import { planFixture, useSnapshotCache } from '../../support/snapshotCacheHarness';

/**
 * The whole-answer cache of `ralph status` (core/store/snapshotCache.ts, answered by the tiny dist/cli.js): the
 * same output with and without it on every fixture and on generated plans, in both forms, and a fresh answer after
 * any change, including one within the timestamp tick of the cache write.
 * This file: the fixture folders that hold plans (the parallel tier runs the answer-cache files side by side).
 */
describe('cli: status snapshot cache on the plan fixtures', function () {
  // Hundreds of CLI processes per test: the limit catches a hang, it is no bound on a loaded machine's speed.
  this.timeout(600_000);
  const { sameOnFixtures } = useSnapshotCache();

  it('every fixture folder with a plan: the same output cached and uncached (stored only without runs and waves)', async () => {
    const { stored, of } = await await sameOnFixtures('ralph-snap-fx-', planFixture);
    assert.ok(of >= 8, `plan fixture folders: ${of}`);
    assert.ok(stored >= 3, `some fixtures are served from the cache (${stored} of ${of})`);
  });
});
