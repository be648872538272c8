/**
 * The browser face of `npm run demo`: the packaged extension installed in VS Code's server (the one the test tiers
 * use, test/runners/vscodeServer.ts) on the sample project, its URL printed and opened, the scripted model server
 * standing in for the model. Everything it starts (server, model server, headless Chromium, the agent and its
 * children) is ended on Ctrl-C, on SIGTERM and when the demo exits.
 */
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Browser, FrameLocator, Page } from 'playwright-core';
import { listRunRecords } from '../src/core/control/runRecords';
import { recordExitCode } from '../src/core/control/runFollower';
import { FINAL_RUN_STATES } from '../src/core/model/runRecord';
import { claudeBinDir, scriptedClaudeEnv, withoutClaudeVars } from '../test/support/claude';
import { startModelServer, type ModelServer, type Turn } from '../test/support/modelServer';
import { listProcesses } from '../test/support/processes';
import {
  CHROMIUM,
  installVsix,
  launchBrowser,
  openPage,
  packageVsix,
  runFromPalette,
  serverUnavailable,
  startServer,
  type RunningServer,
} from '../test/runners/vscodeServer';

/** What the browser face needs from the command line (scripts/demo.ts parses it). */
export interface WorkbenchDemoOptions {
  repo: string;
  /** The sample project (a git repository with RALPH_TASK.md), already created. */
  project: string;
  /** Scratch folder of this demo (HOME of the agent, the server's user data, the .vsix); removed by the caller. */
  scratch: string;
  /** The scripted model's turns. */
  script: Turn[];
  /** Start the run once the workbench is up (headless Chromium runs **Ralph: Start** from the command palette). */
  start: boolean;
  /** Exit with the run's exit code once it ends. */
  exitWhenDone: boolean;
  /** Open the URL in the person's browser ($BROWSER, else xdg-open) when one is there. */
  open: boolean;
  /** An already packaged .vsix (the e2e tier's); default: package one with vsce now. */
  vsix?: string;
  /**
   * With `start`: where to write a PNG of the workbench during the run (the README's screenshot): the Plan tree with
   * the tasks, the token gauge and the dashboard, once a task is done.
   */
  screenshot?: string;
  /**
   * With `start` and `screenshot`: the index in `script` of a turn the scripted model answers only once the screenshot
   * is taken (or given up), so the picture shows the run live with its first task done, however fast the turns come.
   */
  holdForScreenshot?: number;
}

/** The sentence a person sees when the VS Code server cannot run here, with what to do (no stack trace). */
export function serverHelp(reason: string): string {
  return [
    `demo: VS Code's server cannot start here: ${reason}.`,
    'The browser demo needs the same set-up as the test tiers: run `bash scripts/setup-test-env.sh` once; it installs',
    'the Debian packages chromium, libkrb5-dev and ripgrep with apt (so as root or with sudo the first time) and',
    "VS Code's server into .vscode-test/ (RALPH_VSCODE_SERVER, when set, names another server folder and skips that",
    'install). Then run `npm run demo` again.',
    'Or watch the same loop headless in this terminal: `npm run demo -- --cli`.',
  ].join('\n');
}

/**
 * Why the browser face cannot run here (`serverHelp`'s explanation), or null when it can: VS Code's server is
 * needed always, Chromium only for `--start` (the person brings their own browser otherwise).
 */
export function workbenchUnavailable(repo: string, start: boolean): string | null {
  const why = serverUnavailable(repo);
  if (!why || (!start && why.startsWith('Chromium'))) return null;
  return serverHelp(
    why.replace(/;\s*run scripts\/setup-test-env\.sh[^)]*|\s*\(run scripts\/setup-test-env\.sh[^)]*\)/, ''),
  );
}

/** Processes left behind by the demo: running in `root`, or naming it, outside the demo's own process group. */
function leftovers(root: string): number[] {
  const own = ownGroup();
  return listProcesses()
    .filter(
      (p) =>
        p.pgid !== own && p.state !== 'Z' && ((p.cwd !== null && p.cwd.startsWith(root)) || p.cmdline.includes(root)),
    )
    .map((p) => p.pid);
}

