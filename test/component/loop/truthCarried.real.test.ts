import * as assert from 'node:assert/strict';
import type { EngineEvent } from '../../../src/core/loop/events';
import { edit, say, write } from '../../support/modelServer';
import { runEngine, useWorkspaces } from '../../support/engineHarness';
import { scriptedClaudeStub } from '../../support/claude';

/**
 * The loop's own rules run the agent's light stand-in (test/support/stubs/scriptedClaude.cjs: the same model server
 * and tools); a test without `stub` runs the real claude CLI.
 */
const stub = { claudePath: scriptedClaudeStub };

/**
 * Issue 11, the rules a breaker pass found open (docs/truth-attacks.md): the baseline is the last VERIFIED state
 * carried forward (R1), a gate verifies only the state it started on (B1v/B2), flow-next epics (F3/F4) and other
 * checklist files (A3/A3b) are claims like tasks, and items that vanish never make a run complete (A6/C3). The real
 * claude CLI, scripted through the model server.
 */
const ofType = <T extends EngineEvent['type']>(events: EngineEvent[], type: T) =>
  events.filter((e): e is Extract<EngineEvent, { type: T }> => e.type === type);
const backIds = (events: EngineEvent[]) =>
  ofType(events, 'claimPutBack').flatMap((e) => e.items.map((i) => i.title || i.id));

