/**
 * `npm run test:integration:electron`: the same integration `run()` under @vscode/test-electron 2.5, for a
 * desktop that can download VS Code (not run in CI: this network cannot download it). Runs the trusted suite
 * on the fixture workspace; set RALPH_INTEGRATION_MODE=restricted (without --disable-workspace-trust) for the
 * Restricted Mode suite.
 */
import { runTests } from '@vscode/test-electron';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { findRepoRoot } from '../support/repoRoot';
import { copyFixture, writeRecordingStub } from './vscodeServer';
import { makeTempDir } from '../support/tempFolder';

async function main(): Promise<void> {
  const repo = findRepoRoot(__dirname);
  const mode = process.env.RALPH_INTEGRATION_MODE === 'restricted' ? 'restricted' : 'trusted';
  const tmp = makeTempDir('ralph-electron-');
  const ws = path.join(tmp, 'workspace');
  copyFixture(path.join(repo, 'test', 'fixtures', 'workspace-basic'), ws);
  const stubLog = path.join(tmp, 'stub-calls.log');
  writeRecordingStub(path.join(tmp, 'bin'), stubLog);
  const resultFile = process.env.RALPH_RESULT_FILE ?? path.join(repo, 'test-results', 'integration-electron.json');
  await runTests({
    version: '1.100.3',
    extensionDevelopmentPath: repo,
    extensionTestsPath: path.join(repo, 'dist', 'test', 'integration', 'index.js'),
    launchArgs: [ws, '--disable-extensions', ...(mode === 'trusted' ? ['--disable-workspace-trust'] : [])],
    extensionTestsEnv: {
      RALPH_RESULT_FILE: resultFile,
      RALPH_INTEGRATION_MODE: mode,
      RALPH_STUB_LOG: stubLog,
      PATH: `${path.join(tmp, 'bin')}${path.delimiter}${process.env.PATH}`,
    },
  });
  console.log(fs.readFileSync(resultFile, 'utf8'));
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
