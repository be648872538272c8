import * as assert from 'node:assert/strict';
import type { EngineEvent } from '../../../../src/core/loop/events';
import { coalesceOps, logKindOf, RunFeed } from '../../../../src/extension/dashboard/runFeed';
import { revealTarget } from '../../../../src/extension/dashboard/revealTarget';
import { dashboardHtml, makeNonce } from '../../../../src/extension/dashboard/dashboardHtml';
import { parseHostMessage, PROTOCOL_VERSION, type UpdateOp } from '../../../../src/protocol/dashboard';

const item = { source: 'checklist' as const, id: 'T1', title: 'Add tests' };
const totals = (costUsd: number) => ({ tokens: { input: 10, output: 20, cacheRead: 30, cacheCreation: 40 }, costUsd });
const tokens = (iteration: number, contextTokens: number, costUsd: number): EngineEvent => ({ type: 'tokens', iteration, contextTokens, contextWindow: 200_000, rotateAt: 170_000, warnAt: 148_750, totals: totals(costUsd).tokens, costUsd });

/** A short run: one rotated iteration, one finished with a red then green gate. */
const run: EngineEvent[] = [
  { type: 'runStarted', runId: 'r1', folder: '/w', source: 'checklist', agent: 'claude', maxIterations: 25, gates: { basic: 'npm test' } },
  { type: 'progress', done: 0, total: 2, text: '' },
  { type: 'iterationStarted', iteration: 1, item, attempt: 1, attemptKind: 'first', purpose: 'work' },
  tokens(1, 100_000, 0.1),
  { type: 'rotate', iteration: 1, contextTokens: 171_000, threshold: 170_000 },
  { type: 'iterationEnded', iteration: 1, ending: 'rotation', detail: 'rotated', totals: totals(0.2), exitCode: null },
  { type: 'iterationStarted', iteration: 2, item, attempt: 1, attemptKind: 'first', purpose: 'work' },
  tokens(2, 20_000, 0.05),
  { type: 'iterationEnded', iteration: 2, ending: 'complete', detail: 'done', totals: totals(0.1), exitCode: 0 },
  { type: 'gateStarted', tier: 'basic', command: 'npm test' },
  { type: 'gateResult', tier: 'basic', command: 'npm test', exitCode: 1, durationMs: 1500, passed: false, logPath: '/w/.ralph/gates/1.log', failingLines: ['FAIL a'] },
  { type: 'warning', message: 'could not write' },
  { type: 'runEnded', state: 'stalled', reason: 'no progress', completionReason: 'FAILED', exitCode: 1, iterations: 2, costUsd: 0.3, done: 1, total: 2 },
];

function feedOf(events: EngineEvent[]): { feed: RunFeed; ops: UpdateOp[] } {
  const feed = new RunFeed('r1', '/w', { ownedByThisWindow: true, live: true });
  const ops = events.flatMap((e, i) => feed.apply({ ...e, at: 1_000 * (i + 1) }));
  return { feed, ops };
}

