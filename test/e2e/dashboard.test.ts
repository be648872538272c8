import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { FrameLocator, Page } from 'playwright-core';
import { claudeBinary, scriptedClaudeEnv } from '../support/claude';
import { findRepoRoot } from '../support/repoRoot';
import { copyFixture, runFromPalette } from '../runners/vscodeServer';
import { edit, say, startModelServer, type ModelServer } from '../support/modelServer';
import {
  claudeWrapper,
  closeSharedWorkbench,
  closeWindow,
  openWindow,
  sharedWorkbench,
  startFromPalette,
  type SharedWorkbench,
} from '../support/sharedWorkbench';
import { makeTempDir } from '../support/tempFolder';

const repo = findRepoRoot(__dirname);
const shots = path.join(repo, 'test-results');

async function screenshot(page: Page, name: string): Promise<void> {
  fs.mkdirSync(shots, { recursive: true });
  await page.screenshot({ path: path.join(shots, `e2e-dashboard-${name}.png`) });
}

/** The dashboard page: two frames deep in the web workbench (code-server's test/e2e/webview.test.ts). */
function dashboard(page: Page): FrameLocator {
  return page.frameLocator('iframe.webview.ready').frameLocator('#active-frame');
}

// The tier's one VS Code server and Chromium end after the last file (test/support/sharedWorkbench.ts).
after(closeSharedWorkbench);

