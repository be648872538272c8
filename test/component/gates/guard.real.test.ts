import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { GuardServer } from '../../../src/core/gates/guardServer';
import type { LoopEngine } from '../../../src/core/loop/startRun';
import { bash, say, toolResults, write } from '../../support/modelServer';
import { type Workspace, runEngine, useWorkspaces } from '../../support/engineHarness';

/**
 * The command guard with the real Claude Code CLI and the scripted model server (issue 17): the engine hands the
 * hook to claude with --settings and keeps the decisions warm in its guard server.
 */

const POLICY = `[gates]
basic | node check.js

[deny]
git push | pushing is the operator's job

[wrap]
node unit.js | unit
`;

/** Every file of a run folder, concatenated (the iteration streams, events.jsonl …). */
function runFolderText(ws: Workspace, runId: string): string {
  const dir = ws.file(`.ralph/runs/${runId}`);
  return fs
    .readdirSync(dir)
    .filter((f) => !f.endsWith('.sock'))
    .map((f) => fs.readFileSync(path.join(dir, f), 'utf8'))
    .join('\n');
}

function allToolResultText(run: { server: { agentRequests(): { body: unknown }[] } }): string {
  return run.server
    .agentRequests()
    .flatMap((r) => toolResults(r.body))
    .map((t) => JSON.stringify(t.content))
    .join('\n');
}

describe('guard: with the real claude CLI (issue 17)', function () {
  this.timeout(180_000);
  const make = useWorkspaces();
  let state: string | undefined;
  beforeEach(() => {
    state = process.env.XDG_STATE_HOME;
  });
  afterEach(() => {
    if (state === undefined) delete process.env.XDG_STATE_HOME;
    else process.env.XDG_STATE_HOME = state;
  });

  it('denies a forbidden command (stream, activity log, run log), wraps a test command through the gate runner, and holds a re-run without an edit', async () => {
    const ws = make({
      'RALPH_TASK.md': '- [ ] Do the thing\n',
      '.ralph/command-policy': POLICY,
      'check.js': 'process.exit(0)\n',
      'unit.js': 'console.log("unit ok"); require("fs").appendFileSync("unit-runs.txt", "x")\n',
    });
    process.env.XDG_STATE_HOME = path.join(ws.root, 'state');
    const run = await runEngine(
      ws,
      [
        bash('git push origin main; touch pushed-marker'),
        bash('node unit.js'),
        bash('node unit.js'),
        write(ws.file('src/a.txt'), 'an edit\n'),
        bash('node unit.js'),
        say('stopping here'),
      ],
      { config: { maxIterations: 1 } },
    );

    // Denied: not executed, the reason reached the model, the activity log and the run log.
    assert.equal(fs.existsSync(ws.file('pushed-marker')), false, 'the denied command did not run');
    const results = allToolResultText(run);
    assert.match(results, /pushing is the operator's job/);
    assert.match(
      runFolderText(ws, run.result.runId),
      /pushing is the operator's job/,
      'the stream in the run folder shows the denial',
    );
    assert.match(
      ws.read('.ralph/activity.log'),
      /GUARD DENY git push origin main; touch pushed-marker → pushing is the operator's job/,
    );
    const events = ws
      .read(`.ralph/runs/${run.result.runId}/events.jsonl`)
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { type: string; decision?: string });
    assert.ok(
      events.some((e) => e.type === 'guard' && e.decision === 'deny'),
      'a guard event in events.jsonl',
    );
    assert.ok(
      events.some((e) => e.type === 'guard' && e.decision === 'rewrite'),
      'the wrap is recorded too',
    );

    // Wrapped: ran through the gate runner, twice (the re-run without an edit was denied), with artifacts.
    assert.equal(ws.read('unit-runs.txt'), 'xx');
    assert.equal(ws.read('.ralph/gates/unit-latest.exit'), '0');
    assert.equal(ws.read('.ralph/gates/unit-latest.cmd'), 'node unit.js');
    assert.match(ws.read('.ralph/gates/unit-latest.log'), /unit ok/);
    assert.match(results, /=== GATE unit exit=0/);
    assert.match(results, /gate unit already ran/);
    assert.match(ws.read('.ralph/activity.log'), /GUARD REWRITE node unit.js → .*cli\.js -C \S+ gate unit/);
  });

  it("denies when the engine's guard server stops mid-run (fail closed)", async () => {
    const ws = make({
      'RALPH_TASK.md': '- [ ] Do the thing\n',
      '.ralph/command-policy': POLICY,
      'check.js': 'process.exit(0)\n',
    });
    process.env.XDG_STATE_HOME = path.join(ws.root, 'state');
    const run = await runEngine(ws, [bash('touch should-not-exist', { delayMs: 500 }), say('done for now')], {
      config: { maxIterations: 1 },
      onEvent: (e, engine: LoopEngine) => {
        const lane = engine.started?.lane as unknown as { guard: GuardServer } | undefined;
        if (e.type === 'agentStarted') void lane?.guard.close();
      },
    });
    assert.equal(fs.existsSync(ws.file('should-not-exist')), false, 'the call was blocked');
    assert.match(allToolResultText(run), /guard server is not answering/);
  });
});
