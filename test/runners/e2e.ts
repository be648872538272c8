/**
 * The e2e tier's runner: mocha over dist/test/e2e/*.test.js (Playwright driving the VS Code web workbench
 * with the packaged .vsix installed), reporting to RALPH_RESULT_FILE. Screenshots go to test-results/.
 */
import type MochaCtor from 'mocha';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { findRepoRoot } from '../support/repoRoot';

async function main(): Promise<void> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const Mocha = require('mocha') as typeof MochaCtor;
  const repo = findRepoRoot(__dirname);
  const mocha = new Mocha({
    ui: 'bdd',
    timeout: 180_000,
    reporter: path.join(repo, 'test', 'support', 'resultReporter.cjs'),
    reporterOptions: { resultFile: process.env.RALPH_RESULT_FILE, tier: 'e2e' },
  });
  const dir = path.join(repo, 'dist', 'test', 'e2e');
  for (const f of fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.test.js'))
    .sort())
    mocha.addFile(path.join(dir, f));
  const failures = await new Promise<number>((resolve) => mocha.run(resolve));
  process.exitCode = failures > 0 ? 1 : 0;
}

void main();