describe('truth of done: the rules of the breaker pass (issue 11, real claude CLI)', function () {
  this.timeout(180_000);
  const make = useWorkspaces();

  it('R1: a box ticked between iterations (a process left behind) never becomes the baseline: put back, the run does not complete on it', async () => {
    const ws = make({ 'RALPH_TASK.md': '# T\n\n- [ ] One\n- [ ] Three\n' });
    let ticked = false;
    const run = await runEngine(
      ws,
      [edit(ws.file('RALPH_TASK.md'), '- [ ] One', '- [x] One'), say('Ticked One.'), say('Nothing more.')],
      {
        config: { gates: { basic: 'true', final: 'true' }, maxIterations: 1 },
        // After One is verified and before the next pick, "a leftover process" ticks Three (no `ralph task done`: no person mark).
        onEvent: (e) => {
          if (e.type === 'verified' && !ticked) {
            ticked = true;
            ws.write('RALPH_TASK.md', ws.read('RALPH_TASK.md').replace('- [ ] Three', '- [x] Three'));
          }
        },
      },
    );
    assert.ok(ticked, run.lines.join('\n'));
    assert.equal(ws.read('RALPH_TASK.md'), '# T\n\n- [x] One\n- [ ] Three\n', run.lines.join('\n'));
    assert.notEqual(run.result.state, 'completed');
    assert.deepEqual(backIds(run.events), ['Three']);
    assert.match(ofType(run.events, 'claimPutBack')[0]!.reason, /done without a gate that verified it/);
  });

  it("B1v/B2: a box the gate's own command ticks while it runs is not verified by that gate: put back", async () => {
    const ws = make({ 'RALPH_TASK.md': '# T\n\n- [ ] One\n- [ ] Two\n' });
    const tick = `node -e "const f='RALPH_TASK.md',fs=require('fs');fs.writeFileSync(f,fs.readFileSync(f,'utf8').replace('- [ ] Two','- [x] Two'))"`;
    const run = await runEngine(
      ws,
      [edit(ws.file('RALPH_TASK.md'), '- [ ] One', '- [x] One'), say('Ticked One.'), say('Nothing more.')],
      { config: { ...stub, gates: { basic: tick, final: 'true' }, maxIterations: 1 } },
    );
    assert.equal(ws.read('RALPH_TASK.md'), '# T\n\n- [x] One\n- [ ] Two\n', run.lines.join('\n'));
    assert.notEqual(run.result.state, 'completed');
    assert.deepEqual(
      ofType(run.events, 'verified').map((e) => e.item.title),
      ['One'],
    );
    assert.ok(
      ofType(run.events, 'claimPutBack').some((e) => /while the basic gate of .* ran/.test(e.reason)),
      run.lines.join('\n'),
    );
  });

  it('F3/F4: an epic the agent closed under a red gate goes back to open', async () => {
    const epic = JSON.stringify({ id: 'fn-1', title: 'Epic', status: 'open', depends_on_epics: [] }, null, 2) + '\n';
    const task = (id: string, title: string) =>
      JSON.stringify({ id, epic: 'fn-1', title, status: 'todo', depends_on: [], priority: null }, null, 2) + '\n';
    const md = (id: string) =>
      `# ${id}\n\n## Description\nx\n\n## Acceptance\n- [ ] x\n\n## Done summary\nTBD\n\n## Evidence\n- Commits:\n- Tests:\n- PRs:\n`;
    const ws = make({
      '.flow/meta.json': '{\n  "schema_version": 2,\n  "next_epic": 2\n}\n',
      '.flow/epics/fn-1.json': epic,
      '.flow/tasks/fn-1.1.json': task('fn-1.1', 'First'),
      '.flow/tasks/fn-1.1.md': md('fn-1.1'),
      '.flow/tasks/fn-1.2.json': task('fn-1.2', 'Second'),
      '.flow/tasks/fn-1.2.md': md('fn-1.2'),
    });
    const run = await runEngine(
      ws,
      [
        edit(ws.file('.flow/epics/fn-1.json'), '"status": "open"', '"status": "done"'),
        say('Closed the epic. <promise>COMPLETE</promise>'),
        say('Nothing more.'),
      ],
      { config: { ...stub, gates: { basic: 'false' }, maxIterations: 1 } },
    );
    assert.equal(JSON.parse(ws.read('.flow/epics/fn-1.json')).status, 'open', run.lines.join('\n'));
    assert.ok(
      ofType(run.events, 'claimPutBack').some((e) => e.items.some((i) => i.id === 'fn-1')),
      run.lines.join('\n'),
    );
    assert.doesNotMatch(run.result.reason, /engine error/);
  });

  it('A3/A3b: a box the agent ticked in another checklist file (one `ralph status` counts) goes back', async () => {
    const ws = make({ 'RALPH_TASK.md': '# T\n\n- [ ] One\n', 'specs/x/tasks.md': '# X\n\n- [ ] Other\n' });
    const run = await runEngine(
      ws,
      [
        edit(ws.file('specs/x/tasks.md'), '- [ ] Other', '- [x] Other'),
        say('Ticked the other file.'),
        say('Nothing more.'),
      ],
      { config: { ...stub, gates: { basic: 'false' }, maxIterations: 1 }, engine: { source: 'RALPH_TASK.md' } },
    );
    assert.equal(ws.read('specs/x/tasks.md'), '# X\n\n- [ ] Other\n', run.lines.join('\n'));
    assert.deepEqual(backIds(run.events), ['Other']);
  });

  it("A3/A3b: the other file's box is verified with the item by a green gate", async () => {
    const ws = make({ 'RALPH_TASK.md': '# T\n\n- [ ] One\n', 'specs/x/tasks.md': '# X\n\n- [ ] Other\n' });
    const run = await runEngine(
      ws,
      [
        edit(ws.file('specs/x/tasks.md'), '- [ ] Other', '- [x] Other'),
        edit(ws.file('RALPH_TASK.md'), '- [ ] One', '- [x] One'),
        say('Both.'),
        say('Nothing more.'),
      ],
      {
        config: { ...stub, gates: { basic: 'true', final: 'true' }, maxIterations: 2 },
        engine: { source: 'RALPH_TASK.md' },
      },
    );
    assert.equal(ws.read('specs/x/tasks.md'), '# X\n\n- [x] Other\n', run.lines.join('\n'));
    assert.equal(run.result.state, 'completed');
    assert.deepEqual(
      ofType(run.events, 'verified')
        .map((e) => e.item.title)
        .sort(),
      ['One', 'Other'],
    );
  });

  it('row 05 (breaker s5): a story of quantum.json the agent set passed during a checklist run goes back', async () => {
    const q =
      JSON.stringify(
        {
          project: 'p',
          stories: ['US-001', 'US-002'].map((id, i) => ({
            id,
            title: `Story ${id}`,
            status: 'pending',
            priority: i + 1,
            dependsOn: [],
          })),
        },
        null,
        2,
      ) + '\n';
    const ws = make({ 'RALPH_TASK.md': '# T\n\n- [ ] One\n', 'quantum.json': q });
    const passed = q.replace(/("id": "US-002",[\s\S]*?"status": )"pending"/, '$1"passed"');
    assert.notEqual(passed, q);
    const run = await runEngine(
      ws,
      [write(ws.file('quantum.json'), passed), say('Set US-002 passed.'), say('Nothing more.')],
      { config: { ...stub, gates: { basic: 'false' }, maxIterations: 1 }, engine: { source: 'RALPH_TASK.md' } },
    );
    assert.equal(ws.read('quantum.json'), q, run.lines.join('\n'));
    assert.deepEqual(backIds(run.events), ['Story US-002']);
  });

  it('row 05: a flow-next task closed during a quantum run goes back', async () => {
    const task = (id: string, title: string) =>
      JSON.stringify({ id, epic: 'fn-1', title, status: 'todo', depends_on: [], priority: null }, null, 2) + '\n';
    const files = {
      '.flow/meta.json': '{\n  "schema_version": 2,\n  "next_epic": 2\n}\n',
      '.flow/epics/fn-1.json':
        JSON.stringify({ id: 'fn-1', title: 'Epic', status: 'open', depends_on_epics: [] }, null, 2) + '\n',
      '.flow/tasks/fn-1.1.json': task('fn-1.1', 'First'),
      'quantum.json':
        JSON.stringify(
          {
            project: 'p',
            stories: [{ id: 'US-001', title: 'Story US-001', status: 'pending', priority: 1, dependsOn: [] }],
          },
          null,
          2,
        ) + '\n',
    };
    const red = make(files);
    const r1 = await runEngine(
      red,
      [
        edit(red.file('.flow/tasks/fn-1.1.json'), '"status": "todo"', '"status": "done"'),
        say('Closed fn-1.1.'),
        say('Nothing more.'),
      ],
      { config: { ...stub, gates: { basic: 'false' }, maxIterations: 1 }, engine: { source: 'quantum' } },
    );
    assert.equal(JSON.parse(red.read('.flow/tasks/fn-1.1.json')).status, 'todo', r1.lines.join('\n'));
    assert.deepEqual(backIds(r1.events), ['First']);
  });

  it('A6/C3: a box the agent deleted is reported vanished and the run does not complete on it', async () => {
    const ws = make({ 'RALPH_TASK.md': '# T\n\n- [ ] One\n- [ ] Two\n' });
    const run = await runEngine(
      ws,
      [
        edit(ws.file('RALPH_TASK.md'), '- [ ] One\n- [ ] Two\n', '- [x] One\n'),
        say('Done, and Two was not needed.'),
        say('Nothing more.'),
      ],
      { config: { ...stub, gates: { basic: 'true', final: 'true' }, maxIterations: 3 } },
    );
    assert.equal(run.result.state, 'blocked', run.lines.join('\n'));
    assert.match(run.result.reason, /vanished from RALPH_TASK.md during the run \(Two #1\)/);
    assert.deepEqual(
      ofType(run.events, 'itemsVanished').map((e) => e.items),
      [['Two #1']],
    );
    assert.match(ws.read('.ralph/activity.log'), /VANISHED from RALPH_TASK.md: Two #1/);
  });
});
