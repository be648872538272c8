import * as assert from 'node:assert/strict';
import { readBaselineMirror } from '../../../src/core/loop/baselineMirror';
import { ClaimBook } from '../../../src/core/loop/lane/claimBook';
import type { RunRecordPatch } from '../../../src/core/loop/lane/agentIteration';
import type { ClaimBaseline } from '../../../src/core/model/claimBaseline';
import type { WorkItem, WorkSource } from '../../../src/core/sources/work/workSources';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

/**
 * The claim book's writes (decision 0027): which steps write run.json and the mirror at once, which wait for the lane's
 * next write, and that nothing deferred is left unwritten when a child starts. The ports merge deferred fields into
 * the next write as lane.ts does.
 */
describe('the claim book: what it writes at once and what waits for the next write', () => {
  let ws: TempFolder;
  let writes: RunRecordPatch[];
  let deferred: RunRecordPatch | null;
  let book: ClaimBook;
  let done: string[];
  const runId = '20261207T030000Z-abcd';
  const source = {
    snapshot: async (): Promise<ClaimBaseline> => ({ at: 't', source: 'checklist', label: 'T.md', done: [...done] }),
    claimsSince: async () => [],
  } as unknown as WorkSource;
  const item = { source: 'checklist', id: 'One', title: 'One' } as unknown as WorkItem;
  const record = async (patch: RunRecordPatch) => {
    writes.push({ ...deferred, ...patch });
    deferred = null;
  };
  const marks = (p: RunRecordPatch | undefined) =>
    (p?.claimBaseline as ClaimBaseline | undefined)?.marksAtAgentStart !== undefined;

  beforeEach(async () => {
    ws = makeTempFolder('ralph-book-', { ralphDir: true });
    writes = [];
    deferred = null;
    done = [];
    book = new ClaimBook({
      folder: ws.dir,
      runId,
      record,
      defer: (patch) => void (deferred = { ...deferred, ...patch }),
      flush: () => (deferred ? record({}) : Promise.resolve()),
      emit: () => undefined,
      warn: () => () => undefined,
      shown: (t) => t,
      progress: async () => undefined,
    });
    await book.open(source);
  });
  afterEach(() => ws.dispose());

  it('an iteration: the item start waits for the agent start, the agent end for the gate start, the verdict for the flush', async () => {
    assert.equal(writes.length, 1, 'open writes at once');
    await book.startItem(source, item);
    assert.equal(writes.length, 1, 'the item start waits');
    const agentMarks = await book.markChildStart({ iteration: 1 });
    assert.equal(writes.length, 2);
    assert.deepEqual(writes[1]!.currentItem, { source: 'checklist', id: 'One', title: 'One' });
    assert.equal(writes[1]!.iteration, 1);
    assert.ok(marks(writes[1]), "the agent's start carries its marks");
    assert.ok(readBaselineMirror(ws.dir, runId)?.marksAtAgentStart, 'and so does the mirror, before the agent runs');

    done = ['One #1'];
    await book.markChildEnd(agentMarks, 'the agent', 'iteration 1', { agentPgid: null });
    assert.equal(writes.length, 2, "the agent's end waits");
    assert.ok(readBaselineMirror(ws.dir, runId)?.marksAtAgentStart, "until then the mirror keeps the agent's marks");

    const gateMarks = await book.markChildStart();
    assert.equal(writes.length, 3);
    assert.equal(writes[2]!.agentPgid, null, "the agent's end goes with the gate's start");
    assert.ok(marks(writes[2]), "with the gate's own marks");
    await book.markChildEnd(gateMarks, 'the basic gate');
    await book.carry(source, [{ slot: 'done', key: 'One #1' }] as never, { currentItem: null });
    assert.equal(writes.length, 3, "the gate's end and the verdict wait");
    assert.ok(!readBaselineMirror(ws.dir, runId)?.done.includes('One #1'), 'the mirror has no verdict yet');

    await book.flush();
    assert.equal(writes.length, 4, 'one write for both');
    assert.equal(writes[3]!.currentItem, null);
    assert.ok(!marks(writes[3]));
    assert.deepEqual((writes[3]!.claimBaseline as ClaimBaseline).done, ['One #1']);
    assert.deepEqual(readBaselineMirror(ws.dir, runId)?.done, ['One #1']);
    await book.flush();
    assert.equal(writes.length, 4, 'nothing left to flush');
  });

  it('a child starting without an open baseline still writes what was deferred first', async () => {
    await book.close();
    writes = [];
    await book.markChildEnd(null, 'the agent', undefined, { agentPgid: null, costUsd: 1 });
    assert.equal(writes.length, 0);
    await book.markChildStart();
    assert.deepEqual(writes, [{ agentPgid: null, costUsd: 1 }]);
  });

  it("the run's close writes what was deferred with the cleared baseline", async () => {
    await book.startItem(source, item);
    await book.close();
    assert.equal(writes.length, 2);
    assert.deepEqual([writes[1]!.claimBaseline, (writes[1]!.currentItem as { id: string } | null)?.id], [null, 'One']);
    assert.equal(readBaselineMirror(ws.dir, runId), null);
  });
});
