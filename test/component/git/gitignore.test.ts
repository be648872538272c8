import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { ensureRalphIgnored } from '../../../src/core/git/gitState';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';
import { gitInit } from '../../support/workspace';

/** Issue 12: `.ralph/` is added to .gitignore by replacing the file atomically, never through a link leaving the workspace. */
describe('engine: .gitignore (issue 12)', () => {
  let t: TempFolder;
  let outside: TempFolder;
  beforeEach(() => {
    t = makeTempFolder('ralph-ignore-', { ralphDir: true });
    outside = makeTempFolder('ralph-ignore-outside-');
    gitInit(t);
  });
  afterEach(() => {
    t.dispose();
    outside.dispose();
  });

  it('adds .ralph/ keeping the lines before it, as a new file (not appended in place)', async () => {
    t.write('.gitignore', 'node_modules\ndist');
    const inode = fs.statSync(t.file('.gitignore')).ino;
    assert.equal(await ensureRalphIgnored(t.dir), true);
    assert.equal(t.read('.gitignore'), 'node_modules\ndist\n.ralph/\n');
    assert.notEqual(
      fs.statSync(t.file('.gitignore')).ino,
      inode,
      'replaced by a rename, so a kill leaves the old or the new file',
    );
  });

  it('refuses a .gitignore linked outside the workspace and leaves the target alone', async () => {
    const target = outside.write('gitignore', 'secret\n');
    fs.symlinkSync(target, t.file('.gitignore'));
    await assert.rejects(
      ensureRalphIgnored(t.dir),
      /\.gitignore: refused: a symbolic link to .*, outside the workspace/,
    );
    assert.equal(outside.read('gitignore'), 'secret\n');
  });
});
