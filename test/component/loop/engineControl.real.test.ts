import * as assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { processGroupAlive } from '../../../src/core/agents/spawn';
import { ralphRunDir } from '../../../src/core/control/sentinels';
import type { EngineEvent } from '../../../src/core/loop/events';
import { bash, edit, hang, httpError, say, startModelServer, write } from '../../support/modelServer';
import { streamFixture } from '../../support/fixtures';
import { cliPath } from '../../support/cli';
import { EngineRefusal, LoopEngine } from '../../../src/core/loop/startRun';
import { scriptedClaudeStub } from '../../support/claude';
import { type Workspace, agentEnv, runEngine, testConfig, useWorkspaces } from '../../support/engineHarness';
import { processesRunning, processesUnder, waitUntil } from '../../support/processes';
import { readBaselineMirror } from '../../../src/core/loop/baselineMirror';

const ofType = <T extends EngineEvent['type']>(events: EngineEvent[], type: T) =>
  events.filter((e): e is Extract<EngineEvent, { type: T }> => e.type === type);

/**
 * The loop's own decisions run the agent's light stand-in (`stub`: test/support/stubs/scriptedClaude.cjs, same model
 * server, same tools); the real claude CLI runs where its own behaviour is the point: its HTTP errors and retries,
 * and background processes it leaves (containment auto).
 */
const stub = { claudePath: scriptedClaudeStub };

