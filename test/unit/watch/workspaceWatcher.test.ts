import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { kindOfPath, WorkspaceWatcher, type WorkspaceChange } from '../../../src/core/watch/workspaceWatcher';
import { makeTempDir } from '../../support/tempFolder';

function nextChange(w: WorkspaceWatcher): Promise<WorkspaceChange> {
  return new Promise((resolve) => w.once('change', resolve));
}

describe('the workspace watcher', () => {
  let dir: string;
  let watcher: WorkspaceWatcher | undefined;
  beforeEach(() => {
    dir = makeTempDir('ralph-watch-');
    fs.mkdirSync(path.join(dir, '.ralph'));
  });
  afterEach(async () => {
    await watcher?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('reports a sentinel file created under .ralph/', async () => {
    watcher = new WorkspaceWatcher(dir, { debounceMs: 20 });
    await watcher.ready();
    const change = nextChange(watcher);
    fs.writeFileSync(path.join(dir, '.ralph', 'stop-requested'), '');
    const c = await change;
    assert.deepEqual(c.kinds, ['ralph']);
    assert.deepEqual(c.paths, ['.ralph/stop-requested']);
  });

  it('reports a quantum.json that did not exist when watching began', async () => {
    watcher = new WorkspaceWatcher(dir, { debounceMs: 20 });
    await watcher.ready();
    const change = nextChange(watcher);
    fs.writeFileSync(path.join(dir, 'quantum.json'), '{}');
    assert.deepEqual((await change).kinds, ['quantum']);
  });

  it('batches a burst of writes into one change', async () => {
    watcher = new WorkspaceWatcher(dir, { debounceMs: 100 });
    await watcher.ready();
    const change = nextChange(watcher);
    fs.writeFileSync(path.join(dir, 'RALPH_TASK.md'), '- [ ] a\n');
    fs.writeFileSync(path.join(dir, '.ralph', 'handoff.md'), '# h\n');
    const c = await change;
    assert.deepEqual(c.kinds.sort(), ['checklist', 'ralph']);
  });

  it('maps paths to the artifact they belong to', () => {
    const table: [string, string | null][] = [
      ['.flow/tasks/fn-1.1.json', 'flow-next'],
      ['scripts/ralph/runs/x/PAUSE', 'flow-next'],
      ['quantum.json', 'quantum'],
      ['RALPH_TASK.md', 'checklist'],
      ['specs/auth/tasks.md', 'checklist'],
      ['specs/auth/plan.md', null],
      ['.ijfw/wave-1/a.checkpoint.json', 'waves'],
      ['.ralph/runs/r/run.json', 'ralph'],
      ['src/index.ts', null],
    ];
    for (const [p, kind] of table) assert.equal(kindOfPath(p), kind, p);
  });
});
