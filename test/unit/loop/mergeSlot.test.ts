import * as assert from 'node:assert/strict';
import type { EngineEvent } from '../../../src/core/loop/events';
import type { LaneDispatcher, MergeOutcome } from '../../../src/core/loop/parallel/dispatcher';
import { MergeSlot, type MergeHost } from '../../../src/core/loop/parallel/mergeSlot';
import type { RunningLane } from '../../../src/core/loop/parallel/runningLane';
import { ralphConfigSchema } from '../../../src/core/model/config';
import { laneFixture } from '../../support/runningLane';

/** A promise the test settles by hand. */
function gate(): { p: Promise<void>; open: () => void } {
  let open!: () => void;
  const p = new Promise<void>((r) => (open = r));
  return { p, open };
}

/**
 * The merge slot over a dispatcher and a coordinator whose merges and record writes the test holds (no git, no
 * quantum.json: the slot's order of steps is what is checked). Without gates: a batch's gate is `null` (green).
 */
function harness() {
  const steps: string[] = [];
  const holdMerge = new Map<string, Promise<void>>();
  const holdRecord = new Map<string, Promise<void>>();
  const failMerge = new Map<string, Error>();
  const started = new Map<string, ReturnType<typeof gate>>();
  const startedOf = (what: string) => {
    if (!started.has(what)) started.set(what, gate());
    return started.get(what)!;
  };
  let head = 0;
  const dispatcher: LaneDispatcher = {
    create: () => Promise.reject(new Error('not here')),
    saveLeftovers: () => Promise.resolve(null),
    remove: () => Promise.resolve(),
    undoMerge: () => Promise.resolve(),
    async merge(id: string): Promise<MergeOutcome> {
      steps.push(`merge ${id}`);
      startedOf(`merge ${id}`).open();
      await holdMerge.get(id);
      const failure = failMerge.get(id);
      if (failure) throw failure;
      const before = String(head++);
      steps.push(`merged ${id}`);
      return { kind: 'merged', before, after: String(head) };
    },
  };
  const events: EngineEvent[] = [];
  const host: MergeHost = {
    folder: '/nonexistent-merge-slot-test',
    config: ralphConfigSchema.parse({}),
    timing: { betweenIterationsMs: 0, killGraceMs: 0 } as MergeHost['timing'],
    gates: null,
    feature: 'feature',
    dispatcher,
    emit: (e) => void events.push(e),
    guardMain: () => Promise.resolve(),
    async writeStatus(id, status) {
      steps.push(`record ${id} ${status}`);
      startedOf(`record ${id}`).open();
      await holdRecord.get(id);
      steps.push(`recorded ${id}`);
    },
    activeTrees: () => [],
    reportProgress: () => Promise.resolve(),
  };
  const lane = (id: string, index: number): RunningLane => laneFixture(index, id, false);
  const slot = new MergeSlot(host);
  const merges = () =>
    events
      .filter((e): e is Extract<EngineEvent, { type: 'laneMerge' }> => e.type === 'laneMerge')
      .map((e) => `${e.item.id}: ${e.reason}`);
  return { slot, steps, holdMerge, holdRecord, failMerge, startedOf, lane, merges };
}

describe('the merge slot (mergeSlot.ts): batches, joins and records written beside the next merge', () => {
  it('a lane queued while a batch merges joins it before its gate: one gate for both', async () => {
    const h = harness();
    const x = gate();
    h.holdMerge.set('X', x.p);
    const ends = [h.slot.enqueue(h.lane('X', 1), { kind: 'merge' })];
    await h.startedOf('merge X').p;
    ends.push(h.slot.enqueue(h.lane('Y', 2), { kind: 'merge' }));
    x.open();
    await Promise.all(ends);
    await h.slot.mergeChain;
    assert.deepEqual(h.steps.slice(0, 4), ['merge X', 'merged X', 'merge Y', 'merged Y']);
    assert.deepEqual(h.merges(), [
      "X: merged into feature (with 1 other story under one run of the feature branch's gate)",
      "Y: merged into feature (with 1 other story under one run of the feature branch's gate)",
    ]);
  });

  it("the next batch merges while the last batch's records are written; records stay in order; each waiter settles with its own record", async () => {
    const h = harness();
    const recordX = gate();
    h.holdRecord.set('X', recordX.p);
    let xDone = false;
    const endX = h.slot.enqueue(h.lane('X', 1), { kind: 'merge' }).then(() => (xDone = true));
    await h.startedOf('record X').p;
    const endY = h.slot.enqueue(h.lane('Y', 2), { kind: 'merge' });
    // Y merges while X's record is still being written.
    await h.startedOf('merge Y').p;
    assert.equal(xDone, false, "X's waiter waits for its record");
    recordX.open();
    await Promise.all([endX, endY]);
    await h.slot.mergeChain;
    assert.deepEqual(
      h.steps.filter((s) => s.startsWith('record')),
      ['record X passed', 'recorded X', 'record Y passed', 'recorded Y'],
    );
    assert.ok(h.steps.indexOf('merge Y') < h.steps.indexOf('recorded X'), h.steps.join(', '));
  });

  it('the merge chain settles only once the last record is written', async () => {
    const h = harness();
    const recordX = gate();
    h.holdRecord.set('X', recordX.p);
    void h.slot.enqueue(h.lane('X', 1), { kind: 'merge' });
    await h.startedOf('record X').p;
    let settled = false;
    const chain = h.slot.mergeChain.then(() => (settled = true));
    for (let i = 0; i < 5; i++) await Promise.resolve();
    assert.equal(settled, false);
    recordX.open();
    await chain;
    assert.ok(h.steps.includes('recorded X'));
  });

  it('a lane that does not merge is recorded without a merge; a failed merge rejects its own waiter only', async () => {
    const h = harness();
    const failing = new Error('git merge could not run');
    h.failMerge.set('F', failing);
    const released = h.slot.enqueue(h.lane('R', 1), { kind: 'release', reason: 'the run ended' });
    const failed = h.slot.enqueue(h.lane('F', 2), { kind: 'merge' });
    await released;
    await assert.rejects(failed, failing);
    const after = h.slot.enqueue(h.lane('G', 3), { kind: 'merge' });
    await after;
    assert.deepEqual(
      h.steps.filter((s) => !s.startsWith('recorded')),
      ['record R pending', 'merge F', 'merge G', 'merged G', 'record G passed'],
    );
  });

  it("a merge that throws fails its own lane; the batch's lanes not tried yet merge on their own after it", async () => {
    const h = harness();
    const failing = new Error('git merge could not run');
    h.failMerge.set('F', failing);
    const failed = h.slot.enqueue(h.lane('F', 1), { kind: 'merge' });
    const other = h.slot.enqueue(h.lane('G', 2), { kind: 'merge' });
    await assert.rejects(failed, failing);
    await other;
    assert.deepEqual(
      h.steps.filter((s) => !s.startsWith('recorded')),
      ['merge F', 'merge G', 'merged G', 'record G passed'],
    );
    assert.deepEqual(h.merges(), ['G: merged into feature']);
  });
});
