import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { FrameLocator, Locator, Page } from 'playwright-core';
import { claudeBinary, scriptedClaudeEnv } from '../support/claude';
import { cliPath, runCli } from '../support/cli';
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
  await page.screenshot({ path: path.join(shots, `e2e-first-hour-${name}.png`) });
}

/** `16k/200k 8%`, `16k/200k 8% (last)`: the context figure as every face writes it. */
const FIGURE = /\d[\d.]*[kM]?\/\d[\d.]*[kM]? \d+%(?: \(last\))?/;

function dashboard(page: Page): FrameLocator {
  return page.frameLocator('iframe.webview.ready').frameLocator('#active-frame');
}

function gauge(page: Page): Locator {
  return page.locator('.part.statusbar [aria-label^="Ralph run"]').first();
}

/** The `context: …` figure `ralph status` prints (an active run), or a finished run's `· context …`. */
function statusFigure(folder: string): string {
  const out = runCli(folder, ['status']).stdout;
  const m = /context:? (\S+ \d+%(?: \(last\))?)/.exec(out);
  assert.ok(m, `ralph status shows a context figure:\n${out}`);
  return m[1]!;
}

/** Runs `ralph watch` until its output holds `text` (or it exits); returns what it printed. */
function watchUntil(folder: string, text: string, runId?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cliPath, '-C', folder, 'watch', ...(runId ? ['--run', runId] : [])], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const done = () => {
      child.kill();
      resolve(out);
    };
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString();
      if (out.includes(text)) done();
    });
    child.stderr.on('data', (b: Buffer) => (out += b.toString()));
    child.once('error', reject);
    child.once('close', () => resolve(out));
  });
}

// The tier's one VS Code server and Chromium end after the last file (test/support/sharedWorkbench.ts).
after(closeSharedWorkbench);

