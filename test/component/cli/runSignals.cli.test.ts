import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { cliPath } from '../../support/cli';
import { isPidAlive } from '../../../src/core/process/processGroup';
import { shellStub } from '../../support/stubs/installStubs';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Issue 12: closing the terminal (SIGHUP) stops `ralph run` like SIGTERM: the agent is ended, nothing escapes. */
describe('cli: ralph run on SIGHUP (issue 12)', function () {
  this.timeout(60_000);
  let t: TempFolder;
  let bin: string;
  let agentPid = 0;
  afterEach(() => {
    if (agentPid && isPidAlive(agentPid)) process.kill(agentPid, 'SIGKILL');
    fs.rmSync(bin, { recursive: true, force: true });
    t.dispose();
  });

  it('ends the agent and exits 130', async () => {
    t = makeTempFolder('ralph-hup-', { ralphDir: true });
    bin = shellStub('claude', `echo $$ > '${t.file('agent.pid')}'\nexec sleep 60`);
    t.write('.ralph/config.json', JSON.stringify({ claudePath: path.join(bin, 'claude') }));
    t.write('RALPH_TASK.md', '- [ ] one\n');
    const child = spawn(process.execPath, [cliPath, '-C', t.dir, 'run', '--no-gates'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => { out += String(d); });
    child.stderr.on('data', (d) => { out += String(d); });
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    for (let i = 0; i < 200 && !t.exists('agent.pid'); i++) await sleep(50);
    agentPid = Number(t.read('agent.pid').trim());
    assert.ok(isPidAlive(agentPid), out);
    child.kill('SIGHUP');
    assert.equal(await exited, 130, out);
    for (let i = 0; i < 40 && isPidAlive(agentPid); i++) await sleep(50);
    assert.equal(isPidAlive(agentPid), false, `the agent outlived the run:\n${out}`);
    assert.match(out, /SIGHUP: ending the agent and stopping/);
  });
});
