import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { flowJson } from '../../support/workspace';
import { pastTheTick, useSnapshotCache } from '../../support/snapshotCacheHarness';

/**
 * The whole-answer cache of `ralph status` (core/store/snapshotCache.ts, answered by the tiny dist/cli.js): the
 * same output with and without it on every fixture and on generated plans, in both forms, and a fresh answer after
 * any change, including one within the timestamp tick of the cache write.
 * This file: generated plans of 1, 50 and 700 items and each kind of change to them.
 */
describe('cli: status snapshot cache on generated plans', function () {
  // Hundreds of CLI processes per test: the limit catches a hang, it is no bound on a loaded machine's speed.
  this.timeout(600_000);
  const { folder, generated, sameCachedAndNot, sameNext, status, uncached } = useSnapshotCache();

  it('generated plans: the same cold, warm, and after each kind of change (in place within the tick, in place with an old mtime, new file, removed file, new source)', async () => {
    const plans = [1, 50, 700].map((n) => {
      const ws = folder('ralph-snap-gen-');
      generated(ws, n);
      return { ws, n };
    });
    await pastTheTick();
    for (const { ws, n } of plans) {
      assert.equal((await sameCachedAndNot(ws.dir, `${n}`)).stored, true, `${n}: stored`);
      const id = n === 1 ? 'fn-1.1' : 'fn-1.5';
      const file = path.join(ws.dir, '.flow', 'tasks', `${id}.json`);
      const text = fs.readFileSync(file, 'utf8');
      const st = fs.statSync(file);
      // Within the tick of the cache write, the same size, the old mtime put back: only ctime and the racy rule tell.
      fs.writeFileSync(
        file,
        text.replace(/"status": "\w+"/, '"status": "done"').replace(/"title": "[^"]*"/, (t) => t.slice(0, -2) + 'X"'),
      );
      fs.utimesSync(file, st.atime, st.mtime);
      assert.equal(fs.statSync(file).size, st.size);
      assert.equal(status(ws.dir, true), await uncached(ws.dir, true), `${n}: changed within the tick`);
      await sameNext(ws.dir, `${n}: changed within the tick`);
      // Another change, with an mtime an hour back (an editor or a checkout that sets times).
      fs.writeFileSync(
        file,
        flowJson({ id, epic: 'fn-1', title: 'Changed', status: 'blocked', depends_on: [], blocked_reason: 'why' }),
      );
      fs.rmSync(path.join(ws.dir, '.git', 'flow-state', 'tasks', `${id}.state.json`), { force: true });
      const old = (Date.now() - 3_600_000) / 1000;
      fs.utimesSync(file, old, old);
      const after = JSON.parse(status(ws.dir, true)) as { blocked: { id: string; reason: string }[] };
      assert.equal(after.blocked.find((b) => b.id === id)?.reason, 'why', `${n}: the change is seen`);
      assert.equal(status(ws.dir, true), await uncached(ws.dir, true));
      // A new task file, a removed one, a new source.
      ws.write(
        '.flow/tasks/fn-999.1.json',
        flowJson({ id: 'fn-999.1', epic: 'fn-1', title: 'New', status: 'todo', depends_on: [] }),
      );
      assert.equal(status(ws.dir, true), await uncached(ws.dir, true), `${n}: new file`);
      fs.rmSync(path.join(ws.dir, '.flow', 'tasks', 'fn-999.1.json'));
      assert.equal(status(ws.dir, true), await uncached(ws.dir, true), `${n}: removed file`);
      ws.write('PROMPT.md', '- [ ] new source\n');
      assert.equal(status(ws.dir, false), await uncached(ws.dir, false), `${n}: new source`);
      await sameNext(ws.dir, `${n}: new source`);
    }
  });
});