describe('the dashboard run feed', () => {
  it('builds the header from the events', () => {
    const h = feedOf(run.slice(0, 8)).feed.run;
    assert.equal(h.state, 'running');
    assert.equal(h.source, 'checklist');
    assert.equal(h.iteration, 2);
    assert.deepEqual(h.item, { id: 'T1', title: 'Add tests' });
    assert.deepEqual(h.progress, { done: 0, total: 2 });
    assert.deepEqual(h.context, { tokens: 20_000, window: 200_000, warnAt: 148_750, rotateAt: 170_000 });
    assert.equal(h.costUsd, 0.25, 'ended iterations plus the running one');
  });

  it('ends in the run end state, no longer live', () => {
    const h = feedOf(run).feed.run;
    assert.equal(h.state, 'failed');
    assert.equal(h.stateDetail, 'no progress');
    assert.equal(h.live, false);
    assert.equal(h.endedAt, 13_000);
  });

  it('marks the first token point after a rotation', () => {
    const pts = feedOf(run).feed.state().tokens;
    assert.deepEqual(pts.map((p) => [p.iteration, p.contextTokens, !!p.rotated]), [[1, 100_000, false], [2, 20_000, true]]);
  });

  it('sums cost and tokens per task over its iterations', () => {
    assert.deepEqual(feedOf(run).feed.state().tasks, [{ itemId: 'T1', title: 'Add tests', iterations: 2, input: 20, output: 40, cacheRead: 60, cacheCreation: 80, costUsd: 0.30000000000000004 }]);
  });

  it('turns a gate start and its result into one row whose log only the host knows', () => {
    const { feed } = feedOf(run);
    const gates = feed.state().gates;
    assert.equal(gates.length, 1);
    assert.deepEqual({ ...gates[0]!, at: 0 }, { id: 'g1', tier: 'basic', command: 'npm test', exitCode: 1, passed: false, durationMs: 1500, at: 0, failingLines: ['FAIL a'], hasLog: true });
    assert.equal('logPath' in gates[0]!, false);
    assert.equal(feed.gateLogPath('g1'), '/w/.ralph/gates/1.log');
    assert.equal(feed.gateLogPath('g9'), undefined);
  });

  it('numbers log lines without gaps and gives each a kind', () => {
    const { feed } = feedOf(run);
    const log = feed.state().log;
    assert.deepEqual(log.map((l) => l.n), log.map((_, i) => i + 1));
    assert.equal(feed.logTotal, log.length);
    const kinds = new Set(log.map((l) => l.kind));
    for (const k of ['loop', 'tokens', 'gate', 'error'] as const) assert.ok(kinds.has(k), `a ${k} line in ${JSON.stringify(log)}`);
  });

  it('gives updates that the page accepts', () => {
    const { ops } = feedOf(run);
    const r = parseHostMessage({ type: 'update', seq: 2, ops: coalesceOps(ops) });
    assert.ok(r.ok, r.ok ? '' : r.error);
    const snap = parseHostMessage({ type: 'snapshot', v: PROTOCOL_VERSION, seq: 1, state: { ...feedOf(run).feed.state(), runs: [], pinnedRunId: null } });
    assert.ok(snap.ok, snap.ok ? '' : snap.error);
  });

  it('keeps at most 2,000 log lines however long the run', () => {
    const feed = new RunFeed('r1', '/w', { ownedByThisWindow: false, live: true });
    for (let i = 0; i < 5_000; i++) feed.apply({ type: 'warning', message: `w${i}`, at: i });
    const log = feed.state().log;
    assert.equal(log.length, 2_000);
    assert.equal(log[log.length - 1]!.text, '⚠️ w4999');
    assert.equal(feed.logTotal, 5_000);
  });

  it('classifies events into log kinds', () => {
    assert.equal(logKindOf({ type: 'warn', iteration: 1, contextTokens: 1, threshold: 1 }), 'tokens');
    assert.equal(logKindOf({ type: 'gateStarted', tier: 'basic', command: 'x' }), 'gate');
    assert.equal(logKindOf({ type: 'itemBlocked', item, reason: 'x' }), 'error');
    assert.equal(logKindOf({ type: 'paused' }), 'loop');
  });
});

describe('coalescing updates', () => {
  it('joins neighbouring log and token ops and keeps only the last header', () => {
    const line = (n: number) => ({ n, at: n, kind: 'loop' as const, text: '' });
    const out = coalesceOps([
      { op: 'run', run: null }, { op: 'log', lines: [line(1)], total: 1 }, { op: 'log', lines: [line(2)], total: 2 },
      { op: 'tokens', points: [{ iteration: 1, at: 1, contextTokens: 1, costUsd: 0 }] }, { op: 'tokens', points: [{ iteration: 1, at: 2, contextTokens: 2, costUsd: 0 }] },
      { op: 'run', run: null },
    ]);
    assert.deepEqual(out.map((o) => o.op), ['log', 'tokens', 'run']);
    assert.deepEqual(out[0]!.op === 'log' && out[0]!.lines.map((l) => l.n), [1, 2]);
  });
});

describe('the dashboard page HTML', () => {
  const html = dashboardHtml({ cspSource: 'https://x.vscode-cdn.net', nonce: 'abc123==', scriptUri: 'https://x/main.js', styleUri: 'https://x/main.css' });
  it('has a strict CSP with the nonce and no inline script or style', () => {
    const csp = /http-equiv="Content-Security-Policy" content="([^"]+)"/.exec(html)?.[1] ?? '';
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'nonce-abc123=='/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
    assert.deepEqual([...html.matchAll(/<script\b[^>]*>/g)].map((m) => m[0]), ['<script nonce="abc123==" src="https://x/main.js">']);
    assert.doesNotMatch(html, /<style|style="/);
  });
  it('makes a fresh 128-bit nonce each time', () => {
    const a = makeNonce();
    assert.equal(Buffer.from(a, 'base64').length, 16);
    assert.notEqual(a, makeNonce());
  });
});

describe('Reveal in Dashboard', () => {
  it('reads a run and an item from its argument', () => {
    assert.deepEqual(revealTarget({ runId: 'r1', itemId: 'T1' }), { runId: 'r1', itemId: 'T1' });
    assert.deepEqual(revealTarget({ type: 'item', id: 'fn-1.2' }), { runId: null, itemId: 'fn-1.2' });
    assert.deepEqual(revealTarget({ item: { id: 'S-3' } }), { runId: null, itemId: 'S-3' });
    assert.deepEqual(revealTarget(undefined), { runId: null, itemId: null });
    assert.deepEqual(revealTarget({ runId: 7 }), { runId: null, itemId: null });
  });
});
