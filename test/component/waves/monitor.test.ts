import * as assert from 'node:assert/strict';
import { WaveMonitor, type WaveMonitorUpdate } from '../../../src/core/waves/monitor';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';
import { writeCheckpoint } from '../../support/waveFixture';

function next(
  m: WaveMonitor,
  event: 'update' | 'change',
  pred: (u: WaveMonitorUpdate) => boolean = () => true,
): Promise<WaveMonitorUpdate> {
  return new Promise((resolve) => {
    const on = (u: WaveMonitorUpdate) => {
      if (!pred(u)) return;
      m.off(event, on);
      resolve(u);
    };
    m.on(event, on);
  });
}
const dispositions = (u: WaveMonitorUpdate) =>
  Object.fromEntries(u.views.flatMap((v) => v.subagents.map((s) => [s.subId, s.disposition])));

describe('the wave monitor (real files and timers)', function () {
  this.timeout(20_000);
  let t: TempFolder;
  let m: WaveMonitor | undefined;
  beforeEach(() => {
    t = makeTempFolder('ralph-wave-monitor-');
  });
  afterEach(async () => {
    await m?.close();
    m = undefined;
    t.dispose();
  });

  it('sees a new checkpoint through the file watcher (its speed: waves_watch_reaction_p95 in npm run bench)', async () => {
    t.write('.ijfw/wave-W1/STATE.md', '---\nwave_id: W1\nstatus: in_progress\n---\n');
    m = new WaveMonitor({ folder: t.dir });
    await m.start();
    assert.deepEqual(dispositions({ reason: 'initial', views: m.views(), changed: false, paths: [] }), {});
    const changed = next(m, 'change');
    writeCheckpoint(t.dir, 'W1', 'W1-A', {
      schema_version: 1,
      ts: new Date(Date.now() - 600_000).toISOString(),
      next_step: 'go',
    });
    const u = await changed;
    assert.equal(u.reason, 'file');
    assert.deepEqual(dispositions(u), { 'W1-A': 'RESUMED' });
    assert.ok(u.paths.includes('.ijfw/wave-W1/subagent-W1-A.checkpoint.json'), u.paths.join(','));
  });

  it('emits a change when a sub crosses its orphan window, with no file event', async () => {
    writeCheckpoint(t.dir, 'W1', 'W1-A', { schema_version: 1, ts: new Date().toISOString(), next_step: 'go' });
    // The clock stands still until the first reading is checked, so a slow machine cannot cross the window early.
    let frozenAt: number | null = Date.now();
    const clock = () => frozenAt ?? Date.now();
    m = new WaveMonitor({ folder: t.dir, windows: { orphanAfterMs: 300, inactiveAfterMs: 500 }, clock });
    await m.start();
    assert.deepEqual(dispositions({ reason: 'initial', views: m.views(), changed: false, paths: [] }), {
      'W1-A': 'ACTIVE',
    });
    const changed = next(m, 'change');
    frozenAt = null;
    const u = await changed;
    assert.equal(u.reason, 'timer');
    assert.deepEqual(dispositions(u), { 'W1-A': 'RESUMED' });
  });

  it('follows one wave when named, and reports worktree roots', async () => {
    const wt = makeTempFolder('ralph-wave-monitor-wt-');
    try {
      writeCheckpoint(t.dir, 'W1', 'W1-A', { ts: new Date().toISOString(), status: 'DONE' });
      writeCheckpoint(t.dir, 'W2', 'W2-A', { ts: new Date().toISOString() });
      m = new WaveMonitor({ folder: t.dir, waveId: 'W1', roots: [wt.dir] });
      await m.start();
      const changed = next(m, 'change');
      writeCheckpoint(wt.dir, 'W1', 'W1-B', { ts: new Date(Date.now() - 600_000).toISOString(), last_action: 'x' });
      const u = await changed;
      assert.deepEqual(
        u.views.map((v) => v.waveId),
        ['W1'],
      );
      assert.deepEqual(dispositions(u), { 'W1-A': 'RESOLVED', 'W1-B': 'RESUMED' });
    } finally {
      wt.dispose();
    }
  });
});
