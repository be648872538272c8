/**
 * Entry of the integration tier: VS Code's extension host loads this module (extensionTestsPath) and calls
 * `run()`. It runs the mocha suites below inside the real host and writes a result file
 * (RALPH_RESULT_FILE, else `<workspace>/.ralph-test-result.json`) that the outer runner reads. The same module
 * works under @vscode/test-electron (test/runners/electron.ts).
 */
import type MochaCtor from 'mocha';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { registerActivationSuite } from './suites/activation';
import { registerRestrictedModeSuite } from './suites/restrictedMode';
import { registerGaugeSuite } from './suites/gauge';
import { registerRunSuite } from './suites/run';
import { registerTrustSuite } from './suites/trust';
import { registerPlanTreeSuite } from './suites/planTree';
import { registerStartPickSuite } from './suites/startPick';
import { registerLmToolsRestrictedSuite, registerLmToolsSuite } from './suites/lmTools';
import { registerNewPlanSuite } from './suites/newPlan';

export async function run(): Promise<void> {
  if (process.env.RALPH_INTEGRATION_MODE === 'bench') return writeActivationBench();
  // mocha is resolved from the repository's node_modules (external to this bundle).
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const Mocha = require('mocha') as typeof MochaCtor;
  const repo = path.resolve(__dirname, '..', '..', '..');
  const mode = process.env.RALPH_INTEGRATION_MODE ?? 'trusted';
  const mocha = new Mocha({
    ui: 'bdd',
    timeout: 60_000,
    color: false,
    reporter: path.join(repo, 'test', 'support', 'resultReporter.cjs'),
    reporterOptions: { resultFile: process.env.RALPH_RESULT_FILE, tier: `integration-${mode}` },
    // RALPH_INTEGRATION_GREP: run only the tests whose full title matches (while working on one suite).
    ...(process.env.RALPH_INTEGRATION_GREP ? { grep: process.env.RALPH_INTEGRATION_GREP } : {}),
  });
  mocha.suite.emit('pre-require', globalThis, 'integration', mocha);
  if (mode === 'restricted') {
    registerRestrictedModeSuite();
    registerLmToolsRestrictedSuite();
  } else {
    registerActivationSuite();
    registerTrustSuite();
    registerRunSuite();
    registerGaugeSuite();
    registerPlanTreeSuite();
    registerStartPickSuite();
    registerLmToolsSuite();
    registerNewPlanSuite();
  }
  const failures = await new Promise<number>((resolve) => mocha.run(resolve));
  if (failures > 0) throw new Error(`${failures} integration test(s) failed`);
}

/** Bench mode (bench/activation.bench.ts): activation time measured inside the real host, written as JSON. */
async function writeActivationBench(): Promise<void> {
  const ext = vscode.extensions.getExtension<{ activationMs: number; bundleEvalMs: number }>('ralph-loop.ralph-loop');
  const t0 = performance.now();
  const api = ext!.isActive ? ext!.exports : await ext!.activate();
  const total = performance.now() - t0;
  // Written beside and renamed over: the bench reads the file as soon as it exists (never half of it).
  const file = process.env.RALPH_RESULT_FILE!;
  fs.writeFileSync(
    `${file}.tmp`,
    JSON.stringify({ activationMs: api.activationMs, bundleEvalMs: api.bundleEvalMs, activateCallMs: total }),
  );
  fs.renameSync(`${file}.tmp`, file);
}
