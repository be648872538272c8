import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { DashboardHub } from '../../../../src/extension/dashboard/dashboardHub';
import { runFilePaths } from '../../../../src/core/loop/runFiles';
import type { UpdateOp } from '../../../../src/protocol/dashboard';
import { makeTempFolder, type TempFolder } from '../../../support/tempFolder';

describe('the dashboard hub', () => {
  let tmp: TempFolder;
  const warnings: string[] = [];
  const runs: { id: string; kind: string; state: string; active: boolean }[] = [];
  const hub = () => new DashboardHub(() => [tmp.dir], () => runs, { warn: (_c, m) => warnings.push(m) });
  beforeEach(() => {
    tmp = makeTempFolder('ralph-hub-');
    runs.length = 0;
    warnings.length = 0;
  });
  afterEach(() => tmp.dispose());

  const writeEvents = (id: string, lines: string[]) => tmp.write(path.relative(tmp.dir, runFilePaths(tmp.dir, id).events), lines.join('\n') + '\n');

  it('shows the latest past run from its events.jsonl, static, skipping lines that are not events', async () => {
    runs.push({ id: 'r1', kind: 'ralph', state: 'completed', active: false }, { id: 'r2', kind: 'ralph', state: 'completed', active: false }, { id: 'f1', kind: 'flow-next', state: 'completed', active: false });
    writeEvents('r2', [
      JSON.stringify({ at: '2026-12-01T10:00:00.000Z', type: 'runStarted', runId: 'r2', folder: tmp.dir, source: 'checklist', agent: 'claude', maxIterations: 5, gates: {} }),
      '{not json',
      JSON.stringify({ at: '2026-12-01T10:00:05.000Z', type: 'runEnded', state: 'completed', reason: 'done', completionReason: 'DONE', exitCode: 0, iterations: 1, costUsd: 0.5, done: 1, total: 1 }),
    ]);
    const h = hub();
    await h.refresh();
    const s = h.state();
    assert.deepEqual(s.runs.map((r) => r.runId), ['r1', 'r2'], 'flow-next runs have no events to show');
    assert.equal(s.run?.runId, 'r2');
    assert.equal(s.run?.state, 'completed');
    assert.equal(s.run?.live, false);
    assert.equal(s.run?.costUsd, 0.5);
    assert.match(warnings.join('\n'), /skipped 1 line/);
  });

  it('picks a past run, and refuses one that is not in the workspace', async () => {
    runs.push({ id: 'r1', kind: 'ralph', state: 'stopped', active: false });
    writeEvents('r1', [JSON.stringify({ type: 'progress', done: 2, total: 4, text: '' })]);
    const h = hub();
    await h.pick('r1');
    assert.equal(h.state().pinnedRunId, 'r1');
    assert.deepEqual(h.state().run?.progress, { done: 2, total: 4 });
    await assert.rejects(h.pick('../../etc'), /no run \.\.\/\.\.\/etc/);
  });

  it("follows this window's live run and sends its updates", async () => {
    const h = hub();
    const changes: (UpdateOp[] | 'snapshot')[] = [];
    h.onChange((c) => changes.push(c));
    h.engineEvent(tmp.dir, { type: 'runStarted', runId: 'live1', folder: tmp.dir, source: 'checklist', agent: 'claude', maxIterations: 5, gates: {} });
    h.engineEvent(tmp.dir, { type: 'progress', done: 0, total: 2, text: '' });
    assert.equal(changes[0], 'snapshot');
    assert.equal(h.state().run?.runId, 'live1');
    assert.equal(h.state().run?.ownedByThisWindow, true);
    assert.equal(h.liveRun(tmp.dir), 'live1');
    const ops = changes.slice(1).flatMap((c) => (c === 'snapshot' ? [] : c.map((o) => o.op)));
    assert.ok(ops.includes('run') && ops.includes('log'), ops.join(','));
    h.engineEvent(tmp.dir, { type: 'runEnded', state: 'completed', reason: 'done', completionReason: 'DONE', exitCode: 0, iterations: 1, costUsd: 0, done: 2, total: 2 });
    assert.equal(h.liveRun(tmp.dir), undefined);
    assert.equal(h.state().run?.ownedByThisWindow, false);
  });
});