describe('the Ralph dashboard in the VS Code web workbench (installed .vsix, real claude CLI)', function () {
  this.timeout(180_000);
  let tmp: string;
  let shared: SharedWorkbench;
  let page: Page;
  let model: ModelServer;
  let ws: string;

  before(async function () {
    // The server, Chromium and the extension's activation when this file is the first: 180 s was too little at a
    // load of 23 on 2 cores.
    this.timeout(600_000);
    shared = await sharedWorkbench(repo);
    // The .vsix holds the page and its codicons: the extension installed from it has them.
    const installed = fs.readdirSync(shared.extensionsDir).find((d) => d.startsWith('ralph-loop.ralph-loop-'));
    assert.ok(installed, `the .vsix is installed in ${shared.extensionsDir}`);
    for (const file of ['dist/webview/main.js', 'dist/webview/codicon.ttf'])
      assert.ok(fs.existsSync(path.join(shared.extensionsDir, installed, file)), `the .vsix holds ${file}`);
    tmp = makeTempDir('ralph-e2e-dash-');
    ws = path.join(tmp, 'workspace');
    copyFixture(path.join(repo, 'test', 'fixtures', 'workspace-basic'), ws);
    const task = path.join(ws, 'RALPH_TASK.md');
    // Slow replies leave time to watch the run and pause it from the dashboard during the first iteration.
    model = await startModelServer([
      edit(task, '- [ ] Add tests', '- [x] Add tests', { usage: { input: 40_000, output: 500 }, delayMs: 4_000 }),
      say('Tests added.', { usage: { input: 60_000, output: 800 }, delayMs: 4_000 }),
      edit(task, '- [ ] Document the CLI', '- [x] Document the CLI', {
        usage: { input: 30_000, output: 400 },
        delayMs: 1_000,
      }),
      say('Documented.', { usage: { input: 50_000, output: 600 }, delayMs: 1_000 }),
      // The last run (started after the reload): the agent asks, the person answers in the dashboard's box.
      say('I need a decision first.\n<question>Postgres or SQLite?</question>', {
        usage: { input: 20_000, output: 300 },
      }),
      edit(task, '- [ ] Pick the database', '- [x] Pick the database', { usage: { input: 25_000, output: 300 } }),
      say('Done with SQLite.', { usage: { input: 26_000, output: 300 } }),
    ]);
    // The real claude CLI with this file's model server and HOME.
    fs.mkdirSync(path.join(tmp, 'home'));
    const claude = claudeWrapper(
      path.join(tmp, 'claude'),
      claudeBinary,
      scriptedClaudeEnv(model.url, path.join(tmp, 'home')),
    );
    const config = JSON.parse(fs.readFileSync(path.join(ws, '.ralph', 'config.json'), 'utf8'));
    fs.writeFileSync(
      path.join(ws, '.ralph', 'config.json'),
      JSON.stringify({ ...config, claudePath: claude }, null, 2),
    );
    page = await openWindow(shared, ws);
  });

  after(async function () {
    if (page) {
      await screenshot(page, 'last').catch(() => undefined);
      await closeWindow(shared, page);
    }
    await model?.close();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  it('opens with Ralph: Open Dashboard under a CSP with a nonce and no inline script', async () => {
    await page.locator('.activitybar [aria-label^="Ralph"]').first().click();
    await runFromPalette(page, 'Ralph: Open Dashboard');
    const d = dashboard(page);
    await d.locator('ralph-dashboard .run-header').waitFor({ timeout: 60_000 });
    const csp = await d.locator('meta[http-equiv="Content-Security-Policy"]').getAttribute('content');
    assert.match(csp ?? '', /script-src 'nonce-[A-Za-z0-9+/=]{20,}'/);
    assert.match(csp ?? '', /default-src 'none'/);
    assert.doesNotMatch(csp ?? '', /unsafe-inline|unsafe-eval/);
    // Our page has one script, from dist/webview with the nonce. (VS Code itself prepends its acquireVsCodeApi shim
    // to every webview document before the page's CSP applies: that one is not ours.)
    const scripts = await d.locator('html').evaluate(() =>
      Array.from(document.scripts).map((s) => ({
        src: s.src.replace(/^.*\//, ''),
        nonce: (s.nonce ?? '').length > 0,
        vscodeShim: !s.src && (s.textContent ?? '').includes('acquireVsCodeApi'),
      })),
    );
    assert.deepEqual(
      scripts.filter((s) => !s.vscodeShim),
      [{ src: 'main.js', nonce: true, vscodeShim: false }],
    );
    // And the CSP holds: an inline script added to the page does not run.
    const ran = await d.locator('html').evaluate(async () => {
      const s = document.createElement('script');
      s.textContent = 'window.__ralphInlineRan = true';
      document.head.appendChild(s);
      await new Promise((r) => setTimeout(r, 100));
      return (window as unknown as { __ralphInlineRan?: boolean }).__ralphInlineRan === true;
    });
    assert.equal(ran, false, 'an inline script ran despite the CSP');
    await screenshot(page, '1-open');
  });

  it('shows a run started with Ralph: Start live: the chart grows and log lines stream; Pause and Resume work from it', async () => {
    await startFromPalette(page, 'RALPH_TASK.md');
    const d = dashboard(page);
    await d.locator('[data-testid="run-state"]', { hasText: 'running' }).waitFor({ timeout: 60_000 });
    await d.locator('.log-row').first().waitFor({ timeout: 30_000 });
    await d.locator('.chart-host[data-points]:not([data-points="0"])').waitFor({ timeout: 60_000 });
    const points1 = Number(await d.locator('.chart-host').getAttribute('data-points'));
    await screenshot(page, '2-running');
    await d.locator('button[data-action="pause"]:not([disabled])').click();
    await d.locator('[data-testid="run-state"]', { hasText: 'paused' }).waitFor({ timeout: 90_000 });
    await d.locator('[data-testid="gate-table"] tbody tr').first().waitFor({ timeout: 30_000 });
    await screenshot(page, '3-paused-gate');
    await d.locator('button[data-action="resume"]:not([disabled])').click();
    await d.locator('[data-testid="run-state"]', { hasText: 'completed' }).waitFor({ timeout: 120_000 });
    const points2 = Number(await d.locator('.chart-host').getAttribute('data-points'));
    assert.ok(points2 > points1, `the chart grew: ${points1} → ${points2} points`);
    assert.ok((await d.locator('[data-testid="gate-table"] tbody tr').count()) >= 2, 'a gate row per verified task');
    assert.match(await d.locator('[data-testid="run-progress"]').innerText(), /3\/3 done/);
    const logText = (await d.locator('.log-row').allInnerTexts()).join('\n');
    assert.match(logText, /GATE/);
    // Cost and tokens per task: the real CLI's usage reaches the table (input tokens per task, not zeros).
    const inputs = await d.locator('[data-testid="task-table"] tbody tr td:nth-child(3)').allInnerTexts();
    assert.ok(
      inputs.length >= 2 && inputs.every((t) => t.trim() !== '0'),
      `input tokens per task: ${inputs.join(', ')}`,
    );
    await screenshot(page, '4-completed');
  });

  it('is restored after the window reloads', async () => {
    await page.reload({ waitUntil: 'domcontentloaded' });
    await page.locator('.monaco-workbench').waitFor({ timeout: 60_000 });
    const d = dashboard(page);
    await d.locator('[data-testid="run-state"]', { hasText: 'completed' }).waitFor({ timeout: 90_000 });
    // Rebuilt from the run's RunView, which keeps the last result per gate tier: one row per tier after a reload.
    assert.ok((await d.locator('[data-testid="gate-table"] tbody tr').count()) >= 1);
    await screenshot(page, '5-restored');
  });

  it('answers a question of the agent from its text box, and the run goes on to complete', async () => {
    fs.appendFileSync(path.join(ws, 'RALPH_TASK.md'), '- [ ] Pick the database\n');
    await startFromPalette(page, 'RALPH_TASK.md');
    const d = dashboard(page);
    await d.locator('[data-testid="question"]').waitFor({ timeout: 90_000 });
    assert.match(await d.locator('[data-testid="question"] .question-text').innerText(), /Postgres or SQLite\?/);
    await d.locator('[data-testid="run-state"]', { hasText: 'waiting' }).waitFor({ timeout: 30_000 });
    await d.locator('.answer-box').fill('SQLite, in data/app.db');
    await screenshot(page, '6-question');
    await d.locator('button[data-testid="answer"]').click();
    await d.locator('[data-testid="run-state"]', { hasText: 'completed' }).waitFor({ timeout: 120_000 });
    assert.equal(await d.locator('[data-testid="question"]').count(), 0, 'the question box is gone once answered');
    assert.match(await d.locator('[data-testid="run-progress"]').innerText(), /4\/4 done/);
    const runs = fs.readdirSync(path.join(ws, '.ralph', 'runs')).sort();
    const answers = path.join(ws, '.ralph', 'runs', runs[runs.length - 1]!, 'answers');
    assert.deepEqual(
      fs.readdirSync(answers).map((f) => fs.readFileSync(path.join(answers, f), 'utf8')),
      ['SQLite, in data/app.db\n'],
    );
    assert.match((await d.locator('.log-row').allInnerTexts()).join('\n'), /ANSWERED/);
    await screenshot(page, '7-answered');
  });
});
