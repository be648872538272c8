import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';
import { writeTextAtomic } from '../../../src/core/store/atomicWrite';

describe('store: writeTextAtomic, the atomic write of files outside a plan', () => {
  let t: TempFolder;
  beforeEach(() => {
    t = makeTempFolder('ralph-atomic-');
  });
  afterEach(() => t.dispose());

  const leftovers = (dir: string): string[] => fs.readdirSync(dir).filter((f) => f.endsWith('.tmp'));

  it('writes a new file and replaces an existing one, leaving no temporary file', async () => {
    const file = path.join(t.dir, 'state.json');
    await writeTextAtomic(file, 'one\n');
    assert.equal(fs.readFileSync(file, 'utf8'), 'one\n');
    await writeTextAtomic(file, 'two\n');
    assert.equal(fs.readFileSync(file, 'utf8'), 'two\n');
    assert.deepEqual(leftovers(t.dir), []);
  });

  it('renames writes of one file in call order: the last call wins, however their fsyncs finish', async () => {
    const file = path.join(t.dir, 'record.json');
    await Promise.all(Array.from({ length: 20 }, (_, i) => writeTextAtomic(file, `write ${i}\n`)));
    assert.equal(fs.readFileSync(file, 'utf8'), 'write 19\n');
    assert.deepEqual(leftovers(t.dir), []);
  });

  it("keeps the mode of the file it replaces, exactly (not the umask's)", async () => {
    const file = path.join(t.dir, 'kept.md');
    fs.writeFileSync(file, 'before\n');
    fs.chmodSync(file, 0o640);
    await writeTextAtomic(file, 'after\n');
    assert.equal(fs.statSync(file).mode & 0o777, 0o640);
  });

  it('creates a file with the mode asked for (0o600: never readable by others, not even while written)', async () => {
    const file = path.join(t.dir, 'policy.toml');
    await writeTextAtomic(file, 'secret\n', { mode: 0o600 });
    assert.equal(fs.statSync(file).mode & 0o777, 0o600);
  });

  it('replaces a link at the path instead of writing through it: the link target is untouched', async () => {
    const outside = path.join(t.dir, 'outside.txt');
    fs.writeFileSync(outside, 'the user file\n');
    const file = path.join(t.dir, 'handoff.md');
    fs.symlinkSync(outside, file);
    await writeTextAtomic(file, 'handoff\n');
    assert.equal(fs.readFileSync(outside, 'utf8'), 'the user file\n');
    assert.equal(fs.lstatSync(file).isSymbolicLink(), false);
    assert.equal(fs.readFileSync(file, 'utf8'), 'handoff\n');
  });

  it('rejects with the error when the folder is missing, and a later write of the file still runs', async () => {
    const file = path.join(t.dir, 'missing', 'state.json');
    await assert.rejects(writeTextAtomic(file, 'x'), /ENOENT/);
    fs.mkdirSync(path.dirname(file));
    await writeTextAtomic(file, 'y');
    assert.equal(fs.readFileSync(file, 'utf8'), 'y');
    assert.deepEqual(leftovers(path.dirname(file)), []);
  });
});
