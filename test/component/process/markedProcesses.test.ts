import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { endMarkedProcesses } from '../../../src/core/process/processGroup';
import { processesRunning } from '../../support/processes';

/**
 * The marker sweep (`endMarkedProcesses`) against the race it once lost: a command that detaches `setsid sleep` and
 * exits at once leaves a process that is often in the middle of an `exec` when the sweep looks, and such a process
 * reads as an empty environment (14 of 300 sweeps here missed it before the sweep read those again).
 */
describe('marked processes: a detached process caught in the middle of its exec is still ended', () => {
  it('ends every `(setsid sleep N &)` of 150 commands, each swept the moment its shell exits', async function () {
    if (process.platform !== 'linux') this.skip();
    const marker = 'RALPH_TEST_MARK';
    const survivors: string[] = [];
    for (let i = 0; i < 150; i++) {
      const sleep = `sleep ${470_000 + i}`;
      const token = `${process.pid}-${i}`;
      await new Promise<void>((resolve, reject) => {
        const child = spawn('sh', ['-c', `(setsid ${sleep} >/dev/null 2>&1 </dev/null &)`], {
          env: { ...process.env, [marker]: token },
          stdio: 'ignore',
        });
        child.on('error', reject);
        child.on('exit', () => resolve());
      });
      await endMarkedProcesses(marker, token, 1_000);
      const left = processesRunning(sleep);
      if (left.length) {
        survivors.push(sleep);
        for (const pid of left) process.kill(pid, 'SIGKILL');
      }
    }
    assert.deepEqual(survivors, []);
  });
});
