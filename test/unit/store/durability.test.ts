import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { writeTextAtomic } from '../../../src/core/store/atomicWrite';
import { markScratch, needsSync } from '../../../src/core/store/durability';
import { commitPlan } from '../../../src/core/store/writePlan';

describe('store: scratch folders skip fsync (durability.ts)', () => {
  // Marks are for the whole process: a folder of this test only.
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'ralph-scratch-'));
  const scratch = path.join(root, 'lanes');
  before(() => {
    fs.mkdirSync(scratch);
    markScratch(scratch);
  });
  after(() => fs.rmSync(root, { recursive: true, force: true }));

  it('a file under a marked folder needs no sync; one beside it, or in a folder whose name only begins alike, does', () => {
    assert.equal(needsSync(path.join(scratch, 'a', 'run.json')), false);
    assert.equal(needsSync(path.join(scratch, '..', 'lanes', 'x')), false);
    assert.equal(needsSync(path.join(root, 'lanes2', 'x')), true);
    assert.equal(needsSync(path.join(root, 'x')), true);
    assert.equal(needsSync(scratch), true, 'the folder itself is not under itself');
  });

  it('writes into a scratch folder still replace the file whole', async () => {
    const file = path.join(scratch, 'note.txt');
    await writeTextAtomic(file, 'one\n');
    await writeTextAtomic(file, 'two\n');
    assert.equal(fs.readFileSync(file, 'utf8'), 'two\n');
    assert.deepEqual(fs.readdirSync(scratch), ['note.txt'], 'no temporary file left');
  });

  it('a plan committed into a scratch folder (run.json writes) replaces the file whole', async () => {
    const file = path.join(scratch, 'run.json');
    await commitPlan(file, async () => ({ writes: [{ file, before: undefined, after: '{"a":1}\n' }], result: null }));
    await commitPlan(file, async () => ({ writes: [{ file, before: '{"a":1}\n', after: '{"a":2}\n' }], result: null }));
    assert.equal(fs.readFileSync(file, 'utf8'), '{"a":2}\n');
    assert.deepEqual(
      fs.readdirSync(scratch).filter((f) => f.endsWith('.tmp')),
      [],
    );
  });
});
