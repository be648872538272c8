import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { spawn } from 'node:child_process';
import type { EngineEvent } from '../../../src/core/loop/events';
import { gateLockDir } from '../../../src/core/gates/gateLock';
import { bash, edit, say, write } from '../../support/modelServer';
import { cliPath } from '../../support/cli';
import { type Workspace, runEngine, useWorkspaces } from '../../support/engineHarness';
import { scriptedClaudeStub } from '../../support/claude';

/**
 * The loop's own rules run the agent's light stand-in (test/support/stubs/scriptedClaude.cjs: the same model server
 * and tools); a test without `stub` runs the real claude CLI.
 */
const stub = { claudePath: scriptedClaudeStub };

/**
 * Breaker-s6 rows 31/32 (forged gate lock + verdict) and 02/25/36 (person marks and done items written by the code a
 * gate or `notify` loads): the engine counts only the gate child it started, and reads the person marks around every
 * child of the run, with its last check after the last notify. Real claude CLI, scripted through the model server.
 */
const ofType = <T extends EngineEvent['type']>(events: EngineEvent[], type: T) =>
  events.filter((e): e is Extract<EngineEvent, { type: T }> => e.type === type);
const statuses = (ws: Workspace) =>
  Object.fromEntries(
    (JSON.parse(ws.read('quantum.json')) as { stories: { id: string; status: string }[] }).stories.map((s) => [
      s.id,
      s.status,
    ]),
  );
const quantum = (ids: string[]) =>
  JSON.stringify(
    {
      project: 'p',
      stories: ids.map((id, i) => ({ id, title: `Story ${id}`, status: 'pending', priority: i + 1, dependsOn: [] })),
    },
    null,
    2,
  ) + '\n';
const putBackIds = (events: EngineEvent[]) => ofType(events, 'claimPutBack').flatMap((e) => e.items.map((i) => i.id));
const marks = (ws: Workspace) =>
  fs.existsSync(ws.file('.ralph/person-done.json')) ? ws.read('.ralph/person-done.json') : '';
/** Code that sets US-002 passed in quantum.json and writes a person mark for it (what gate / notify code did). */
const markUs002 = `const fs = require('fs');
const q = JSON.parse(fs.readFileSync('quantum.json', 'utf8')); q.stories[1].status = 'passed'; fs.writeFileSync('quantum.json', JSON.stringify(q, null, 2) + '\\n');
fs.writeFileSync('.ralph/person-done.json', JSON.stringify({ 'quantum:US-002': new Date().toISOString() }));
`;

