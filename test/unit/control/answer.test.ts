import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { answerQuestion } from '../../../src/core/control/runControl';
import { runLogLine, type EngineEvent } from '../../../src/core/model/runEvent';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

const RUN = '20261201T090000Z-ef56';
const AT = '2026-12-01T09:00:00.000Z';
const HOST = os.hostname();
const probe = { isAlive: () => true, hostNames: [HOST] };
const item = (id: string) => ({ source: 'quantum' as const, id, title: `Story ${id}` });

describe('ralph answer (answerQuestion)', () => {
  let t: TempFolder;
  beforeEach(() => {
    t = makeTempFolder('ralph-answer-');
  });
  afterEach(() => t.dispose());

  function run(events: EngineEvent[]): void {
    t.write(
      `.ralph/runs/${RUN}/run.json`,
      JSON.stringify({
        runId: RUN,
        pid: 4242,
        host: HOST,
        startedAt: AT,
        state: 'waiting',
        iteration: 1,
        currentItem: null,
      }),
    );
    t.write(`.ralph/runs/${RUN}/events.jsonl`, events.map((e, i) => runLogLine(i + 1, AT, 0, e)).join(''));
  }
  const ask = (id: string, itemId: string): EngineEvent => ({
    type: 'question',
    id,
    iteration: 1,
    item: item(itemId),
    text: `Question ${id}?`,
    answerFile: path.join(t.dir, '.ralph', 'runs', RUN, 'answers', `${id}.md`),
  });

  it("writes the answer to the open question's answer file", async () => {
    run([ask('q1', 'US-001')]);
    const r = await answerQuestion(t.dir, 'SQLite', { probe });
    assert.deepEqual(r, {
      success: true,
      run: RUN,
      question: 'q1',
      item: 'US-001',
      file: path.join(t.dir, '.ralph', 'runs', RUN, 'answers', 'q1.md'),
    });
    assert.equal(fs.readFileSync(r.file, 'utf8'), 'SQLite\n');
  });

  it('refuses an answer over 1 MiB or holding a NUL byte, and writes nothing', async () => {
    run([ask('q1', 'US-001')]);
    const file = path.join(t.dir, '.ralph', 'runs', RUN, 'answers', 'q1.md');
    await assert.rejects(answerQuestion(t.dir, 'x'.repeat(1024 * 1024 + 1), { probe }), /more than the 1 MiB/);
    await assert.rejects(answerQuestion(t.dir, 'é'.repeat(600 * 1024), { probe }), /more than the 1 MiB/);
    await assert.rejects(answerQuestion(t.dir, 'ok\0\x89PNG', { probe }), /NUL byte/);
    assert.equal(fs.existsSync(file), false);
    const r = await answerQuestion(t.dir, 'y'.repeat(1024 * 1024 - 1), { probe });
    assert.equal(fs.statSync(r.file).size, 1024 * 1024, 'exactly 1 MiB with its newline is written');
  });

  it('needs --item when several items wait, and names them', async () => {
    run([ask('q1', 'US-001'), ask('q2', 'US-002')]);
    await assert.rejects(
      answerQuestion(t.dir, 'x', { probe }),
      /Several items wait for an answer, specify --item: US-001, US-002/,
    );
    assert.equal((await answerQuestion(t.dir, 'x', { probe, itemId: 'US-002' })).question, 'q2');
  });

  it('refuses when nothing waits, or not that item', async () => {
    run([ask('q1', 'US-001'), { type: 'answered', id: 'q1', item: item('US-001'), text: 'a' }]);
    await assert.rejects(answerQuestion(t.dir, 'x', { probe }), /has no open question/);
    run([ask('q1', 'US-001')]);
    await assert.rejects(answerQuestion(t.dir, 'x', { probe, itemId: 'US-009' }), /no open question for US-009/);
  });

  it('never overwrites an answer already written, and refuses an empty one', async () => {
    run([ask('q1', 'US-001')]);
    await answerQuestion(t.dir, 'first', { probe });
    await assert.rejects(answerQuestion(t.dir, 'second', { probe }), /already answered/);
    assert.equal(t.read(`.ralph/runs/${RUN}/answers/q1.md`), 'first\n');
    await assert.rejects(answerQuestion(t.dir, '  ', { probe }), /empty/);
  });

  it('refuses without an active run', async () => {
    await assert.rejects(answerQuestion(t.dir, 'x', { probe }), /No active runs/);
  });
});
