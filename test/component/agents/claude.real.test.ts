import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { claudeAdapter } from '../../../src/core/agents/claude';
import { processGroupAlive, spawnIteration } from '../../../src/core/agents/spawn';
import { bash, edit, hang, httpError, say, toolResults, userTexts, write } from '../../support/modelServer';
import { requireClaude } from '../../support/claude';
import { type ClaudeRun, startClaude } from '../../support/claudeHarness';

/** Integration with the real Claude Code CLI 2.1.328, driven by the scripted model server. */
describe('the real claude CLI through the adapter', function () {
  this.timeout(60_000);
  let run: ClaudeRun | undefined;

  before(function () {
    requireClaude();
  });

  afterEach(async () => {
    await run?.cleanup();
    run = undefined;
  });

  const assertGroupGone = (): void => {
    assert.ok(run!.handle.pid, 'the agent started');
    assert.equal(processGroupAlive(run!.handle.pid!), false, 'no process remains in the agent group');
  };

  it('makes tool calls that really write and then edit a file, and ends with success', async () => {
    run = await startClaude(
      (cwd) => {
        const file = path.join(cwd, 'notes.txt');
        return [
          write(file, 'alpha\n'),
          edit(file, 'alpha', 'beta'),
          say('Done. <promise>COMPLETE</promise>', { usage: { input: 3000, cacheRead: 1000 } }),
        ];
      },
      { prompt: 'Create notes.txt, then change alpha to beta.' },
    );
    const exit = await run.done;
    assert.equal(fs.readFileSync(path.join(run.cwd, 'notes.txt'), 'utf8'), 'beta\n');
    assert.deepEqual(
      run.events.flatMap((e) => (e.type === 'toolUse' ? [e.name] : [])),
      ['Write', 'Edit'],
    );
    assert.deepEqual(
      run.events.flatMap((e) => (e.type === 'toolResult' ? [e.isError] : [])),
      [false, false],
    );
    assert.equal(exit.outcome.kind, 'success');
    assert.equal(exit.exitCode, 0);
    assert.deepEqual(
      exit.summary.signals.map((s) => s.kind),
      ['complete'],
    );
    assert.equal(exit.ledger.contextTokens, 4000);
    const agent = run.server.agentRequests();
    assert.equal(agent.length, 3);
    assert.ok(
      userTexts(agent[0]!.body).some((t) => t.includes('Create notes.txt')),
      'the prompt reached the model',
    );
    assert.equal(toolResults(agent[1]!.body).length, 1, 'the second request carries the Write result');
    assertGroupGone();
  });

  // breaker-s6 row 05: a repository's .claude/settings.json hooks and .mcp.json servers run programs.
  for (const mode of ['ignore', 'load'] as const) {
    it(`projectSettings ${mode}: the project's SessionStart/UserPromptSubmit hooks and .mcp.json server ${mode === 'ignore' ? 'do not run (--setting-sources user --strict-mcp-config)' : 'run'}`, async () => {
      let marks = '';
      run = await startClaude(
        (cwd) => {
          marks = path.join(cwd, '..', 'marks');
          fs.mkdirSync(marks);
          fs.mkdirSync(path.join(cwd, '.claude'));
          const mark = (name: string) => `touch ${JSON.stringify(path.join(marks, name))}`;
          fs.writeFileSync(
            path.join(cwd, '.claude', 'settings.json'),
            JSON.stringify({
              enableAllProjectMcpServers: true,
              hooks: {
                SessionStart: [{ hooks: [{ type: 'command', command: mark('session-start') }] }],
                UserPromptSubmit: [{ hooks: [{ type: 'command', command: mark('user-prompt') }] }],
              },
            }),
          );
          fs.writeFileSync(
            path.join(cwd, '.mcp.json'),
            JSON.stringify({ mcpServers: { m: { command: 'sh', args: ['-c', mark('mcp-server')] } } }),
          );
          return [say('Done.')];
        },
        { spec: { projectSettings: mode } },
      );
      await run.done;
      const seen = fs.readdirSync(marks).sort();
      if (mode === 'ignore') assert.deepEqual(seen, []);
      else assert.ok(seen.includes('session-start') && seen.includes('user-prompt'), `hooks ran: ${seen.join(', ')}`);
    });
  }

  it('emits warn once and then rotate as scripted usage crosses the thresholds, and the rotation kill leaves nothing behind', async () => {
    run = await startClaude(
      [
        bash('echo one', { usage: { input: 1000, cacheRead: 148_000 } }),
        bash('echo two', { usage: { input: 1000, cacheRead: 160_000 } }),
        bash('echo three', { usage: { input: 2000, cacheRead: 169_000 } }),
        hang(),
      ],
      {
        onSignal: (s, h) => {
          if (s.type === 'rotate') void h.kill('rotate');
        },
      },
    );
    const exit = await run.done;
    assert.deepEqual(
      run.signals.map((s) => [s.type, s.threshold, s.contextTokens]),
      [
        ['warn', 148_750, 149_000],
        ['rotate', 170_000, 171_000],
      ],
    );
    assert.equal(exit.killedBy, 'rotate');
    assert.equal(exit.ledger.warned, true);
    assert.equal(run.events.filter((e) => e.type === 'result').length, 0);
    assertGroupGone();
  });

  it('classifies persistent HTTP errors once the retries are spent: 429 rate-limited, 529 transient, 401 fatal (three CLIs at once)', async () => {
    const cases = [
      { status: 429, message: 'Number of request tokens has exceeded your rate limit', kind: 'rateLimited' },
      { status: 529, message: 'Overloaded', kind: 'transient' },
      { status: 401, message: 'invalid x-api-key', kind: 'fatal' },
    ];
    const runs = await Promise.all(
      cases.map((c) =>
        startClaude([httpError(c.status, { times: Infinity, message: c.message })], {
          env: { CLAUDE_CODE_MAX_RETRIES: '1' },
        }),
      ),
    );
    try {
      const exits = await Promise.all(runs.map((r) => r.done));
      assert.deepEqual(
        exits.map((e) => [e.outcome.kind, e.outcome.status, e.outcome.evidence]),
        cases.map((c) => [c.kind, c.status, 'api_error_status']),
      );
      assert.ok(
        runs[0]!.events.some((e) => e.type === 'apiRetry' && e.status === 429),
        'the CLI retried the 429 first (a heartbeat)',
      );
      assert.equal(exits[0]!.exitCode, 1);
      for (const r of runs)
        assert.equal(processGroupAlive(r.handle.pid!), false, 'no process remains in the agent group');
    } finally {
      await Promise.all(runs.map((r) => r.cleanup()));
    }
  });

  it('killed mid-stream: no result, outcome noResult, and no process left in its group', async () => {
    run = await startClaude([bash('sleep 30 & echo started'), hang()]);
    await run.server.waitForAgentRequests(2);
    const exit = await run.handle.kill('test');
    assert.equal(exit.killedBy, 'test');
    assert.equal(run.events.filter((e) => e.type === 'result').length, 0);
    assert.equal(exit.outcome.kind, 'noResult');
    assert.ok(run.events.some((e) => e.type === 'init'));
    assertGroupGone();
  });

  it('a binary that cannot be started resolves with the spawn error instead of throwing', async () => {
    const h = spawnIteration(claudeAdapter, { prompt: 'x', cwd: process.cwd(), binary: '/nonexistent/claude' });
    const exit = await h.done;
    assert.ok(exit.spawnError);
    assert.equal(exit.outcome.kind, 'noResult');
  });
});
