/**
 * Starts VS Code 1.100.3's server (from code-server@4.100.3, installed by scripts/setup-test-env.sh) on
 * 127.0.0.1 and opens its web workbench in Debian's headless Chromium via playwright-core. Shared by the
 * integration runner (development + tests paths in the URL payload) and the e2e tests (installed .vsix).
 * How and why: docs/testing.md ("The VS Code server"). Everything started here is ended by `stop()`.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

export const CHROMIUM = process.env.RALPH_CHROMIUM ?? '/usr/bin/chromium';

/**
 * VS Code's server folder (the one holding `out/server-main.js`): `RALPH_VSCODE_SERVER` when set, else the copy
 * scripts/setup-test-env.sh installs under `.vscode-test/`.
 */
export function serverRoot(repo: string): string {
  return (
    process.env.RALPH_VSCODE_SERVER ??
    path.join(repo, '.vscode-test', 'server', 'node_modules', 'code-server', 'lib', 'vscode')
  );
}

/** Why the VS Code server cannot be started here (a sentence naming what is missing and where), or null when it can. */
export function serverUnavailable(repo: string): string | null {
  const main = path.join(serverRoot(repo), 'out', 'server-main.js');
  if (!fs.existsSync(main))
    return `the test VS Code server is not installed (no ${main}; run scripts/setup-test-env.sh, or set RALPH_VSCODE_SERVER)`;
  if (!fs.existsSync(CHROMIUM))
    return `Chromium is not installed at ${CHROMIUM} (run scripts/setup-test-env.sh, or set RALPH_CHROMIUM)`;
  return null;
}

export interface ServerOptions {
  repo: string;
  /** Scratch folder for user, server and extension data. */
  tmp: string;
  trusted: boolean;
  env?: NodeJS.ProcessEnv;
  /** Extensions folder (e.g. one a .vsix was installed into). Default `<tmp>/ext`. */
  extensionsDir?: string;
  /**
   * The workbench's machine settings; default {@link TEST_WORKBENCH_SETTINGS} (what the browser tiers need). The
   * extension-host tier passes `{}`: its walkthrough test opens the Welcome editor that a start-up Welcome page
   * leaves in place, and it opens no command palette.
   */
  workbenchSettings?: Record<string, unknown>;
}

