import * as assert from 'node:assert/strict';
import { OperationError } from '../../../src/core/model/operationError';
import { resetItem } from '../../../src/core/sources/operations';
import {
  flowJson,
  fakeGitDir,
  tempWorkspace,
  writeFlow,
  writeFlowState,
  type FlowTaskSpec,
  type TempWorkspace,
} from '../../support/workspace';

const NOW = Date.UTC(2026, 5, 1, 12, 0, 0);

describe('flow-next: task reset (seed-systems.md §2.5)', () => {
  let ws: TempWorkspace;
  afterEach(() => ws?.dispose());

  const table: {
    name: string;
    tasks: FlowTaskSpec[];
    epics?: Record<string, { status?: string }>;
    id: string;
    cascade?: boolean;
    reset?: string[];
    message?: string;
    error?: RegExp;
  }[] = [
    { name: 'a done task becomes todo', tasks: [{ id: 'fn-1.1', status: 'done' }], id: 'fn-1.1', reset: ['fn-1.1'] },
    {
      name: 'a blocked task becomes todo',
      tasks: [{ id: 'fn-1.1', status: 'blocked' }],
      id: 'fn-1.1',
      reset: ['fn-1.1'],
    },
    {
      name: 'a todo task is a successful no-op',
      tasks: [{ id: 'fn-1.1', status: 'todo' }],
      id: 'fn-1.1',
      reset: [],
      message: 'fn-1.1 already todo',
    },
    {
      name: 'an in_progress task is refused',
      tasks: [{ id: 'fn-1.1', status: 'in_progress' }],
      id: 'fn-1.1',
      error: /Cannot reset in_progress task fn-1.1/,
    },
    {
      name: 'a task of a closed epic is refused',
      tasks: [{ id: 'fn-1.1', status: 'done' }],
      epics: { 'fn-1': { status: 'done' } },
      id: 'fn-1.1',
      error: /closed epic fn-1/,
    },
    {
      name: 'an invalid id is refused',
      tasks: [{ id: 'fn-1.1', status: 'done' }],
      id: 'fn-x.y',
      error: /No task or story|Invalid task ID/,
    },
    {
      name: 'a missing task is refused',
      tasks: [{ id: 'fn-1.1', status: 'done' }],
      id: 'fn-1.9',
      error: /Task fn-1.9 not found/,
    },
    {
      name: 'cascade resets transitive dependents in the same epic',
      tasks: [
        { id: 'fn-1.1', status: 'done' },
        { id: 'fn-1.2', status: 'done', deps: ['fn-1.1'] },
        { id: 'fn-1.3', status: 'blocked', deps: ['fn-1.2'] },
        { id: 'fn-1.4', status: 'done' },
      ],
      id: 'fn-1.1',
      cascade: true,
      reset: ['fn-1.1', 'fn-1.2', 'fn-1.3'],
    },
    {
      name: 'cascade skips in_progress and todo dependents but walks through them (flowctl 4.4.0 find_dependents)',
      tasks: [
        { id: 'fn-1.1', status: 'done' },
        { id: 'fn-1.2', status: 'in_progress', deps: ['fn-1.1'] },
        { id: 'fn-1.3', status: 'done', deps: ['fn-1.2'] },
        { id: 'fn-1.4', status: 'todo', deps: ['fn-1.1'] },
        { id: 'fn-1.5', status: 'done', deps: ['fn-1.1'] },
        { id: 'fn-1.6', status: 'blocked', deps: ['fn-1.4'] },
      ],
      id: 'fn-1.1',
      cascade: true,
      reset: ['fn-1.1', 'fn-1.3', 'fn-1.5', 'fn-1.6'],
    },
    {
      name: "cascade lists dependents in flowctl's plain id order (fn-1.10 before fn-1.2)",
      tasks: [
        { id: 'fn-1.1', status: 'done' },
        { id: 'fn-1.2', status: 'done', deps: ['fn-1.1'] },
        { id: 'fn-1.10', status: 'done', deps: ['fn-1.1'] },
      ],
      id: 'fn-1.1',
      cascade: true,
      reset: ['fn-1.1', 'fn-1.10', 'fn-1.2'],
    },
    {
      name: 'cascade through a diamond resets the shared dependent once',
      tasks: [
        { id: 'fn-1.1', status: 'done' },
        { id: 'fn-1.2', status: 'done', deps: ['fn-1.1'] },
        { id: 'fn-1.3', status: 'blocked', deps: ['fn-1.1'] },
        { id: 'fn-1.4', status: 'done', deps: ['fn-1.2', 'fn-1.3'] },
      ],
      id: 'fn-1.1',
      cascade: true,
      reset: ['fn-1.1', 'fn-1.2', 'fn-1.3', 'fn-1.4'],
    },
    {
      name: 'cascade never crosses into another epic',
      tasks: [
        { id: 'fn-1.1', status: 'done' },
        { id: 'fn-2.1', status: 'done', deps: ['fn-1.1'] },
      ],
      id: 'fn-1.1',
      cascade: true,
      reset: ['fn-1.1'],
    },
    {
      name: 'without cascade only the task itself is reset',
      tasks: [
        { id: 'fn-1.1', status: 'done' },
        { id: 'fn-1.2', status: 'done', deps: ['fn-1.1'] },
      ],
      id: 'fn-1.1',
      reset: ['fn-1.1'],
    },
  ];
  for (const c of table) {
    it(c.name, async () => {
      ws = tempWorkspace();
      writeFlow(ws, c.tasks, c.epics);
      const run = resetItem(c.id, { folder: ws.dir, cascade: c.cascade, now: () => NOW, env: {} });
      if (c.error) {
        await assert.rejects(run, (e: Error) => e instanceof OperationError && c.error!.test(e.message));
        return;
      }
      const r = await run;
      assert.deepEqual(r.reset, c.reset);
      assert.equal(r.message, c.message);
    });
  }

  it('deletes the claim, evidence and reason keys in the task JSON instead of setting them to null', async () => {
    ws = tempWorkspace();
    writeFlow(ws, [
      {
        id: 'fn-1.1',
        status: 'done',
        assignee: 'me',
        extra: {
          evidence: { commits: ['a'], prs: [], tests: [] },
          blocked_reason: 'x',
          completed_at: '2026-01-01T00:00:00Z',
        },
      },
    ]);
    await resetItem('fn-1.1', { folder: ws.dir, now: () => NOW, env: {} });
    const task = JSON.parse(ws.read('.flow/tasks/fn-1.1.json')) as Record<string, unknown>;
    for (const k of ['assignee', 'claimed_at', 'claim_note', 'evidence', 'blocked_reason', 'completed_at'])
      assert.equal(k in task, false, k);
    assert.equal(task.status, 'todo');
    assert.equal(task.updated_at, '2026-06-01T12:00:00.000000Z');
  });

  it('changes only the changed lines of the task JSON', async () => {
    ws = tempWorkspace();
    writeFlow(ws, [{ id: 'fn-1.1', status: 'done' }]);
    const before = ws.read('.flow/tasks/fn-1.1.json').split('\n');
    await resetItem('fn-1.1', { folder: ws.dir, now: () => NOW, env: {} });
    const after = ws.read('.flow/tasks/fn-1.1.json').split('\n');
    const removed = before.filter((l) => !after.includes(l)).map((l) => l.trim().split(':')[0]);
    assert.deepEqual(removed.sort(), ['"assignee"', '"claim_note"', '"claimed_at"', '"status"', '"updated_at"']);
  });

  it('rewrites the md Evidence section to the three empty lines and keeps the heading', async () => {
    ws = tempWorkspace();
    writeFlow(ws, [{ id: 'fn-1.1', status: 'done' }]);
    await resetItem('fn-1.1', { folder: ws.dir, now: () => NOW, env: {} });
    assert.match(ws.read('.flow/tasks/fn-1.1.md'), /## Evidence\n- Commits:\n- Tests:\n- PRs:\n$/);
  });

  it('resets the state file when the status came from the flow-state overlay, and cleans the task JSON as flowctl 4.4.0 does', async () => {
    ws = tempWorkspace();
    fakeGitDir(ws);
    writeFlow(ws, [{ id: 'fn-1.1', status: 'todo' }]);
    writeFlowState(ws, { 'fn-1.1': { status: 'done', assignee: 'bot', updated_at: '2026-01-02T00:00:00Z' } });
    const committed = JSON.parse(ws.read('.flow/tasks/fn-1.1.json')) as Record<string, unknown>;
    const r = await resetItem('fn-1.1', { folder: ws.dir, now: () => NOW, env: {} });
    assert.deepEqual(r.reset, ['fn-1.1']);
    const { assignee: _a, claim_note: _n, claimed_at: _c, ...kept } = committed;
    assert.equal(
      ws.read('.flow/tasks/fn-1.1.json'),
      flowJson({ ...kept, status: 'todo', updated_at: '2026-06-01T12:00:00.000000Z' }),
    );
    assert.equal(
      ws.read('.git/flow-state/tasks/fn-1.1.state.json'),
      flowJson({ status: 'todo', updated_at: '2026-06-01T12:00:00.000000Z' }),
    );
  });

  it('honours FLOW_STATE_DIR for the overlay', async () => {
    ws = tempWorkspace();
    writeFlow(ws, [{ id: 'fn-1.1', status: 'todo' }]);
    ws.write('state/tasks/fn-1.1.state.json', flowJson({ status: 'blocked' }));
    const r = await resetItem('fn-1.1', { folder: ws.dir, now: () => NOW, env: { FLOW_STATE_DIR: 'state' } });
    assert.deepEqual(r.reset, ['fn-1.1']);
    assert.match(ws.read('state/tasks/fn-1.1.state.json'), /"status": "todo"/);
  });

  it('never writes a task file that does not parse, and names its line and column', async () => {
    ws = tempWorkspace();
    writeFlow(ws, [{ id: 'fn-1.1', status: 'done' }]);
    ws.write('.flow/tasks/fn-1.1.json', '{\n  "id": "fn-1.1",\n  "status": "done",,\n}\n');
    await assert.rejects(resetItem('fn-1.1', { folder: ws.dir, env: {} }), /fn-1\.1\.json:3:\d+: invalid JSON/);
    assert.equal(ws.read('.flow/tasks/fn-1.1.json'), '{\n  "id": "fn-1.1",\n  "status": "done",,\n}\n');
  });
});
