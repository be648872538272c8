import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { holderIsRunner } from '../../../src/core/gates/gateLock';

/** holderIsRunner against a real process's command line (/proc): what the engine waits for (breaker-s6 31/32). */
describe("holderIsRunner: a live process's command line", () => {
  it('a process whose arguments are `gate --runner <runId>` is; the same with another runId is not', async () => {
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 20000)', 'gate', '--runner', 'abc-1'], {
      stdio: 'ignore',
    });
    try {
      await new Promise((r) => child.once('spawn', r));
      assert.equal(holderIsRunner({ pid: child.pid!, runId: 'abc-1' }), true);
      assert.equal(holderIsRunner({ pid: child.pid!, runId: 'abc-2' }), false);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
