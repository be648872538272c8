import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { lockFaults, tryHoldLock } from '../../../src/core/store/fileLock';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

/** Issue 12: one run per folder, also when two starts recover a stale lock together (fault injection, not repetition). */
describe('store: engine lock takeover (issue 12)', function () {
  this.timeout(30_000);
  let t: TempFolder;
  beforeEach(() => {
    t = makeTempFolder('ralph-lock-', { ralphDir: true });
  });
  afterEach(() => {
    delete lockFaults.afterTake;
    t.dispose();
  });

  it('a second start while the first has taken a stale lock but not yet named itself does not take it too', async () => {
    const target = t.file('.ralph/engine');
    // A lock left by a SIGKILLed engine: the lock folder and a pid that is not alive.
    fs.mkdirSync(`${target}.lock`);
    fs.writeFileSync(`${target}.pid`, '4194303\n');
    let second: Promise<(() => Promise<void>) | null> | undefined;
    lockFaults.afterTake = async () => {
      delete lockFaults.afterTake;
      second = tryHoldLock(target, () => undefined); // the other `ralph run`, right in the window
      await new Promise((r) => setTimeout(r, 300));
    };
    const first = await tryHoldLock(target, () => undefined);
    const other = await second!;
    assert.ok(first, 'the first start holds the lock');
    assert.equal(other, null, 'the second start is refused: one run per folder');
    assert.equal(fs.readFileSync(`${target}.pid`, 'utf8'), `${process.pid}\n`);
    await first();
  });
});
