import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import { loadPlan } from '../../src/core/sources/plan';
import { Logger } from '../../src/extension/logger';
import { PlanTreeProvider } from '../../src/extension/planTree';
import { WorkspaceWatcher, type WorkspaceChange } from '../../src/core/watch/workspaceWatcher';
import { runCliCapped } from '../support/cli';
import { makeTempFolder, type TempFolder } from '../support/tempFolder';

/**
 * Hostile workspaces against the faces that read them while a person works: the watcher (what the tree and the
 * status follow), the plan graph the tree draws (loadPlan) and `ralph status`. Each asserts behaviour — bounded
 * events and reads, no hang (mocha's timeout or the capped CLI's catches one), the right final state — never time.
 */

const MB = 1024 * 1024;

function quantum(stories: { id: string; title: string; status?: string; dependsOn?: string[] }[], project = 'p') {
  return JSON.stringify({
    project,
    stories: stories.map((s, i) => ({ priority: i + 1, status: 'pending', dependsOn: [], ...s })),
  });
}

/** The watcher's changes, and a way to wait for the first one that satisfies a condition. */
function recordChanges(w: WorkspaceWatcher) {
  const seen: WorkspaceChange[] = [];
  const waiters: { ok: (c: WorkspaceChange) => boolean; resolve: (c: WorkspaceChange) => void }[] = [];
  w.on('change', (c) => {
    seen.push(c);
    for (const x of [...waiters])
      if (x.ok(c)) {
        waiters.splice(waiters.indexOf(x), 1);
        x.resolve(c);
      }
  });
  return {
    seen,
    next: (ok: (c: WorkspaceChange) => boolean = () => true) =>
      new Promise<WorkspaceChange>((resolve) => waiters.push({ ok, resolve })),
  };
}

