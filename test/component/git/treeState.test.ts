import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { treeState } from '../../../src/core/git/gitState';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';
import { git, gitInit } from '../../support/workspace';

/** Issue 19: the tree state a lane compares before skipping a final gate that would repeat a green one (git.ts treeState). */
describe("engine: the working tree's state (issue 19, git.ts treeState)", () => {
  let t: TempFolder;
  beforeEach(() => {
    t = makeTempFolder('ralph-tree-', { files: { 'a.txt': 'a\n', '.gitignore': '.ralph/\n' } });
    gitInit(t, { commit: true });
  });
  afterEach(() => t.dispose());

  it('is the same while nothing changes, and ignores ignored files such as .ralph/', async () => {
    const s = await treeState(t.dir);
    assert.ok(s);
    t.write('.ralph/handoff.md', 'notes\n');
    assert.equal(await treeState(t.dir), s);
  });

  it('changes with a commit, a new file, an edit, an edit of an already modified file, a deletion and the index', async () => {
    const seen = new Set<string | null>([await treeState(t.dir)]);
    const step = async (what: string, f: () => void) => {
      f();
      const s = await treeState(t.dir);
      assert.ok(!seen.has(s), `${what} changed nothing`);
      seen.add(s);
    };
    await step('a new file', () => t.write('b.txt', 'b\n'));
    await step('an edit', () => t.write('a.txt', 'a2\n'));
    await step('another edit of the modified file', () => {
      t.write('a.txt', 'a3 longer\n');
    });
    await step('staging it', () => git(t.dir, 'add', 'a.txt'));
    await step('a commit', () => git(t.dir, 'commit', '-qam', 'x'));
    await step('a deletion', () => fs.rmSync(t.file('a.txt')));
  });

  it('is null outside a git repository', async () => {
    const plain = makeTempFolder('ralph-tree-plain-');
    try {
      assert.equal(await treeState(plain.dir), null);
    } finally {
      plain.dispose();
    }
  });
});
