import * as assert from 'node:assert/strict';
import { createRunRecord } from '../../../src/core/control/runRecords';
import { staleStories } from '../../../src/core/sources/operations';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

/** Issue 12: `ralph stale --apply` never fails the story a live run is working on. */
describe('sources: stale stories held by a live run (issue 12)', () => {
  let t: TempFolder;
  beforeEach(() => {
    t = makeTempFolder('ralph-stale-held-', { ralphDir: true });
  });
  afterEach(() => t.dispose());

  const startedLongAgo = '2026-01-01T00:00:00Z';
  const write = () =>
    t.write(
      'quantum.json',
      JSON.stringify(
        {
          project: 'p',
          branchName: 'b',
          stories: [
            { id: 'US-1', title: 'held', passes: false, status: 'in_progress', startedAt: startedLongAgo },
            { id: 'US-2', title: 'abandoned', passes: false, status: 'in_progress', startedAt: startedLongAgo },
          ],
        },
        null,
        2,
      ) + '\n',
    );

  it('skips the story of a live run (this process), with a warning, and fails the abandoned one', async () => {
    write();
    await createRunRecord(t.dir, {
      runId: 'live-run',
      state: 'running',
      currentItem: { source: 'quantum', id: 'US-1', title: 'held' },
    });
    const r = await staleStories({ folder: t.dir, apply: true });
    assert.deepEqual(
      r?.stale.map((s) => s.id),
      ['US-2'],
    );
    assert.deepEqual(r?.warnings, ['US-1 is held by live run live-run: skipped']);
    const q = JSON.parse(t.read('quantum.json')) as { stories: { status: string }[] };
    assert.deepEqual(
      q.stories.map((s) => s.status),
      ['in_progress', 'failed'],
    );
  });

  it('a finished run holds nothing', async () => {
    write();
    await createRunRecord(t.dir, {
      runId: 'done-run',
      state: 'completed',
      currentItem: { source: 'quantum', id: 'US-1', title: 'held' },
    });
    const r = await staleStories({ folder: t.dir, apply: true });
    assert.deepEqual(
      r?.stale.map((s) => s.id),
      ['US-1', 'US-2'],
    );
  });
});
