import * as assert from 'node:assert/strict';
import {
  PROTOCOL_VERSION,
  type HostMessage,
  type PageRequest,
  type UpdateOp,
} from '../../../../src/protocol/dashboard';
import { DashboardSession } from '../../../../src/extension/dashboard/dashboardSession';
import { state } from '../../../support/dashboardSamples';

function harness(opts: { fail?: string } = {}) {
  const posted: HostMessage[] = [];
  const warnings: string[] = [];
  const handled: PageRequest[] = [];
  const timers: (() => void)[] = [];
  const session = new DashboardSession({
    post: (m) => {
      posted.push(m);
      return true;
    },
    state: () => state,
    actions: {
      handle: async (r) => {
        if (opts.fail) throw new Error(opts.fail);
        handled.push(r);
      },
    },
    log: { info: () => undefined, warn: (_c, m) => warnings.push(m) },
    setTimer: (fn) => {
      timers.push(fn);
      return timers.length;
    },
    clearTimer: () => undefined,
  });
  const tick = () => timers.splice(0).forEach((f) => f());
  return { session, posted, warnings, handled, tick };
}
const logOp = (n: number): UpdateOp => ({ op: 'log', lines: [{ n, at: n, kind: 'loop', text: `l${n}` }], total: n });

describe('the dashboard session (host side of the protocol)', () => {
  it('posts nothing before the page is ready, then a snapshot', async () => {
    const h = harness();
    h.session.push([logOp(1)]);
    h.tick();
    assert.equal(h.posted.length, 0);
    await h.session.receive({ type: 'ready', v: PROTOCOL_VERSION });
    assert.deepEqual(
      h.posted.map((m) => m.type),
      ['snapshot'],
    );
  });

  it('numbers updates after the snapshot and batches a burst into one message', async () => {
    const h = harness();
    await h.session.receive({ type: 'ready', v: PROTOCOL_VERSION });
    h.session.push([logOp(1)]);
    h.session.push([logOp(2), { op: 'tokens', points: [{ iteration: 1, at: 1, contextTokens: 5, costUsd: 0 }] }]);
    h.tick();
    h.session.push([logOp(3)]);
    h.tick();
    const [snap, u1, u2] = h.posted;
    assert.equal(snap?.type === 'snapshot' && snap.seq, 1);
    assert.equal(u1?.type === 'update' && u1.seq, 2);
    assert.deepEqual(u1?.type === 'update' && u1.ops.map((o) => o.op), ['log', 'tokens']);
    assert.equal(u2?.type === 'update' && u2.seq, 3);
  });

  it('answers a resync with a fresh snapshot', async () => {
    const h = harness();
    await h.session.receive({ type: 'ready', v: PROTOCOL_VERSION });
    await h.session.receive({ type: 'resync', lastSeq: 1 });
    assert.deepEqual(
      h.posted.map((m) => m.type),
      ['snapshot', 'snapshot'],
    );
    assert.equal(h.posted[1]?.type === 'snapshot' && h.posted[1].seq, 2);
  });

  it('posts nothing while hidden and sends one snapshot when shown again', async () => {
    const h = harness();
    await h.session.receive({ type: 'ready', v: PROTOCOL_VERSION });
    h.session.setVisible(false);
    h.session.push([logOp(1)]);
    h.tick();
    assert.equal(h.posted.length, 1);
    h.session.setVisible(true);
    assert.deepEqual(
      h.posted.map((m) => m.type),
      ['snapshot', 'snapshot'],
    );
  });

  it('acts on a valid request and replies ok', async () => {
    const h = harness();
    await h.session.receive({ type: 'request', id: 7, request: { method: 'control', action: 'pause', runId: 'r1' } });
    assert.deepEqual(h.handled, [{ method: 'control', action: 'pause', runId: 'r1' }]);
    assert.deepEqual(h.posted, [{ type: 'reply', id: 7, ok: true }]);
  });

  it('replies with the error when the action fails', async () => {
    const h = harness({ fail: 'no run' });
    await h.session.receive({ type: 'request', id: 8, request: { method: 'openFullLog' } });
    assert.deepEqual(h.posted, [{ type: 'reply', id: 8, ok: false, error: 'no run' }]);
    assert.match(h.warnings[0]!, /openFullLog failed: no run/);
  });

  it('refuses and logs a forged request without acting on it', async () => {
    const h = harness();
    await h.session.receive({
      type: 'request',
      id: 9,
      request: { method: 'openGateLog', gateId: 'g1', path: '/etc/passwd' },
    });
    await h.session.receive({ type: 'exec', command: 'rm -rf ~' });
    await h.session.receive('ready');
    assert.deepEqual(h.handled, []);
    assert.equal(h.session.refused, 3);
    assert.equal(h.warnings.length, 3);
    assert.match(h.warnings[1]!, /^refused exec message/);
    assert.deepEqual(h.posted, [{ type: 'reply', id: 9, ok: false, error: 'refused: malformed request' }]);
  });

  it('refuses a page of another protocol version', async () => {
    const h = harness();
    await h.session.receive({ type: 'ready', v: PROTOCOL_VERSION + 1 });
    assert.deepEqual(h.posted, []);
    assert.equal(h.session.refused, 1);
  });
});
