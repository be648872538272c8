import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { processGroupAlive } from '../../../src/core/agents/spawn';
import { bash, edit, say, write } from '../../support/modelServer';
import { type Workspace, claudeBinary, makeWorkspace, processesMentioning, runEngine } from './engineHarness';

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

  before(function () {
    if (!fs.existsSync(claudeBinary)) throw new Error(`the claude CLI is missing at ${claudeBinary}: run scripts/setup-test-env.sh`);
  });
  afterEach(() => {
    ws?.cleanup();
    ws = undefined;
    assert.deepEqual(processesMentioning('ralph-engine-'), [], 'a process of the test workspace was left behind');
  });

  it('completes a three-task checklist across iterations with green gates', async () => {
    ws = makeWorkspace({ 'RALPH_TASK.md': TASKS });
    const run = await runEngine(ws, [...doTask(ws, 'one', 'Create one.txt'), ...doTask(ws, 'two', 'Create two.txt'), ...doTask(ws, 'three', 'Create three.txt')], {
      config: { gates: { basic: 'test -f one.txt', final: 'test -f one.txt && test -f two.txt && test -f three.txt' } },
    });
    assert.equal(run.result.state, 'completed', run.lines.join('\n'));
    assert.equal(run.result.exitCode, 0);
    assert.equal(run.result.iterations, 3);
    assert.equal(ws.read('RALPH_TASK.md'), TASKS.replace(/\[ \]/g, '[x]'));
    assert.deepEqual(run.events.filter((e) => e.type === 'progress').map((e) => (e as { text: string }).text), ['0/3 done', '1/3 done', '2/3 done', '3/3 done']);
    assert.deepEqual(run.events.filter((e) => e.type === 'gateResult').map((e) => (e as { tier: string }).tier), ['basic', 'basic', 'basic', 'final']);
    const dir = `.ralph/runs/${run.result.runId}`;
    assert.match(ws.read(`${dir}/progress.txt`), /completion_reason=DONE\npromise=COMPLETE\n$/);
    assert.ok(fs.existsSync(ws.file(`${dir}/iter-001.jsonl`)));
    assert.equal(JSON.parse(ws.read(`${dir}/run.json`)).state, 'completed');
    assert.match(ws.read('.ralph/activity.log'), /LOOP 1 START/);
    for (const e of run.events) if (e.type === 'agentStarted' && e.pid) assert.equal(processGroupAlive(e.pid), false);
  });
});
