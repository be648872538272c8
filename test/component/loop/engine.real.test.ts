import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { processGroupAlive } from '../../../src/core/agents/spawn';
import { RunFollower } from '../../../src/core/control/runFollower';
import { runViewOf } from '../../../src/core/control/runView';
import { bash, edit, say, write } from '../../support/modelServer';
import { type Workspace, runEngine, useWorkspaces } from '../../support/engineHarness';
import { scriptedClaudeStub } from '../../support/claude';

/**
 * The loop's own rules run the agent's light stand-in (test/support/stubs/scriptedClaude.cjs: the same model server
 * and tools); a test without `stub` runs the real claude CLI.
 */
const stub = { claudePath: scriptedClaudeStub };

const TASKS = '# Sample\n\n- [ ] Create one.txt\n- [ ] Create two.txt\n- [ ] Create three.txt\n';

/** One task done by the agent as a person would: write the file, tick the box, commit, say so. */
function doTask(ws: Workspace, name: string, label: string) {
  return [
    write(ws.file(`${name}.txt`), `${name}\n`),
    edit(ws.file('RALPH_TASK.md'), `- [ ] ${label}`, `- [x] ${label}`),
    bash(`git add ${name}.txt RALPH_TASK.md && git commit -q -m "feat: ${label}"`),
    say(`Created ${name}.txt and ticked its box.`),
  ];
}

describe('the loop engine with the real claude CLI', function () {
  this.timeout(120_000);
  let ws: Workspace | undefined;

  const make = useWorkspaces();

  it('completes a three-task checklist across iterations with green gates', async () => {
    ws = make({ 'RALPH_TASK.md': TASKS });
    const run = await runEngine(
      ws,
      [
        ...doTask(ws, 'one', 'Create one.txt'),
        ...doTask(ws, 'two', 'Create two.txt'),
        ...doTask(ws, 'three', 'Create three.txt'),
      ],
      {
        config: {
          gates: { basic: 'test -f one.txt', final: 'test -f one.txt && test -f two.txt && test -f three.txt' },
        },
      },
    );
    assert.equal(run.result.state, 'completed', run.lines.join('\n'));
    assert.equal(run.result.exitCode, 0);
    assert.equal(run.result.iterations, 3);
    assert.equal(ws.read('RALPH_TASK.md'), TASKS.replace(/\[ \]/g, '[x]'));
    assert.deepEqual(
      run.events.filter((e) => e.type === 'progress').map((e) => (e as { text: string }).text),
      ['0/3 done', '1/3 done', '2/3 done', '3/3 done'],
    );
    assert.deepEqual(
      run.events.filter((e) => e.type === 'gateResult').map((e) => (e as { tier: string }).tier),
      ['basic', 'basic', 'basic', 'final'],
    );
    const dir = `.ralph/runs/${run.result.runId}`;
    assert.match(ws.read(`${dir}/progress.txt`), /completion_reason=DONE\npromise=COMPLETE\n$/);
    assert.ok(fs.existsSync(ws.file(`${dir}/iter-001.jsonl`)));
    assert.equal(JSON.parse(ws.read(`${dir}/run.json`)).state, 'completed');
    assert.match(ws.read('.ralph/activity.log'), /LOOP 1 START/);
    for (const e of run.events) if (e.type === 'agentStarted' && e.pid) assert.equal(processGroupAlive(e.pid), false);
    // The log on disk: every event, valid against the one schema, seq 1…N without gaps; its view agrees.
    const batch = new RunFollower(ws.dir, run.result.runId).poll();
    assert.deepEqual(batch.problems, []);
    assert.deepEqual(
      batch.entries.map((e) => e.seq),
      run.events.map((_, i) => i + 1),
    );
    assert.deepEqual(
      batch.entries.map((e) => e.type),
      run.events.map((e) => e.type),
    );
    assert.deepEqual(batch.end, { kind: 'ended', exitCode: 0 });
    const view = runViewOf(run.result.runId, batch.entries);
    assert.deepEqual(
      [view.state, view.iteration, view.progress, view.gates.map((g) => [g.tier, g.passed])],
      [
        'completed',
        3,
        { done: 3, total: 3 },
        [
          ['basic', true],
          ['final', true],
        ],
      ],
    );
    assert.equal(view.lanes[0]!.attempt?.text, '1 of 5');
  });
});

