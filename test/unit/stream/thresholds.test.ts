import * as assert from 'node:assert/strict';
import { defaultThresholds, isOneMillionModel, resolveThresholds } from '../../../src/core/stream/thresholds';

describe('context thresholds (seed-systems.md §3.4)', () => {
  const table: [string, string | null, string | null, number, number][] = [
    ['claude with a [1m] model pins warn at 250 000 and rotates at 300 000', 'claude', 'opus[1m]', 250_000, 300_000],
    ['claude matches [1M] in any letter case', 'claude', 'claude-opus-4-6[1M]', 250_000, 300_000],
    ['claude with another model warns at 7/8 of 170 000', 'claude', 'claude-sonnet-4-5', 148_750, 170_000],
    ['claude without a model uses the 170 000 row', 'claude', null, 148_750, 170_000],
    ['cursor-agent warns at 7/8 of 150 000', 'cursor-agent', 'composer-2', 131_250, 150_000],
    ['cursor-agent ignores [1m] (only claude has the pinned row)', 'cursor-agent', 'x[1m]', 131_250, 150_000],
    ['an agent with no threshold row uses the cursor-agent / other row', 'codex', null, 131_250, 150_000],
    ['no known agent falls back to 70 000 / 80 000', null, null, 70_000, 80_000],
  ];
  for (const [name, agent, model, warn, rotate] of table) {
    it(name, () => {
      const t = defaultThresholds(agent, model);
      assert.deepEqual([t.warn, t.rotate], [warn, rotate]);
    });
  }

  it('recognises [1m] anywhere in the model id', () => {
    assert.equal(isOneMillionModel('sonnet[1m]'), true);
    assert.equal(isOneMillionModel('claude-opus-4-6'), false);
    assert.equal(isOneMillionModel(null), false);
  });

  it('a configured rotate threshold warns at 7/8 of it', () => {
    const t = resolveThresholds('claude', 'opus[1m]', { rotateThresholdTokens: 80_000 });
    assert.deepEqual([t.warn, t.rotate, t.source], [70_000, 80_000, 'config']);
  });

  it('a configured warn threshold keeps the default rotate', () => {
    const t = resolveThresholds('claude', 'sonnet', { warnThresholdTokens: 100_000 });
    assert.deepEqual([t.warn, t.rotate], [100_000, 170_000]);
  });

  it('zero in the configuration means the default', () => {
    assert.deepEqual(
      resolveThresholds('claude', 'sonnet', { warnThresholdTokens: 0, rotateThresholdTokens: 0 }),
      defaultThresholds('claude', 'sonnet'),
    );
  });

  it('a configured warn above rotate is clamped to rotate', () => {
    const t = resolveThresholds('claude', null, { warnThresholdTokens: 500_000, rotateThresholdTokens: 100_000 });
    assert.equal(t.warn, 100_000);
  });
});
