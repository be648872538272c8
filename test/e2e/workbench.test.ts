import * as assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Page } from 'playwright-core';
import { trustWorkspace } from '../../src/core/trust/workspaceTrust';
import { findRepoRoot } from '../support/repoRoot';
import { copyFixture, runFromPalette } from '../runners/vscodeServer';
import { bash, edit, say, startModelServer, type ModelServer } from '../support/modelServer';
import { claudeBinary, scriptedClaudeEnv } from '../support/claude';
import {
  claudeWrapper,
  closeSharedWorkbench,
  closeWindow,
  openWindow,
  sharedWorkbench,
  type SharedWorkbench,
} from '../support/sharedWorkbench';
import { makeTempDir } from '../support/tempFolder';

const repo = findRepoRoot(__dirname);
const shots = path.join(repo, 'test-results');

async function screenshot(page: Page, name: string): Promise<void> {
  fs.mkdirSync(shots, { recursive: true });
  await page.screenshot({ path: path.join(shots, `e2e-${name}.png`) });
}

// The tier's one VS Code server and Chromium end after the last file (test/support/sharedWorkbench.ts).
after(closeSharedWorkbench);

describe('Ralph Loop installed from its .vsix in the VS Code web workbench', function () {
  let tmp: string;
  let shared: SharedWorkbench;
  let page: Page;
  let model: ModelServer;
  let ws: string;

  before(async function () {
    // The server, Chromium and the extension's activation when this file is the first.
    this.timeout(600_000);
    shared = await sharedWorkbench(repo);
    tmp = makeTempDir('ralph-e2e-');
    ws = path.join(tmp, 'workspace');
    copyFixture(path.join(repo, 'test', 'fixtures', 'workspace-basic'), ws);
    // Ralph: Start drives the real Claude Code CLI against a scripted model server run by this test.
    const task = path.join(ws, 'RALPH_TASK.md');
    model = await startModelServer([
      edit(task, '- [ ] Add tests', '- [x] Add tests'),
      say('Tests added.'),
      edit(task, '- [ ] Document the CLI', '- [x] Document the CLI'),
      say('Documented.'),
    ]);
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
    // The workspace's gates and claudePath are trusted as `ralph trust` would (in the extension hosts' state folder).
    await trustWorkspace(ws, { env: { XDG_STATE_HOME: shared.stateHome } });
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

  it('lists the packaged extension as installed', () => {
    const installed = fs.readdirSync(shared.extensionsDir);
    assert.ok(
      installed.some((d) => d.startsWith('ralph-loop.ralph-loop-')),
      installed.join(', '),
    );
  });

  it('shows the fixture sources as items of the Ralph view', async () => {
    await page.locator('.activitybar [aria-label^="Ralph"]').first().click();
    const tree = page.locator('.pane-body .monaco-list-row');
    await tree.filter({ hasText: 'quantum.json — fixture' }).waitFor({ timeout: 30_000 });
    const rows = await tree.allInnerTexts();
    // The quantum root is titled by the plan graph's `project`; the runs row shows once a run exists.
    for (const label of ['flow-next (1 epic)', 'quantum.json — fixture', 'RALPH_TASK.md', 'IJFW waves']) {
      assert.ok(
        rows.some((r) => r.includes(label)),
        `no tree item "${label}" in ${JSON.stringify(rows)}`,
      );
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
    assert.ok(
      await toast.locator('a, .monaco-button', { hasText: 'Open Log' }).count(),
      'the notification offers Open Log',
    );
    await screenshot(page, 'start-complete');
    assert.doesNotMatch(fs.readFileSync(path.join(ws, 'RALPH_TASK.md'), 'utf8'), /\[ \]/);
  });

  it('shows the status bar token gauge changing during a run started with `ralph run` in a terminal', async () => {
    const task = path.join(ws, 'RALPH_TASK.md');
    fs.writeFileSync(task, '- [ ] Write the changelog\n');
    const runModel = await startModelServer([
      bash('sleep 2; echo reading', { usage: { input: 1000, cacheRead: 40_000 } }),
      bash('sleep 3; echo writing', { usage: { input: 1000, cacheRead: 150_000 } }),
      edit(task, '- [ ] Write', '- [x] Write'),
      say('Changelog written.'),
    ]);
    const home = path.join(tmp, 'home-cli');
    fs.mkdirSync(home, { recursive: true });
    // Every text and background the gauge shows, as the page changes them: a MutationObserver on the status bar
    // calls back on each change, from before the run starts. A screenshot at the first context figure, and at the
    // first warning background. The item's container carries VS Code's `warning-kind` / `error-kind` class for the
    // two theme backgrounds.
    const texts: string[] = [];
    let runShot: Promise<void> | undefined;
    let warnShot: Promise<void> | undefined;
    let child: ChildProcess | undefined;
    try {
      await page.exposeBinding('__ralphGaugeChanged', (_source, text: string, kind: string) => {
        if (text && texts.at(-1) !== text) texts.push(text);
        if (!runShot && /\d+k\/200k/.test(text)) runShot = screenshot(page, 'gauge-running');
        if (!warnShot && /7\d%/.test(text) && /\bwarning-kind\b/.test(kind))
          warnShot = screenshot(page, 'gauge-warning');
      });
      await page.evaluate(() => {
        const w = window as unknown as {
          __ralphGaugeChanged: (text: string, kind: string) => void;
          __ralphGaugeObserver?: MutationObserver;
        };
        const bar = document.querySelector('.part.statusbar');
        if (!bar) throw new Error('no status bar');
        let last = '';
        const report = () => {
          const item = bar.querySelector<HTMLElement>('[aria-label^="Ralph run"]');
          if (!item) return;
          const text = item.innerText.trim();
          const kind = item.closest('.statusbar-item')?.className ?? '';
          if (`${text}\n${kind}` === last) return;
          last = `${text}\n${kind}`;
          w.__ralphGaugeChanged(text, kind);
        };
        w.__ralphGaugeObserver = new MutationObserver(report);
        w.__ralphGaugeObserver.observe(bar, { subtree: true, childList: true, characterData: true, attributes: true });
        report();
      });
      child = spawn(
        process.execPath,
        [path.join(repo, 'dist', 'cli.js'), '-C', ws, 'run', '--source', 'RALPH_TASK.md', '--no-gates'],
        {
          env: {
            ...process.env,
            XDG_STATE_HOME: shared.stateHome,
            ANTHROPIC_BASE_URL: runModel.url,
            ANTHROPIC_API_KEY: 'e2e',
            HOME: home,
            IS_SANDBOX: '1',
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
          },
          stdio: 'ignore',
        },
      );
      const exited = new Promise<number | null>((resolve) => child!.on('close', resolve));
      const gauge = page.locator('.part.statusbar [aria-label^="Ralph run"]').first();
      assert.equal(await exited, 0);
      await page.locator('.part.statusbar [aria-label*="completed"]').first().waitFor({ timeout: 15_000 });
      texts.push((await gauge.innerText()).trim());
      await Promise.all([runShot, warnShot]);
      await screenshot(page, 'gauge-completed');
      assert.ok(
        texts.some((t) => /^\d+k\/200k \d+%/.test(t)),
        `the gauge showed the context: ${JSON.stringify(texts)}`,
      );
      assert.ok(new Set(texts).size >= 3, `the gauge changed during the run: ${JSON.stringify(texts)}`);
      assert.ok(
        texts.some((t) => /7\d%/.test(t)),
        `the warn-level context showed: ${JSON.stringify(texts)}`,
      );
      assert.ok(
        warnShot !== undefined,
        `the warning background showed at the warn threshold: ${JSON.stringify(texts)}`,
      );
      assert.match(texts.at(-1)!, /completed$/);
    } finally {
      if (child && child.exitCode === null) child.kill('SIGINT');
      await page
        .evaluate(() =>
          (window as unknown as { __ralphGaugeObserver?: MutationObserver }).__ralphGaugeObserver?.disconnect(),
        )
        .catch(() => undefined);
      await runModel.close();
    }
  });

  it('expands each source of the plan tree and shows its items', async () => {
    // Both stories done, the second depending on the first: the cascade of the next test has something to take.
    const q = JSON.parse(fs.readFileSync(path.join(ws, 'quantum.json'), 'utf8')) as { stories: { status: string }[] };
    q.stories[1]!.status = 'passed';
    fs.writeFileSync(path.join(ws, 'quantum.json'), JSON.stringify(q, null, 2) + '\n');
    // A subagent's checkpoint in the fixture's wave (issue 18's core classifies it): the wave row gets a child.
    fs.writeFileSync(
      path.join(ws, '.ijfw', 'wave-1', 'subagent-1-A.checkpoint.json'),
      JSON.stringify({
        schema_version: 1,
        wave_id: '1',
        sub_id: '1-A',
        ts: new Date().toISOString(),
        next_step: 'finish the lexer',
      }),
    );
    const tree = page.locator('.pane-body .monaco-list-row');
    // A click on the active container's icon would close the side bar: click only when the view is not showing.
    if (!(await tree.filter({ hasText: 'flow-next (1 epic)' }).first().isVisible()))
      await page.locator('.activitybar [aria-label^="Ralph"]').first().click();
    const expand = async (label: string, child: string | RegExp) => {
      const row = tree.filter({ hasText: label }).first();
      await row.waitFor({ timeout: 30_000 });
      if ((await row.getAttribute('aria-expanded')) !== 'true') await row.click();
      await tree.filter({ hasText: child }).first().waitFor({ timeout: 30_000 });
    };
    await expand('flow-next (1 epic)', 'fn-1');
    await expand('Fixture epic', 'fn-1.1 Fixture task');
    await expand('quantum.json — fixture', 'US-001 First story');
    await tree
      .filter({ hasText: 'US-002 Second story' })
      .filter({ hasText: 'done' })
      .first()
      .waitFor({ timeout: 30_000 });
    // The gauge test above rewrote the task file to one item.
    await expand('RALPH_TASK.md', 'Write the changelog');
    // A row's text is its label and description run together ("wave 10/1 done"): match the label as a substring.
    await expand('IJFW waves', 'wave 1');
    await expand('wave 1', /1-A\s*active/);
    await screenshot(page, 'tree-expanded');
  });

  it('resets a done story with its dependents from the context menu and the modal', async () => {
    const tree = page.locator('.pane-body .monaco-list-row');
    const story = tree.filter({ hasText: 'US-001 First story' }).first();
    await story.click({ button: 'right' });
    const item = page.locator('.context-view .action-item', { hasText: 'Reset Task and Dependents' }).first();
    await item.waitFor({ timeout: 15_000 });
    await screenshot(page, 'tree-context-menu');
    await item.click();
    const dialog = page.locator('.monaco-dialog-box');
    await dialog.waitFor({ timeout: 15_000 });
    const text = await dialog.innerText();
    assert.match(text, /Reset US-001 and its dependents \(2 items\) to "to do"\?/);
    assert.match(text, /US-001 First story \(done → to do\)/);
    assert.match(text, /US-002 Second story \(done → to do\)/);
    await screenshot(page, 'tree-reset-modal');
    await dialog.locator('.monaco-button', { hasText: 'Reset' }).first().click();
    await tree
      .filter({ hasText: 'US-002 Second story' })
      .filter({ hasText: 'to do' })
      .first()
      .waitFor({ timeout: 15_000 });
    const stories = (
      JSON.parse(fs.readFileSync(path.join(ws, 'quantum.json'), 'utf8')) as {
        stories: { id: string; status: string }[];
      }
    ).stories;
    assert.deepEqual(
      stories.map((s) => [s.id, s.status]),
      [
        ['US-001', 'pending'],
        ['US-002', 'pending'],
      ],
    );
    await screenshot(page, 'tree-after-reset');
  });
});
