import * as assert from 'node:assert/strict';
import { ENGINE_EVENT_TYPES, parseRunLogLine, runLogLine, type EngineEvent } from '../../../src/core/model/runEvent';

const AT = '2026-12-01T09:20:36.123Z';

describe('run log schema', () => {
  it('parses a line into its envelope and event', () => {
    const p = parseRunLogLine(
      runLogLine(7, AT, 0, { type: 'progress', done: 1, total: 3, text: '1/3 done' }),
      'events.jsonl',
      7,
      99,
    );
    assert.deepEqual(p, {
      kind: 'entry',
      entry: { type: 'progress', done: 1, total: 3, text: '1/3 done', seq: 7, at: AT, lane: 0 },
    });
  });

  it('keeps an unknown event type from a newer version as an unknown entry, with the whole line', () => {
    const p = parseRunLogLine(JSON.stringify({ seq: 3, at: AT, lane: 1, type: 'laneMerged', branch: 'x' }), 'f', 3, 3);
    assert.equal(p.kind, 'unknown');
    assert.deepEqual(p.kind === 'unknown' && p.entry, {
      seq: 3,
      at: AT,
      lane: 1,
      type: 'laneMerged',
      unknown: true,
      raw: { seq: 3, at: AT, lane: 1, type: 'laneMerged', branch: 'x' },
    });
  });

  it('reads a line written before the envelope with the fallback seq and lane 0', () => {
    const p = parseRunLogLine(JSON.stringify({ at: AT, type: 'paused' }), 'f', 1, 5);
    assert.deepEqual(p, { kind: 'entry', entry: { type: 'paused', seq: 5, at: AT, lane: 0 } });
  });

  for (const [name, text, why] of [
    ['not JSON', '{"seq":1,', /not JSON/],
    ['an array', '[1]', /not a JSON object/],
    ['no time', '{"seq":1,"lane":0,"type":"paused"}', /at/],
    [
      'a known type with a bad field',
      `{"seq":1,"at":"${AT}","lane":0,"type":"progress","done":"x","total":1,"text":""}`,
      /bad progress event: done/,
    ],
  ] as const) {
    it(`reports ${name} as a problem naming file and line`, () => {
      const p = parseRunLogLine(text, '.ralph/runs/r/events.jsonl', 4, 1);
      assert.equal(p.kind, 'problem');
      if (p.kind === 'problem') {
        assert.equal(p.problem.file, '.ralph/runs/r/events.jsonl');
        assert.equal(p.problem.line, 4);
        assert.match(p.problem.message, why);
      }
    });
  }

  it('knows every event type the engine writes', () => {
    const types: EngineEvent['type'][] = [
      'runStarted',
      'iterationStarted',
      'agentStarted',
      'tokens',
      'warn',
      'rotate',
      'agentSignal',
      'iterationEnded',
      'gateStarted',
      'gateResult',
      'verified',
      'attemptFailed',
      'claimPutBack',
      'fileRestored',
      'itemsVanished',
      'itemBlocked',
      'progress',
      'pauseRequested',
      'paused',
      'resumed',
      'stopRequested',
      'deferred',
      'failover',
      'reviewVerdict',
      'question',
      'answered',
      'questionTimedOut',
      'notified',
      'warning',
      'guard',
      'output',
      'laneMerge',
      'workers',
      'runEnded',
    ];
    assert.deepEqual([...ENGINE_EVENT_TYPES].sort(), [...types].sort());
  });

  it('writes the envelope first, compact, one line', () => {
    assert.equal(runLogLine(1, AT, 0, { type: 'resumed' }), `{"seq":1,"at":"${AT}","lane":0,"type":"resumed"}\n`);
  });
});
