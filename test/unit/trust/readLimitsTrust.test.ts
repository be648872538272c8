import * as assert from 'node:assert/strict';
import { DEFAULT_READ_LIMITS, readLimitFor, setReadLimits } from '../../../src/core/store/readJsonFile';
import { applyFolderReadLimits, loadConfig } from '../../../src/core/store/loadConfig';
import { boundedReadLimits, readLimitLine, type ReadLimitsMb } from '../../../src/core/trust/readLimitsTrust';
import { contentLines, trustedContent } from '../../../src/core/trust/trustedContent';
import { writeTrustRecord } from '../../../src/core/trust/trustStore';
import { readTrustedContent } from '../../../src/core/trust/workspaceTrust';
import { decideTrust } from '../../../src/core/trust/trustDecision';
import { settingsReadLimits } from '../../../src/extension/settings';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

const MB = 1024 * 1024;

/** `readLimits` is not trusted content: a workspace may lower the input bounds, and raise them only once trusted. */
describe('trust: a workspace cannot lift the input bounds', () => {
  const cases: [string, ReadLimitsMb | undefined, string[] | null, boolean, ReadLimitsMb][] = [
    ['nothing set', undefined, null, false, {}],
    ['a lower bound holds', { jsonMb: 1, textMb: 2 }, null, false, { jsonMb: 1, textMb: 2 }],
    ['the default holds', { jsonMb: 64 }, null, false, { jsonMb: 64 }],
    ['a raise without trust is dropped', { jsonMb: 100_000, textMb: 4 }, null, false, { textMb: 4 }],
    ['a raise the record holds stays', { jsonMb: 100 }, [readLimitLine('jsonMb', 100)], false, { jsonMb: 100 }],
    ['a record of another raise does not count', { jsonMb: 1000 }, [readLimitLine('jsonMb', 100)], false, {}],
    ['an override (--trust, RALPH_TRUST=1) lets a raise hold', { textMb: 500 }, null, true, { textMb: 500 }],
  ];
  for (const [name, limits, lines, override, expected] of cases)
    it(name, () => assert.deepEqual(boundedReadLimits(limits, lines, override), expected));

  it('a raise is trusted content (only the raised fields), a lowering is not', () => {
    assert.deepEqual(contentLines(trustedContent({ config: { readLimits: { jsonMb: 100_000, textMb: 1 } } })), [
      '.ralph/config.json readLimits.jsonMb = 100000',
    ]);
    assert.deepEqual(trustedContent({ config: { readLimits: { jsonMb: 1, textMb: 1 } } }), []);
  });

  it("workspace settings may only lower; the user's own settings may raise", () => {
    assert.deepEqual(settingsReadLimits(undefined, { jsonMb: 100_000, textMb: 2 }), { jsonMb: 64, textMb: 2 });
    assert.deepEqual(settingsReadLimits({ jsonMb: 500 }, { jsonMb: 100_000 }), { jsonMb: 500 });
    assert.deepEqual(settingsReadLimits({ jsonMb: 500 }, { jsonMb: 100 }), { jsonMb: 100 });
    assert.equal(settingsReadLimits(undefined, undefined), undefined);
  });

  describe('the store follows it (every command, the extension)', () => {
    let t: TempFolder;
    let savedState: string | undefined;
    let savedTrust: string | undefined;
    beforeEach(() => {
      t = makeTempFolder('ralph-limits-trust-', { ralphDir: true });
      savedState = process.env.XDG_STATE_HOME;
      savedTrust = process.env.RALPH_TRUST;
      process.env.XDG_STATE_HOME = t.file('state');
      delete process.env.RALPH_TRUST;
    });
    afterEach(() => {
      process.env.XDG_STATE_HOME = savedState;
      if (savedTrust === undefined) delete process.env.RALPH_TRUST;
      else process.env.RALPH_TRUST = savedTrust;
      setReadLimits();
      t.dispose();
    });

    it('jsonMb 100000 in an untrusted .ralph/config.json keeps the 64 MiB bound; trusted, it holds', async () => {
      t.write('.ralph/config.json', JSON.stringify({ readLimits: { jsonMb: 100_000, textMb: 1 } }));
      applyFolderReadLimits(t.dir);
      assert.equal(readLimitFor('quantum.json'), DEFAULT_READ_LIMITS.jsonBytes);
      assert.equal(readLimitFor('RALPH_TASK.md'), 1 * MB, 'a lower bound holds');
      const cfg = await loadConfig(t.dir);
      assert.deepEqual(cfg.readLimits, { textMb: 1 });
      assert.equal(readLimitFor('quantum.json'), DEFAULT_READ_LIMITS.jsonBytes);

      const verdict = decideTrust(await readTrustedContent(t.dir), null);
      assert.equal(verdict.state, 'untrusted');
      await writeTrustRecord(t.dir, { hash: verdict.hash, lines: verdict.lines });
      applyFolderReadLimits(t.dir);
      assert.equal(readLimitFor('quantum.json'), 100_000 * MB);
      await loadConfig(t.dir);
      assert.equal(readLimitFor('quantum.json'), 100_000 * MB);
    });
  });
});
