/**
 * The e2e tier's one VS Code server and one headless Chromium, shared by the e2e files that drive the web workbench
 * with the packaged .vsix installed (dashboard, first hour, workbench). A start of the server, the `.vsix` install
 * into it and a Chromium launch cost a few seconds of CPU and more of wall time; the tier paid them once per file
 * (docs/testing.md, "The e2e tier").
 *
 * - {@link sharedWorkbench} starts them on its first call in the process and returns the same ones after; every e2e
 *   file is its own bundle, so the one copy lives on `globalThis`. A file run alone starts them itself.
 * - Each file registers {@link closeSharedWorkbench} as a root `after` hook (at the file's top level), so the server
 *   and Chromium end once, after the last file, in the tier and in a mocha run of some files alike.
 * - What the tests rely on stays each file's own: its workspace folders and scratch (mkdtemp), its model servers, the
 *   agent's HOME (each workspace's `claudePath` is a {@link claudeWrapper} naming them), and its window:
 *   {@link openWindow} opens the folder in a browser context of its own (its own storage; VS Code gives each window
 *   its own extension host), {@link closeWindow} closes it and waits until that extension host has exited.
 * - What is shared is the extension hosts' environment: HOME (the extension's, not the agent's), `XDG_STATE_HOME`
 *   ({@link SharedWorkbench.stateHome}: trust records are kept per workspace path there) and PATH, whose first folder
 *   holds a recording `claude` stub (Ralph: Doctor shows what is on PATH). No variable points an agent at a model
 *   server: `ANTHROPIC_BASE_URL` names a closed port, so a run that missed its wrapper fails at once.
 *   `RALPH_E2E_SHARED_WORKBENCH` (the server's scratch folder) tells a wrapper it runs under this server.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import {
  installVsix,
  launchBrowser,
  openPage,
  runFromPalette,
  startServer,
  tierVsix,
  writeRecordingStub,
  type RunningServer,
} from '../runners/vscodeServer';
import { makeTempDir } from './tempFolder';

export interface SharedWorkbench {
  server: RunningServer;
  browser: Browser;
  /** The server's scratch folder (`ud`, `sd`, `ext`, `home`, `state`, `bin`), removed by {@link closeSharedWorkbench}. */
  tmp: string;
  /** The extensions folder the tier's `.vsix` was installed into (once). */
  extensionsDir: string;
  /** `XDG_STATE_HOME` of every extension host: where `ralph trust` records a workspace for them. */
  stateHome: string;
  /** What the `claude` stub on the extension hosts' PATH was asked (one argv a line). */
  stubLog: string;
}

interface Memo {
  started?: Promise<SharedWorkbench>;
  /** Ends the server's process group if the process exits before {@link closeSharedWorkbench} ran. */
  onExit?: () => void;
  /** Windows opened by {@link openWindow} and not closed yet. */
  windows?: number;
}

const KEY = '__ralphSharedWorkbench';
/** Set in the shared server's environment (its scratch folder): {@link claudeWrapper} knows it runs under it. */
const SHARED_MARK = 'RALPH_E2E_SHARED_WORKBENCH';
const memo = (): Memo => ((globalThis as Record<string, unknown>)[KEY] ??= {}) as Memo;

/** An extension host's start and exit as the server logs them (at its default info level), with its pid. */
const EXT_HOST_LAUNCHED = /<(\d+)> Launched Extension Host Process\./g;
const EXT_HOST_EXITED = /<(\d+)> Extension Host Process exited/g;

/** The pids of the extension hosts the server's output says are running. */
function liveExtensionHosts(out: string): Set<number> {
  const live = new Set([...out.matchAll(EXT_HOST_LAUNCHED)].map((m) => Number(m[1])));
  for (const m of out.matchAll(EXT_HOST_EXITED)) live.delete(Number(m[1]));
  return live;
}

/** The shared server and browser, started on the first call (the `.vsix` installed, Chromium launched). */
export function sharedWorkbench(repo: string): Promise<SharedWorkbench> {
  const m = memo();
  m.started ??= start(repo);
  return m.started;
}

