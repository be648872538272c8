import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { processGroupAlive } from '../../../src/core/agents/spawn';
import { ralphRunDir } from '../../../src/core/model/ralphPaths';
import type { EngineEvent } from '../../../src/core/loop/events';
import { agentCliPath } from '../../support/agentClis';
import { type Workspace, runEngine, useWorkspaces } from '../../support/engineHarness';
import {
  type ModelServer,
  type Turn,
  hang,
  requestUserTexts,
  say,
  shell,
  startModelServer,
  toolUse,
} from '../../support/modelServer';
import { qwenModelEnv } from '../../support/agentEnv';

const TASK = '# Hello\n\n- [ ] Create hello.txt\n';
const tick = (): Turn => shell(`sed -i 's/- \\[ \\] Create/- [x] Create/' RALPH_TASK.md`);
const GATE = 'grep -qx hello hello.txt 2>/dev/null || { echo "FAIL: hello.txt does not say hello"; exit 1; }';

const ofType = <T extends EngineEvent['type']>(events: EngineEvent[], t: T) =>
  events.filter((e): e is Extract<EngineEvent, { type: T }> => e.type === t);

/** The loop driving the real Qwen Code 0.24.4 (.agent-clis/qwen) against the Chat Completions dialect of the model server. */
describe('the loop engine with the real Qwen Code', function () {
  this.timeout(600_000);
  const make = useWorkspaces();
  let qwen = '';
  before(function () {
    qwen = agentCliPath('qwen');
  });

  /** One engine run with Qwen Code against `server`, configured the way a user points it at their own model server. */
  const runQwen = (ws: Workspace, server: ModelServer, o: Parameters<typeof runEngine>[2] = {}) => {
    const m = qwenModelEnv(ws.home, server.openaiUrl);
    return runEngine(ws, [], {
      ...o,
      server,
      env: m.env,
      config: { agent: 'qwen', qwenPath: qwen, model: m.model, ...o.config },
    });
  };

  it('refuses a tick without the work, retries with the gate failure in the prompt, completes verified; STOP and Cancel mid-turn leave no process', async () => {
    const ws = make({ 'RALPH_TASK.md': TASK });
    // 1. The tick without the work: the box ticked and the completion tag said, hello.txt never written.
    // 2. The retry: the prompt carries the gate's failure; the agent writes the file and ticks the box.
    // Qwen Code refuses a shell command that edits a file it has not read in this session: each tick reads first.
    const readTask = (): Turn => toolUse('read_file', { file_path: ws.file('RALPH_TASK.md') });
    const server = await startModelServer([
      readTask(),
      tick(),
      say('Done. <promise>COMPLETE</promise>'),
      shell("printf 'hello\\n' > hello.txt"),
      readTask(),
      tick(),
      say('hello.txt now says hello. <promise>COMPLETE</promise>', { usage: { input: 2000, cacheRead: 500 } }),
    ]);
    try {
      const run = await runQwen(ws, server, { config: { gates: { basic: GATE } } });
      assert.equal(run.result.state, 'completed', run.lines.join('\n'));
      assert.equal(run.result.iterations, 2);
      assert.equal(ws.read('hello.txt'), 'hello\n');
      assert.equal(ws.read('RALPH_TASK.md'), TASK.replace('[ ]', '[x]'));
      const failed = ofType(run.events, 'attemptFailed');
      assert.equal(failed.length, 1, 'the tick without the work was refused');
      assert.ok(ofType(run.events, 'verified').length === 1);
      // Each iteration's prompt, as the model received it: the second carries the first attempt's gate failure.
      const prompts = [...new Set(server.agentRequests().flatMap((r) => requestUserTexts(r)))].filter((t) =>
        t.includes('## Task'),
      );
      assert.equal(prompts.length, 2, prompts.join('\n----\n'));
      assert.doesNotMatch(prompts[0]!, /Previous attempt/);
      assert.match(prompts[1]!, /Previous attempt #1[\s\S]*FAIL: hello.txt does not say hello/);
      // Both iterations really ran Qwen Code, which reported each call's usage.
      const ended = ofType(run.events, 'iterationEnded');
      assert.deepEqual(
        ended.map((e) => e.ending),
        ['complete', 'complete'],
      );
      assert.equal(ended[1]!.totals.tokens.cacheRead, 500, 'the spend of the second iteration, from its usage');
      assert.ok(ended[1]!.totals.tokens.input >= 2000);
      assert.equal(JSON.parse(ws.read(`.ralph/runs/${run.result.runId}/run.json`)).agent, 'qwen');
      for (const e of ofType(run.events, 'agentStarted')) if (e.pid) assert.equal(processGroupAlive(e.pid), false);
    } finally {
      await server.close();
    }

    // 3. STOP during a turn: the turn finishes (a shell call, then its answer), the run stops, nothing is left.
    ws.write('RALPH_TASK.md', ws.read('RALPH_TASK.md') + '- [ ] Create bye.txt\n');
    ws.git('commit', '-qam', 'one more task');
    const stopServer = await startModelServer([shell('sleep 1'), say('Stopping here.')]);
    try {
      const run = await runQwen(ws, stopServer, {
        config: { gates: { basic: 'true' } },
        onEvent: (e, engine) => {
          if (e.type === 'agentStarted') fs.writeFileSync(path.join(ralphRunDir(ws.dir, engine.runId), 'STOP'), '');
        },
      });
      assert.equal(run.result.state, 'stopped', run.lines.join('\n'));
      assert.equal(ofType(run.events, 'iterationEnded')[0]!.ending, 'natural');
      for (const e of ofType(run.events, 'agentStarted')) if (e.pid) assert.equal(processGroupAlive(e.pid), false);
    } finally {
      await stopServer.close();
    }

    // 4. Cancel while the model hangs: the CLI's whole process group is ended.
    const hangServer = await startModelServer([hang()]);
    try {
      const cancel = new AbortController();
      void hangServer.waitForAgentRequests(1).then(() => cancel.abort());
      const run = await runQwen(ws, hangServer, {
        config: { gates: { basic: 'true' } },
        engine: { signal: cancel.signal },
      });
      assert.equal(run.result.state, 'cancelled', run.lines.join('\n'));
      const started = ofType(run.events, 'agentStarted');
      assert.equal(started.length, 1);
      assert.equal(processGroupAlive(started[0]!.pid!), false, 'no process remains in the agent group');
    } finally {
      await hangServer.close();
    }
  });
});
