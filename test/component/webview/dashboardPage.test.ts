import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { PROTOCOL_VERSION, type LogLine } from '../../../src/protocol/dashboard';
import { openDashboardPage, type DashboardPage } from '../../support/dashboardPage';
import { hostSamples, state } from '../../support/dashboardSamples';
import { findRepoRoot } from '../../support/repoRoot';

const repo = findRepoRoot(__dirname);
const shots = path.join(repo, 'test-results');
const lines = (from: number, count: number): LogLine[] =>
  Array.from({ length: count }, (_, i) => ({
    n: from + i,
    at: 1_700_000_000_000 + from + i,
    kind: i % 7 === 0 ? 'gate' : 'loop',
    text: `line ${from + i}`,
  }));

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
    await d.push([
      {
        ...hostSamples[0]!,
        state: {
          ...state,
          tokens: [0, 1, 2, 3, 4].map((i) => ({
            iteration: 1 + (i > 2 ? 1 : 0),
            at: now - 50_000 + i * 10_000,
            contextTokens: [30_000, 90_000, 160_000, 20_000, 60_000][i]!,
            costUsd: 0.05 * (i + 1),
            rotated: i === 3,
          })),
        },
      },
    ]);
    await d.page.locator('[data-testid="run-state"]', { hasText: 'running' }).waitFor();
    assert.equal(await d.page.locator('[data-testid="run-agent"]').innerText(), 'claude');
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
    await d.push([
      { type: 'html', html: '<script>alert(1)</script>' },
      { type: 'update', seq: 5, ops: [{ op: 'log', lines: lines(2, 1), total: 2 }] },
    ]);
    // The page handles posted messages asynchronously: wait for it rather than read at once (flaky under load).
    await d.page.waitForFunction(() => document.body.dataset.refused === '1', undefined, { timeout: 10_000 });
    for (let i = 0; i < 50 && (await d.posted()).at(-1)?.type !== 'resync'; i++)
      await new Promise((r) => setTimeout(r, 100));
    const last = (await d.posted()).at(-1);
    assert.deepEqual(last, { type: 'resync', lastSeq: 1 });
  });

  it('keeps the log DOM small with 50,000 lines, follows the newest, and stops following on scroll up', async () => {
    await d.push([{ type: 'snapshot', v: PROTOCOL_VERSION, seq: 10, state: { ...state, log: [] } }]);
    let seq = 10;
    for (let k = 0; k < 50; k++)
      await d.push([
        { type: 'update', seq: ++seq, ops: [{ op: 'log', lines: lines(k * 1000 + 1, 1000), total: (k + 1) * 1000 }] },
      ]);
    await d.page.locator('.log-row', { hasText: 'line 50000' }).waitFor();
    const rows = await d.page.locator('.log-row').count();
    assert.ok(rows > 5 && rows < 80, `${rows} rows in the DOM`);
    await d.page.locator('.log-scroller').evaluate((el) => {
      el.scrollTop = 0;
      el.dispatchEvent(new Event('scroll'));
    });
    await d.page.locator('[data-testid="jump-latest"]').waitFor();
    await d.push([{ type: 'update', seq: ++seq, ops: [{ op: 'log', lines: lines(50_001, 10), total: 50_010 }] }]);
    assert.equal(
      await d.page.locator('.log-row', { hasText: 'line 50010' }).count(),
      0,
      'no auto-scroll while scrolled up',
    );
    await d.page.locator('[data-testid="jump-latest"]').click();
    await d.page.locator('.log-row', { hasText: 'line 50010' }).waitFor();
    await d.page.screenshot({ path: path.join(shots, 'dashboard-page-log.png'), fullPage: true });
  });

  it('filters the log by kind and by text', async () => {
    await d.page.locator('.chip[data-kind="loop"]').click();
    await d.page.waitForFunction(() =>
      Array.from(document.querySelectorAll('.log-row .log-kind')).every((e) => e.textContent?.trim() === 'gate'),
    );
    const texts = await d.page.locator('.log-row .log-kind').allInnerTexts();
    assert.ok(texts.length > 0 && texts.every((t) => t.trim() === 'gate'), texts.join(','));
    // The kind is marked with a codicon (the log's text has no emoji, which no font here draws).
    assert.equal(
      await d.page.locator('.log-row .log-kind .codicon-beaker').count(),
      texts.length,
      'each gate line shows the beaker codicon',
    );
    await d.page.locator('.log-search').fill('line 49995');
    await d.page.waitForFunction(() => document.querySelectorAll('.log-row').length === 1);
    assert.equal(await d.page.locator('.log-row .log-text').innerText(), 'line 49995');
    const ui = await d.page.evaluate(() => (window as unknown as { __state: { filter: { text: string } } }).__state);
    assert.equal(ui.filter.text, 'line 49995', 'the filter is kept with setState');
  });

  it('draws one row per lane of a parallel run, live, with the context gauge of each lane and the tokens per task', async () => {
    const now = Date.now();
    const tasks = [
      {
        itemId: 'US-1',
        title: 'Login form',
        iterations: 3,
        input: 48_200,
        output: 9_100,
        cacheRead: 1_250_000,
        cacheCreation: 61_000,
        costUsd: 1.42,
      },
      {
        itemId: 'US-2',
        title: 'Signup API',
        iterations: 2,
        input: 21_000,
        output: 4_400,
        cacheRead: 610_000,
        cacheCreation: 30_500,
        costUsd: 0.66,
      },
      {
        itemId: 'US-4',
        title: 'Password reset mail',
        iterations: 1,
        input: 7_300,
        output: 1_900,
        cacheRead: 150_000,
        cacheCreation: 12_000,
        costUsd: 0.21,
      },
    ];
    const tokens = [0, 1, 2, 3, 4, 5, 6, 7].map((i) => ({
      iteration: 1 + Math.floor(i / 2),
      at: now - 80_000 + i * 10_000,
      contextTokens: [20_000, 60_000, 35_000, 90_000, 40_000, 120_000, 52_000, 140_000][i]!,
      costUsd: 0.3 * (i + 1),
      lane: 1 + (i % 3),
    }));
    await d.push([
      {
        type: 'snapshot',
        v: PROTOCOL_VERSION,
        seq: 20,
        state: {
          ...state,
          run: { ...state.run!, question: null, source: 'quantum.json', iteration: 6, progress: { done: 2, total: 8 } },
          tasks,
          tokens,
          log: lines(1, 40),
        },
      },
    ]);
    const rows = d.page.locator('[data-testid="lane-table"] tbody tr');
    await rows.first().waitFor();
    assert.equal(await rows.count(), 3);
    assert.deepEqual(await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-lane'))), ['1', '2', '3']);
    assert.match(
      await rows.nth(0).innerText(),
      /#1\s+US-1 Login form\s+claude\s+1 of 3\s+4\s+140k \/ 200k \(70%\)\s+\$0\.31\s+working/,
    );
    assert.match(await rows.nth(1).innerText(), /#2\s+US-2 Signup API\s+claude\s+2 of 3\s+5\s+—\s+—\s+at a gate/);
    assert.match(
      await rows.nth(2).innerText(),
      /codex\s+.*waiting for an answer/s,
      'a lane after a failover names its agent',
    );
    assert.equal(
      await d.page.locator('[data-testid="run-lanes"]').innerText(),
      '3 lanes: 1 working, 1 at a gate, 1 waiting',
    );
    // The gauge's fill is drawn from --pct, set through the CSSOM (the CSP forbids style attributes).
    const fill = await rows
      .nth(0)
      .locator('.gauge-fill')
      .evaluate((el) => el.getBoundingClientRect().width / el.parentElement!.getBoundingClientRect().width);
    assert.ok(Math.abs(fill - 0.7) < 0.03, `gauge fill ${fill}`);
    assert.match(
      await d.page.locator('[data-testid="task-table"] tbody tr[data-task="US-1"]').innerText(),
      /US-1 Login form\s+3\s+48k\s+9\.1k\s+1\.3M\s+\$1\.42/,
    );
    // One context line per lane in the chart (three lanes: three context series, then cost).
    assert.equal(await d.page.locator('[data-testid="token-chart"] .u-legend .u-series').count(), 5);
    await d.page.locator('.log-search').fill('');
    fs.mkdirSync(shots, { recursive: true });
    await d.page.screenshot({ path: path.join(shots, 'dashboard-lanes.png'), fullPage: true });
    // A numbered update replaces the lanes: lane 2 works again, lane 3 is idle, a fourth lane starts.
    await d.push([
      {
        type: 'update',
        seq: 21,
        ops: [
          {
            op: 'lanes',
            lanes: [
              state.lanes[0]!,
              {
                ...state.lanes[1]!,
                activity: 'agent',
                iteration: 7,
                context: { tokens: 30_000, window: 200_000, warnAt: 148_750, rotateAt: 170_000 },
                costUsd: 0.02,
              },
              {
                ...state.lanes[2]!,
                activity: 'idle',
                context: { tokens: 0, window: 0, warnAt: 0, rotateAt: 0 },
                lastEnding: 'complete',
              },
              {
                lane: 4,
                activity: 'agent',
                purpose: 'work',
                item: { id: 'US-5', title: 'Audit log' },
                attempt: 1,
                maxAttempts: 3,
                iteration: 8,
                context: { tokens: 171_000, window: 200_000, warnAt: 148_750, rotateAt: 170_000 },
                costUsd: 0.5,
                lastEnding: null,
              },
            ],
          },
        ],
      },
    ]);
    await d.page.locator('[data-testid="lane-table"] tbody tr[data-lane="4"]').waitFor();
    assert.equal(await rows.count(), 4);
    assert.match(await rows.nth(1).innerText(), /#2\s+US-2 Signup API\s+claude\s+2 of 3\s+7\s+30k \/ 200k \(15%\)/);
    assert.match(await rows.nth(2).innerText(), /idle \(last: complete\)/);
    assert.equal(await rows.nth(3).locator('.gauge.gauge-rotate').count(), 1);
    assert.equal(await d.page.locator('[data-testid="run-lanes"]').innerText(), '4 lanes: 3 working, 1 idle');
  });

  it("remote lanes: a Worker column names each lane's worker, the header the workers alive", async () => {
    const workers = [
      { id: 'build1:41', host: 'build1', pid: 41 },
      { id: 'build2:7', host: 'build2', pid: 7 },
    ];
    await d.push([
      {
        type: 'snapshot',
        v: PROTOCOL_VERSION,
        seq: 40,
        state: {
          ...state,
          run: { ...state.run!, question: null, source: 'quantum.json', workers },
          lanes: [
            { ...state.lanes[0]!, worker: 'build1:41' },
            { ...state.lanes[1]!, worker: 'build2:7' },
          ],
        },
      },
    ]);
    const rows = d.page.locator('[data-testid="lane-table"] tbody tr');
    await d.page.locator('[data-testid="lane-worker"]').first().waitFor();
    assert.deepEqual(await d.page.locator('[data-testid="lane-table"] thead th').allInnerTexts(), [
      'Lane',
      'Item',
      'Agent',
      'Worker',
      'Attempt',
      'Iteration',
      'Context',
      'Cost',
      'State',
    ]);
    assert.match(await rows.nth(0).innerText(), /#1\s+US-1 Login form\s+claude\s+build1:41\s+1 of 3/);
    assert.match(await rows.nth(1).innerText(), /build2:7/);
    assert.equal(await d.page.locator('[data-testid="run-workers"]').innerText(), '2 alive: build1:41, build2:7');
    fs.mkdirSync(shots, { recursive: true });
    await d.page.screenshot({ path: path.join(shots, 'dashboard-workers.png'), fullPage: true });
    // A worker gone: the header follows; lanes on this machine again: no Worker column.
    await d.push([
      {
        type: 'update',
        seq: 41,
        ops: [
          { op: 'run', run: { ...state.run!, question: null, workers: [workers[1]!] } },
          { op: 'lanes', lanes: state.lanes },
        ],
      },
    ]);
    await d.page.locator('[data-testid="lane-worker"]').first().waitFor({ state: 'detached' });
    assert.equal(await d.page.locator('[data-testid="run-workers"]').innerText(), '1 alive: build2:7');
    assert.ok(!(await d.page.locator('[data-testid="lane-table"] thead th').allInnerTexts()).includes('Worker'));
  });

  it("reads well as a person sees it: the legend's latest values, a cost axis scaled to the run, titles, whole lines", async () => {
    const now = Date.now();
    const long = `gate output ${'x'.repeat(400)} END`;
    await d.push([
      {
        type: 'snapshot',
        v: PROTOCOL_VERSION,
        seq: 25,
        state: {
          ...state,
          run: { ...state.run!, costUsd: 0.08 },
          lanes: [],
          tokens: [0, 1, 2].map((i) => ({
            iteration: 1,
            at: now - 30_000 + i * 10_000,
            contextTokens: [16_000, 24_000, 31_000][i]!,
            costUsd: [0.01, 0.05, 0.08][i]!,
          })),
          tasks: [{ ...state.tasks[0]!, itemId: 'RALPH_TASK.md:4', title: 'Write the parser' }],
          gates: [
            { ...state.gates[0]!, tier: 'acceptance', command: `npm run ${'very-long-script-name '.repeat(12)}` },
          ],
          log: [{ n: 1, at: now, kind: 'gate', text: long }],
          logTotal: 1,
        },
      },
    ]);
    const chart = d.page.locator('[data-testid="token-chart"]');
    await d.page.locator('[data-testid="task-table"] tbody tr[data-task="RALPH_TASK.md:4"]').waitFor();
    // The legend: the latest point's values with the pointer elsewhere, no "--" or "–".
    const legend = await chart.locator('.u-legend').innerText();
    assert.match(legend, /context\s*31k/, legend);
    assert.match(legend, /cost\s*\$0\.08/, legend);
    assert.doesNotMatch(legend, /--|–/, legend);
    // The cost axis reaches past the header's $0.08, to a round $0.10 (not a fixed $0.01).
    assert.equal(await chart.getAttribute('data-usd-max'), '0.1');
    // The task row names the task by its title; its id is the tooltip.
    const task = d.page.locator('[data-testid="task-table"] tbody tr td.task-name');
    assert.equal(await task.innerText(), 'Write the parser');
    assert.equal(await task.getAttribute('title'), 'RALPH_TASK.md:4');
    // The tier stays on one line beside a long command.
    const tier = d.page.locator('[data-testid="gate-table"] td.gate-tier');
    const lineTops = await tier.evaluate((el) => {
      const r = document.createRange();
      r.selectNodeContents(el);
      const rects = Array.from(r.getClientRects()).filter((x) => x.width > 0);
      // Another line starts below the previous one's bottom; on one line the boxes overlap vertically.
      return rects.filter((x) => rects.some((y) => x.top >= y.bottom)).length + 1;
    });
    assert.equal(lineTops, 1, 'the icon and the tier word are on one line');
    // A long log line is whole: the row is as wide as its text and the log scrolls sideways to it.
    const row = d.page.locator('.log-row').first();
    assert.equal(await row.getAttribute('title'), long);
    const widths = await d.page
      .locator('.log-scroller')
      .evaluate((el) => ({ scroll: el.scrollWidth, client: el.clientWidth }));
    assert.ok(widths.scroll > widths.client, `the log scrolls sideways (${widths.scroll} > ${widths.client})`);
    await d.page.screenshot({ path: path.join(shots, 'dashboard-page-readable.png'), fullPage: true });
  });

  it('sorts the cost per task table by a click on a header, both ways', async () => {
    const tasks = [
      {
        itemId: 'T2',
        title: 'Two',
        iterations: 1,
        input: 5_000,
        output: 100,
        cacheRead: 0,
        cacheCreation: 0,
        costUsd: 0.4,
      },
      {
        itemId: 'T10',
        title: 'Ten',
        iterations: 3,
        input: 90_000,
        output: 300,
        cacheRead: 0,
        cacheCreation: 0,
        costUsd: 0.1,
      },
      {
        itemId: 'T1',
        title: 'One',
        iterations: 2,
        input: 20_000,
        output: 200,
        cacheRead: 0,
        cacheCreation: 0,
        costUsd: 0.25,
      },
    ];
    await d.push([
      {
        type: 'snapshot',
        v: PROTOCOL_VERSION,
        seq: 30,
        state: { ...state, lanes: [], tasks, log: lines(1, 40), logTotal: 40 },
      },
    ]);
    const order = () =>
      d.page
        .locator('[data-testid="task-table"] tbody tr')
        .evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-task')));
    const header = (name: string) => d.page.locator('[data-testid="task-table"] thead th', { hasText: name });
    await d.page.locator('[data-testid="task-table"] tbody tr[data-task="T10"]').waitFor();
    // The default: most expensive first.
    assert.deepEqual(await order(), ['T2', 'T1', 'T10']);
    assert.equal(await header('Cost').getAttribute('aria-sort'), 'descending');
    await header('Input').locator('button').click();
    assert.deepEqual(await order(), ['T10', 'T1', 'T2']);
    assert.equal(await header('Input').getAttribute('aria-sort'), 'descending');
    await header('Input').locator('button').click();
    assert.deepEqual(await order(), ['T2', 'T1', 'T10']);
    assert.equal(await header('Input').getAttribute('aria-sort'), 'ascending');
    // Task ids sort naturally (T2 before T10), smallest first on the first click.
    await header('Task').locator('button').click();
    assert.deepEqual(await order(), ['T1', 'T2', 'T10']);
    const ui = await d.page.evaluate(() => (window as unknown as { __state: { sort: unknown } }).__state);
    assert.deepEqual(ui.sort, { key: 'itemId', descending: false }, 'the sort is kept with setState');
  });

  it('asks the host to open the full log and to show a past run; a revealed item filters the log and marks its task', async () => {
    const runs = [
      { runId: 'r0', folder: '/w', label: 'r0 (yesterday)', state: 'completed' as const, active: false },
      ...state.runs,
    ];
    await d.push([{ type: 'update', seq: 31, ops: [{ op: 'runs', runs, pinnedRunId: null }] }]);
    await d.page.locator('.run-pick option[value="r0"]').waitFor({ state: 'attached' });
    const before = (await d.posted()).length;
    await d.page.locator('[data-testid="open-full-log"]').click();
    await d.page.locator('.run-pick').selectOption('r0');
    await d.page.locator('.run-pick').selectOption('');
    for (let i = 0; i < 50 && (await d.posted()).length < before + 3; i++) await new Promise((r) => setTimeout(r, 100));
    const reqs = (await d.posted()).slice(before).map((m) => m.type === 'request' && m.request);
    assert.deepEqual(reqs, [
      { method: 'openFullLog' },
      { method: 'pickRun', runId: 'r0' },
      { method: 'pickRun', runId: null },
    ]);
    // The host shows the past run, static: Start is the only control on.
    await d.push([
      {
        type: 'update',
        seq: 32,
        ops: [
          {
            op: 'run',
            run: {
              ...state.run!,
              runId: 'r0',
              state: 'completed',
              question: null,
              live: false,
              ownedByThisWindow: false,
            },
          },
          { op: 'runs', runs, pinnedRunId: 'r0' },
        ],
      },
    ]);
    await d.page.locator('.static-note').waitFor();
    const enabled = await d.page
      .locator('button.control')
      .evaluateAll((bs) =>
        bs.filter((b) => !(b as HTMLButtonElement).disabled).map((b) => b.getAttribute('data-action')),
      );
    assert.deepEqual(enabled, ['start']);
    assert.equal(await d.page.locator('.run-pick').inputValue(), 'r0');
    // Reveal in Dashboard on T1: the log shows T1's lines, the task row is marked.
    if ((await d.page.locator('.chip[data-kind="loop"]').getAttribute('aria-pressed')) !== 'true')
      await d.page.locator('.chip[data-kind="loop"]').click();
    await d.push([
      {
        type: 'update',
        seq: 33,
        ops: [
          {
            op: 'log',
            lines: [{ n: 41, at: 1_700_000_100_000, kind: 'loop', text: 'ITERATION 3 T1 Add tests' }],
            total: 41,
          },
        ],
      },
      { type: 'reveal', itemId: 'T1' },
    ]);
    await d.page.waitForFunction(() => document.querySelectorAll('.log-row').length === 1);
    assert.equal(await d.page.locator('.log-search').inputValue(), 'T1');
    assert.equal(
      await d.page.locator('.chip[data-kind="loop"]').getAttribute('aria-pressed'),
      'true',
      'the loop chip shows on',
    );
    assert.equal(await d.page.locator('.chip[data-kind="loop"].on').count(), 1);
    assert.equal(await d.page.locator('.log-row .log-text').innerText(), 'ITERATION 3 T1 Add tests');
    assert.equal(await d.page.locator('[data-testid="task-table"] tr.revealed').getAttribute('data-task'), 'T1');
    await d.page.screenshot({ path: path.join(shots, 'dashboard-page-revealed.png'), fullPage: true });
  });

  it('shows bidi controls, invisible and control characters of repository text as marked escapes, never acting', async () => {
    const RLO = '\u202e';
    const ZWSP = '\u200b';
    const title = `evil${RLO}-bidi`;
    await d.push([
      {
        type: 'snapshot',
        v: PROTOCOL_VERSION,
        seq: 40,
        state: {
          ...state,
          lanes: [],
          run: {
            ...state.run!,
            item: { id: 'T1', title },
            stateDetail: `gate${ZWSP}failed`,
            question: { itemId: 'T1', text: `Which${RLO} port?`, askedAt: 2_000 },
          },
          tasks: [
            {
              itemId: 'T1',
              title,
              iterations: 1,
              input: 10,
              output: 10,
              cacheRead: 0,
              cacheCreation: 0,
              costUsd: 0.01,
            },
          ],
          gates: [{ ...state.gates[0]!, command: `npm${'\u2066'} test` }],
          log: [
            { n: 1, at: 1_700_000_000_000, kind: 'gate', text: `title \x1b]0;PWNED\x07 hidden${ZWSP}word ${title}` },
          ],
          logTotal: 1,
        },
      },
    ]);
    const item = d.page.locator('[data-testid="run-item"]');
    await item.locator('.hidden-char').waitFor();
    assert.equal(await item.innerText(), 'T1 evil\\u202e-bidi');
    assert.equal(await item.locator('.hidden-char').getAttribute('title'), 'U+202E RIGHT-TO-LEFT OVERRIDE');
    // Drawn left to right: the "-" of "-bidi" sits left of its last "i" (an acting override draws "evilidib-").
    const order = await item.evaluate((el) => {
      const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        const at = n.textContent!.indexOf('-bidi');
        if (at < 0) continue;
        const box = (from: number) => {
          const r = document.createRange();
          r.setStart(n!, from);
          r.setEnd(n!, from + 1);
          return r.getBoundingClientRect().left;
        };
        return { dash: box(at), lastI: box(at + 4) };
      }
      return null;
    });
    assert.ok(order && order.dash < order.lastI, JSON.stringify(order));
    await d.page.locator('.log-search').fill('');
    const logText = d.page.locator('.log-row .log-text', { hasText: 'PWNED' });
    await logText.waitFor();
    assert.equal(await logText.innerText(), 'title \\x1b]0;PWNED\\x07 hidden\\u200bword evil\\u202e-bidi');
    assert.equal(await logText.locator('.hidden-char').count(), 4);
    assert.equal(await d.page.locator('.run-header .detail').innerText(), 'gate\\u200bfailed');
    assert.equal(await d.page.locator('.question-text').innerText(), 'Which\\u202e port?');
    assert.equal(await d.page.locator('[data-testid="gate-table"] td.mono').first().innerText(), 'npm\\u2066 test');
    assert.equal(await d.page.locator('tr[data-task="T1"] td').first().innerText(), 'T1 evil\\u202e-bidi');
    // No hidden character is left acting anywhere in the page's text or attributes.
    const raw = await d.page.evaluate(() => {
      const hidden = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/;
      const found: string[] = [];
      const walker = document.createTreeWalker(document.querySelector('ralph-dashboard')!, NodeFilter.SHOW_ALL);
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        if (n.nodeType === Node.TEXT_NODE && hidden.test(n.textContent!)) found.push(JSON.stringify(n.textContent));
        if (n instanceof Element)
          for (const a of Array.from(n.attributes)) if (hidden.test(a.value)) found.push(`${n.tagName}[${a.name}]`);
      }
      return found;
    });
    assert.deepEqual(raw, []);
    fs.mkdirSync(shots, { recursive: true });
    await d.page.screenshot({ path: path.join(shots, 'dashboard-page-hidden-chars.png'), fullPage: true });
  });

  it('runs no inline script and reports no CSP violation or page error', async () => {
    assert.deepEqual(d.problems, []);
    const inline = await d.page.evaluate(() => Array.from(document.scripts).filter((s) => !s.src).length);
    assert.equal(inline, 0);
  });
});
