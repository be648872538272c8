import * as assert from 'node:assert/strict';
import {
  ChecklistSource,
  FlowSource,
  QuantumSource,
  type NextOptions,
  type NextResult,
  type WorkSource,
} from '../../../src/core/sources/work/workSources';
import {
  quantumJson,
  tempWorkspace,
  writeFlow,
  type FlowTaskSpec,
  type StorySpec,
  type TempWorkspace,
} from '../../support/workspace';

/**
 * Issue 9, continueOnBlocked: each source gives the next ready item other than the ones that wait for an answer
 * (`skip`), and the answered one first (`take`). Files only, no processes.
 */
const picked = (r: NextResult) => (r.kind === 'work' ? r.item.id : r.kind);

describe('work sources: the next item other than the ones that wait for an answer', () => {
  let ws: TempWorkspace | undefined;
  afterEach(() => ws?.dispose());
  const opts = () => ({ folder: ws!.dir, actor: 'me', env: {} });

  describe('flow-next (flowctl selection order, minus the waiting tasks)', () => {
    const table: [string, FlowTaskSpec[], NextOptions, string][] = [
      [
        "no options: the actor's in-progress task is resumed",
        [{ id: 'fn-1.1', status: 'in_progress', assignee: 'me' }, { id: 'fn-1.2' }],
        {},
        'fn-1.1',
      ],
      [
        'the waiting in-progress task is skipped for the first ready one',
        [
          { id: 'fn-1.1', status: 'in_progress', assignee: 'me' },
          { id: 'fn-1.3', priority: 2 },
          { id: 'fn-1.2', priority: 5 },
        ],
        { skip: ['fn-1.1'] },
        'fn-1.3',
      ],
      [
        'a task that depends on the waiting one is not ready: the next epic',
        [{ id: 'fn-1.1', status: 'in_progress', assignee: 'me' }, { id: 'fn-1.2', deps: ['fn-1.1'] }, { id: 'fn-2.1' }],
        { skip: ['fn-1.1'] },
        'fn-2.1',
      ],
      [
        'nothing but the waiting task: blocked',
        [
          { id: 'fn-1.1', status: 'in_progress', assignee: 'me' },
          { id: 'fn-1.2', status: 'done' },
        ],
        { skip: ['fn-1.1'] },
        'blocked',
      ],
      [
        'the answered task is taken before another in-progress one',
        [
          { id: 'fn-1.1', status: 'in_progress', assignee: 'me' },
          { id: 'fn-1.2', status: 'in_progress', assignee: 'me' },
        ],
        { take: 'fn-1.2' },
        'fn-1.2',
      ],
      [
        'a taken task that is done meanwhile is not taken',
        [{ id: 'fn-1.1', status: 'done' }, { id: 'fn-1.2' }],
        { take: 'fn-1.1' },
        'fn-1.2',
      ],
    ];
    for (const [name, tasks, o, want] of table) {
      it(name, async () => {
        ws = tempWorkspace();
        writeFlow(ws, tasks);
        assert.equal(picked(await new FlowSource(opts()).next(o)), want);
      });
    }
    it('leaves the waiting task in_progress and claimed', async () => {
      ws = tempWorkspace();
      writeFlow(ws, [{ id: 'fn-1.1', status: 'in_progress', assignee: 'me' }, { id: 'fn-1.2' }]);
      await new FlowSource(opts()).next({ skip: ['fn-1.1'] });
      const t = JSON.parse(ws.read('.flow/tasks/fn-1.1.json')) as { status: string; assignee: string };
      assert.deepEqual([t.status, t.assignee], ['in_progress', 'me']);
    });
  });

  describe('quantum (the next eligible story)', () => {
    const table: [string, StorySpec[], NextOptions, string][] = [
      [
        'no options: the in-progress story is resumed',
        [{ id: 'US-1', status: 'in_progress' }, { id: 'US-2' }],
        {},
        'US-1',
      ],
      [
        'the waiting story is skipped for the next eligible one',
        [{ id: 'US-1', status: 'in_progress' }, { id: 'US-2', deps: ['US-1'] }, { id: 'US-3' }],
        { skip: ['US-1'] },
        'US-3',
      ],
      [
        'another in-progress story (ended without a signal) is resumed before new ones',
        [{ id: 'US-1', status: 'in_progress' }, { id: 'US-2', status: 'in_progress' }, { id: 'US-3' }],
        { skip: ['US-1'] },
        'US-2',
      ],
      [
        'nothing but the waiting story: blocked',
        [
          { id: 'US-1', status: 'in_progress' },
          { id: 'US-2', status: 'passed' },
        ],
        { skip: ['US-1'] },
        'blocked',
      ],
      [
        'the answered story is taken first',
        [
          { id: 'US-1', status: 'in_progress' },
          { id: 'US-2', status: 'in_progress' },
        ],
        { take: 'US-2' },
        'US-2',
      ],
    ];
    for (const [name, stories, o, want] of table) {
      it(name, async () => {
        ws = tempWorkspace();
        ws.write('quantum.json', quantumJson(stories));
        assert.equal(picked(await new QuantumSource(opts()).next(o)), want);
      });
    }
  });

  describe('checklist (the next unticked box)', () => {
    const boxes = '- [ ] One\n- [ ] Two\n- [x] Three\n- [ ] Four\n';
    const source = async (): Promise<WorkSource> => {
      ws = tempWorkspace();
      ws.write('RALPH_TASK.md', boxes);
      const s = new ChecklistSource(opts(), 'RALPH_TASK.md');
      await s.snapshot();
      assert.equal(picked(await s.next()), 'RALPH_TASK.md:1');
      return s;
    };
    it('the waiting box is skipped', async () =>
      assert.equal(picked(await (await source()).next({ skip: ['RALPH_TASK.md:1'] })), 'RALPH_TASK.md:2'));
    it('only ticked and waiting boxes left: blocked', async () => {
      const s = await source();
      ws!.write('RALPH_TASK.md', '- [ ] One\n- [x] Two\n- [x] Three\n- [x] Four\n');
      assert.equal(picked(await s.next({ skip: ['RALPH_TASK.md:1'] })), 'blocked');
    });
    it('the answered box is taken first, under its id even when lines moved', async () => {
      const s = await source();
      assert.equal(picked(await s.next({ skip: ['RALPH_TASK.md:1'] })), 'RALPH_TASK.md:2');
      ws!.write('RALPH_TASK.md', `# Tasks\n\n${boxes}`);
      const r = await s.next({ skip: ['RALPH_TASK.md:2'], take: 'RALPH_TASK.md:1' });
      assert.deepEqual(r.kind === 'work' ? [r.item.id, r.item.title] : r.kind, ['RALPH_TASK.md:1', 'One']);
    });
  });
});