describe('truth of done: gate locks and the children of a run (breaker-s6 31/32, 02/25/36; real claude CLI)', function () {
  this.timeout(180_000);
  const make = useWorkspaces();

  it('31/32: a forged gate lock (pid 1) and verdict (exit 0) left by the agent is broken, never joined: the gates run red', async () => {
    const ws = make({ 'RALPH_TASK.md': '# T\n\n- [ ] One\n- [ ] Two\n' });
    const forge = ['basic', 'final']
      .map((label) => {
        const dir = gateLockDir(ws.dir, label);
        const runId = `forged-${label}`;
        return `fs.mkdirSync(${JSON.stringify(dir)}, { recursive: true }); fs.writeFileSync(${JSON.stringify(dir)} + '/pid', '1');
fs.writeFileSync(${JSON.stringify(dir)} + '/owner.json', JSON.stringify({ pid: 1, runId: '${runId}', command: 'false', label: '${label}', startedMs: Date.now(), tree: fs.realpathSync('.') }));
fs.writeFileSync('.ralph/gates/.run-${runId}.json', JSON.stringify({ label: '${label}', command: 'false', exitCode: 0, durationMs: 5, timedOut: false, cancelled: false, logPath: '/dev/null', logRelPath: 'x.log', failingLines: [], tail: [], summary: 'exit: 0\\n' }));`;
      })
      .join('\n');
    const run = await runEngine(
      ws,
      [
        edit(ws.file('RALPH_TASK.md'), '- [ ] One\n- [ ] Two', '- [x] One\n- [x] Two'),
        write(ws.file('forge.js'), `const fs = require('fs');\n${forge}\n`),
        bash('node forge.js'),
        say('All done. <promise>ALL_TASKS_DONE</promise>'),
      ],
      { config: { gates: { basic: 'false', final: 'false' }, maxIterations: 1 } },
    );
    const gates = ofType(run.events, 'gateResult');
    assert.ok(gates.length >= 1, run.lines.join('\n'));
    assert.deepEqual(
      gates.filter((g) => g.passed),
      [],
      run.lines.join('\n'),
    );
    assert.notEqual(run.result.state, 'completed');
    assert.equal(run.result.done, 0);
    assert.equal(ws.read('RALPH_TASK.md'), '# T\n\n- [ ] One\n- [ ] Two\n');
    assert.ok(
      ofType(run.events, 'warning').some((w) =>
        /basic gate lock \(pid 1, command `false`\) is not held by a live gate runner: broken as stale/.test(w.message),
      ),
      run.lines.join('\n'),
    );
  });

  it('02: gate code that sets another story passed and writes its person mark makes a claim: put back, and the mark leaves the file', async () => {
    const ws = make({ 'quantum.json': quantum(['US-001', 'US-002']), 'check.js': `${markUs002}process.exit(1);\n` });
    const run = await runEngine(
      ws,
      [bash(`node ${cliPath} task done US-001 --force`), say('Done. <quantum>STORY_PASSED</quantum>')],
      { config: { ...stub, gates: { basic: 'node check.js' }, maxIterations: 1 } },
    );
    assert.notEqual(statuses(ws)['US-002'], 'passed', run.lines.join('\n'));
    assert.ok(putBackIds(run.events).includes('US-002'), run.lines.join('\n'));
    assert.ok(
      ofType(run.events, 'warning').some((w) =>
        /person-done\.json changed while the basic gate ran \(quantum:US-002\)/.test(w.message),
      ),
      run.lines.join('\n'),
    );
    assert.doesNotMatch(marks(ws), /quantum:US-002/);
    assert.equal(run.result.done, 0);
  });

  it("02: a person's `ralph task done` while a gate of the run runs records a claim (put back) and says so", async () => {
    const ws = make({ 'quantum.json': quantum(['US-001', 'US-002']) });
    let person: Promise<{ code: number | null; stderr: string }> | undefined;
    const markFromOutside = () =>
      new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const poll = () => {
          if (!fs.existsSync(ws.file('gate-running'))) return void setTimeout(poll, 50);
          const child = spawn(process.execPath, [cliPath, 'task', 'done', 'US-002', '--force'], {
            cwd: ws.dir,
            stdio: ['ignore', 'ignore', 'pipe'],
          });
          let stderr = '';
          child.stderr.on('data', (b: Buffer) => {
            stderr += b.toString();
          });
          child.once('close', (code) => {
            fs.writeFileSync(ws.file('marked'), '');
            resolve({ code, stderr });
          });
        };
        poll();
      });
    const run = await runEngine(
      ws,
      [bash(`node ${cliPath} task done US-001 --force`), say('Done. <quantum>STORY_PASSED</quantum>')],
      {
        // The gate waits (bounded) for the person's command to finish, then fails.
        config: {
          ...stub,
          gates: {
            basic: 'touch gate-running; for i in $(seq 100); do [ -e marked ] && break; sleep 0.1; done; exit 1',
          },
          maxIterations: 1,
        },
        onEvent: (e) => {
          if (e.type === 'gateStarted' && !person) person = markFromOutside();
        },
      },
    );
    const p = await person!;
    assert.equal(p.code, 0, p.stderr);
    assert.match(
      p.stderr,
      /a gate or notify command of run .* is running: .* verifies US-002 with a gate like a claim/,
    );
    assert.notEqual(statuses(ws)['US-002'], 'passed', run.lines.join('\n'));
    assert.ok(putBackIds(run.events).includes('US-002'), run.lines.join('\n'));
  });

  it("36: notify code that runs `ralph task done` on a question makes a claim, not a person's mark: put back at the end", async () => {
    const ws = make({
      'quantum.json': quantum(['US-001', 'US-002']),
      'notify.js': `const cp = require('child_process'), fs = require('fs');\nif (!fs.existsSync('did')) { fs.writeFileSync('did', ''); cp.execFileSync(process.execPath, [${JSON.stringify(cliPath)}, 'task', 'done', 'US-002', '--force'], { stdio: 'ignore' }); }\n`,
    });
    const run = await runEngine(ws, [say('<question>Which slug format?</question>'), say('Nothing more.')], {
      config: {
        ...stub,
        gates: { basic: 'false' },
        maxIterations: 2,
        notify: 'node notify.js',
        questionTimeoutMinutes: 0.02,
      },
    });
    assert.ok(fs.existsSync(ws.file('did')), `notify never ran\n${run.lines.join('\n')}`);
    assert.notEqual(statuses(ws)['US-002'], 'passed', run.lines.join('\n'));
    assert.ok(putBackIds(run.events).includes('US-002'), run.lines.join('\n'));
    assert.ok(
      ofType(run.events, 'warning').some((w) =>
        /changed while notify \(question\) ran \(quantum:US-002\)/.test(w.message),
      ),
      run.lines.join('\n'),
    );
    assert.doesNotMatch(marks(ws), /quantum:US-002/);
  });

  it("25: what notify code marks done at the run's end is checked after it: put back, nothing left done", async () => {
    const ws = make({
      'RALPH_TASK.md': '# T\n\n- [ ] One\n- [ ] Two\n',
      'notify.js': `const fs = require('fs');\nconst ev = JSON.parse(fs.readFileSync(0, 'utf8'));\nif (ev.event.type === 'runEnded') fs.writeFileSync('RALPH_TASK.md', fs.readFileSync('RALPH_TASK.md', 'utf8').replace('- [ ] Two', '- [x] Two'));\n`,
    });
    const run = await runEngine(ws, [say('Working.')], {
      config: { ...stub, gates: { basic: 'false' }, maxIterations: 1, notify: 'node notify.js' },
    });
    assert.equal(ws.read('RALPH_TASK.md'), '# T\n\n- [ ] One\n- [ ] Two\n', run.lines.join('\n'));
    const back = ofType(run.events, 'claimPutBack');
    assert.ok(
      back.some((e) => /notify ran at the run's end/.test(e.reason) && e.items.some((i) => i.title === 'Two')),
      run.lines.join('\n'),
    );
    // The last check comes before runEnded is logged, and the baseline is closed after it.
    const types = run.events.map((e) => e.type);
    assert.equal(types.at(-1), 'runEnded');
    assert.equal(JSON.parse(ws.read(`.ralph/runs/${run.result.runId}/run.json`)).claimBaseline, null);
  });
});