export interface RunningServer {
  port: number;
  url(folder: string, payload?: [string, string][]): string;
  /** Server output so far (stdout + stderr). */
  output(): string;
  /** Resolves true once the output so far matches `re` (or `re(output)` is true), false at the timeout or the server's exit. */
  waitForOutput(re: RegExp | ((out: string) => boolean), timeoutMs: number): Promise<boolean>;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/**
 * The test workbench's settings, as the server's machine settings (`<user-data-dir>/Machine/settings.json`, which
 * the web workbench applies to every window it opens): no Welcome page or walkthrough opened at start-up, which would
 * take the focus from the command palette a test opens next.
 */
export const TEST_WORKBENCH_SETTINGS = {
  'workbench.startupEditor': 'none',
  'workbench.welcomePage.walkthroughs.openOnInstall': false,
  'workbench.tips.enabled': false,
} as const;

function writeMachineSettings(userDataDir: string, settings: Record<string, unknown>): void {
  const file = path.join(userDataDir, 'Machine', 'settings.json');
  fs.mkdirSync(path.dirname(file), { recursive: true });
  let current: Record<string, unknown> = {};
  try {
    current = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
  } catch {
    /* none yet */
  }
  fs.writeFileSync(file, JSON.stringify({ ...settings, ...current }, null, 2) + '\n');
}

/** Starts the server and resolves once it listens. Throws with the server's output when it does not start. */
export async function startServer(o: ServerOptions): Promise<RunningServer> {
  const root = serverRoot(o.repo);
  if (!fs.existsSync(path.join(root, 'out', 'server-main.js')))
    throw new Error(`VS Code server missing at ${root}: run scripts/setup-test-env.sh`);
  const port = await freePort();
  writeMachineSettings(path.join(o.tmp, 'ud'), o.workbenchSettings ?? TEST_WORKBENCH_SETTINGS);
  const args = [
    path.join(root, 'out', 'server-main.js'),
    '--host',
    '127.0.0.1',
    '--port',
    String(port),
    '--without-connection-token',
    '--accept-server-license-terms',
    '--user-data-dir',
    path.join(o.tmp, 'ud'),
    '--server-data-dir',
    path.join(o.tmp, 'sd'),
    '--extensions-dir',
    o.extensionsDir ?? path.join(o.tmp, 'ext'),
    '--disable-telemetry',
    // Tests own the environment (PATH with stubs first): don't replace it with a login shell's.
    '--force-disable-user-env',
  ];
  if (o.trusted) args.push('--disable-workspace-trust');
  let out = '';
  const waiters: (() => void)[] = [];
  const child: ChildProcess = spawn(process.execPath, args, {
    env: { ...process.env, ...o.env },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const onData = (b: Buffer) => {
    out += b.toString();
    if (process.env.RALPH_TEST_VERBOSE) process.stderr.write(b);
    waiters.splice(0).forEach((w) => w());
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<void>((r) =>
    child.once('exit', () => {
      waiters.splice(0).forEach((w) => w());
      r();
    }),
  );
  const waitForOutput = async (re: RegExp | ((out: string) => boolean), timeoutMs: number) => {
    const matches = () => (typeof re === 'function' ? re(out) : re.test(out));
    const deadline = Date.now() + timeoutMs;
    while (!matches()) {
      if (child.exitCode !== null || Date.now() > deadline) return matches();
      await new Promise<void>((r) => {
        waiters.push(r);
        setTimeout(r, 250);
      });
    }
    return true;
  };
  const stop = async () => {
    if (child.exitCode === null && child.pid) {
      try {
        process.kill(-child.pid, 'SIGTERM');
      } catch {
        /* gone */
      }
      const t = setTimeout(() => {
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          /* gone */
        }
      }, 5000);
      await exited;
      clearTimeout(t);
    }
    // The extension host and its helpers live in the same process group; make sure none survived.
    if (child.pid) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        /* none left */
      }
    }
  };
  if (!(await waitForOutput(/Extension host agent listening on|Web UI available|listening on/i, 60_000))) {
    await stop();
    throw new Error(`VS Code server did not start:\n${out}`);
  }
  const url = (folder: string, payload?: [string, string][]) => {
    let u = `http://127.0.0.1:${port}/?folder=${encodeURIComponent(folder)}`;
    if (payload) u += `&payload=${encodeURIComponent(JSON.stringify(payload))}`;
    return u;
  };
  return { port, url, output: () => out, waitForOutput, stop };
}

/**
 * Launches headless Chromium with the flags this closed network needs. `ownSignals`: Playwright installs no SIGINT,
 * SIGTERM or SIGHUP handler (its own ends the whole process with exit 130 before the caller can clean up; the demo
 * handles Ctrl-C itself).
 */
export async function launchBrowser(o: { ownSignals?: boolean } = {}): Promise<Browser> {
  return chromium.launch({
    ...(o.ownSignals ? { handleSIGINT: false, handleSIGTERM: false, handleSIGHUP: false } : {}),
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-dev-shm-usage',
    ],
  });
}

export async function openPage(browser: Browser, url: string): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  // 120 s, not Playwright's 30: the first load of the workbench takes longer than that on a loaded machine.
  await page.goto(url, { waitUntil: 'domcontentloaded', timeout: 120_000 });
  return page;
}

/**
 * Packages the extension with scripts/package.mjs (vsce and its `vscode:prepublish` production build) into `<outDir>/ralph-loop.vsix` and
 * returns that path. Throws with vsce's output when packaging fails. Used by the e2e tier and `npm run demo`.
 */
