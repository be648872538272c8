import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { createRunRecord } from '../../../src/core/control/runRecords';
import { planRunPruning, pruneRuns, type RunFolderFacts } from '../../../src/core/control/runPruning';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

/** Issue 12: `.ralph/runs/` is pruned (keepRuns, runsMaxMb), finished raw streams compressed, never the active run. */
describe('control: run pruning (issue 12)', () => {
  const run = (runId: string, bytes: number, finished = true): RunFolderFacts => ({ runId, bytes, finished });
  const MB = 1024 * 1024;
  const cases: { name: string; runs: RunFolderFacts[]; keepRuns: number; maxMb: number; removed: string[] }[] = [
    {
      name: 'within both limits: nothing',
      runs: [run('r3', MB), run('r2', MB), run('r1', MB)],
      keepRuns: 20,
      maxMb: 1024,
      removed: [],
    },
    {
      name: 'more than keepRuns finished runs: the oldest go',
      runs: [run('r4', 1), run('r3', 1), run('r2', 1), run('r1', 1)],
      keepRuns: 2,
      maxMb: 1024,
      removed: ['r1', 'r2'],
    },
    {
      name: 'over runsMaxMb: the oldest finished go until under it',
      runs: [run('r3', 400 * MB), run('r2', 400 * MB), run('r1', 400 * MB)],
      keepRuns: 20,
      maxMb: 1000,
      removed: ['r1'],
    },
    {
      name: 'the active (unfinished) run is never deleted, even alone over the limit',
      runs: [run('r3', 2000 * MB, false), run('r2', MB), run('r1', MB)],
      keepRuns: 20,
      maxMb: 1024,
      removed: ['r1'],
    },
    {
      name: 'an unfinished old run is kept and not counted against keepRuns',
      runs: [run('r3', 1), run('r2', 1), run('r1', 1, false)],
      keepRuns: 1,
      maxMb: 1024,
      removed: ['r2'],
    },
    {
      name: 'the newest finished run stays even over the limit',
      runs: [run('r2', 5000 * MB), run('r1', 5000 * MB)],
      keepRuns: 20,
      maxMb: 1024,
      removed: ['r1'],
    },
  ];
  for (const c of cases)
    it(c.name, () =>
      assert.deepEqual(planRunPruning(c.runs, { keepRuns: c.keepRuns, maxBytes: c.maxMb * MB }), c.removed),
    );

  describe('on disk', () => {
    let t: TempFolder;
    beforeEach(() => {
      t = makeTempFolder('ralph-prune-', { ralphDir: true });
    });
    afterEach(() => t.dispose());

    it("compresses finished runs' raw streams, deletes the oldest finished runs, leaves the active run alone", async () => {
      for (const [id, state] of [
        ['20260101T000001Z-aaaa', 'completed'],
        ['20260101T000002Z-bbbb', 'failed'],
        ['20260101T000003Z-cccc', 'stopped'],
        ['20260101T000004Z-dddd', 'running'],
      ] as const) {
        await createRunRecord(t.dir, { runId: id, state });
        t.write(`.ralph/runs/${id}/iter-001.jsonl`, '{"type":"x"}\n'.repeat(1000));
      }
      const r = await pruneRuns(t.dir, { keepRuns: 2 });
      assert.deepEqual(r.removed, ['20260101T000001Z-aaaa']);
      assert.equal(t.exists('.ralph/runs/20260101T000001Z-aaaa'), false);
      assert.equal(
        t.exists('.ralph/runs/20260101T000004Z-dddd/iter-001.jsonl'),
        true,
        "the active run's raw stream is untouched",
      );
      assert.equal(t.exists('.ralph/runs/20260101T000003Z-cccc/iter-001.jsonl'), false);
      const gz = fs.readFileSync(t.file('.ralph/runs/20260101T000003Z-cccc/iter-001.jsonl.gz'));
      assert.equal(gunzipSync(gz).toString('utf8'), '{"type":"x"}\n'.repeat(1000));
    });
  });
});
