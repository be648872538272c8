import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { EngineRefusal } from '../../../src/core/loop/startRun';
import { streamFixture } from '../../support/fixtures';
import { runEngine, useWorkspaces } from '../../support/engineHarness';
import { installCursorAgentStub } from '../../support/stubs/installStubs';

const POLICY = `[deny]
git push | pushing is the operator's job
`;

/** An agent that cannot enforce the command policy (cursor-agent: no hook), through the loop engine. */
describe('the guard per agent: rows the agent cannot enforce', function () {
  this.timeout(120_000);
  const make = useWorkspaces();

  it('refuse the run before any agent starts, naming each row with its line', async () => {
    const ws = make({ 'RALPH_TASK.md': '- [ ] One\n', '.ralph/command-policy': POLICY });
    const cursor = path.join(installCursorAgentStub(), 'cursor-agent');
    let started = 0;
    await assert.rejects(
      runEngine(ws, [], {
        config: { cursorAgentPath: cursor, gates: { basic: 'true' } },
        engine: { agent: 'cursor-agent' },
        onEvent: (e) => void (e.type === 'agentStarted' && started++),
      }),
      (err: Error) =>
        err instanceof EngineRefusal &&
        /The cursor-agent agent cannot enforce this row of \.ralph\/command-policy/.test(err.message) &&
        /line 2: \[deny\] git push/.test(err.message),
    );
    assert.equal(started, 0);
  });

  it('with guard "best-effort" the run starts and its first lines list each row it does not keep', async () => {
    const ws = make({ 'RALPH_TASK.md': '- [ ] One\n', '.ralph/command-policy': POLICY });
    const cursor = path.join(installCursorAgentStub(), 'cursor-agent');
    const run = await runEngine(ws, [], {
      config: { cursorAgentPath: cursor, gates: { basic: 'true' }, guard: 'best-effort', maxIterations: 1 },
      engine: { agent: 'cursor-agent' },
      env: { RALPH_STUB_REPLAY: streamFixture('cursor-agent', 'sequential-shell.jsonl') },
    });
    const types = run.events.map((e) => e.type);
    const warning = run.events.find((e) => e.type === 'warning');
    assert.ok(warning?.type === 'warning');
    assert.equal(
      warning.message,
      'guard: not enforced for cursor-agent: line 2: [deny] git push (cursor-agent has no hook or policy ralph can hand a decision to)',
    );
    assert.ok(types.indexOf('warning') < types.indexOf('agentStarted'), 'listed before the first agent starts');
    assert.equal(types[0], 'runStarted');
  });
});
