import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import { Logger } from '../../../src/extension/logger';
import { PlanTreeProvider } from '../../../src/extension/planTree';
import { WaveMonitors } from '../../../src/extension/waveMonitors';
import { resetFake } from '../../support/fakeVscode';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';
import { writeCheckpoint } from '../../support/waveFixture';

describe("the Plan view's waves row, live (extension adapters on the fake vscode, real files and timers)", function () {
  this.timeout(20_000);
  let t: TempFolder;
  let waves: WaveMonitors | undefined;
  beforeEach(() => {
    resetFake();
    t = makeTempFolder('ralph-ext-waves-');
  });
  afterEach(() => {
    waves?.dispose();
    waves = undefined;
    t.dispose();
  });

  it('shows an orphan once it crosses its window, from the timer: no file event and no refresh', async () => {
    writeCheckpoint(t.dir, 'W1', 'W1-A', { schema_version: 1, ts: new Date().toISOString(), next_step: 'go on' });
    (vscode.workspace as { workspaceFolders: unknown }).workspaceFolders = [
      { uri: vscode.Uri.file(t.dir), name: 'ws', index: 0 },
    ];
    const log = new Logger();
    // The clock stands still until the first reading is checked, so a slow machine cannot cross the window early.
    let frozenAt: number | null = Date.now();
    const clock = () => frozenAt ?? Date.now();
    waves = new WaveMonitors(log, { windows: { orphanAfterMs: 300, inactiveAfterMs: 600 }, clock });
    const plan = new PlanTreeProvider(log, {
      snapshot: () => ({
        version: 0,
        folders: [{ folder: t.dir, name: 'ws', plan: undefined, starting: false }],
        runs: [],
      }),
      onDidChange: () => ({ dispose() {} }),
      waves: (f) => waves!.waves(f),
      onWavesChange: (l) => waves!.onDidChange(l),
    });
    let refreshed = 0;
    waves.onDidChange(() => refreshed++);
    await waves.ready();
    assert.equal(refreshed, 1, 'the row is redrawn once the first evaluation is in');
    const row = async () => {
      const node = plan.node(`${t.dir}#waves/W1/W1-A`);
      assert.ok(node, 'a subagent row under the waves row');
      return plan.getTreeItem(node);
    };
    assert.match(String((await row()).description), /^active/);
    const changed = new Promise<void>((resolve) => waves!.onDidChange(() => resolve()));
    frozenAt = null;
    await changed;
    assert.equal(refreshed, 2);
    assert.match(String((await row()).description), /^resumed · .* · next: go on$/);
    assert.equal(plan.getTreeItem(plan.node(`${t.dir}#waves`)!).description, '1 wave · 1 orphan');
    assert.deepEqual(
      waves.waves(t.dir).map((w) => w.subagents.map((s) => [s.sub_id, s.disposition, s.next_step])),
      [[['W1-A', 'RESUMED', 'go on']]],
    );
  });

  it('ages a subagent\'s "ago" between evaluations: the row is redrawn with the time passed, no file event', async () => {
    const t0 = Date.now();
    writeCheckpoint(t.dir, 'W1', 'W1-A', { schema_version: 1, ts: new Date(t0).toISOString(), next_step: 'go on' });
    (vscode.workspace as { workspaceFolders: unknown }).workspaceFolders = [
      { uri: vscode.Uri.file(t.dir), name: 'ws', index: 0 },
    ];
    const log = new Logger();
    let now = t0;
    waves = new WaveMonitors(log, {
      windows: { orphanAfterMs: 3_600_000, inactiveAfterMs: 3_600_000 },
      clock: () => now,
      agingMs: 20,
    });
    const plan = new PlanTreeProvider(log, {
      snapshot: () => ({
        version: 0,
        folders: [{ folder: t.dir, name: 'ws', plan: undefined, starting: false }],
        runs: [],
      }),
      onDidChange: () => ({ dispose() {} }),
      waves: (f) => waves!.waves(f),
      onWavesChange: (l) => waves!.onDidChange(l),
    });
    await waves.ready();
    const description = () => String(plan.getTreeItem(plan.node(`${t.dir}#waves/W1/W1-A`)!).description);
    assert.equal(description(), 'active · 0s ago · next: go on');
    now = t0 + 2 * 60_000;
    await new Promise<void>((resolve) => waves!.onDidChange(() => resolve()));
    assert.equal(description(), 'active · 2m ago · next: go on');
    assert.equal(waves.waves(t.dir)[0]!.subagents[0]!.checkpoint_age_ms, 2 * 60_000);
  });

  it("starts a monitor when .ijfw/ appears later and re-evaluates on the watcher's changes", async () => {
    (vscode.workspace as { workspaceFolders: unknown }).workspaceFolders = [
      { uri: vscode.Uri.file(t.dir), name: 'ws', index: 0 },
    ];
    waves = new WaveMonitors(new Logger());
    await waves.ready();
    assert.equal(waves.summary(t.dir), undefined);
    writeCheckpoint(t.dir, 'W2', 'W2-A', {
      schema_version: 1,
      ts: new Date(Date.now() - 600_000).toISOString(),
      tool_use_count: 1,
    });
    waves.onWorkspaceChange({
      folder: t.dir,
      kinds: ['waves'],
      paths: ['.ijfw/wave-W2/subagent-W2-A.checkpoint.json'],
    });
    await waves.ready();
    assert.deepEqual(waves.summary(t.dir), {
      newest: 'W2: 1 orphan (1 stale)',
      lines: ['W2: 1 orphan (1 stale)'],
      orphans: 1,
    });
  });
});
