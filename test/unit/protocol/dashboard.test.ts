import * as assert from 'node:assert/strict';
import {
  MAX_ANSWER_CHARS,
  MAX_LANES,
  PROTOCOL_VERSION,
  SNAPSHOT_LOG_LINES,
  parseHostMessage,
  parsePageMessage,
} from '../../../src/protocol/dashboard';
import { header, hostSamples, lanes, pageSamples, state } from '../../support/dashboardSamples';

describe('the dashboard protocol', () => {
  describe('round-trips', () => {
    for (const m of hostSamples) {
      it(`keeps a host ${m.type}${m.type === 'update' ? ' with every op' : ''} message equal through JSON`, () => {
        const r = parseHostMessage(JSON.parse(JSON.stringify(m)));
        assert.ok(r.ok, r.ok ? '' : r.error);
        assert.deepEqual(r.message, m);
      });
    }
    for (const m of pageSamples) {
      it(`keeps a page ${m.type}${m.type === 'request' ? ` ${m.request.method}` : ''} message equal through JSON`, () => {
        const r = parsePageMessage(JSON.parse(JSON.stringify(m)));
        assert.ok(r.ok, r.ok ? '' : r.error);
        assert.deepEqual(r.message, m);
      });
    }
  });

  describe('the host refuses page messages that are', () => {
    const refused: [string, unknown][] = [
      ['not an object', 'ready'],
      ['null', null],
      ['of an unknown type', { type: 'eval', code: 'alert(1)' }],
      [
        'a request with an unknown method',
        { type: 'request', id: 1, request: { method: 'runShell', command: 'rm -rf /' } },
      ],
      [
        'a control with an unknown action',
        { type: 'request', id: 1, request: { method: 'control', action: 'kill', runId: 'r1' } },
      ],
      [
        'a request carrying an extra field (a path)',
        { type: 'request', id: 1, request: { method: 'openFullLog', path: '/etc/passwd' } },
      ],
      ['a request without an id', { type: 'request', request: { method: 'openFullLog' } }],
      ['a request with a negative id', { type: 'request', id: -1, request: { method: 'openFullLog' } }],
      [
        'an empty answer',
        { type: 'request', id: 1, request: { method: 'answer', runId: 'r1', itemId: null, text: '   ' } },
      ],
      [
        'an answer too long',
        {
          type: 'request',
          id: 1,
          request: { method: 'answer', runId: 'r1', itemId: null, text: 'x'.repeat(MAX_ANSWER_CHARS + 1) },
        },
      ],
      ['a ready without a version', { type: 'ready' }],
      ['a host message sent back', hostSamples[2]],
    ];
    for (const [what, raw] of refused) {
      it(what, () => {
        const r = parsePageMessage(raw);
        assert.equal(r.ok, false);
        if (!r.ok) assert.match(r.error, /^refused /);
      });
    }
  });

  describe('the page refuses host messages that are', () => {
    const refused: [string, unknown][] = [
      ['of an unknown type', { type: 'html', html: '<img onerror=alert(1)>' }],
      ['an update without ops', { type: 'update', seq: 1, ops: [] }],
      ['an update with an unknown op', { type: 'update', seq: 1, ops: [{ op: 'exec', code: '1' }] }],
      ['a snapshot of another protocol version', { type: 'snapshot', v: PROTOCOL_VERSION + 1, seq: 1, state }],
      [
        'a snapshot with a log over the cap',
        {
          type: 'snapshot',
          v: PROTOCOL_VERSION,
          seq: 1,
          state: {
            ...state,
            log: Array.from({ length: SNAPSHOT_LOG_LINES + 1 }, (_, i) => ({
              n: i + 1,
              at: 1,
              kind: 'loop',
              text: '',
            })),
          },
        },
      ],
      [
        'a log line of an unknown kind',
        { type: 'update', seq: 1, ops: [{ op: 'log', lines: [{ n: 1, at: 1, kind: 'shell', text: 'x' }], total: 1 }] },
      ],
      [
        'a lane with a negative number',
        { type: 'update', seq: 1, ops: [{ op: 'lanes', lanes: [{ ...lanes[0]!, lane: -1 }] }] },
      ],
      [
        'a lane of an unknown activity',
        { type: 'update', seq: 1, ops: [{ op: 'lanes', lanes: [{ ...lanes[0]!, activity: 'mining' }] }] },
      ],
      [
        'a lane with an extra field',
        { type: 'update', seq: 1, ops: [{ op: 'lanes', lanes: [{ ...lanes[0]!, worktreePath: '/etc' }] }] },
      ],
      [
        'a lane with fractional tokens',
        {
          type: 'update',
          seq: 1,
          ops: [{ op: 'lanes', lanes: [{ ...lanes[0]!, context: { ...lanes[0]!.context, tokens: 1.5 } }] }],
        },
      ],
      [
        `more than ${MAX_LANES} lanes`,
        {
          type: 'snapshot',
          v: PROTOCOL_VERSION,
          seq: 1,
          state: { ...state, lanes: Array.from({ length: MAX_LANES + 1 }, (_, i) => ({ ...lanes[0]!, lane: i })) },
        },
      ],
      [
        'a snapshot without lanes (protocol 1)',
        { type: 'snapshot', v: PROTOCOL_VERSION, seq: 1, state: { ...state, lanes: undefined } },
      ],
      [
        'a token point of a negative lane',
        {
          type: 'update',
          seq: 1,
          ops: [{ op: 'tokens', points: [{ iteration: 1, at: 1, contextTokens: 1, costUsd: 0, lane: -2 }] }],
        },
      ],
      [
        'a header with a negative cost',
        { type: 'update', seq: 1, ops: [{ op: 'run', run: { ...header, costUsd: -1 } }] },
      ],
      ['a page message', pageSamples[0]],
    ];
    for (const [what, raw] of refused) {
      it(what, () => {
        assert.equal(parseHostMessage(raw).ok, false);
      });
    }
  });
});
