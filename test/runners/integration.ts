/**
 * The integration tier's outer runner: for each mode (a trusted workspace, then Restricted Mode) it starts
 * the real VS Code server, opens the workbench in headless Chromium with the extension under development and
 * the test module in the URL payload, waits for the result file that `run()` writes inside the extension
 * host, and sums the results into RALPH_RESULT_FILE. A mode that leaves no result file counts as failed.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { trustWorkspace } from '../../src/core/trust/workspaceTrust';
import { findRepoRoot } from '../support/repoRoot';
import { copyFixture, launchBrowser, openPage, startServer, writeRecordingStub } from './vscodeServer';
import { makeTempDir } from '../support/tempFolder';

interface TierResult {
  passed: number;
  failed: number;
  pending: number;
  failures: { title: string; error: string }[];
}

async function runMode(repo: string, mode: 'trusted' | 'restricted'): Promise<TierResult> {
  const tmp = makeTempDir(`ralph-int-${mode}-`);
  const ws = path.join(tmp, 'workspace');
  copyFixture(path.join(repo, 'test', 'fixtures', 'workspace-basic'), ws);
  const stubLog = path.join(tmp, 'stub-calls.log');
  writeRecordingStub(path.join(tmp, 'bin'), stubLog);
  const resultFile = path.join(tmp, 'result.json');
  // The user's trust records live in the run's scratch folder; the fixture's gates are trusted as `ralph trust` would.
  const state = path.join(tmp, 'state');
  await trustWorkspace(ws, { env: { XDG_STATE_HOME: state } });
  const env = {
    XDG_STATE_HOME: state,
    RALPH_RESULT_FILE: resultFile,
    RALPH_INTEGRATION_MODE: mode,
    RALPH_STUB_LOG: stubLog,
    PATH: `${path.join(tmp, 'bin')}${path.delimiter}${process.env.PATH}`,
  };
  const server = await startServer({ repo, tmp, trusted: mode === 'trusted', env, workbenchSettings: {} });
  const browser = await launchBrowser();
  try {
    const remote = (p: string) => `vscode-remote://127.0.0.1:${server.port}${p}`;
    const url = server.url(ws, [
      ['extensionDevelopmentPath', remote(repo)],
      ['extensionTestsPath', remote(path.join(repo, 'dist', 'test', 'integration', 'index.js'))],
    ]);
    await openPage(browser, url);
    // The suite inside the host has its own per-test timeouts (test/integration/index.ts), and a host that dies is
    // seen below; this bound only catches a host that hangs without either. A fixed 240 s failed a whole mode at a
    // load average of 25 on 2 cores while its tests were passing.
    const deadline = Date.now() + 1_800_000;
    while (!fs.existsSync(resultFile) && Date.now() < deadline) {
      if (/Extension Host Process exited/.test(server.output()) && !fs.existsSync(resultFile)) {
        await new Promise((r) => setTimeout(r, 1000));
        break;
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    if (!fs.existsSync(resultFile)) {
      const tail = server.output().split('\n').slice(-40).join('\n');
      return {
        passed: 0,
        failed: 1,
        pending: 0,
        failures: [{ title: `integration (${mode}) left no result file`, error: tail }],
      };
    }
    return JSON.parse(fs.readFileSync(resultFile, 'utf8')) as TierResult;
  } finally {
    await browser.close().catch(() => undefined);
    await server.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const repo = findRepoRoot(__dirname);
  const total: TierResult = { passed: 0, failed: 0, pending: 0, failures: [] };
  // RALPH_INTEGRATION_MODES=trusted runs one mode only (while working on one suite).
  const modes = (['trusted', 'restricted'] as const).filter(
    (m) => !process.env.RALPH_INTEGRATION_MODES || process.env.RALPH_INTEGRATION_MODES.split(',').includes(m),
  );
  for (const mode of modes) {
    let r: TierResult;
    try {
      r = await runMode(repo, mode);
    } catch (err) {
      r = {
        passed: 0,
        failed: 1,
        pending: 0,
        failures: [{ title: `integration (${mode}) could not run`, error: String((err as Error).stack ?? err) }],
      };
    }
    console.log(`integration (${mode}): ${r.passed} passed, ${r.failed} failed`);
    for (const f of r.failures) console.log(`  ✗ ${f.title}\n    ${f.error.split('\n').slice(0, 40).join('\n    ')}`);
    total.passed += r.passed;
    total.failed += r.failed;
    total.pending += r.pending;
    total.failures.push(...r.failures);
  }
  const out = process.env.RALPH_RESULT_FILE;
  if (out) fs.writeFileSync(out, JSON.stringify({ tier: 'integration', ...total }, null, 2));
  process.exitCode = total.failed > 0 || total.passed === 0 ? 1 : 0;
}

void main();
