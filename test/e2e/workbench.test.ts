import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { findRepoRoot } from '../support/repoRoot';
import { copyFixture, launchBrowser, openPage, packageVsix, runFromPalette, serverRoot, startServer, writeRecordingStub, type RunningServer } from '../runners/vscodeServer';
import { edit, say, startModelServer, type ModelServer } from '../support/modelServer';

const repo = findRepoRoot(__dirname);
const shots = path.join(repo, 'test-results');

async function screenshot(page: Page, name: string): Promise<void> {
  fs.mkdirSync(shots, { recursive: true });
  await page.screenshot({ path: path.join(shots, `e2e-${name}.png`) });
}

describe('Ralph Loop installed from its .vsix in the VS Code web workbench', function () {
  let tmp: string;
  let server: RunningServer;
  let browser: Browser;
  let page: Page;
  let model: ModelServer;
  let ws: string;

  before(async function () {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ralph-e2e-'));
    const ext = path.join(tmp, 'ext');
    const vsix = packageVsix(repo, tmp);
    execFileSync(process.execPath, [path.join(serverRoot(repo), 'out', 'server-main.js'), '--install-extension', vsix, '--extensions-dir', ext, '--accept-server-license-terms'], { stdio: 'pipe' });
    ws = path.join(tmp, 'workspace');
    copyFixture(path.join(repo, 'test', 'fixtures', 'workspace-basic'), ws);
    writeRecordingStub(path.join(tmp, 'bin'), path.join(tmp, 'stub.log'));
    // Ralph: Start drives the real Claude Code CLI against a scripted model server run by this test.
    const task = path.join(ws, 'RALPH_TASK.md');
    model = await startModelServer([
      edit(task, '- [ ] Add tests', '- [x] Add tests'), say('Tests added.'),
      edit(task, '- [ ] Document the CLI', '- [x] Document the CLI'), say('Documented.'),
    ]);
    const config = JSON.parse(fs.readFileSync(path.join(ws, '.ralph', 'config.json'), 'utf8'));
    fs.writeFileSync(path.join(ws, '.ralph', 'config.json'), JSON.stringify({ ...config, claudePath: path.join(repo, 'node_modules', '.bin', 'claude') }, null, 2));
    fs.mkdirSync(path.join(tmp, 'home'));
    server = await startServer({
      repo, tmp, trusted: true, extensionsDir: ext,
      env: {
        PATH: `${path.join(tmp, 'bin')}${path.delimiter}${process.env.PATH}`,
        ANTHROPIC_BASE_URL: model.url, ANTHROPIC_API_KEY: 'e2e', HOME: path.join(tmp, 'home'), IS_SANDBOX: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      },
    });
    browser = await launchBrowser();
    page = await openPage(browser, server.url(ws));
    await page.locator('.monaco-workbench').waitFor({ timeout: 60_000 });
  });

  after(async function () {
    if (page) await screenshot(page, 'last').catch(() => undefined);
    await browser?.close().catch(() => undefined);
    await server?.stop();
    await model?.close();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  it('lists the packaged extension as installed', () => {
    const installed = fs.readdirSync(path.join(tmp, 'ext'));
    assert.ok(installed.some((d) => d.startsWith('ralph-loop.ralph-loop-')), installed.join(', '));
  });

  it('shows the fixture sources as items of the Ralph view', async () => {
    await page.locator('.activitybar [aria-label^="Ralph"]').first().click();
    const tree = page.locator('.pane-body .monaco-list-row');
    await tree.filter({ hasText: 'quantum.json — fixture-feature' }).waitFor({ timeout: 30_000 });
    const rows = await tree.allInnerTexts();
    for (const label of ['flow-next (1 epic)', 'quantum.json — fixture-feature', 'RALPH_TASK.md', 'IJFW waves', 'Ralph runs']) {
      assert.ok(rows.some((r) => r.includes(label)), `no tree item "${label}" in ${JSON.stringify(rows)}`);
    }
    await screenshot(page, 'ralph-view');
  });

  it('runs Ralph: Doctor from the command palette and shows the report in an editor', async () => {
    await runFromPalette(page, 'Ralph: Doctor');
    await page.locator('.tab', { hasText: 'Ralph Doctor.txt' }).waitFor({ timeout: 30_000 });
    const editor = page.locator('.editor-instance .view-lines');
    await editor.filter({ hasText: 'Task sources' }).waitFor({ timeout: 30_000 });
    const text = (await editor.innerText()).replace(/\u00a0/g, ' ');
    assert.match(text, /Ralph doctor/);
    assert.match(text, /quantum\s+quantum\.json — 1\/2 stories/);
    assert.match(text, /claude\s+9\.9\.9-stub/);
    await screenshot(page, 'doctor');
  });

  it('runs Ralph: Start from the command palette and reports the completed run in a notification', async () => {
    await runFromPalette(page, 'Ralph: Start');
    const sourcePick = page.locator('.quick-input-list .monaco-list-row', { hasText: 'RALPH_TASK.md' }).first();
    await sourcePick.waitFor({ timeout: 30_000 });
    await screenshot(page, 'start-pick-source');
    await sourcePick.click();
    const toast = page.locator('.notifications-toasts .notification-toast', { hasText: 'Ralph: complete' });
    await toast.waitFor({ timeout: 120_000 });
    assert.match(await toast.innerText(), /3\/3 done/);
    assert.ok(await toast.locator('a, .monaco-button', { hasText: 'Open Log' }).count(), 'the notification offers Open Log');
    await screenshot(page, 'start-complete');
    assert.doesNotMatch(fs.readFileSync(path.join(ws, 'RALPH_TASK.md'), 'utf8'), /\[ \]/);
  });
});
