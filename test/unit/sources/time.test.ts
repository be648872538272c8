import * as assert from 'node:assert/strict';
import { flowIsoString, parseIsoTime } from '../../../src/core/model/time';

describe('model: ISO timestamps', () => {
  const base = Date.UTC(2026, 0, 11, 20, 16, 42);
  const cases: [string, number | undefined][] = [
    ['2026-01-11T20:16:42Z', base],
    ['2026-01-11T20:16:42.123Z', base + 123],
    ['2026-01-11T20:16:42.440246Z', base + 440],
    ['2026-01-11T22:16:42+02:00', base],
    ['2026-01-11T22:16:42.500+02:00', base + 500],
    ['2026-01-11T15:16:42-0500', base],
    ['2026-01-11 20:16:42', base],
    ['2026-01-11T20:16:42', base],
    ['not a date', undefined],
    ['', undefined],
  ];
  for (const [text, expected] of cases) {
    it(`reads "${text}" as ${expected === undefined ? 'no time' : new Date(expected).toISOString()}`, () =>
      assert.equal(parseIsoTime(text), expected));
  }

  it("writes flowctl's microsecond form", () => {
    assert.equal(flowIsoString(base + 123), '2026-01-11T20:16:42.123000Z');
  });
});