describe('hostile workspaces: the watcher, the plan tree and ralph status stay bounded', function () {
  this.timeout(300_000);
  let t: TempFolder;
  let watcher: WorkspaceWatcher | undefined;
  afterEach(async () => {
    await watcher?.close();
    watcher = undefined;
    t?.dispose();
  });

  it('quantum.json rewritten continuously (hundreds of times a second): changes are reported while it goes on', async () => {
    t = makeTempFolder('ralph-storm-', { files: { 'quantum.json': quantum([{ id: 'US-001', title: 'v0' }]) } });
    watcher = new WorkspaceWatcher(t.dir);
    await watcher.ready();
    const changes = recordChanges(watcher);
    const reported = changes.next((c) => c.kinds.includes('quantum'));
    let writes = 0;
    let stop = false;
    // Rewrite as fast as the loop allows until the watcher reports: a debounce that restarts on every event never
    // would (the quiet period never comes), and this test would hang.
    const writer = (async () => {
      while (!stop) {
        fs.writeFileSync(t.file('quantum.json'), quantum([{ id: 'US-001', title: `v${++writes}` }]));
        await new Promise((r) => setTimeout(r, 1));
      }
    })();
    await reported;
    const writesWhenReported = writes;
    stop = true;
    await writer;
    assert.ok(writesWhenReported > 1, `reported during the storm (after ${writesWhenReported} writes)`);
    // A write after the storm is reported too, and the plan reads it. (The storm's own last write may already be in
    // the report that ended it, so nothing further need come of it: waiting for "the next change" could wait forever.)
    const next = changes.next();
    fs.writeFileSync(t.file('quantum.json'), quantum([{ id: 'US-001', title: 'after the storm' }]));
    await next;
    for (;;) {
      const plan = await loadPlan(t.dir);
      if (plan.items.find((i) => i.id === 'US-001')?.title === 'after the storm') break;
      await changes.next();
    }
  });

  it('20,000 .flow task files changing at once: each change event names at most 100 paths, and the tree gets all', async () => {
    t = makeTempFolder('ralph-flowstorm-', {
      files: {
        '.flow/meta.json': '{"schema_version": 2, "next_epic": 2}',
        '.flow/epics/fn-1.json': '{"id": "fn-1", "title": "Storm", "status": "open"}',
        '.flow/tasks/': '',
      },
    });
    watcher = new WorkspaceWatcher(t.dir);
    await watcher.ready();
    const changes = recordChanges(watcher);
    const N = 20_000;
    for (let i = 1; i <= N; i++)
      fs.writeFileSync(
        t.file(`.flow/tasks/fn-1.${i}.json`),
        JSON.stringify({ id: `fn-1.${i}`, epic: 'fn-1', title: `Task ${i}`, status: 'todo', depends_on: [] }),
      );
    // The marker written last: once it is reported, every earlier file has been seen by the watcher.
    fs.writeFileSync(t.file('.flow/tasks/fn-1.999999.json'), JSON.stringify({ id: 'fn-1.999999', epic: 'fn-1' }));
    await changes.next((c) => c.paths.includes('.flow/tasks/fn-1.999999.json') || c.paths.length === 100);
    for (;;) {
      const plan = await loadPlan(t.dir);
      if (plan.items.length === N + 1) break;
      await changes.next();
    }
    assert.ok(changes.seen.length > 0);
    for (const c of changes.seen) {
      assert.ok(c.paths.length <= 100, `${c.paths.length} paths in one event`);
      assert.deepEqual(c.kinds, ['flow-next']);
    }
  });

  it('.ijfw with a symlink loop and FIFOs in place of files: the watcher, the tree and ralph status go on', async () => {
    const checkpoint = JSON.stringify({
      schema_version: 1,
      wave_id: 'W1',
      sub_id: 'W1-S01',
      ts: '2026-12-01T09:00:00Z',
    });
    t = makeTempFolder('ralph-fifo-', {
      files: {
        '.ijfw/wave-W1/subagent-W1-S01.checkpoint.json': checkpoint,
        'quantum.json': quantum([{ id: 'US-001', title: 'Still here' }]),
      },
    });
    fs.symlinkSync('..', t.file('.ijfw/wave-W1/loop'));
    fs.symlinkSync('.', t.file('.ijfw/self'));
    execFileSync('mkfifo', [
      t.file('.ijfw/wave-W1/STATE.md'),
      t.file('.ijfw/wave-W1/subagent-W1-S02.checkpoint.json'),
      t.file('.ijfw/wave-W1/SUMMARY.md'),
    ]);
    watcher = new WorkspaceWatcher(t.dir);
    await watcher.ready();
    const changes = recordChanges(watcher);
    fs.writeFileSync(t.file('quantum.json'), quantum([{ id: 'US-001', title: 'Changed' }]));
    await changes.next((c) => c.kinds.includes('quantum'));
    const plan = await loadPlan(t.dir);
    assert.equal(plan.items.find((i) => i.id === 'US-001')?.title, 'Changed');
    const wave = plan.waves?.find((w) => w.wave_id === 'W1');
    assert.ok(wave, 'the wave is listed');
    assert.ok(wave.subagents.some((s) => s.sub_id === 'W1-S01'));
    const status = runCliCapped(t.dir, ['status', '--json']);
    assert.equal(status.code, 0, status.stderr);
    assert.ok(JSON.parse(status.stdout));
  });

  it('a 2 GB sparse checkpoint is refused by size, not read: the tree and ralph status stay small', async () => {
    t = makeTempFolder('ralph-sparse-', {
      files: {
        '.ijfw/wave-W1/subagent-W1-S01.checkpoint.json': JSON.stringify({
          schema_version: 1,
          wave_id: 'W1',
          sub_id: 'W1-S01',
          ts: '2026-12-01T09:00:00Z',
        }),
      },
    });
    const big = t.file('.ijfw/wave-W1/subagent-W1-S02.checkpoint.json');
    fs.writeFileSync(big, '{"schema_version": 1, "wave_id": "W1", "sub_id": "W1-S02", "last_action": "');
    fs.truncateSync(big, 2 * 1024 * MB);
    const rssBefore = process.memoryUsage().rss;
    const plan = await loadPlan(t.dir);
    const grew = process.memoryUsage().rss - rssBefore;
    assert.ok(grew < 256 * MB, `the plan read grew the process by ${Math.round(grew / MB)} MB`);
    const problems = JSON.stringify(plan);
    assert.match(problems, /too large|larger than|exceeds|over the/i, 'the checkpoint is named as too large');
    // The CLI under a 1 GB address-space cap: reading the file would need 2 GB.
    const status = runCliCapped(t.dir, ['status', '--json'], { asBytes: 1024 * MB });
    assert.equal(status.code, 0, status.stderr);
  });

  it('1 MB titles: the tree row and ralph status show a bounded line, and the plan keeps the whole title', async () => {
    const title = 'T'.repeat(MB);
    t = makeTempFolder('ralph-bigtitle-', {
      files: {
        'quantum.json': quantum([
          { id: 'US-001', title, status: 'in_progress' },
          { id: 'US-002', title },
        ]),
      },
    });
    const plan = await loadPlan(t.dir);
    assert.equal(plan.items.find((i) => i.id === 'US-001')?.title.length, MB, 'the plan graph keeps the file as is');
    const status = runCliCapped(t.dir, ['status']);
    assert.equal(status.code, 0, status.stderr);
    const longest = Math.max(...status.stdout.split('\n').map((l) => l.length));
    assert.ok(longest <= 1000, `ralph status prints a line of ${longest} characters`);
    // The Plan tree as VS Code asks it for rows (the fake vscode of the plain-Node tiers), on the plan as read.
    const tree = new PlanTreeProvider(new Logger(), {
      snapshot: () => ({ version: 1, folders: [{ folder: t.dir, name: 'ws', plan, starting: false }], runs: [] }),
      onDidChange: () => ({ dispose: () => undefined }),
    });
    const node = tree.node(`${t.dir}#quantum/story/US-001`);
    assert.ok(node, [...tree.rows().rows.keys()].join(', '));
    const row = tree.getTreeItem(node);
    const label = String(row.label);
    assert.ok(label.length <= 600, `a tree label of ${label.length} characters`);
    assert.match(label, /… \(\+1,04\d,\d{3} characters\)$/);
    const tip = tree.resolveTreeItem(row, node).tooltip as { value: string };
    assert.ok(tip.value.length <= 10_000, `a tooltip of ${tip.value.length} characters`);
  });
});
