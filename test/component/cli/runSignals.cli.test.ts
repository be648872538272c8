import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { cliPath } from '../../support/cli';
import { isPidAlive } from '../../../src/core/process/processGroup';
import { processesRunning } from '../../support/processes';
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
    // Found by its command line: inside the run's PID namespace `$$` is not the host's pid.
    bin = shellStub('claude', `echo $$ > '${t.file('agent.pid')}'\nexec sleep 6061`);
    t.write('.ralph/config.json', JSON.stringify({ claudePath: path.join(bin, 'claude') }));
    t.write('RALPH_TASK.md', '- [ ] one\n');
    const child = spawn(process.execPath, [cliPath, '-C', t.dir, 'run', '--no-gates', '--trust'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => {
      out += String(d);
    });
    child.stderr.on('data', (d) => {
      out += String(d);
    });
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    for (let i = 0; i < 200 && !t.exists('agent.pid'); i++) await sleep(50);
    for (let i = 0; i < 100 && !processesRunning('sleep 6061').length; i++) await sleep(20);
    agentPid = processesRunning('sleep 6061')[0] ?? 0;
    assert.ok(agentPid && isPidAlive(agentPid), out);
    child.kill('SIGHUP');
    assert.equal(await exited, 130, out);
    for (let i = 0; i < 40 && isPidAlive(agentPid); i++) await sleep(50);
    assert.equal(isPidAlive(agentPid), false, `the agent outlived the run:\n${out}`);
    assert.match(out, /SIGHUP: ending the agent and stopping/);
  });
});

/** Issue 12: a hung agent can be stopped — the watchdog (decideWatchdog) wired into `ralph run`. */
describe('cli: ralph run watchdog (issue 12)', function () {
  this.timeout(60_000);
  let t: TempFolder;
  let bin: string;
  afterEach(() => {
    for (const pid of processesRunning('sleep 6062')) process.kill(pid, 'SIGKILL');
    fs.rmSync(bin, { recursive: true, force: true });
    t.dispose();
  });

  async function run(
    timing: Record<string, number>,
    during?: (t: TempFolder) => void,
  ): Promise<{ code: number | null; out: string; agentPid: number }> {
    t = makeTempFolder('ralph-watchdog-', { ralphDir: true });
    bin = shellStub('claude', `echo $$ > '${t.file('agent.pid')}'\nexec sleep 6062`);
    t.write(
      '.ralph/config.json',
      JSON.stringify({ claudePath: path.join(bin, 'claude'), timing: { betweenIterationsMs: 0, ...timing } }),
    );
    t.write('RALPH_TASK.md', '- [ ] one\n');
    const child = spawn(
      process.execPath,
      [cliPath, '-C', t.dir, 'run', '--no-gates', '--max-iterations', '1', '--trust'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (d) => {
      out += String(d);
    });
    child.stderr.on('data', (d) => {
      out += String(d);
    });
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    for (let i = 0; i < 200 && !t.exists('agent.pid'); i++) await sleep(50);
    for (let i = 0; i < 100 && !processesRunning('sleep 6062').length; i++) await sleep(20);
    const agentPid = processesRunning('sleep 6062')[0] ?? 0;
    during?.(t);
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    const code = await exited;
    clearTimeout(timer);
    return { code, out, agentPid };
  }

  it('a silent agent is ended after timing.silenceTimeoutMs', async () => {
    const r = await run({ silenceTimeoutMs: 1500 });
    assert.notEqual(r.code, null, `ralph run hung:\n${r.out}`);
    assert.match(r.out, /the agent printed nothing for \d+ s \(timing\.silenceTimeoutMs\): stalled: ending the agent/);
    assert.ok(r.agentPid > 0);
    assert.equal(isPidAlive(r.agentPid), false);
  });

  it('after STOP, a silent agent is ended after timing.stopGraceMs', async () => {
    const r = await run({ stopGraceMs: 1000 }, (t) => t.write('.ralph/stop-requested', ''));
    assert.notEqual(r.code, null, `ralph run hung:\n${r.out}`);
    assert.match(r.out, /STOP was requested and the agent printed nothing for \d+ s \(timing\.stopGraceMs\)/);
    assert.ok(r.agentPid > 0);
    assert.equal(isPidAlive(r.agentPid), false);
  });
});
