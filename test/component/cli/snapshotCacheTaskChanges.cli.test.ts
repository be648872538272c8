import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { readSnapshot } from '../../../src/core/store/snapshotCache';
import { pastTheTick, useSnapshotCache } from '../../support/snapshotCacheHarness';

/**
 * The whole-answer cache of `ralph status` (core/store/snapshotCache.ts, answered by the tiny dist/cli.js): the
 * same output with and without it on every fixture and on generated plans, in both forms, and a fresh answer after
 * any change, including one within the timestamp tick of the cache write.
 * This file: every kind of change to one task file, in the fixtures with flow-next tasks and in generated plans.
 */
describe('cli: status snapshot cache after a task file changed', function () {
  // Hundreds of CLI processes per test: the limit catches a hang, it is no bound on a loaded machine's speed.
  this.timeout(600_000);
  const { entryOf, env, fixtureCopies, folder, generated, keyOf, status, uncached } = useSnapshotCache();

  /**
   * Changes of one task file: after each, the CLI's answer must equal the uncached one.
   */
  const TASK_CHANGES: {
    name: string;
    apply: (task: Record<string, unknown>) => Record<string, unknown> | string;
  }[] = [
    {
      name: 'title (with a terminal escape)',
      apply: (t) => ({ ...t, title: `${String(t.title)} \u001b]0;x\u0007 changed` }),
    },
    {
      name: 'in progress with an assignee',
      apply: (t) => ({
        ...t,
        status: 'in_progress',
        assignee: 'bot@example.invalid',
        claimed_at: '2026-02-01T00:00:00Z',
      }),
    },
    {
      name: 'done, the newest completion',
      apply: (t) => ({ ...t, status: 'done', completed_at: '2027-03-01T00:00:00Z' }),
    },
    { name: 'todo', apply: (t) => ({ ...t, status: 'todo' }) },
    { name: 'an unknown status', apply: (t) => ({ ...t, status: 'weird' }) },
    {
      name: 'blocked with a reason',
      apply: (t) => ({ ...t, status: 'blocked', blocked_reason: 'waits on a human' }),
    },
    {
      name: 'blocked without a reason (read from the markdown)',
      apply: (t) => ({ ...t, status: 'blocked', blocked_reason: null }),
    },
    {
      name: 'other dependencies',
      apply: (t) => ({ ...t, depends_on: [...((t.depends_on as string[] | undefined) ?? []), 'fn-1.1'] }),
    },
    { name: 'another id', apply: (t) => ({ ...t, id: `${String(t.id)}9` }) },
    { name: 'another epic', apply: (t) => ({ ...t, epic: 'fn-77' }) },
    { name: 'not JSON', apply: (t) => JSON.stringify(t).slice(0, -1) },
    { name: 'a schema error', apply: (t) => ({ ...t, depends_on: 'fn-1.1' }) },
  ];

  /**
   * For every task change, then an atomic rewrite and a new file in the folder, then a change of its state file (when
   * it has one): the CLI prints the uncached answer in both forms. The change is made within the racy tick, so
   * nothing is stored and each case is looked up against the same stored answer.
   */
  async function sameAfterTaskChanges(dir: string, what: string, taskIds: readonly string[]): Promise<number> {
    status(dir, true);
    let checked = 0;
    for (const id of taskIds) {
      const file = path.join(dir, '.flow', 'tasks', `${id}.json`);
      assert.ok(fs.existsSync(file), `${what}: ${id} has a task file`);
      const original = fs.readFileSync(file, 'utf8');
      try {
        for (const change of TASK_CHANGES) {
          const next = change.apply(JSON.parse(original) as Record<string, unknown>);
          fs.writeFileSync(file, typeof next === 'string' ? next : JSON.stringify(next, null, 2) + '\n');
          // The stored answer is not served once the file changed (looked up in this process, by the entry's own key);
          // the CLI itself for every third change, in turn in each form (a process, and the uncached answer in this one).
          assert.equal(readSnapshot(keyOf(dir), env()).answer, undefined, `${what} ${id} ${change.name}: not served`);
          const k = TASK_CHANGES.indexOf(change);
          if (k % 6 === 3)
            assert.equal(status(dir, false), await uncached(dir, false), `${what} ${id} ${change.name}: cli text`);
          else if (k % 6 === 0)
            assert.equal(status(dir, true), await uncached(dir, true), `${what} ${id} ${change.name}: cli json`);
          checked++;
        }
        // Rewritten atomically (a temporary file, then a rename): the folder's mtime moves, its names do not.
        const tmp = `${file}.tmp`;
        fs.writeFileSync(tmp, original.replace(/"title": "/, '"title": "renamed '));
        fs.renameSync(tmp, file);
        assert.equal(readSnapshot(keyOf(dir), env()).answer, undefined, `${what} ${id}: atomic rewrite, not served`);
        const tasksDir = path.dirname(file);
        fs.writeFileSync(path.join(tasksDir, 'zz-new.json'), '{}');
        assert.equal(status(dir, true), await uncached(dir, true), `${what} ${id}: a new name in the folder`);
        fs.rmSync(path.join(tasksDir, 'zz-new.json'));
      } finally {
        fs.writeFileSync(file, original);
      }
    }
    return checked;
  }

  it('after a task file changed == uncached: every fixture folder with flow-next tasks, and generated plans', async () => {
    const dirs = fixtureCopies('ralph-snap-change-fx-', (src) => fs.existsSync(path.join(src, '.flow', 'tasks')));
    const plans = [1, 50, 300].map((n) => {
      const ws = folder('ralph-snap-change-gen-');
      generated(ws, n);
      return { dir: ws.dir, n };
    });
    await pastTheTick();
    let checked = 0;
    let folders = 0;
    for (const dir of dirs) {
      status(dir, true);
      if (!fs.existsSync(entryOf(dir))) continue; // runs or waves: nothing stored
      const first = fs
        .readdirSync(path.join(dir, '.flow', 'tasks'))
        .filter((n) => /^fn-.*\.json$/.test(n))
        .sort()[0];
      if (!first) continue;
      checked += await sameAfterTaskChanges(dir, dir, [first.replace(/\.json$/, '')]);
      folders++;
    }
    // fn-1.1 has a state file (generated: every third task), fn-1.2 has none.
    for (const { dir, n } of plans)
      checked += await sameAfterTaskChanges(
        dir,
        `${n}`,
        n === 1 ? ['fn-1.1'] : n === 50 ? ['fn-1.2'] : ['fn-1.1', 'fn-1.2'],
      );
    assert.ok(folders >= 1, `fixture folders checked: ${folders}`);
    assert.ok(checked > 0);
  });
});
