import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { writeTextAtomic } from '../../../src/core/store/atomicWrite';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

/**
 * writeTextAtomic does what write-file-atomic did for it (store/atomicWrite.ts): a new file, an existing file's mode
 * kept, a link written through to its target, writes to one file one after the other, and no temporary file left.
 */
describe('store: writeTextAtomic', () => {
  let t: TempFolder;
  beforeEach(() => {
    t = makeTempFolder('ralph-atomic-');
  });
  afterEach(() => t.dispose());
  const leftovers = () => fs.readdirSync(t.dir).filter((n) => /\.\d+$/.test(n));

  it('creates a file, replaces it keeping its mode, and leaves no temporary file', async () => {
    const f = path.join(t.dir, 'a.json');
    await writeTextAtomic(f, 'one\n');
    assert.equal(fs.readFileSync(f, 'utf8'), 'one\n');
    fs.chmodSync(f, 0o600);
    const inode = fs.statSync(f).ino;
    await writeTextAtomic(f, 'two\n');
    assert.equal(fs.readFileSync(f, 'utf8'), 'two\n');
    assert.equal(fs.statSync(f).mode & 0o777, 0o600);
    assert.notEqual(fs.statSync(f).ino, inode, 'replaced by a rename, not written in place');
    assert.deepEqual(leftovers(), []);
  });

  it('writes through a symbolic link to its target, the link kept', async () => {
    const target = path.join(t.dir, 'target.txt');
    fs.writeFileSync(target, 'old');
    const link = path.join(t.dir, 'link.txt');
    fs.symlinkSync(target, link);
    await writeTextAtomic(link, 'new');
    assert.equal(fs.lstatSync(link).isSymbolicLink(), true);
    assert.equal(fs.readFileSync(target, 'utf8'), 'new');
    assert.deepEqual(leftovers(), []);
  });

  it('runs writes of one file one after the other: the last one called wins', async () => {
    const f = path.join(t.dir, 'b.json');
    await Promise.all(Array.from({ length: 20 }, (_, i) => writeTextAtomic(f, `${i}\n`)));
    assert.equal(fs.readFileSync(f, 'utf8'), '19\n');
    assert.deepEqual(leftovers(), []);
  });

  it('rejects when the folder is missing, and leaves nothing behind', async () => {
    await assert.rejects(writeTextAtomic(path.join(t.dir, 'none', 'c.json'), 'x'), { code: 'ENOENT' });
    assert.deepEqual(fs.readdirSync(t.dir), []);
  });
});
