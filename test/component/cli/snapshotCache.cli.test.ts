import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { runCli } from '../../support/cli';
import { pastTheTick, planFixture, useSnapshotCache } from '../../support/snapshotCacheHarness';
import { snapshotFile } from '../../../src/core/store/snapshotCache';
import { writeBaselineMirror } from '../../../src/core/loop/baselineMirror';

/**
 * The whole-answer cache of `ralph status` (core/store/snapshotCache.ts, answered by the tiny dist/cli.js): the
 * same output with and without it on every fixture and on generated plans, in both forms, and a fresh answer after
 * any change, including one within the timestamp tick of the cache write.
 * This file: the fixture folders without plans, and how entries are served, keyed, rebuilt and withheld. The others:
 * snapshotCacheFixtures, snapshotCacheChanges and snapshotCacheTaskChanges (the parallel tier runs them side by side).
 */
describe('cli: status snapshot cache', function () {
  // Hundreds of CLI processes per test: the limit catches a hang, it is no bound on a loaded machine's speed.
  this.timeout(600_000);
  const { cacheDir, entryOf, env, sameOnFixtures, folder, generated, sameCachedAndNot, status, uncached } =
    useSnapshotCache();

  it('every fixture folder without a plan: the same output cached and uncached', async () => {
    const { of } = await await sameOnFixtures('ralph-snap-fx-', (src) => !planFixture(src));
    assert.ok(of >= 5, `fixture folders without a plan: ${of}`);
  });

  it('an open claim baseline without a run record (its mirror outside the workspace): a task done or undone since == uncached (claims and progress follow the task)', async () => {
    // A run whose record is gone while its claims are open (the record deleted): no runs, so the answer is stored;
    // its mirror still makes every task done since the baseline an unverified claim, left out of progress.
    const ws = folder('ralph-snap-claims-');
    const state = folder('ralph-snap-claims-state-');
    const st = { XDG_STATE_HOME: state.dir };
    generated(ws, 20);
    await writeBaselineMirror(
      ws.dir,
      '20261201-000000-gone',
      { at: '2026-12-01T00:00:00.000Z', source: 'flow-next', label: '.flow', done: [] },
      st,
    );
    await pastTheTick();
    const plain = () => status(ws.dir, true, { ...st, RALPH_CACHE: '0' });
    const before = JSON.parse(plain()) as {
      unverified_claims: { id: string }[];
      runs: unknown[];
      recent_runs: unknown[];
    };
    assert.ok(
      before.unverified_claims.some((u) => u.id === 'fn-1.2'),
      'control: a done task is a claim',
    );
    assert.equal(before.runs.length + before.recent_runs.length, 0, 'control: no run record');
    assert.equal(status(ws.dir, true, st), plain());
    assert.ok(fs.existsSync(entryOf(ws.dir)), 'control: the answer is stored');
    const taskFile = (id: string) => path.join(ws.dir, '.flow', 'tasks', `${id}.json`);
    const edit = (id: string, over: Record<string, unknown>) =>
      fs.writeFileSync(
        taskFile(id),
        JSON.stringify(
          { ...(JSON.parse(fs.readFileSync(taskFile(id), 'utf8')) as Record<string, unknown>), ...over },
          null,
          2,
        ) + '\n',
      );
    // fn-1.5: todo, no state file, becomes done (a new claim); fn-1.2: done (a claim), becomes todo.
    edit('fn-1.5', { status: 'done', completed_at: '2026-12-02T00:00:00Z' });
    assert.equal(status(ws.dir, true, st), plain(), 'a task done since the baseline');
    assert.equal(status(ws.dir, false, st), status(ws.dir, false, { ...st, RALPH_CACHE: '0' }), 'text');
    edit('fn-1.2', { status: 'todo' });
    assert.equal(status(ws.dir, true, st), plain(), 'a claimed task undone');
  });

  it('serves the stored answer while nothing changed, and never once an input changed', async () => {
    const ws = folder('ralph-snap-serve-');
    generated(ws, 20);
    await pastTheTick();
    const plain = await uncached(ws.dir, true);
    status(ws.dir, true);
    const file = entryOf(ws.dir);
    const entry = JSON.parse(fs.readFileSync(file, 'utf8')) as {
      outputs: Record<string, string>;
      inputsByFolder: unknown;
    };
    // Stored by folder: `[folder, name, size, mtime, ctime, inode, name, …]`, size -1 for an absent input; a named
    // folder's entries by name alone.
    const inputs = (entry.inputsByFolder as (string | number)[][]).flatMap((run) => {
      const out: { path: string; absent: boolean; byName: boolean }[] = [];
      for (let j = 1; j < run.length; j += typeof run[j + 1] === 'number' ? 5 : 1)
        out.push({
          path: path.join(String(run[0]), String(run[j])),
          absent: run[j + 1] === -1,
          byName: typeof run[j + 1] !== 'number',
        });
      return out;
    });
    assert.ok(
      inputs.some((i) => i.byName && i.path === path.join(ws.dir, '.flow', 'tasks', 'fn-1.1.json')),
      'task files are inputs, stored by name',
    );
    assert.ok(
      inputs.some((i) => i.absent && i.path === path.join(ws.dir, 'PROMPT.md')),
      'absent sources are inputs',
    );
    // A planted answer, written an hour after its inputs: served, which shows the lookup answers alone.
    fs.writeFileSync(file, JSON.stringify({ ...entry, outputs: { json: 'PLANTED\n', text: 'PLANTED TEXT\n' } }));
    assert.equal(status(ws.dir, true), 'PLANTED\n');
    assert.equal(status(ws.dir, false), 'PLANTED TEXT\n');
    // Another build, another environment: not served.
    assert.notEqual(status(ws.dir, true, { FLOW_STATE_DIR: path.join(ws.dir, '.git', 'flow-state') }), 'PLANTED\n');
    ws.write('RALPH_TASK.md', '- [x] a\n- [x] b\n');
    assert.equal(status(ws.dir, true), await uncached(ws.dir, true));
    assert.notEqual(await uncached(ws.dir, true), plain);
  });

  it('next: the answer is keyed by the actor, and a planted answer shows a warm call is served', async () => {
    const ws = folder('ralph-snap-next-');
    generated(ws, 20);
    await pastTheTick();
    const first = runCli(ws.dir, ['next', '--json'], { ...env(), FLOW_ACTOR: 'alice' }).stdout;
    const file = snapshotFile(ws.dir, 'next-json', env());
    const entry = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
    fs.writeFileSync(file, JSON.stringify({ ...entry, outputs: { out: 'PLANTED\n' } }));
    assert.equal(runCli(ws.dir, ['next', '--json'], { ...env(), FLOW_ACTOR: 'alice' }).stdout, 'PLANTED\n');
    assert.equal(
      runCli(ws.dir, ['next', '--json'], { ...env(), FLOW_ACTOR: 'bob' }).stdout,
      runCli(ws.dir, ['next', '--json'], { ...env(), FLOW_ACTOR: 'bob', RALPH_CACHE: '0' }).stdout,
    );
    assert.ok(first.includes('"success": true'));
  });

  it('ignores a corrupt or foreign entry and rebuilds it; writes nothing into the workspace, nothing with RALPH_CACHE=0', async () => {
    const ws = folder('ralph-snap-corrupt-');
    generated(ws, 5);
    await pastTheTick();
    const before = fs.readdirSync(ws.dir, { recursive: true }).map(String).sort();
    const plain = await uncached(ws.dir, true);
    assert.equal(fs.existsSync(path.join(cacheDir(), 'ralph')), false, 'RALPH_CACHE=0 writes nothing');
    status(ws.dir, true);
    const file = entryOf(ws.dir);
    const good = fs.readFileSync(file, 'utf8');
    const foreign = {
      ...(JSON.parse(good) as Record<string, unknown>),
      folder: '/elsewhere',
      outputs: { json: 'X\n', text: 'X\n' },
    };
    for (const garbage of [
      '{"format": "ralph-snapshot-cache", "version": 1, "inputs": [',
      'null',
      '[]',
      JSON.stringify({ format: 'other' }),
      JSON.stringify(foreign),
      good.replace(/"inputsByFolder":\[/, '"inputsByFolder":[5,'),
    ]) {
      fs.writeFileSync(file, garbage);
      assert.equal(status(ws.dir, true), plain);
      assert.equal(
        (JSON.parse(fs.readFileSync(file, 'utf8')) as { format: string; folder: string }).folder,
        ws.dir,
        'rebuilt',
      );
    }
    assert.deepEqual(fs.readdirSync(ws.dir, { recursive: true }).map(String).sort(), before);
  });

  it('stores nothing while the folder has runs', async () => {
    const ws = folder('ralph-snap-runs-');
    generated(ws, 3);
    const run = path.join(ws.dir, 'scripts', 'ralph', 'runs', '2026-01-01-000000');
    fs.mkdirSync(run, { recursive: true });
    fs.writeFileSync(path.join(run, 'progress.txt'), 'iteration: 1\n');
    await pastTheTick();
    assert.equal((await sameCachedAndNot(ws.dir, 'runs')).stored, false);
  });
});