export function packageVsix(repo: string, outDir: string): string {
  const vsix = path.join(outDir, 'ralph-loop.vsix');
  // scripts/package.mjs (`npm run package`) fails on any vsce warning: the tier's .vsix is the one users get.
  execFileSync(process.execPath, [path.join(repo, 'scripts', 'package.mjs'), '--out', vsix], {
    cwd: repo,
    stdio: 'pipe',
  });
  return vsix;
}

/**
 * The e2e tier's one packaged .vsix (`test-results/ralph-loop.vsix`, git-ignored): the one scripts/test.mjs packaged
 * before any tier started (`RALPH_TIER_VSIX`: packaging rebuilds dist/ in production mode, which must not happen
 * while other tiers run dist/cli.js), else packaged on first use and reused by every later caller in this process
 * (each e2e test file is its own bundle, so the memo lives on `globalThis`).
 */
export function tierVsix(repo: string): string {
  const memo = globalThis as { __ralphTierVsix?: string };
  const packaged = process.env.RALPH_TIER_VSIX;
  if (packaged && fs.existsSync(packaged)) return packaged;
  if (!memo.__ralphTierVsix || !fs.existsSync(memo.__ralphTierVsix)) {
    const dir = path.join(repo, 'test-results');
    fs.mkdirSync(dir, { recursive: true });
    memo.__ralphTierVsix = packageVsix(repo, dir);
  }
  return memo.__ralphTierVsix;
}

/** Installs a .vsix into the extensions folder `extensionsDir` with the server's own `--install-extension`. */
export function installVsix(repo: string, vsix: string, extensionsDir: string): void {
  execFileSync(
    process.execPath,
    [
      path.join(serverRoot(repo), 'out', 'server-main.js'),
      '--install-extension',
      vsix,
      '--extensions-dir',
      extensionsDir,
      '--accept-server-license-terms',
    ],
    { stdio: 'pipe' },
  );
}

/**
 * Runs a command as a person does: F1, type its title, Enter on the row whose label is exactly `title` once it is
 * visible and focused (a click when another row keeps the focus). When the palette closes before that row shows (an
 * editor opening at start-up takes the focus), it is opened again, up to three times.
 */
export async function runFromPalette(page: Page, title: string): Promise<void> {
  const widget = page.locator('.quick-input-widget');
  const input = widget.locator('input.input');
  const exact = new RegExp(`^${title.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);
  const row = widget
    .locator('.quick-input-list .monaco-list-row')
    .filter({ has: page.locator('.label-name', { hasText: exact }) })
    .first();
  for (let attempt = 1; ; attempt++) {
    try {
      if (!(await input.isVisible())) await page.keyboard.press('F1');
      await input.waitFor({ state: 'visible', timeout: 15_000 });
      await input.fill(`>${title}`);
      await row.waitFor({ state: 'visible', timeout: 15_000 });
      break;
    } catch (err) {
      if (attempt >= 3) throw err;
      await page.keyboard.press('Escape');
    }
  }
  if (/\bfocused\b/.test((await row.getAttribute('class')) ?? '')) await input.press('Enter');
  else await row.click();
  // Accepted once the palette closed or shows something else (a command's own quick pick reuses the widget).
  await page.waitForFunction(
    (typed) => {
      const w = document.querySelector<HTMLElement>('.quick-input-widget');
      const i = w?.querySelector<HTMLInputElement>('input.input');
      return !w || !i || w.style.display === 'none' || i.value !== typed;
    },
    `>${title}`,
    { timeout: 15_000 },
  );
}

/** Copies a fixture folder to `dest` (recursive). */
export function copyFixture(src: string, dest: string): void {
  fs.cpSync(src, dest, { recursive: true });
}

/** Writes a recording stub `claude` that logs each argv to `logFile` and prints a fake version. */
export function writeRecordingStub(binDir: string, logFile: string, name = 'claude'): void {
  fs.mkdirSync(binDir, { recursive: true });
  const file = path.join(binDir, name);
  fs.writeFileSync(file, `#!/bin/sh\necho "${name} $*" >> '${logFile}'\necho "9.9.9-stub (Claude Code)"\n`);
  fs.chmodSync(file, 0o755);
}