describe('a first hour with Ralph Loop in the VS Code web workbench (installed .vsix, real claude CLI)', function () {
  this.timeout(240_000);
  let tmp: string;
  let shared: SharedWorkbench;
  let page: Page;
  let model: ModelServer;
  let ws: string;
  let refused: string;

  before(async function () {
    // The server, Chromium and the extension's activation when this file is the first.
    this.timeout(600_000);
    shared = await sharedWorkbench(repo);
    tmp = makeTempDir('ralph-e2e-first-');
    ws = path.join(tmp, 'workspace');
    copyFixture(path.join(repo, 'test', 'fixtures', 'workspace-basic'), ws);
    const task = path.join(ws, 'RALPH_TASK.md');
    // The first reply is slow: time to click the gauge and pause the run during its first iteration.
    model = await startModelServer([
      edit(task, '- [ ] Add tests', '- [x] Add tests', { usage: { input: 40_000, output: 500 }, delayMs: 6_000 }),
      say('Tests added.', { usage: { input: 52_000, output: 800 }, delayMs: 2_000 }),
      edit(task, '- [ ] Document the CLI', '- [x] Document the CLI', { usage: { input: 30_000, output: 400 } }),
      say('Documented.', { usage: { input: 33_000, output: 600 } }),
    ]);
    // The real claude CLI with this file's model server and HOME.
    fs.mkdirSync(path.join(tmp, 'home'));
    const agentEnv = scriptedClaudeEnv(model.url, path.join(tmp, 'home'));
    const claude = claudeWrapper(path.join(tmp, 'claude'), claudeBinary, agentEnv);
    const config = JSON.parse(fs.readFileSync(path.join(ws, '.ralph', 'config.json'), 'utf8'));
    fs.writeFileSync(
      path.join(ws, '.ralph', 'config.json'),
      JSON.stringify({ ...config, claudePath: claude }, null, 2),
    );
    // A second folder whose agent refuses to start: the real claude CLI, as root without IS_SANDBOX.
    refused = path.join(tmp, 'refused');
    copyFixture(path.join(repo, 'test', 'fixtures', 'workspace-basic'), refused);
    const asRoot = Object.fromEntries(Object.entries(agentEnv).filter(([k]) => k !== 'IS_SANDBOX'));
    const wrapper = claudeWrapper(path.join(tmp, 'claude-as-root'), claudeBinary, asRoot, { unset: ['IS_SANDBOX'] });
    fs.writeFileSync(
      path.join(refused, '.ralph', 'config.json'),
      JSON.stringify({ ...config, claudePath: wrapper }, null, 2),
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

  it('opens the dashboard, not a log file, when the status bar gauge is clicked during a run', async () => {
    await page.locator('.activitybar [aria-label^="Ralph"]').first().click();
    // The extension is active once its tree lists the sources.
    await page
      .locator('.pane-body .monaco-list-row', { hasText: 'RALPH_TASK.md' })
      .first()
      .waitFor({ timeout: 60_000 });
    await startFromPalette(page, 'RALPH_TASK.md');
    await gauge(page).waitFor({ timeout: 90_000 });
    await gauge(page).click();
    const d = dashboard(page);
    await d.locator('[data-testid="run-state"]', { hasText: 'running' }).waitFor({ timeout: 60_000 });
    assert.equal(
      await page.locator('.tabs-container .tab', { hasText: 'activity.log' }).count(),
      0,
      'no activity.log editor was opened',
    );
    await d.locator('[data-testid="run-context"]', { hasText: FIGURE }).waitFor({ timeout: 60_000 });
    await screenshot(page, 'dashboard-running');
  });

  it('shows one context figure on the gauge, the dashboard header, ralph status and ralph watch at the same moment', async () => {
    const d = dashboard(page);
    await d.locator('button[data-action="pause"]:not([disabled])').click();
    await d.locator('[data-testid="run-state"]', { hasText: 'paused' }).waitFor({ timeout: 90_000 });
    // Paused between iterations, the figure holds still: the log's (what status reads) is the one to find everywhere.
    const figure = statusFigure(ws);
    assert.match(figure, FIGURE);
    await gauge(page).filter({ hasText: figure }).waitFor({ timeout: 30_000 });
    await d.locator('[data-testid="run-context"]', { hasText: figure }).waitFor({ timeout: 30_000 });
    const watched = await watchUntil(ws, `TOKENS: ${figure}`);
    assert.ok(watched.includes(`TOKENS: ${figure}`), `ralph watch:\n${watched}`);
    assert.doesNotMatch(watched, /TOKENS: \d+ \/ \d+/, 'no face divides by the rotate threshold');
    await screenshot(page, 'paused-one-figure');
  });

  it('keeps that one figure, marked last, on every face after the run ends; the gauge still opens the dashboard', async () => {
    const d = dashboard(page);
    await d.locator('button[data-action="resume"]:not([disabled])').click();
    await d.locator('[data-testid="run-state"]', { hasText: 'completed' }).waitFor({ timeout: 150_000 });
    const figure = statusFigure(ws);
    assert.match(figure, / \(last\)$/);
    await gauge(page).filter({ hasText: figure }).waitFor({ timeout: 30_000 });
    await d.locator('[data-testid="run-context"]', { hasText: figure }).waitFor({ timeout: 30_000 });
    // A finished run is replayed by its id.
    const runId = fs
      .readdirSync(path.join(ws, '.ralph', 'runs'))
      .sort()
      .at(-1)!;
    const watched = await watchUntil(ws, `context ${figure}`, runId);
    assert.ok(watched.includes(`context ${figure}`), `ralph watch:\n${watched}`);
    await screenshot(page, 'dashboard-finished');
    // Closed, and opened again from the gauge after the end.
    await runFromPalette(page, 'View: Close All Editors');
    await page.locator('iframe.webview.ready').waitFor({ state: 'detached', timeout: 30_000 });
    await gauge(page).click();
    await dashboard(page).locator('[data-testid="run-context"]', { hasText: figure }).waitFor({ timeout: 60_000 });
  });

  it('opens the walkthrough from Welcome: Open Walkthrough…, with its five steps', async () => {
    // VS Code lists an extension's walkthrough once its getting-started service registered it (offline it first waits
    // up to 5 s on the experiment service); the pick is opened again until the row is there.
    const row = page.locator('.quick-input-list .monaco-list-row', { hasText: 'Ralph Loop: your first hour' });
    for (let attempt = 1; ; attempt++) {
      await runFromPalette(page, 'Welcome: Open Walkthrough...');
      if (
        await row
          .first()
          .isVisible({ timeout: 10_000 })
          .catch(() => false)
      )
        break;
      await page.keyboard.press('Escape');
      assert.ok(attempt < 6, 'the Ralph Loop walkthrough is listed by Welcome: Open Walkthrough...');
    }
    await row.first().click();
    // The editor is VS Code's Welcome page showing our walkthrough (its title is the extension's display name).
    await page.locator('.tabs-container .tab', { hasText: 'Walkthrough: Ralph Loop' }).waitFor({ timeout: 30_000 });
    const steps = page.locator('.gettingStartedContainer button.getting-started-step h3.step-title');
    await steps.filter({ hasText: 'Find or install an agent CLI' }).waitFor({ timeout: 30_000 });
    assert.deepEqual(
      (await steps.allInnerTexts()).map((t) => t.trim()),
      [
        'Find or install an agent CLI',
        'Create a plan',
        'Start the loop',
        'Watch the gauge and the dashboard',
        'Pause, stop and reset',
      ],
    );
    await screenshot(page, 'walkthrough');
    await runFromPalette(page, 'View: Close All Editors');
  });

  it('leaves no flow-next task in progress after a start whose agent refuses to run', async () => {
    const p2 = await openWindow(shared, refused);
    try {
      await p2.locator('.activitybar [aria-label^="Ralph"]').first().click();
      await p2.locator('.pane-body .monaco-list-row', { hasText: 'flow-next' }).first().waitFor({ timeout: 60_000 });
      await startFromPalette(p2, '.flow');
      await p2
        .locator('.notifications-toasts .notification-toast', { hasText: /refuse|failed|root/i })
        .first()
        .waitFor({ timeout: 120_000 });
      const runs = fs.readdirSync(path.join(refused, '.ralph', 'runs'));
      assert.equal(runs.length, 1);
      const record = JSON.parse(fs.readFileSync(path.join(refused, '.ralph', 'runs', runs[0]!, 'run.json'), 'utf8'));
      assert.equal(record.state, 'failed', JSON.stringify(record));
      const task = JSON.parse(fs.readFileSync(path.join(refused, '.flow', 'tasks', 'fn-1.1.json'), 'utf8'));
      assert.equal(task.status, 'todo', JSON.stringify(task));
      const status = runCli(refused, ['status', '--json']).json() as { tasks: { in_progress: number } };
      assert.equal(status.tasks.in_progress, 0);
      const tree = p2.locator('.pane-body .monaco-list-row');
      await tree.first().waitFor({ timeout: 30_000 });
      assert.equal(await p2.locator('.pane-body .monaco-list-row .codicon-modifier-spin').count(), 0, 'no spinner');
      await screenshot(p2, 'tree-after-refused-start');
    } finally {
      await closeWindow(shared, p2);
    }
  });
});