describe('the loop engine: context, verification and retries (real claude CLI)', function () {
  this.timeout(180_000);
  let ws: Workspace | undefined;
  const make = useWorkspaces();

  it("begins with the item named by --item (Start Here), then goes on in the source's order", async () => {
    ws = make({ 'RALPH_TASK.md': TASKS });
    const run = await runEngine(
      ws,
      [
        ...doTask(ws, 'three', 'Create three.txt'),
        ...doTask(ws, 'one', 'Create one.txt'),
        ...doTask(ws, 'two', 'Create two.txt'),
      ],
      {
        config: { ...stub, gates: { basic: 'true', final: 'test -f one.txt && test -f two.txt && test -f three.txt' } },
        engine: { item: 'RALPH_TASK.md:5' },
      },
    );
    assert.equal(run.result.state, 'completed', run.lines.join('\n'));
    const prompts = run.prompts();
    assert.match(prompts[0]!, /RALPH_TASK\.md, line 5: Create three\.txt/);
    assert.match(prompts[1]!, /RALPH_TASK\.md, line 3: Create one\.txt/);
  });

  it('creates the warning file at the warn threshold, and at rotate ends the agent and hands the handoff to the next prompt', async () => {
    ws = make({ 'RALPH_TASK.md': '- [ ] Finish the report\n' });
    const handoff = '# Loop Handoff\n\n## Working set\nWS-MARKER-123: report half written, finish section 2\n';
    const run = await runEngine(
      ws,
      [
        write(ws.file('.ralph/handoff.md'), handoff, { usage: { input: 1000 } }),
        bash('echo started', { usage: { input: 1000, cacheRead: 149_000 } }),
        bash('sleep 0.5; test -f .ralph/context-warning-active && echo WARNFILE-PRESENT'),
        bash('sleep 5', { usage: { input: 2000, cacheRead: 170_000 } }),
        edit(ws.file('RALPH_TASK.md'), '- [ ] Finish', '- [x] Finish'),
        say('Report finished.'),
      ],
      { config: { gates: { basic: 'true' } } },
    );
    assert.equal(run.result.state, 'completed', run.lines.join('\n'));
    const types = run.events.map((e) => e.type);
    assert.ok(types.indexOf('warn') < types.indexOf('rotate'), 'warn comes first');
    const toolOutputs = JSON.stringify(run.server.agentRequests().map((r) => r.body));
    assert.match(toolOutputs, /WARNFILE-PRESENT/, 'the agent saw .ralph/context-warning-active');
    const ended = run.events.filter((e) => e.type === 'iterationEnded') as Extract<
      (typeof run.events)[number],
      { type: 'iterationEnded' }
    >[];
    assert.deepEqual(
      ended.map((e) => e.ending),
      ['rotation', 'natural'],
    );
    const prompts = run.prompts();
    assert.equal(prompts.length, 2);
    assert.match(prompts[1]!, /WS-MARKER-123/, 'the second prompt carries the handoff');
    assert.equal(
      fs.existsSync(ws.file('.ralph/context-warning-active')),
      false,
      'deleted at the start of the next iteration',
    );
  });

  it('puts every earlier failed attempt into the next prompt until the gate passes', async () => {
    ws = make({ 'RALPH_TASK.md': '- [ ] Make the check pass\n' });
    const tick = () => edit(ws!.file('RALPH_TASK.md'), '- [ ] Make', '- [x] Make');
    const run = await runEngine(
      ws,
      [
        tick(),
        bash('echo 1 > attempt.txt && git add attempt.txt && git commit -qam "try the quick fix"'),
        say('Done with the quick fix.'),
        tick(),
        bash('echo 2 > attempt.txt && git commit -qam "try the config change"'),
        say('Done with the config change.'),
        write(ws.file('ok.txt'), 'ok\n'),
        tick(),
        bash('git add ok.txt && git commit -qam "add ok.txt"'),
        say('Done properly.'),
      ],
      { config: { ...stub, gates: { basic: 'test -f ok.txt || { echo "FAIL: ok.txt is missing"; exit 1; }' } } },
    );
    assert.equal(run.result.state, 'completed', run.lines.join('\n'));
    const prompts = run.prompts();
    assert.equal(prompts.length, 3);
    assert.doesNotMatch(prompts[0]!, /Previous attempt/);
    assert.match(prompts[1]!, /Previous attempt #1[\s\S]*try the quick fix[\s\S]*FAIL: ok.txt is missing/);
    assert.doesNotMatch(prompts[1]!, /Previous attempt #2/);
    assert.match(
      prompts[2]!,
      /Previous attempt #1[\s\S]*try the quick fix[\s\S]*Previous attempt #2[\s\S]*try the config change/,
    );
    assert.deepEqual(
      run.events.filter((e) => e.type === 'attemptFailed').map((e) => (e as { attempt: number }).attempt),
      [1, 2],
    );
    assert.equal(
      fs.existsSync(ws.file('.ralph/attempts.json'))
        ? JSON.parse(ws.read('.ralph/attempts.json'))['checklist:Make the check pass']
        : undefined,
      undefined,
      'attempts are cleared once verified',
    );
  });

  it('runs a debugging iteration as the last attempt, then blocks the story', async () => {
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
    ws = make({ 'quantum.json': JSON.stringify(quantum, null, 2) + '\n' });
    const pass = (n: number) => say(`Attempt ${n} finished. <quantum>STORY_PASSED</quantum>`);
    const run = await runEngine(ws, [pass(1), pass(2), pass(3)], {
      config: { ...stub, gates: { basic: 'echo "AssertionError: parse(1) != 1"; exit 1' }, continueOnBlocked: true },
    });
    assert.equal(run.result.state, 'blocked', run.lines.join('\n'));
    assert.equal(run.result.exitCode, 1);
    const prompts = run.prompts();
    assert.equal(prompts.length, 3);
    assert.doesNotMatch(prompts[1]!, /debugging attempt/);
    assert.match(prompts[2]!, /This is the debugging attempt[\s\S]*root cause/i);
    assert.match(prompts[2]!, /Previous attempt #2/);
    const story = JSON.parse(ws.read('quantum.json')).stories[0];
    assert.equal(story.status, 'failed');
    assert.equal(story.retries.attempts, 3);
    assert.ok(run.events.some((e) => e.type === 'itemBlocked'));
  });

  it('does not accept a ticked box and ALL_TASKS_DONE while the gate is red', async () => {
    ws = make({ 'RALPH_TASK.md': '- [ ] Ship it\n' });
    const run = await runEngine(
      ws,
      [edit(ws.file('RALPH_TASK.md'), '- [ ] Ship', '- [x] Ship'), say('All done! <promise>ALL_TASKS_DONE</promise>')],
      { config: { ...stub, gates: { basic: 'exit 1' }, maxIterations: 1 } },
    );
    assert.equal(run.result.state, 'capReached');
    assert.equal(run.result.exitCode, 2);
    assert.equal(ws.read('RALPH_TASK.md'), '- [ ] Ship it\n', 'the engine unticked the box');
    assert.equal(
      run.events.some((e) => e.type === 'verified'),
      false,
    );
    assert.ok(run.events.some((e) => e.type === 'attemptFailed'));
  });
});

describe('the loop engine: final verification and review (real claude CLI)', function () {
  this.timeout(180_000);
  let ws: Workspace | undefined;
  const make = useWorkspaces();

  it("fixes a red final gate, then ships only on the reviewer's SHIP verdict", async () => {
    ws = make({ 'RALPH_TASK.md': '- [ ] Write the code\n' });
    const run = await runEngine(
      ws,
      [
        write(ws.file('code.txt'), 'code\n'),
        edit(ws.file('RALPH_TASK.md'), '- [ ] Write', '- [x] Write'),
        say('Code written.'),
        write(ws.file('docs.txt'), 'docs\n'),
        say('The final gate wanted docs; added them.'),
        say('The error messages are unclear. <verdict>NEEDS_WORK</verdict>'),
        write(ws.file('errors.txt'), 'clear errors\n'),
        say('Made the errors clear.'),
        say('Looks right now. <verdict>SHIP</verdict>'),
      ],
      {
        config: {
          ...stub,
          gates: { basic: 'test -f code.txt', final: 'test -f docs.txt || { echo "FAIL: docs.txt missing"; exit 1; }' },
          reviewer: true,
        },
      },
    );
    assert.equal(run.result.state, 'completed', run.lines.join('\n'));
    const started = run.events.flatMap((e) => (e.type === 'iterationStarted' ? [e.purpose] : []));
    assert.deepEqual(started, ['work', 'finalFix', 'review', 'finalFix', 'review']);
    assert.deepEqual(
      run.events.flatMap((e) => (e.type === 'reviewVerdict' ? [e.verdict] : [])),
      ['NEEDS_WORK', 'SHIP'],
    );
    const prompts = run.prompts();
    assert.match(prompts[1]!, /final gate fails[\s\S]*FAIL: docs.txt missing/);
    assert.match(prompts[2]!, /final review[\s\S]*<verdict>SHIP<\/verdict>/);
    assert.match(prompts[3]!, /The error messages are unclear/);
  });
});
