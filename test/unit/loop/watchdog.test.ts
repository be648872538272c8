import * as assert from 'node:assert/strict';
import {
  DEFAULT_WATCHDOG,
  decideWatchdog,
  type WatchdogObservation,
  type WatchdogRules,
} from '../../../src/core/loop/lane/watchdog';

/** Issue 12: a hung agent can be stopped — the watchdog's decisions, table-driven (times in ms). */
describe('loop: decideWatchdog (issue 12)', () => {
  const MIN = 60_000;
  const obs = (o: Partial<WatchdogObservation>): WatchdogObservation => ({
    now: 0,
    iterationStartedAt: 0,
    lastOutputAt: 0,
    stopRequestedAt: null,
    ...o,
  });
  const cases: { name: string; o: WatchdogObservation; rules?: WatchdogRules; expected: string }[] = [
    {
      name: 'defaults: a silent agent is waited for 20 minutes',
      o: obs({ now: 19 * MIN }),
      expected: `wait ${20 * MIN}`,
    },
    { name: 'defaults: silent for 20 minutes ends as stalled', o: obs({ now: 20 * MIN }), expected: 'end silence' },
    {
      name: 'output resets the silence clock',
      o: obs({ now: 25 * MIN, lastOutputAt: 10 * MIN }),
      expected: `wait ${30 * MIN}`,
    },
    {
      name: 'no iteration timeout by default, however long it works',
      o: obs({ now: 600 * MIN, lastOutputAt: 599 * MIN }),
      expected: `wait ${619 * MIN}`,
    },
    {
      name: 'iterationTimeoutMs ends a working iteration',
      o: obs({ now: 30 * MIN, lastOutputAt: 30 * MIN }),
      rules: { ...DEFAULT_WATCHDOG, iterationTimeoutMs: 30 * MIN },
      expected: 'end iterationTimeout',
    },
    {
      name: 'STOP with a silent agent: ended after stopGraceMs',
      o: obs({ now: 2 * MIN, lastOutputAt: 0, stopRequestedAt: 1 * MIN }),
      expected: 'end stopGrace',
    },
    {
      name: 'STOP with a silent agent: waits stopGraceMs from the request',
      o: obs({ now: 90_000, lastOutputAt: 0, stopRequestedAt: 60_000 }),
      expected: 'wait 120000',
    },
    {
      name: 'STOP with a working agent: it finishes (grace counts from its last output)',
      o: obs({ now: 10 * MIN, lastOutputAt: 10 * MIN - 1000, stopRequestedAt: 1 * MIN }),
      expected: `wait ${11 * MIN - 1000}`,
    },
    {
      name: 'every limit off: wait for ever',
      o: obs({ now: 1e9 }),
      rules: { silenceTimeoutMs: 0, iterationTimeoutMs: 0, stopGraceMs: 60_000 },
      expected: 'wait never',
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const v = decideWatchdog(c.o, c.rules);
      assert.equal(v.kind === 'end' ? `end ${v.reason}` : `wait ${v.checkAt ?? 'never'}`, c.expected);
    });
  }
  it('defaults are 20 min, none, 60 s', () =>
    assert.deepEqual(
      { ...DEFAULT_WATCHDOG },
      { silenceTimeoutMs: 1_200_000, iterationTimeoutMs: 0, stopGraceMs: 60_000 },
    ));
});