function ownGroup(): number {
  const stat = fs.readFileSync('/proc/self/stat', 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
}

/** SIGTERM to every leftover under `roots`, then SIGKILL to any still there after 3 s. Resolves with the pids signalled. */
async function endLeftovers(roots: string[]): Promise<number[]> {
  const find = () => [...new Set(roots.flatMap(leftovers))];
  const first = find();
  for (const pid of first) {
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      /* gone */
    }
  }
  const deadline = Date.now() + 3000;
  while (find().length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  for (const pid of find()) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  return first;
}

/**
 * `ralph trust` on the sample project (the demo wrote its gates itself), recorded in the demo's own state folder
 * `stateDir` (XDG_STATE_HOME, also given to the server so the extension host reads it): Start then asks nothing.
 * Returns false for a build whose CLI has no `trust` command (nothing to trust there); throws when trusting fails.
 */
function trustProject(repo: string, project: string, stateDir: string): boolean {
  const r = spawnSync(process.execPath, [path.join(repo, 'dist', 'cli.js'), '-C', project, 'trust', '--json'], {
    encoding: 'utf8',
    env: { ...process.env, XDG_STATE_HOME: stateDir },
  });
  if (r.status === 0) return true;
  if (/unknown command 'trust'/.test(r.stderr)) return false;
  throw new Error(`ralph trust failed on the sample project (exit ${r.status}): ${(r.stderr || r.stdout).trim()}`);
}

/** Opens `url` in the person's browser when there is one; never fails (a headless machine just has none). */
function openInBrowser(url: string): string | null {
  const which = (name: string) =>
    (process.env.PATH ?? '')
      .split(path.delimiter)
      .map((d) => path.join(d, name))
      .find((f) => {
        try {
          fs.accessSync(f, fs.constants.X_OK);
          return true;
        } catch {
          return false;
        }
      });
  const browser = process.env.BROWSER?.split(':')[0]?.trim() || (which('xdg-open') ? 'xdg-open' : '');
  if (!browser) return null;
  try {
    const child = spawn(browser, [url], { detached: true, stdio: 'ignore' });
    child.on('error', () => undefined);
    child.unref();
    return browser;
  } catch {
    return null;
  }
}

/** The final run record of the project, when a run has ended. */
function endedRun(project: string): { runId: string; state: string; exitCode: number } | undefined {
  const ended = listRunRecords(project)
    .records.map((r) => r.record)
    .filter((r) => FINAL_RUN_STATES.includes(r.state));
  const last = ended.at(-1);
  return last ? { runId: last.runId, state: last.endState ?? last.state, exitCode: recordExitCode(last) } : undefined;
}

/** The dashboard page inside the workbench: two frames deep (the webview host, then its active frame). */
function dashboardFrame(page: Page): FrameLocator {
  return page.frameLocator('iframe.webview.ready').frameLocator('#active-frame');
}

/** What the dashboard shows now: progress text, token chart points, gate rows (zeros while it is not drawn). */
async function dashboardShows(page: Page): Promise<{ progress: string; points: number; gates: number }> {
  const d = dashboardFrame(page);
  const progress = (
    await d
      .locator('[data-testid="run-progress"]')
      .innerText({ timeout: 1000 })
      .catch(() => '')
  ).trim();
  const points =
    Number(
      await d
        .locator('.chart-host')
        .getAttribute('data-points', { timeout: 1000 })
        .catch(() => '0'),
    ) || 0;
  const gates = await d
    .locator('[data-testid="gate-table"] tbody tr')
    .count()
    .catch(() => 0);
  return { progress, points, gates };
}

/**
 * Headless Chromium on the workbench: opens the Ralph view, runs **Ralph: Start**, and with `screenshot` takes the
 * README's picture: the Plan tree with the tasks, the token gauge and the dashboard (**Ralph: Open Dashboard**) once
 * a task is done, the chart has points and a gate has run.
 */
async function startFromWorkbench(
  page: Page,
  project: string,
  screenshot: string | undefined,
  stopped: () => boolean,
): Promise<void> {
  await page.locator('.monaco-workbench').waitFor({ timeout: 120_000 });
  // The Ralph icon comes once the extension host has scanned the extensions: well over 30 s on a loaded machine.
  await page.locator('.activitybar [aria-label^="Ralph"]').first().click({ timeout: 180_000 });
  // The tree's rows appear once the extension is active: then Start is the extension's, not a stale palette entry.
  const source = page.locator('.pane-body .monaco-list-row', { hasText: 'RALPH_TASK.md' }).first();
  await source.waitFor({ timeout: 120_000 });
  await runFromPalette(page, 'Ralph: Start');
  console.log('demo: Ralph: Start pressed (--start)');
  if (!screenshot) return;
  // The dashboard alone in the editor area (the welcome page closed), the tasks in view, the pointer out of the way.
  await runFromPalette(page, 'View: Close All Editors').catch(() => undefined);
  await runFromPalette(page, 'Ralph: Open Dashboard');
  await dashboardFrame(page).locator('ralph-dashboard .run-header').waitFor({ timeout: 60_000 });
  const firstTask = page.locator('.pane-body .monaco-list-row', { hasText: 'Implement slugify' }).first();
  const gauge = page.locator('.part.statusbar [aria-label^="Ralph run"]').first();
  const task = path.join(project, 'RALPH_TASK.md');
  const deadline = Date.now() + 180_000;
  while (!stopped() && Date.now() < deadline) {
    // Its tasks in view, as a person would open them (again if a redraw folded the row).
    if (
      !(await firstTask.isVisible().catch(() => false)) &&
      (await source.getAttribute('aria-expanded').catch(() => null)) !== 'true'
    )
      await source.click().catch(() => undefined);
    await page.mouse.move(700, 880);
    const ready = async () => {
      const text = (await gauge.count()) ? (await gauge.innerText().catch(() => '')).trim() : '';
      const shows = await dashboardShows(page);
      const ok =
        /\d+(?:\.\d+)?k\/\d+(?:\.\d+)?[kM]/.test(text) &&
        (fs.readFileSync(task, 'utf8').match(/\[x\]/g) ?? []).length >= 1 &&
        /^[1-9]\d*\/\d+ done$/.test(shows.progress) &&
        shows.points >= 2 &&
        shows.gates >= 1 &&
        (await firstTask.isVisible().catch(() => false));
      return ok ? { text, ...shows } : null;
    };
    if (await ready()) {
      // Let the tree and the chart catch up, and take it only if the moment still holds (the gauge counts tokens).
      await new Promise((r) => setTimeout(r, 1000));
      const now = await ready();
      if (now) {
        fs.mkdirSync(path.dirname(screenshot), { recursive: true });
        await page.screenshot({ path: screenshot });
        console.log(
          `demo: screenshot written to ${screenshot} (tree, gauge ${now.text}, dashboard: ${now.progress}, ${now.points} chart points, ${now.gates} gate row(s))`,
        );
        return;
      }
    }
    await new Promise((r) => setTimeout(r, 300));
  }
  if (!stopped())
    console.error(
      'demo: no screenshot: the dashboard did not show a finished task, chart points and a gate row within 180 s',
    );
}

/**
 * Runs the browser face; resolves with the demo's exit code: the run's (`--exit-when-done`), 130 after Ctrl-C, 1 when
 * the server cannot start (with `serverHelp`'s explanation printed).
 */
export async function runWorkbenchDemo(o: WorkbenchDemoOptions): Promise<number> {
  let model: ModelServer | undefined;
  let server: RunningServer | undefined;
  let browser: Browser | undefined;
  let stopping = false;
  let finished: (code: number) => void = () => undefined;
  const done = new Promise<number>((resolve) => {
    finished = resolve;
  });

  const cleanUp = async () => {
    stopping = true;
    screenshotSettled();
    await browser?.close().catch(() => undefined);
    await server?.stop();
    await model?.close();
    const ended = await endLeftovers([o.project, o.scratch]);
    if (ended.length) console.log(`demo: ended ${ended.length} process(es) left by the run: ${ended.join(', ')}`);
  };
  // Settles once the screenshot is taken or given up: the held turn (`holdForScreenshot`) waits for it.
  let screenshotSettled: () => void = () => undefined;
  const screenshotDone = new Promise<void>((resolve) => {
    screenshotSettled = resolve;
  });
  const script =
    o.start && o.screenshot && o.holdForScreenshot !== undefined
      ? o.script.map((t, i) => (i === o.holdForScreenshot ? { ...t, after: screenshotDone } : t))
      : o.script;
  let interrupted = false;
  const onSignal = (sig: NodeJS.Signals) => {
    if (stopping || interrupted) return;
    interrupted = true;
    console.log(`\ndemo: ${sig}: stopping the server, the model server and any agent`);
    finished(130);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('SIGHUP', onSignal);
  try {
    if (!o.vsix) console.log('demo: packaging the extension (.vsix)…');
    const vsix = o.vsix ?? packageVsix(o.repo, o.scratch);
    const ext = path.join(o.scratch, 'ext');
    installVsix(o.repo, vsix, ext);
    if (interrupted) return 130;
    model = await startModelServer(script, { model: 'claude-sonnet-4-6' });
    const home = path.join(o.scratch, 'home');
    fs.mkdirSync(home, { recursive: true });
    const state = path.join(o.scratch, 'state');
    if (trustProject(o.repo, o.project, state))
      console.log("demo: trusted the sample project's gates (ralph trust, recorded in the demo's scratch folder)");
    console.log("demo: starting VS Code's server…");
    server = await startServer({
      repo: o.repo,
      tmp: o.scratch,
      trusted: true,
      extensionsDir: ext,
      env: {
        ...withoutClaudeVars(),
        ...scriptedClaudeEnv(model.url, home),
        GIT_CONFIG_GLOBAL: '/dev/null',
        XDG_STATE_HOME: state,
        PATH: `${claudeBinDir}${path.delimiter}${process.env.PATH}`,
      },
    });
    if (interrupted) return 130;
    const url = server.url(o.project);
    console.log(`\nRalph Loop demo: VS Code with the Ralph Loop extension on the sample project is at\n\n  ${url}\n`);
    const opened = o.open ? openInBrowser(url) : null;
    console.log(opened ? `demo: opened it with ${opened}` : 'demo: open that URL in a browser on this machine');
    console.log(
      o.start
        ? 'demo: --start: the demo presses Ralph: Start itself'
        : 'Press Ralph: Start (the play button of the Ralph view, or F1 → "Ralph: Start") and watch the loop work through the tree.',
    );
    console.log(
      o.exitWhenDone
        ? 'demo: exits when the run ends (--exit-when-done); Ctrl-C stops everything sooner'
        : 'Ctrl-C stops the demo and everything it started.',
    );

    /** Ralph: Start pressed and the screenshot taken (or given up): what --exit-when-done waits for. */
    let pressed: Promise<void> = Promise.resolve();
    if (o.start) {
      if (!fs.existsSync(CHROMIUM)) throw new Error(serverHelp(`Chromium is not installed at ${CHROMIUM}`));
      browser = await launchBrowser({ ownSignals: true });
      const page = await openPage(browser, url);
      pressed = startFromWorkbench(page, o.project, o.screenshot, () => stopping)
        .catch((err: Error) => {
          if (stopping) return;
          console.error(`demo: --start failed: ${err.message}`);
          finished(1);
        })
        .finally(screenshotSettled);
    }
    // Report the run's end; with --exit-when-done, end the demo with its exit code.
    let reported = '';
    const poll = setInterval(() => {
      const end = endedRun(o.project);
      if (!end || end.runId === reported) return;
      reported = end.runId;
      console.log(`demo: run ${end.runId} ended: ${end.state} (exit ${end.exitCode})`);
      // The screenshot, when asked for, is taken first (the dashboard still shows the ended run); at most 60 s more.
      // The timer is cleared once the race is decided: a pending one would keep the ended demo's process alive.
      if (o.exitWhenDone) {
        let cap: NodeJS.Timeout | undefined;
        void Promise.race([pressed, new Promise((r) => (cap = setTimeout(r, 60_000)))]).then(() => {
          clearTimeout(cap);
          finished(end.exitCode);
        });
      } else
        console.log('demo: Ctrl-C stops the demo (or press Ralph: Start again after Ralph: Reset Task… on a task)');
    }, 500);
    const code = await done;
    clearInterval(poll);
    return code;
  } finally {
    await cleanUp();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    process.off('SIGHUP', onSignal);
  }
}
