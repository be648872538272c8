import * as assert from 'node:assert/strict';
import * as os from 'node:os';
import { buildStatus, formatStatusText } from '../../../src/core/control/status';
import { loadPlan } from '../../../src/core/sources/plan';
import { buildTreeModel } from '../../../src/extension/planTreeModel';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

const NOW = Date.parse('2026-12-01T10:00:00.000Z');

describe('ralph status and Ralph: Status call a stale story stale, as the Plan tree does', () => {
  let t: TempFolder;
  beforeEach(() => {
    t = makeTempFolder('ralph-status-stale-');
    t.write(
      'quantum.json',
      JSON.stringify({
        project: 'p',
        staleThresholdMinutes: 30,
        stories: [
          { id: 'US-1', title: 'old', status: 'in_progress', startedAt: '2026-12-01T09:00:00.000Z', dependsOn: [] },
          { id: 'US-2', title: 'fresh', status: 'in_progress', startedAt: '2026-12-01T09:50:00.000Z', dependsOn: [] },
        ],
      }),
    );
  });
  afterEach(() => t.dispose());

  it('marks the story past the threshold with no run active (stale_after_minutes in --json, "Stale:" in the text)', () => {
    const s = buildStatus(t.dir, { nowMs: NOW });
    assert.deepEqual(
      s.in_progress.map((i) => [i.id, i.stale_after_minutes]),
      [
        ['US-1', 30],
        ['US-2', undefined],
      ],
    );
    const text = formatStatusText(s);
    assert.match(
      text,
      /^Stale: US-1 old \(in progress since 2026-12-01T09:00:00\.000Z, past the 30-minute stale threshold with no run active; ralph stale --apply fails or blocks it\)$/m,
    );
    assert.match(text, /^In progress: US-2 fresh \(since 2026-12-01T09:50:00\.000Z\)$/m);
  });

  it('agrees with the Plan tree row by row', async () => {
    const s = buildStatus(t.dir, { nowMs: NOW });
    const plan = await loadPlan(t.dir);
    const model = buildTreeModel(
      { version: 1, folders: [{ folder: t.dir, name: 'ws', starting: false, plan }], runs: [] },
      () => [],
      undefined,
      NOW,
    );
    assert.deepEqual(
      s.in_progress.map((i) => [i.id, i.stale_after_minutes !== undefined]),
      ['US-1', 'US-2'].map((id) => [id, model.rows.get(`${t.dir}#quantum/story/${id}`)!.status === 'stale']),
    );
  });

  it('is not stale while a run of the folder is active (the run may hold it)', () => {
    const run = '20261201T095000Z-ab12';
    t.write(
      `.ralph/runs/${run}/run.json`,
      JSON.stringify({
        runId: run,
        pid: process.pid,
        host: os.hostname(),
        startedAt: '2026-12-01T09:50:00.000Z',
        state: 'running',
        iteration: 1,
        currentItem: null,
      }),
    );
    const s = buildStatus(t.dir, { nowMs: NOW });
    assert.deepEqual(
      s.in_progress.map((i) => i.stale_after_minutes),
      [undefined, undefined],
    );
    assert.doesNotMatch(formatStatusText(s), /^Stale:/m);
  });
});