describe('the loop engine: control, rate limits, sources and crashes (real claude CLI)', function () {
  this.timeout(180_000);
  let ws: Workspace | undefined;
  const make = useWorkspaces();

  it('finishes the iteration and stops cleanly when STOP appears during it', async () => {
    ws = make({ 'RALPH_TASK.md': '- [ ] One\n- [ ] Two\n' });
    const run = await runEngine(
      ws,
      [bash('sleep 1'), edit(ws.file('RALPH_TASK.md'), '- [ ] One', '- [x] One'), say('One done.'), say('never used')],
      {
        config: { ...stub, gates: { basic: 'true' } },
        onEvent: (e, engine) => {
          if (e.type === 'agentStarted') fs.writeFileSync(path.join(ralphRunDir(ws!.dir, engine.runId), 'STOP'), '');
        },
      },
    );
    assert.equal(run.result.state, 'stopped', run.lines.join('\n'));
    assert.equal(run.result.exitCode, 3);
    assert.equal(run.result.iterations, 1);
    const types = run.events.map((e) => e.type);
    assert.ok(
      types.indexOf('stopRequested') < types.indexOf('iterationEnded'),
      'the request is recorded while the iteration runs',
    );
    assert.equal(ofType(run.events, 'iterationEnded')[0]!.ending, 'natural', 'the iteration was not cut short');
    assert.ok(ofType(run.events, 'verified').length === 1, 'the finished task was still verified');
    assert.match(ws.read(`.ralph/runs/${run.result.runId}/progress.txt`), /completion_reason=STOPPED/);
  });

  it('waits while PAUSE exists and goes on when it is removed', async () => {
    ws = make({ 'RALPH_TASK.md': '- [ ] One\n- [ ] Two\n' });
    let pauseFile = '';
    const run = await runEngine(
      ws,
      [
        edit(ws.file('RALPH_TASK.md'), '- [ ] One', '- [x] One'),
        say('One done.'),
        edit(ws.file('RALPH_TASK.md'), '- [ ] Two', '- [x] Two'),
        say('Two done.'),
      ],
      {
        config: { ...stub, gates: { basic: 'true' } },
        onEvent: (e, engine) => {
          if (e.type === 'agentStarted' && e.iteration === 1)
            fs.writeFileSync((pauseFile = path.join(ralphRunDir(ws!.dir, engine.runId), 'PAUSE')), '');
          if (e.type === 'paused') setTimeout(() => fs.rmSync(pauseFile), 300);
        },
      },
    );
    assert.equal(run.result.state, 'completed', run.lines.join('\n'));
    const types = run.events.map((e) => e.type);
    assert.deepEqual(
      types.filter((t) => ['pauseRequested', 'paused', 'resumed'].includes(t)),
      ['pauseRequested', 'paused', 'resumed'],
    );
    assert.ok(
      types.indexOf('paused') > types.indexOf('iterationEnded'),
      'the running iteration finished before the pause',
    );
  });

  it("ends a rate-limit wait at once when STOP appears; the agent's end is on disk before the wait", async () => {
    ws = make({ 'RALPH_TASK.md': '- [ ] One\n' });
    let waited: { record: Record<string, unknown>; mirror: unknown } | undefined;
    const run = await runEngine(ws, [httpError(429, { times: Infinity, message: 'rate limited' })], {
      config: { gates: { basic: 'true' }, timing: { backoffBaseMs: 600_000, backoffCapMs: 600_000 } },
      env: { CLAUDE_CODE_MAX_RETRIES: '1' },
      onEvent: (e, engine) => {
        if (e.type !== 'deferred') return;
        // The agent's end was deferred to the lane's next write (decision 0027): the wait writes it first, so a
        // person's mark made during a long backoff is never read as the agent's after a crash.
        const file = path.join(ralphRunDir(ws!.dir, engine.runId), 'run.json');
        const atRest = (b: unknown) => !!b && typeof b === 'object' && !('marksAtAgentStart' in b);
        void waitUntil(() => {
          const record = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
          const mirror = readBaselineMirror(ws!.dir, engine.runId);
          if (record.agentPgid !== null || !atRest(record.claimBaseline) || !atRest(mirror)) return false;
          waited = { record, mirror };
          return true;
        }).then(() => fs.writeFileSync(path.join(ralphRunDir(ws!.dir, engine.runId), 'STOP'), ''));
      },
    });
    assert.equal(run.result.state, 'stopped', run.lines.join('\n'));
    assert.equal(ofType(run.events, 'deferred')[0]!.waitMs, 600_000, 'it was a long wait, cut short by STOP');
    assert.ok(waited, "run.json and the mirror held the agent's end during the wait");
    assert.equal(waited.record.state, 'running');
  });

  it('backs off exponentially on a 429 without a reset time, then goes on', async () => {
    ws = make({ 'RALPH_TASK.md': '- [ ] One\n' });
    const run = await runEngine(
      ws,
      [
        httpError(429, { times: 4, message: 'rate limited' }),
        edit(ws.file('RALPH_TASK.md'), '- [ ] One', '- [x] One'),
        say('One done.'),
      ],
      {
        config: { gates: { basic: 'true' }, timing: { backoffBaseMs: 100, backoffCapMs: 150 } },
        env: { CLAUDE_CODE_MAX_RETRIES: '1' },
      },
    );
    assert.equal(run.result.state, 'completed', run.lines.join('\n'));
    const deferred = ofType(run.events, 'deferred');
    assert.deepEqual(
      deferred.map((d) => [d.waitMs, d.resetsAt, d.inARow]),
      [
        [100, null, 1],
        [150, null, 2],
      ],
    );
  });

  it('stops as stalled after the configured number of deferrals in a row', async () => {
    ws = make({ 'RALPH_TASK.md': '- [ ] One\n' });
    const run = await runEngine(ws, [httpError(529, { times: Infinity, message: 'Overloaded' })], {
      config: { gates: { basic: 'true' }, timing: { backoffBaseMs: 10, backoffCapMs: 10, maxDeferrals: 3 } },
      env: { CLAUDE_CODE_MAX_RETRIES: '0' },
    });
    assert.equal(run.result.state, 'stalled', run.lines.join('\n'));
    assert.equal(ofType(run.events, 'deferred').length, 2);
  });

  it('stops with a clear message on a fatal error instead of retrying', async () => {
    ws = make({ 'RALPH_TASK.md': '- [ ] One\n' });
    const run = await runEngine(ws, [httpError(401, { times: Infinity, message: 'invalid x-api-key' })], {
      config: { gates: { basic: 'true' } },
      env: { CLAUDE_CODE_MAX_RETRIES: '0' },
    });
    assert.equal(run.result.state, 'failed');
    assert.match(run.result.reason, /agent error: .*(api key|authenticat)/i);
    assert.equal(run.result.iterations, 1);
  });

  it('waits until a rate limit resets when the agent says when (stub agent replaying the rejected rate_limit_event)', async () => {
    ws = make({ 'RALPH_TASK.md': '- [ ] One\n' });
    const line = fs
      .readFileSync(streamFixture('claude', 'hand-written', 'rate-limit-event-rejected.jsonl'), 'utf8')
      .trim();
    const stub = ws.file('../bin/claude');
    fs.mkdirSync(path.dirname(stub), { recursive: true });
    fs.writeFileSync(
      stub,
      `#!/usr/bin/env node
const fs = require('fs');
const state = process.env.STUB_STATE;
const n = fs.existsSync(state) ? Number(fs.readFileSync(state, 'utf8')) + 1 : 1;
fs.writeFileSync(state, String(n));
const out = (o) => process.stdout.write(JSON.stringify(o) + '\\n');
out({ type: 'system', subtype: 'init', session_id: 's' + n, model: 'claude-sonnet-4-6', cwd: process.cwd(), tools: [] });
if (n === 1) {
  const ev = JSON.parse(${JSON.stringify(line)});
  ev.rate_limit_info.resetsAt = Math.floor(Date.now() / 1000) + 3600;
  out(ev);
  out({ type: 'result', subtype: 'success', is_error: true, result: "You've hit your limit · resets 3pm", num_turns: 1, total_cost_usd: 0 });
  process.exit(1);
}
fs.writeFileSync('RALPH_TASK.md', '- [x] One\\n');
out({ type: 'assistant', message: { id: 'm1', model: 'claude-sonnet-4-6', role: 'assistant', content: [{ type: 'text', text: 'One done.' }], usage: { input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 } } });
out({ type: 'result', subtype: 'success', is_error: false, result: 'One done.', num_turns: 1, total_cost_usd: 0.001 });
`,
    );
    fs.chmodSync(stub, 0o755);
    const before = Date.now();
    const run = await runEngine(ws, [], {
      // The reset an hour away (a reset only 2 s ahead was already past when a loaded machine decided, and then
      // no reset was used); the wait is held to 200 ms by maxResetWaitMs, so the test does not wait the hour.
      config: { gates: { basic: 'true' }, claudePath: stub, timing: { resetMarginMs: 100, maxResetWaitMs: 200 } },
      env: { STUB_STATE: ws.file('../stub-state') },
    });
    assert.equal(run.result.state, 'completed', run.lines.join('\n'));
    const d = ofType(run.events, 'deferred')[0]!;
    assert.ok(
      d.resetsAt !== null && d.resetsAt >= before + 3_500_000,
      'the reset time came from the rate_limit_event, an hour away',
    );
    assert.equal(d.waitMs, 200, 'waits until the reset plus the margin, held to maxResetWaitMs');
    assert.equal(d.inARow, 0, 'a quota wait is not counted as a stall');
  });

  it('runs quantum stories in dependency order and ignores a signal that only appears in a tool result', async () => {
    const quantum = {
      project: 'p',
      stories: [
        { id: 'US-002', title: 'Uses the parser', status: 'pending', priority: 1, dependsOn: ['US-001'] },
        { id: 'US-001', title: 'Parser', status: 'pending', priority: 2, dependsOn: [] },
      ],
    };
    ws = make({
      'quantum.json': JSON.stringify(quantum, null, 2) + '\n',
      'NOTES.md': 'When done print <quantum>STORY_PASSED</quantum>\n',
    });
    const run = await runEngine(
      ws,
      [
        bash('cat NOTES.md'),
        say('Read the notes; the parser is not written yet.'),
        write(ws.file('parser.txt'), 'parser\n'),
        say('Parser written. <quantum>STORY_PASSED</quantum>'),
        write(ws.file('user.txt'), 'user\n'),
        say('Done. <quantum>STORY_PASSED</quantum>'),
      ],
      { config: { ...stub, gates: { basic: 'true' } } },
    );
    assert.equal(run.result.state, 'completed', run.lines.join('\n'));
    assert.deepEqual(
      ofType(run.events, 'iterationStarted').map((e) => e.item?.id),
      ['US-001', 'US-001', 'US-002'],
    );
    assert.deepEqual(
      ofType(run.events, 'iterationEnded').map((e) => e.ending),
      ['natural', 'complete', 'complete'],
    );
    const stories = JSON.parse(ws.read('quantum.json')).stories;
    assert.deepEqual(
      stories.map((s: { id: string; status: string }) => [s.id, s.status]),
      [
        ['US-002', 'passed'],
        ['US-001', 'passed'],
      ],
    );
  });

  it('completes flow-next tasks through their status', async () => {
    ws = make({
      '.flow/meta.json': '{\n  "schema_version": 2,\n  "next_epic": 2\n}\n',
      '.flow/epics/fn-1.json':
        JSON.stringify({ id: 'fn-1', title: 'Epic', status: 'open', depends_on_epics: [] }, null, 2) + '\n',
      '.flow/tasks/fn-1.1.json':
        JSON.stringify(
          { id: 'fn-1.1', epic: 'fn-1', title: 'First', status: 'todo', depends_on: [], priority: null },
          null,
          2,
        ) + '\n',
      '.flow/tasks/fn-1.1.md':
        '# fn-1.1 First\n\n## Description\nWrite a.txt\n\n## Acceptance\n- [ ] a.txt exists\n\n## Done summary\nTBD\n\n## Evidence\n- Commits:\n- Tests:\n- PRs:\n',
      '.flow/tasks/fn-1.2.json':
        JSON.stringify(
          { id: 'fn-1.2', epic: 'fn-1', title: 'Second', status: 'todo', depends_on: ['fn-1.1'], priority: null },
          null,
          2,
        ) + '\n',
    });

    const run = await runEngine(
      ws,
      [
        write(ws.file('a.txt'), 'a\n'),
        bash(`node ${cliPath} task done fn-1.1 --json`),
        say('First done.'),
        write(ws.file('b.txt'), 'b\n'),
        bash(`node ${cliPath} task done fn-1.2 --json`),
        say('Second done.'),
      ],
      { config: { ...stub, gates: { basic: 'test -f a.txt' } } },
    );
    assert.equal(run.result.state, 'completed', run.lines.join('\n'));
    assert.deepEqual(
      ofType(run.events, 'verified').map((e) => e.item.id),
      ['fn-1.1', 'fn-1.2'],
    );
    const status = spawnSync(process.execPath, [cliPath, 'status', '--json'], { cwd: ws.dir, encoding: 'utf8' });
    assert.equal(JSON.parse(status.stdout).tasks.done, 2);
  });

  it('marks a run whose engine was SIGKILLed as crashed, kills its orphaned agent and fails its story, then recovers', async () => {
    const quantum = {
      project: 'p',
      stories: [
        {
          id: 'US-001',
          title: 'Parser',
          status: 'pending',
          priority: 1,
          dependsOn: [],
          retries: { attempts: 0, maxAttempts: 3 },
        },
      ],
    };
    ws = make({
      'quantum.json': JSON.stringify(quantum, null, 2) + '\n',
      '.ralph/config.json': JSON.stringify({
        claudePath: scriptedClaudeStub,
        gates: { basic: 'true' },
        timing: { betweenIterationsMs: 50, killGraceMs: 1000 },
      }),
    });
    const server = await startModelServer([
      hang(),
      write(ws.file('parser.txt'), 'p\n'),
      say('Done. <quantum>STORY_PASSED</quantum>'),
    ]);
    try {
      const env = { ...process.env, ...agentEnv(ws, server) } as NodeJS.ProcessEnv;
      for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
      // The first runner without `setpriv --pdeathsig` (a `setpriv` that fails its probe, containment.ts
      // parentDeathPrefix), as on a machine without util-linux's setpriv: its agent then outlives it for sure, the
      // orphan the next start must end. (With setpriv the kernel kills the agent with the runner, and whether it was
      // still seen alive right after depended on timing.)
      const shim = ws.file('.no-setpriv');
      fs.mkdirSync(shim);
      fs.writeFileSync(path.join(shim, 'setpriv'), '#!/bin/sh\nexit 1\n', { mode: 0o755 });
      env.PATH = `${shim}${path.delimiter}${env.PATH ?? ''}`;
      const first = spawn(process.execPath, [cliPath, 'run', '--json', '--trust'], {
        cwd: ws.dir,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let firstRun = '';
      let agentPid = 0;
      await new Promise<void>((resolve, reject) => {
        let buf = '';
        first.stdout.on('data', (b: Buffer) => {
          buf += b.toString();
          for (const l of buf.split('\n').slice(0, -1)) {
            const e = JSON.parse(l) as EngineEvent;
            if (e.type === 'runStarted') firstRun = e.runId;
            if (e.type === 'agentStarted' && e.pid) {
              agentPid = e.pid;
              resolve();
            }
          }
          buf = buf.slice(buf.lastIndexOf('\n') + 1);
        });
        first.once('exit', () => reject(new Error('the first run ended early')));
      });
      await server.waitForAgentRequests(1);
      // Killed once its record names the agent (a loaded machine's writes can come after the agent's first request):
      // the crash this test is about leaves a recorded orphan.
      const firstRecord = path.join(ralphRunDir(ws.dir, firstRun), 'run.json');
      await waitUntil(() => {
        try {
          return (JSON.parse(fs.readFileSync(firstRecord, 'utf8')) as { agentPgid?: unknown }).agentPgid === agentPid;
        } catch {
          return false;
        }
      });
      first.kill('SIGKILL');
      await new Promise((r) => first.once('exit', r));
      assert.equal(processGroupAlive(agentPid), true, 'the agent outlived its engine (the orphan to recover)');

      const run = await runEngine(ws, [], { server, config: { ...stub, gates: { basic: 'true' } } });
      assert.equal(processGroupAlive(agentPid), false, 'the orphaned agent group was ended');
      const old = JSON.parse(ws.read(`.ralph/runs/${firstRun}/run.json`));
      assert.equal(old.state, 'failed');
      assert.equal(old.completion.reason, 'CRASHED');
      assert.ok(ofType(run.events, 'warning').some((w) => /crashed/.test(w.message)));
      const story = JSON.parse(ws.read('quantum.json')).stories[0];
      assert.equal(story.status, 'passed', 'the new run recovered and finished the story');
      assert.ok(
        story.retries.failureLog.some((f: { phase: string }) => f.phase === 'crash'),
        'the crash left a failure entry',
      );
    } finally {
      await server.close();
    }
  });

  for (const containment of ['auto', 'marker'] as const) {
    it(`ends the processes the agent started in the background, even outside its process group (containment ${containment})`, async () => {
      ws = make({ 'RALPH_TASK.md': '- [ ] One\n' });
      const run = await runEngine(
        ws,
        [
          bash(
            '(sleep 1231 >/dev/null 2>&1 &) ; nohup sleep 1232 >/dev/null 2>&1 & setsid sleep 1233 >/dev/null 2>&1 < /dev/null & echo started',
          ),
          edit(ws.file('RALPH_TASK.md'), '- [ ] One', '- [x] One'),
          say('One done.'),
        ],
        { config: { gates: { basic: 'true' }, containment, ...(containment === 'marker' ? stub : {}) } },
      );
      assert.equal(run.result.state, 'completed', run.lines.join('\n'));
      assert.ok(
        ofType(run.events, 'warning').some((w) => /left running outside its process group/.test(w.message)),
        run.lines.join('\n'),
      );
      assert.deepEqual(processesUnder(ws.root), [], 'nothing the agent started is still running');
    });
  }

  it("ends what the agent and a gate start with setsid env -i (no marker left): the iteration's PID namespace (issue 12)", async () => {
    ws = make({ 'RALPH_TASK.md': '- [ ] One\n' });
    const stray = (n: number) => `(setsid env -i /bin/sleep ${n} >/dev/null 2>&1 </dev/null &); echo started`;
    try {
      const run = await runEngine(
        ws,
        [
          bash(stray(1241)),
          bash('echo "$$" > ns-pid; ls /proc | grep -c "^[0-9]" > ns-count'),
          edit(ws.file('RALPH_TASK.md'), '- [ ] One', '- [x] One'),
          say('One done.'),
        ],
        { config: { ...stub, gates: { basic: stray(1242) }, containment: 'auto' } },
      );
      assert.equal(run.result.state, 'completed', run.lines.join('\n'));
      assert.deepEqual(
        [...processesRunning('/bin/sleep 1241'), ...processesRunning('/bin/sleep 1242')],
        [],
        'the setsid env -i sleeps of agent and gate are gone',
      );
      assert.ok(
        Number(ws.read('ns-count')) < 30,
        `the agent's shell sees only its namespace in /proc (${ws.read('ns-count').trim()} processes)`,
      );
    } finally {
      for (const pid of [...processesRunning('/bin/sleep 1241'), ...processesRunning('/bin/sleep 1242')])
        process.kill(pid, 'SIGKILL');
    }
  });

  it('refuses a second run in a folder whose run is still active', async () => {
    ws = make({ 'RALPH_TASK.md': '- [ ] One\n' });
    let second: Promise<unknown> | undefined;
    const run = await runEngine(
      ws,
      [bash('sleep 1'), edit(ws.file('RALPH_TASK.md'), '- [ ] One', '- [x] One'), say('One done.')],
      {
        config: { ...stub, gates: { basic: 'true' } },
        onEvent: (e) => {
          if (e.type === 'agentStarted' && !second)
            second = new LoopEngine({ folder: ws!.dir, config: testConfig({ gates: { basic: 'true' } }) }).run().then(
              () => 'ran',
              (err: Error) => err,
            );
        },
      },
    );
    assert.equal(run.result.state, 'completed');
    const refusal = await second;
    assert.ok(refusal instanceof EngineRefusal, String(refusal));
    assert.match(refusal.message, /Another Ralph run is active/);
  });

  it('removes a .ralph/stop-requested left from before the run instead of obeying it', async () => {
    ws = make({ 'RALPH_TASK.md': '- [ ] One\n', '.ralph/stop-requested': '' });
    const old = new Date(Date.now() - 60_000);
    fs.utimesSync(ws.file('.ralph/stop-requested'), old, old);
    const run = await runEngine(
      ws,
      [
        bash('test -f .ralph/stop-requested && echo STILL-THERE || echo GONE'),
        edit(ws.file('RALPH_TASK.md'), '- [ ] One', '- [x] One'),
        say('One done.'),
      ],
      { config: { ...stub, gates: { basic: 'true' } } },
    );
    assert.equal(run.result.state, 'completed');
    assert.match(JSON.stringify(run.server.agentRequests().map((r) => r.body)), /GONE/);
    assert.ok(ofType(run.events, 'warning').some((w) => /predates this run/.test(w.message)));
  });

  it('tells apart two boxes with the same text, and never unticks a finished one', async () => {
    const tasks = '## Parser\n- [x] Add tests\n\n## Printer\n- [ ] Add tests\n- [ ] Other\n';
    ws = make({ 'RALPH_TASK.md': tasks });
    const run = await runEngine(ws, [say('I did nothing.'), say('Still nothing.'), say('Nothing again.')], {
      config: { ...stub, gates: { basic: 'false' } },
    });
    assert.equal(run.result.state, 'stalled', run.lines.join('\n'));
    assert.equal(ws.read('RALPH_TASK.md'), tasks, 'the file is untouched');
    assert.equal(ofType(run.events, 'gateResult').length, 0, 'nothing was claimed, so nothing was verified');
  });

  it('gives an unfinished quantum story back (pending, attempts kept) when the run is stopped', async () => {
    const quantum = {
      project: 'p',
      stories: [
        {
          id: 'US-001',
          title: 'Parser',
          status: 'pending',
          priority: 1,
          dependsOn: [],
          retries: { attempts: 1, maxAttempts: 3 },
        },
      ],
    };
    ws = make({ 'quantum.json': JSON.stringify(quantum, null, 2) + '\n' });
    const run = await runEngine(ws, [bash('sleep 1'), say('Half way there.')], {
      config: { ...stub, gates: { basic: 'true' } },
      onEvent: (e, engine) => {
        if (e.type === 'agentStarted') fs.writeFileSync(path.join(ralphRunDir(ws!.dir, engine.runId), 'STOP'), '');
      },
    });
    assert.equal(run.result.state, 'stopped');
    const story = JSON.parse(ws.read('quantum.json')).stories[0];
    assert.equal(story.status, 'pending');
    assert.equal(story.startedAt ?? null, null, 'startedAt cleared (removed when no other story carries the key)');
    assert.equal(story.retries.attempts, 1);
  });

  it('undoes a box the agent ticked when the run is cancelled before the gate said so', async () => {
    ws = make({ 'RALPH_TASK.md': '- [ ] A\n' });
    const cancel = new AbortController();
    const run = await runEngine(ws, [edit(ws.file('RALPH_TASK.md'), '- [ ] A', '- [x] A'), say('A done.')], {
      config: { ...stub, gates: { basic: 'sleep 30' } },
      engine: { signal: cancel.signal },
      onEvent: (e) => {
        if (e.type === 'gateStarted') cancel.abort();
      },
    });
    assert.equal(run.result.state, 'cancelled', run.lines.join('\n'));
    assert.equal(ws.read('RALPH_TASK.md'), '- [ ] A\n', 'an unverified tick does not survive the run');
  });

  it('never unticks another box when the agent removes one', async () => {
    const tasks = '- [ ] B\n- [x] C\n- [ ] D\n';
    ws = make({ 'RALPH_TASK.md': tasks });
    const run = await runEngine(
      ws,
      [bash("sed -i '1d' RALPH_TASK.md"), say('Removed B.'), say('Nothing.'), say('Nothing.')],
      { config: { ...stub, gates: { basic: 'false' }, maxIterations: 2 } },
    );
    assert.notEqual(run.result.state, 'completed');
    assert.match(ws.read('RALPH_TASK.md'), /- \[x\] C/, 'C stays done');
    assert.equal(ofType(run.events, 'verified').length, 0);
  });

  it('after a crash, unticks what the crashed iteration ticked and ends what it left running in its own session', async () => {
    ws = make({
      'RALPH_TASK.md': '- [x] Old\n- [ ] New\n',
      '.ralph/config.json': JSON.stringify({
        claudePath: scriptedClaudeStub,
        gates: { basic: 'true' },
        timing: { betweenIterationsMs: 50, killGraceMs: 1000 },
      }),
    });
    const server = await startModelServer([
      edit(ws.file('RALPH_TASK.md'), '- [ ] New', '- [x] New'),
      bash('(setsid sleep 321 >/dev/null 2>&1 < /dev/null &); echo started'),
      hang(),
      edit(ws.file('RALPH_TASK.md'), '- [ ] New', '- [x] New'),
      say('New done.'),
    ]);
    try {
      const env = { ...process.env, ...agentEnv(ws, server) } as NodeJS.ProcessEnv;
      for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
      const first = spawn(process.execPath, [cliPath, 'run', '--json', '--trust'], {
        cwd: ws.dir,
        env,
        stdio: ['ignore', 'ignore', 'ignore'],
      });
      await server.waitForAgentRequests(3);
      first.kill('SIGKILL');
      await new Promise((r) => first.once('exit', r));
      assert.equal(ws.read('RALPH_TASK.md'), '- [x] Old\n- [x] New\n', 'the crashed iteration had ticked New');
      const run = await runEngine(ws, [], { server, config: { ...stub, gates: { basic: 'true' } } });
      assert.equal(run.result.state, 'completed', run.lines.join('\n'));
      assert.equal(run.result.iterations, 1, 'New was unticked by recovery and done again, verified this time');
      assert.deepEqual(processesUnder(ws.root), [], 'the setsid sleep of the crashed iteration is gone');
    } finally {
      await server.close();
    }
  });
});
