import * as assert from 'node:assert/strict';
import type { EngineEvent } from '../../../src/core/loop/events';
import { agentCliPath } from '../../support/agentClis';
import { runEngine, useWorkspaces } from '../../support/engineHarness';
import { codexModelEnv } from '../../support/agentEnv';
import { geminiQuota, geminiWrite } from '../../support/modelDialects/gemini';
import { httpError, requestUserTexts, say, shell, startModelServer } from '../../support/modelServer';
import { geminiModelEnv } from '../../support/scriptedAgentEnv';

const ofType = <T extends EngineEvent['type']>(events: EngineEvent[], t: T) =>
  events.filter((e): e is Extract<EngineEvent, { type: T }> => e.type === t);

/** The task section of a prompt (what the agent is asked to do), from "## Task" on. */
const taskOf = (prompt: string): string => prompt.slice(prompt.indexOf('## Task'));

describe('failover on a usage limit, with two real agents', function () {
  this.timeout(600_000);
  const make = useWorkspaces();

  it('claude limited by a 429 without a reset time: the next iteration runs gemini with the same prompt, and the log says so', async () => {
    const ws = make({ 'RALPH_TASK.md': '# Hello\n\n- [ ] Create hello.txt\n' });
    // Claude's model server is over its limit for good; Gemini's answers.
    const claudeServer = await startModelServer([httpError(429, { times: Infinity, message: 'rate limited' })]);
    const geminiServer = await startModelServer([
      geminiWrite('hello.txt', 'hello\n'),
      shell(`sed -i 's/- \\[ \\] Create/- [x] Create/' RALPH_TASK.md`),
      say('hello.txt written. <promise>COMPLETE</promise>'),
    ]);
    try {
      const gemini = geminiModelEnv(ws.home, geminiServer.url);
      const run = await runEngine(ws, [], {
        server: claudeServer,
        env: { ...gemini.env, CLAUDE_CODE_MAX_RETRIES: '1' },
        config: {
          agent: 'claude',
          agents: ['claude', 'gemini'],
          geminiPath: agentCliPath('gemini'),
          guard: 'best-effort',
          gates: { basic: 'grep -qx hello hello.txt' },
        },
      });
      assert.equal(run.result.state, 'completed', run.lines.join('\n'));
      assert.deepEqual(
        ofType(run.events, 'agentStarted').map((e) => e.agent),
        ['claude', 'gemini'],
      );
      const failover = ofType(run.events, 'failover');
      assert.deepEqual(
        failover.map((f) => [f.from, f.to, f.resetsAt]),
        [['claude', 'gemini', null]],
      );
      assert.match(
        run.lines.join('\n'),
        /FAILOVER — claude hit its usage limit \(resets at an unknown time\); the next iteration runs gemini/,
      );
      assert.equal(ofType(run.events, 'deferred').length, 0, 'no wait: the other agent ran at once');
      assert.equal(ofType(run.events, 'attemptFailed').length, 0, 'the limited iteration is not a failed attempt');
      // The same prompt: the task Claude was given is the task Gemini was given.
      const claudePrompt = claudeServer
        .agentRequests()
        .flatMap(requestUserTexts)
        .find((t) => t.includes('## Task'));
      const geminiPrompt = geminiServer
        .agentRequests()
        .flatMap(requestUserTexts)
        .find((t) => t.includes('## Task'));
      assert.ok(claudePrompt && geminiPrompt);
      assert.equal(taskOf(geminiPrompt), taskOf(claudePrompt));
      assert.equal(ws.read('hello.txt'), 'hello\n');
    } finally {
      await claudeServer.close();
      await geminiServer.close();
    }
  });

  it('gemini over its quota for an hour (the reset its 429 names): the adapter reads the reset, the next iteration runs codex', async () => {
    const ws = make({ 'RALPH_TASK.md': '# Hello\n\n- [ ] Create hello.txt\n' });
    // A reset over 300 s away: Gemini CLI gives up at once instead of waiting (a terminal quota error).
    const geminiServer = await startModelServer([geminiQuota(3600, { times: Infinity })]);
    const codexServer = await startModelServer([
      shell(`printf 'hello\\n' > hello.txt && sed -i 's/- \\[ \\] Create/- [x] Create/' RALPH_TASK.md`),
      say('hello.txt written. <promise>COMPLETE</promise>'),
    ]);
    try {
      const gemini = geminiModelEnv(ws.home, geminiServer.url);
      const codex = codexModelEnv(ws.home, codexServer.openaiUrl);
      const before = Date.now();
      const run = await runEngine(ws, [], {
        server: geminiServer,
        env: { ...gemini.env, ...codex.env },
        config: {
          agent: 'gemini',
          agents: ['gemini', 'codex'],
          model: gemini.model,
          geminiPath: agentCliPath('gemini'),
          codexPath: agentCliPath('codex'),
          gates: { basic: 'grep -qx hello hello.txt' },
        },
      });
      const log = run.lines.join('\n');
      assert.equal(run.result.state, 'completed', log);
      assert.deepEqual(
        ofType(run.events, 'agentStarted').map((e) => e.agent),
        ['gemini', 'codex'],
      );
      const [failover] = ofType(run.events, 'failover');
      assert.equal(failover?.from, 'gemini');
      assert.equal(failover?.to, 'codex');
      // The reset the quota error named: an hour from the failed call, not a guess.
      const resetsAt = failover!.resetsAt!;
      assert.ok(resetsAt >= before + 3_590_000 && resetsAt <= Date.now() + 3_600_000, String(resetsAt));
      assert.equal(ofType(run.events, 'deferred').length, 0, 'no wait: the other agent ran at once');
      assert.equal(ofType(run.events, 'iterationEnded')[0]?.ending, 'deferred');
      assert.equal(ws.read('hello.txt'), 'hello\n');
    } finally {
      await geminiServer.close();
      await codexServer.close();
    }
  });
});
