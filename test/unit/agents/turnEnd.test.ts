import * as assert from 'node:assert/strict';
import { opencodeAdapter } from '../../../src/core/agents/opencode';
import { decideTurnEnd, type TurnEndObservation } from '../../../src/core/agents/turnEnd';
import { mapLines } from '../../support/recordedStreams';

describe('agents: decideTurnEnd, an agent still running after its final event (times in ms)', () => {
  const obs = (o: Partial<TurnEndObservation>): TurnEndObservation => ({
    now: 0,
    finalAt: null,
    outputAfterFinal: false,
    ending: false,
    ...o,
  });
  const cases: { name: string; o: TurnEndObservation; graceMs: number | null; expected: string }[] = [
    { name: 'no final event yet: nothing to decide', o: obs({ now: 1e9 }), graceMs: 3000, expected: 'none' },
    {
      name: 'the final event: the grace runs from it',
      o: obs({ now: 10_000, finalAt: 10_000 }),
      graceMs: 3000,
      expected: 'wait 13000',
    },
    {
      name: 'still running within the grace: wait',
      o: obs({ now: 12_999, finalAt: 10_000 }),
      graceMs: 3000,
      expected: 'wait 13000',
    },
    {
      name: 'still running at the grace: ended',
      o: obs({ now: 13_000, finalAt: 10_000 }),
      graceMs: 3000,
      expected: 'end',
    },
    { name: 'a grace of 0: ended at once', o: obs({ now: 10_000, finalAt: 10_000 }), graceMs: 0, expected: 'end' },
    {
      name: 'output after the final event: still working, never ended for it (the watchdog and the exit decide)',
      o: obs({ now: 1e9, finalAt: 10_000, outputAfterFinal: true }),
      graceMs: 3000,
      expected: 'none',
    },
    {
      name: 'already exited or being ended (rotation, cancel, the watchdog): nothing to decide',
      o: obs({ now: 1e9, finalAt: 10_000, ending: true }),
      graceMs: 3000,
      expected: 'none',
    },
    {
      name: 'an adapter without afterTurn (grace null): never',
      o: obs({ now: 1e9, finalAt: 10_000 }),
      graceMs: null,
      expected: 'none',
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const v = decideTurnEnd(c.o, c.graceMs);
      assert.equal(v.kind === 'wait' ? `wait ${v.checkAt}` : v.kind, c.expected);
      if (v.kind === 'end') assert.match(v.detail, /still running \d+(\.\d)? s after its turn's final event/);
    });
  }
});

describe("agents: opencode's final event (afterTurn)", () => {
  const line = (type: string, part: Record<string, unknown>) =>
    JSON.stringify({ type, timestamp: 1, sessionID: 'ses_1', part: { messageID: 'm1', ...part } });
  const finalOf = (reason: string) => {
    const results = mapLines(opencodeAdapter, line('step_finish', { reason, tokens: { input: 1, output: 1 } })).filter(
      (e) => e.type === 'result',
    );
    return results.map((r) => r.type === 'result' && opencodeAdapter.afterTurn!.isFinal(r));
  };
  it('the step that stops the turn is final; a step that goes on (tools, or opencode continuing after unknown) is not', () => {
    assert.deepEqual(finalOf('stop'), [true]);
    assert.deepEqual(finalOf('tool-calls'), [], 'no result at a tool step');
    assert.deepEqual(finalOf('unknown'), [false], 'a result, but opencode may go on with another step');
    assert.equal(opencodeAdapter.afterTurn!.graceMs, 3000);
  });
});
