/**
 * The dashboard page alone in headless Chromium (Tier B, vscode-conventions.md §3.2): dist/webview served from a
 * localhost server under the panel's own HTML and CSP, with a fake `acquireVsCodeApi` that records what the page
 * posts (`window.__posted`) and keeps its state in memory. Tests and the bench push host messages with `push`.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { dashboardHtml } from '../../src/extension/dashboard/dashboardHtml';
import type { HostMessage, PageMessage } from '../../src/protocol/dashboard';
import { launchBrowser } from '../runners/vscodeServer';

export interface DashboardPage {
  page: Page;
  /** Sends host messages to the page (as VS Code's postMessage would). */
  push(msgs: HostMessage[] | unknown[]): Promise<void>;
  /** What the page posted to the host so far. */
  posted(): Promise<PageMessage[]>;
  /** Console errors and CSP violations seen. */
  problems: string[];
  close(): Promise<void>;
}

const TYPES: Record<string, string> = { '.js': 'text/javascript', '.css': 'text/css', '.ttf': 'font/ttf' };

export async function openDashboardPage(
  repo: string,
  opts: { browser?: Browser; nonce?: string } = {},
): Promise<DashboardPage> {
  const dir = path.join(repo, 'dist', 'webview');
  if (!fs.existsSync(path.join(dir, 'main.js'))) throw new Error(`${dir}/main.js missing: run node esbuild.mjs`);
  let origin = '';
  const nonce = opts.nonce ?? 'dGVzdC1ub25jZS0xMjM0NQ==';
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', origin);
    if (url.pathname === '/') {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(
        dashboardHtml({ cspSource: origin, nonce, scriptUri: `${origin}/main.js`, styleUri: `${origin}/main.css` }),
      );
      return;
    }
    const file = path.join(dir, path.basename(url.pathname));
    if (!fs.existsSync(file)) {
      res.writeHead(404);
      res.end();
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream' });
    fs.createReadStream(file).pipe(res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const browser = opts.browser ?? (await launchBrowser());
  const context = await browser.newContext({ viewport: { width: 1200, height: 1000 } });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' && !/favicon|404 \(Not Found\)/.test(m.text())) problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(String(e)));
  await page.addInitScript(() => {
    const w = window as unknown as { __posted: unknown[]; __state: unknown; acquireVsCodeApi: () => unknown };
    w.__posted = [];
    w.__state = undefined;
    let acquired = false;
    w.acquireVsCodeApi = () => {
      if (acquired) throw new Error('acquireVsCodeApi called twice');
      acquired = true;
      return {
        postMessage: (m: unknown) => w.__posted.push(m),
        getState: () => w.__state,
        setState: (s: unknown) => (w.__state = s),
      };
    };
    // A theme like VS Code's dark one, from its variables only.
    const vars: Record<string, string> = {
      '--vscode-foreground': '#cccccc',
      '--vscode-editor-background': '#1e1e1e',
      '--vscode-font-family': 'sans-serif',
      '--vscode-font-size': '13px',
      '--vscode-editor-font-family': 'monospace',
      '--vscode-editor-font-size': '12px',
      '--vscode-descriptionForeground': '#9d9d9d',
      '--vscode-charts-blue': '#3794ff',
      '--vscode-charts-green': '#89d185',
      '--vscode-charts-yellow': '#cca700',
      '--vscode-charts-red': '#f14c4c',
      '--vscode-charts-purple': '#b180d7',
      '--vscode-charts-orange': '#d18616',
      '--vscode-button-background': '#0e639c',
      '--vscode-button-foreground': '#ffffff',
      '--vscode-button-secondaryBackground': '#3a3d41',
      '--vscode-button-secondaryForeground': '#ffffff',
      '--vscode-badge-background': '#4d4d4d',
      '--vscode-badge-foreground': '#ffffff',
      '--vscode-panel-border': '#444444',
      '--vscode-input-background': '#3c3c3c',
      '--vscode-input-foreground': '#cccccc',
      '--vscode-errorForeground': '#f48771',
      '--vscode-textLink-foreground': '#3794ff',
      '--vscode-focusBorder': '#007fd4',
    };
    document.addEventListener('DOMContentLoaded', () => {
      for (const [k, v] of Object.entries(vars)) document.documentElement.style.setProperty(k, v);
      document.body.classList.add('vscode-dark');
    });
  });
  await page.goto(origin, { waitUntil: 'load' });
  await page.waitForFunction(() => (window as unknown as { __posted: unknown[] }).__posted.length > 0);
  return {
    page,
    problems,
    push: async (msgs) => {
      await page.evaluate((ms) => {
        for (const m of ms) window.postMessage(m, '*');
      }, msgs as unknown[]);
    },
    posted: () => page.evaluate(() => (window as unknown as { __posted: PageMessage[] }).__posted),
    close: async () => {
      await context.close().catch(() => undefined);
      if (!opts.browser) await browser.close().catch(() => undefined);
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
