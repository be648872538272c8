import * as assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { EngineOptions, LoopEngine, RunResult } from '../../../src/core/loop/startRun';
import { Logger } from '../../../src/extension/logger';
import { RunController } from '../../../src/extension/runController';
import { recorded, resetFake } from '../../support/fakeVscode';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

// Start's own path up to the engine (trust, config, sources, the actor from git), on the fake vscode; the engine is
// a fake that records its options (the real one is s19's parallel engine, tested in its own tier).
/** An engine that starts and ends at once, recording the options Start gave it. */
class FakeEngine extends EventEmitter {
  readonly runId = 'run-fake-1';
  constructor(readonly options: EngineOptions) {
    super();
  }
  async run(): Promise<RunResult> {
    this.emit('event', {
      type: 'runStarted',
      runId: this.runId,
      folder: this.options.folder,
      source: 'quantum',
      agent: 'claude',
      maxIterations: 1,
      gates: {},
      maxCostUsd: 0,
      pid: process.pid,
    });
    return {
      runId: this.runId,
      state: 'completed',
      reason: 'complete: nothing to do',
      exitCode: 0,
      iterations: 0,
      costUsd: 0,
      done: 0,
      total: 0,
    } as unknown as RunResult;
  }
}

describe('Ralph: Start — the parallel quick pick (fake vscode, fake engine)', () => {
  let t: TempFolder;
  let made: FakeEngine[];
  let runs: RunController;
  beforeEach(() => {
    resetFake();
    t = makeTempFolder('ralph-start-parallel-');
    t.write(
      'quantum.json',
      JSON.stringify(
        {
          project: 'p',
          branchName: 'ralph/p',
          userStories: [
            { id: 'US-1', title: 'One', priority: 1, status: 'pending', dependsOn: [] },
            { id: 'US-2', title: 'Two', priority: 2, status: 'pending', dependsOn: [] },
          ],
        },
        null,
        2,
      ),
    );
    made = [];
    runs = new RunController(new Logger(), undefined, (o) => {
      const e = new FakeEngine(o);
      made.push(e);
      return e as unknown as LoopEngine;
    });
  });
  afterEach(async () => {
    await runs.wait(t.dir);
    runs.dispose();
    t.dispose();
  });

  const startWith = async (answer: string | undefined, args: Parameters<RunController['start']>[0] = {}) => {
    recorded.pickAnswers.push(answer);
    return runs.start({ folder: t.dir, agent: 'claude', noGates: true, ...args });
  };

  it('asks for a quantum.json run and passes { parallel: true, maxParallel: 4 } to the engine', async () => {
    const id = await startWith('in parallel');
    assert.equal(id, 'run-fake-1', JSON.stringify(recorded.messages));
    assert.deepEqual(
      recorded.quickPicks.map((p) => p.title),
      ['Ralph: Start — how should the stories run?'],
    );
    assert.equal(made.length, 1);
    assert.deepEqual([made[0]!.options.parallel, made[0]!.options.maxParallel], [true, 4]);
  });

  it('passes { parallel: false } for one at a time', async () => {
    await startWith('one at a time');
    assert.deepEqual([made[0]!.options.parallel, made[0]!.options.maxParallel], [false, undefined]);
  });

  it('starts nothing when the person backs out of the pick', async () => {
    assert.equal(await startWith(undefined), undefined);
    assert.equal(made.length, 0);
  });

  it('does not ask when the caller chose, and passes the choice on as given', async () => {
    await runs.start({ folder: t.dir, agent: 'claude', noGates: true, parallel: true, maxParallel: 2 });
    assert.equal(recorded.quickPicks.length, 0);
    assert.deepEqual([made[0]!.options.parallel, made[0]!.options.maxParallel], [true, 2]);
  });

  it('does not ask for a checklist run, and passes no parallel option', async () => {
    t.write('RALPH_TASK.md', '- [ ] One\n');
    await runs.start({ folder: t.dir, agent: 'claude', noGates: true, source: 'RALPH_TASK.md' });
    assert.equal(recorded.quickPicks.length, 0);
    assert.equal('parallel' in made[0]!.options, false);
  });
});
