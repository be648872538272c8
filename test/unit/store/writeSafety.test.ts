import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';
import { commitPlan, MAX_PLAN_ATTEMPTS, writeFaults } from '../../../src/core/store/writePlan';
import { FileProblemError } from '../../../src/core/store/parseError';
import { startItem } from '../../../src/core/sources/operations';
import { readTextSync } from '../../../src/core/store/readJsonFile';

/** Issue 12: no lost update, and records (files) that cannot be turned against us, through the store's one writer. */
describe('store: write safety (issue 12)', () => {
  let t: TempFolder;
  beforeEach(() => {
    t = makeTempFolder('ralph-write-', { ralphDir: true });
  });
  afterEach(() => {
    delete writeFaults.betweenReadAndWrite;
    t.dispose();
  });

  const quantum = (stories: { id: string; title: string; status?: string }[]) =>
    JSON.stringify(
      { project: 'p', branchName: 'b', stories: stories.map((s) => ({ ...s, passes: false, dependsOn: [] })) },
      null,
      2,
    ) + '\n';

  it("an editor saving between the engine's read and its write is not lost: the edit is redone on the new content", async () => {
    t.write(
      'quantum.json',
      quantum([
        { id: 'US-1', title: 'one', status: 'pending' },
        { id: 'US-2', title: 'two', status: 'pending' },
      ]),
    );
    let saved = false;
    writeFaults.betweenReadAndWrite = () => {
      if (saved) return;
      saved = true; // the editor's save: a newer file the engine did not read
      t.write(
        'quantum.json',
        quantum([
          { id: 'US-1', title: 'one', status: 'pending' },
          { id: 'US-2', title: 'two, renamed in the editor', status: 'pending' },
        ]),
      );
    };
    await startItem('US-1', { folder: t.dir, actor: 'tester' });
    const after = JSON.parse(t.read('quantum.json')) as { stories: { id: string; title: string; status: string }[] };
    assert.equal(after.stories[1]?.title, 'two, renamed in the editor', "the editor's save survived");
    assert.equal(after.stories[0]?.status, 'in_progress', "and the engine's edit was made on it");
  });

  it('fsyncs the temporary file and the folder off the main thread (issue 19 bench: no fsyncSync in a write)', async () => {
    const file = t.write('notes.txt', 'v0\n');
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const mod = require('node:fs') as Record<string, unknown>;
    const [syncOrig, asyncOrig] = [
      mod.fsyncSync as (...a: unknown[]) => unknown,
      mod.fsync as (...a: unknown[]) => unknown,
    ];
    let sync = 0;
    let off = 0;
    mod.fsyncSync = (...a: unknown[]) => {
      sync++;
      return syncOrig(...a);
    };
    mod.fsync = (...a: unknown[]) => {
      off++;
      return asyncOrig(...a);
    };
    try {
      await commitPlan(file, async () => ({
        writes: [{ file, before: readTextSync(file), after: 'v1\n' }],
        result: undefined,
      }));
    } finally {
      mod.fsyncSync = syncOrig;
      mod.fsync = asyncOrig;
    }
    assert.equal(t.read('notes.txt'), 'v1\n');
    assert.deepEqual({ sync, off }, { sync: 0, off: 2 });
    assert.deepEqual(
      fs.readdirSync(t.dir).filter((f) => f.endsWith('.tmp')),
      [],
    );
  });

  it('a writer that keeps losing the race gives up without writing, naming the file', async () => {
    const file = t.write('notes.txt', 'v0\n');
    let n = 0;
    writeFaults.betweenReadAndWrite = () => {
      fs.writeFileSync(file, `editor ${++n}\n`);
    };
    await assert.rejects(
      commitPlan(file, async () => ({
        writes: [{ file, before: readTextSync(file), after: 'ours\n' }],
        result: undefined,
      })),
      (e: Error) =>
        e instanceof FileProblemError &&
        /changed by another writer while being edited, 5 times: not written/.test(e.message),
    );
    assert.equal(n, MAX_PLAN_ATTEMPTS);
    assert.equal(t.read('notes.txt'), `editor ${n}\n`);
  });

  it('a file created meanwhile is not replaced by a plan that saw none', async () => {
    const file = t.file('new.txt');
    let once = false;
    writeFaults.betweenReadAndWrite = () => {
      if (!once) {
        once = true;
        fs.writeFileSync(file, 'theirs\n');
      }
    };
    const seen: (string | undefined)[] = [];
    await commitPlan(file, async () => {
      const before = readTextSync(file);
      seen.push(before);
      return { writes: [{ file, before, after: `${before ?? ''}ours\n` }], result: undefined };
    });
    assert.deepEqual(seen, [undefined, 'theirs\n']);
    assert.equal(t.read('new.txt'), 'theirs\nours\n');
  });

  it('a file that is not UTF-8 is refused for editing, naming it, and keeps its bytes', async () => {
    const file = t.file('RALPH_TASK.md');
    const bytes = Buffer.from('- [ ] Caf\xe9\n', 'latin1');
    fs.writeFileSync(file, bytes);
    await assert.rejects(
      commitPlan(file, async () => ({
        writes: [{ file, before: readTextSync(file), after: '- [x] Caf\ufffd\n' }],
        result: undefined,
      })),
      (e: Error) =>
        e instanceof FileProblemError &&
        e.message ===
          `${file}: refused: the file is not UTF-8 text (editing it would replace its other bytes): not edited`,
    );
    assert.ok(fs.readFileSync(file).equals(bytes));
  });

  it('a mode-444 file is not replaced (checked by its mode bits: root would not be stopped)', async () => {
    const file = t.write('quantum.json', quantum([{ id: 'US-1', title: 'one', status: 'pending' }]));
    fs.chmodSync(file, 0o444);
    const before = t.read('quantum.json');
    await assert.rejects(
      startItem('US-1', { folder: t.dir, actor: 'tester' }),
      /quantum\.json: refused: the file is read-only \(mode 0444\): not written/,
    );
    assert.equal(t.read('quantum.json'), before);
    assert.equal(fs.statSync(file).mode & 0o777, 0o444);
  });

  it('a write never follows a link out of the workspace; a link inside it is written through and stays a link', async () => {
    const outside = makeTempFolder('ralph-outside-');
    try {
      const target = outside.write('quantum.json', quantum([{ id: 'US-1', title: 'one', status: 'pending' }]));
      fs.symlinkSync(target, t.file('quantum.json'));
      const before = outside.read('quantum.json');
      await assert.rejects(
        startItem('US-1', { folder: t.dir, actor: 'tester' }),
        /refused: a symbolic link to .*quantum\.json, outside the workspace: not written through/,
      );
      assert.equal(outside.read('quantum.json'), before);

      fs.unlinkSync(t.file('quantum.json'));
      t.write('plans/q.json', before);
      fs.symlinkSync(path.join('plans', 'q.json'), t.file('quantum.json'));
      await startItem('US-1', { folder: t.dir, actor: 'tester' });
      assert.ok(fs.lstatSync(t.file('quantum.json')).isSymbolicLink());
      assert.match(t.read('plans/q.json'), /"status": "in_progress"/);
    } finally {
      outside.dispose();
    }
  });
});
