import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { PROTOCOL_VERSION, type LogLine } from '../../../src/protocol/dashboard';
import { openDashboardPage, type DashboardPage } from '../../support/dashboardPage';
import { hostSamples, state } from '../../support/dashboardSamples';
import { findRepoRoot } from '../../support/repoRoot';

const repo = findRepoRoot(__dirname);
const shots = path.join(repo, 'test-results');
const lines = (from: number, count: number): LogLine[] => Array.from({ length: count }, (_, i) => ({ n: from + i, at: 1_700_000_000_000 + from + i, kind: i % 7 === 0 ? 'gate' : 'loop', text: `line ${from + i}` }));

describe('the dashboard page in Chromium (fake host)', function () {
  this.timeout(60_000);
  let d: DashboardPage;
  before(async () => {
    d = await openDashboardPage(repo);
  });
  after(async () => d?.close());

  it('says ready once, with the protocol version', async () => {
    assert.deepEqual(await d.posted(), [{ type: 'ready', v: PROTOCOL_VERSION }]);
  });

  it('renders a snapshot: header, chart, task and gate tables, log, and a question', async () => {
    const now = Date.now();
    await d.push([{ ...hostSamples[0]!, state: { ...state, tokens: [0, 1, 2, 3, 4].map((i) => ({ iteration: 1 + (i > 2 ? 1 : 0), at: now - 50_000 + i * 10_000, contextTokens: [30_000, 90_000, 160_000, 20_000, 60_000][i]!, costUsd: 0.05 * (i + 1), rotated: i === 3 })) } }]);
    await d.page.locator('[data-testid="run-state"]', { hasText: 'running' }).waitFor();
    assert.equal(await d.page.locator('[data-testid="question"] .question-text').innerText(), 'Which port?');
    assert.equal(await d.page.locator('[data-testid="gate-table"] tbody tr').count(), 1);
    assert.equal(await d.page.locator('[data-testid="token-chart"] canvas').count(), 1);
    assert.equal(await d.page.locator('button[data-action="pause"]').isDisabled(), false);
    assert.equal(await d.page.locator('button[data-action="resume"]').isDisabled(), true);
    fs.mkdirSync(shots, { recursive: true });
    await d.page.screenshot({ path: path.join(shots, 'dashboard-page-snapshot.png'), fullPage: true });
  });

  it('sends typed requests for the controls, the answer and the gate log', async () => {
    await d.page.locator('button[data-action="pause"]').click();
    await d.page.locator('.answer-box').fill('Port 8080');
    await d.page.locator('[data-testid="answer"]').click();
    await d.page.locator('[data-gate="g1"]').click();
    const reqs = (await d.posted()).filter((m) => m.type === 'request').map((m) => m.type === 'request' && m.request);
    assert.deepEqual(reqs, [
      { method: 'control', action: 'pause', runId: 'r1' },
      { method: 'answer', runId: 'r1', itemId: 'T1', text: 'Port 8080' },
      { method: 'openGateLog', gateId: 'g1' },
    ]);
  });

  it('refuses a malformed host message and asks for a snapshot after a gap', async () => {
    await d.push([{ type: 'html', html: '<script>alert(1)</script>' }, { type: 'update', seq: 5, ops: [{ op: 'log', lines: lines(2, 1), total: 2 }] }]);
    assert.equal(await d.page.evaluate(() => document.body.dataset.refused), '1');
    const last = (await d.posted()).at(-1);
    assert.deepEqual(last, { type: 'resync', lastSeq: 1 });
  });

  it('keeps the log DOM small with 50,000 lines, follows the newest, and stops following on scroll up', async () => {
    await d.push([{ type: 'snapshot', v: PROTOCOL_VERSION, seq: 10, state: { ...state, log: [] } }]);
    let seq = 10;
    for (let k = 0; k < 50; k++) await d.push([{ type: 'update', seq: ++seq, ops: [{ op: 'log', lines: lines(k * 1000 + 1, 1000), total: (k + 1) * 1000 }] }]);
    await d.page.locator('.log-row', { hasText: 'line 50000' }).waitFor();
    const rows = await d.page.locator('.log-row').count();
    assert.ok(rows > 5 && rows < 80, `${rows} rows in the DOM`);
    await d.page.locator('.log-scroller').evaluate((el) => { el.scrollTop = 0; el.dispatchEvent(new Event('scroll')); });
    await d.page.locator('[data-testid="jump-latest"]').waitFor();
    await d.push([{ type: 'update', seq: ++seq, ops: [{ op: 'log', lines: lines(50_001, 10), total: 50_010 }] }]);
    assert.equal(await d.page.locator('.log-row', { hasText: 'line 50010' }).count(), 0, 'no auto-scroll while scrolled up');
    await d.page.locator('[data-testid="jump-latest"]').click();
    await d.page.locator('.log-row', { hasText: 'line 50010' }).waitFor();
    await d.page.screenshot({ path: path.join(shots, 'dashboard-page-log.png'), fullPage: true });
  });

  it('filters the log by kind and by text', async () => {
    await d.page.locator('.chip[data-kind="loop"]').click();
    await d.page.waitForFunction(() => Array.from(document.querySelectorAll('.log-row .log-kind')).every((e) => e.textContent === 'gate'));
    const texts = await d.page.locator('.log-row .log-kind').allInnerTexts();
    assert.ok(texts.length > 0 && texts.every((t) => t === 'gate'), texts.join(','));
    await d.page.locator('.log-search').fill('line 49995');
    await d.page.waitForFunction(() => document.querySelectorAll('.log-row').length === 1);
    assert.equal(await d.page.locator('.log-row .log-text').innerText(), 'line 49995');
    const ui = await d.page.evaluate(() => (window as unknown as { __state: { filter: { text: string } } }).__state);
    assert.equal(ui.filter.text, 'line 49995', 'the filter is kept with setState');
  });

  it('runs no inline script and reports no CSP violation or page error', async () => {
    assert.deepEqual(d.problems, []);
    const inline = await d.page.evaluate(() => Array.from(document.scripts).filter((s) => !s.src).length);
    assert.equal(inline, 0);
  });
});