async function start(repo: string): Promise<SharedWorkbench> {
  const tmp = makeTempDir('ralph-e2e-shared-');
  const extensionsDir = path.join(tmp, 'ext');
  installVsix(repo, tierVsix(repo), extensionsDir);
  const home = path.join(tmp, 'home');
  const stateHome = path.join(tmp, 'state');
  const bin = path.join(tmp, 'bin');
  const stubLog = path.join(tmp, 'stub.log');
  fs.mkdirSync(home);
  fs.mkdirSync(stateHome);
  writeRecordingStub(bin, stubLog);
  const server = await startServer({
    repo,
    tmp,
    trusted: true,
    extensionsDir,
    env: {
      PATH: `${bin}${path.delimiter}${process.env.PATH}`,
      HOME: home,
      XDG_STATE_HOME: stateHome,
      IS_SANDBOX: '1',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      ANTHROPIC_API_KEY: 'e2e',
      // Each test's agent gets its model server from its claudePath wrapper; this port is closed.
      ANTHROPIC_BASE_URL: 'http://127.0.0.1:9',
      [SHARED_MARK]: tmp,
    },
  });
  // A tier that exits before its after hooks ran leaves no server behind (it runs in a process group of its own;
  // stop() sends SIGTERM to the group before its first await).
  const m = memo();
  m.onExit = () => void server.stop();
  process.once('exit', m.onExit);
  let browser: Browser;
  try {
    browser = await launchBrowser();
  } catch (err) {
    await server.stop();
    throw err;
  }
  return { server, browser, tmp, extensionsDir, stateHome, stubLog };
}

/**
 * Ends the shared server and browser when they were started (a root `after` hook of each file using them; the later
 * calls find nothing to do), and removes their scratch folder.
 */
export async function closeSharedWorkbench(): Promise<void> {
  const m = memo();
  const started = m.started;
  if (!started) return;
  m.started = undefined;
  if (m.onExit) process.removeListener('exit', m.onExit);
  m.onExit = undefined;
  m.windows = undefined;
  const w = await started.catch(() => undefined);
  if (!w) return;
  await w.browser.close().catch(() => undefined);
  await w.server.stop();
  fs.rmSync(w.tmp, { recursive: true, force: true });
}

/** Opens `folder` in a new window of the shared workbench (a browser context of its own) once the workbench shows. */
export async function openWindow(w: SharedWorkbench, folder: string): Promise<Page> {
  const m = memo();
  const page = await openPage(w.browser, w.server.url(folder));
  m.windows = (m.windows ?? 0) + 1;
  await page.locator('.monaco-workbench').waitFor({ timeout: 60_000 });
  return page;
}

/**
 * Closes a window of the shared workbench: the page leaves the workbench (VS Code shuts the window down and
 * disconnects from the server, which ends the window's extension host at once instead of keeping it for a
 * reconnection) and its browser context closes. Resolves once the server's log shows no more extension hosts running
 * than windows still open (a window reloaded by a test had its earlier host end the same way).
 */
export async function closeWindow(w: SharedWorkbench, page: Page): Promise<void> {
  const m = memo();
  await page.goto('about:blank').catch(() => undefined);
  await page
    .context()
    .close()
    .catch(() => undefined);
  m.windows = Math.max(0, (m.windows ?? 1) - 1);
  const open = m.windows;
  if (!(await w.server.waitForOutput((out) => liveExtensionHosts(out).size <= open, 60_000)))
    throw new Error(
      `extension hosts still running after their windows closed: ${[...liveExtensionHosts(w.server.output())].join(', ')} (${open} window(s) open)\n${w.server.output().slice(-3000)}`,
    );
}

/**
 * Writes `file`, which runs the Claude Code CLI at `claude`, for a workspace's `.ralph/config.json` `claudePath`. Run by an extension host of the shared server (which all have one environment), it first removes
 * the variables `unset` and sets `env`: one test's own model server and HOME, as a user points claude at a server of
 * their own. Run by anything else (a `ralph run` a test starts with its own environment) it changes nothing.
 * Returns `file`.
 */
export function claudeWrapper(
  file: string,
  claude: string,
  env: Record<string, string>,
  o: { unset?: string[] } = {},
): string {
  const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  const lines = ['#!/bin/sh', `if [ -n "$${SHARED_MARK}" ]; then`];
  for (const k of o.unset ?? []) lines.push(`  unset ${k}`);
  for (const [k, v] of Object.entries(env)) lines.push(`  export ${k}=${q(v)}`);
  lines.push('fi', `exec ${q(claude)} "$@"`, '');
  fs.writeFileSync(file, lines.join('\n'), { mode: 0o755 });
  return file;
}

/**
 * **Ralph: Start** from the command palette in a folder with several task sources, as a person does it: **Trust and
 * Start** when the workspace's configured programs are not trusted yet (the extension asks that first, once per
 * content of the configuration), then the source whose quick-pick row holds `source`. Resolves once the pick closed.
 */
export async function startFromPalette(page: Page, source: string): Promise<void> {
  await runFromPalette(page, 'Ralph: Start');
  const pick = page.locator('.quick-input-list .monaco-list-row', { hasText: source }).first();
  const trust = page.getByRole('button', { name: 'Trust and Start' });
  await trust.or(pick).first().waitFor({ timeout: 60_000 });
  if (await trust.isVisible()) {
    await trust.click();
    await pick.waitFor({ timeout: 60_000 });
  }
  await pick.click();
  await pick.waitFor({ state: 'hidden', timeout: 30_000 });
}
