import * as assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { LoopEngine, RunResult } from '../../../src/core/loop/startRun';
import { Logger } from '../../../src/extension/logger';
import { RunController } from '../../../src/extension/runController';
import { recorded, resetFake } from '../../support/fakeVscode';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

// Issue 11: agentArgs values never leave Start unredacted. Start's own path (config, sources, the actor from git: a
// child process, hence this tier) on the fake vscode; the engine is a fake that echoes the secret.
describe('Ralph: Start redacts agentArgs from what it passes on (fake vscode, fake engine)', () => {
  let t: TempFolder;
  const secret = 'sk-ant-api03-ONEVENTSECRET';
  beforeEach(() => {
    resetFake();
    t = makeTempFolder('ralph-vscode-redact-');
  });
  afterEach(() => t.dispose());

  /** An engine that reports an agent command line holding the secret, then ends with it in its reason. */
  class EchoingEngine extends EventEmitter {
    readonly runId = 'run-redact-1';
    async run(): Promise<RunResult> {
      this.emit('event', { type: 'agentStarted', iteration: 1, pid: 1, command: `claude -p --api-key ${secret} --` });
      this.emit('event', { type: 'warning', message: `agent said: bad key ${secret}` });
      return {
        runId: this.runId,
        state: 'failed',
        reason: `engine error: rejected ${secret}`,
        exitCode: 1,
        iterations: 1,
        costUsd: 0,
        done: 0,
        total: 1,
      } as unknown as RunResult;
    }
  }

  it('onEvent, the Ralph log, events.jsonl and the end notification carry «redacted», never the agentArgs value', async () => {
    t.write('RALPH_TASK.md', '- [ ] a\n');
    t.write('.ralph/config.json', JSON.stringify({ agentArgs: ['--api-key', secret] }));
    const runs = new RunController(new Logger(), undefined, () => new EchoingEngine() as unknown as LoopEngine);
    const seen: string[] = [];
    runs.onEvent(({ event }) => seen.push(JSON.stringify(event)));
    process.env.RALPH_TRUST = '1';
    try {
      assert.equal(
        await runs.start({ folder: t.dir, source: 'RALPH_TASK.md', agent: 'claude', noGates: true }),
        'run-redact-1',
      );
      await runs.wait(t.dir);
    } finally {
      delete process.env.RALPH_TRUST;
    }
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(seen.length, 2);
    assert.match(seen[0]!, /--api-key «redacted»/);
    const events = t.read('.ralph/runs/run-redact-1/events.jsonl');
    for (const text of [
      ...seen,
      ...recorded.logLines,
      ...recorded.messages.map((m) => m.message),
      events,
      t.read('.ralph/activity.log'),
    ])
      assert.doesNotMatch(text, /ONEVENTSECRET/, text);
    assert.ok(
      recorded.messages.some((m) => /failed — engine error: rejected «redacted»/.test(m.message)),
      JSON.stringify(recorded.messages),
    );
    runs.dispose();
  });
});
