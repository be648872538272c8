import * as assert from 'node:assert/strict';
import { OperationError } from '../../../src/core/model/operationError';
import { blockItem, completeItem, nextWork, releaseItem, startItem } from '../../../src/core/sources/operations';
import { loadPlan } from '../../../src/core/sources/plan';
import {
  fakeGitDir,
  tempWorkspace,
  writeFlow,
  writeFlowState,
  type FlowTaskSpec,
  type TempWorkspace,
} from '../../support/workspace';

const NOW = Date.UTC(2026, 5, 1, 12, 0, 0);

describe('flow-next: start, done, block and next (seed-systems.md §2.5)', () => {
  let ws: TempWorkspace;
  afterEach(() => ws?.dispose());
  const setup = (tasks: FlowTaskSpec[], epics?: Record<string, { status?: string; deps?: string[] }>) => {
    ws = tempWorkspace();
    writeFlow(ws, tasks, epics);
    return ws.dir;
  };
  const task = (id: string) => JSON.parse(ws.read(`.flow/tasks/${id}.json`)) as Record<string, unknown>;

  const startTable: { name: string; tasks: FlowTaskSpec[]; force?: boolean; error?: RegExp }[] = [
    {
      name: 'start claims a todo task whose dependencies are done',
      tasks: [
        { id: 'fn-1.1', status: 'done' },
        { id: 'fn-1.2', deps: ['fn-1.1'] },
      ],
    },
    { name: 'start refuses a done task', tasks: [{ id: 'fn-1.2', status: 'done' }], error: /status is 'done'/ },
    {
      name: 'start refuses a blocked task without force',
      tasks: [{ id: 'fn-1.2', status: 'blocked' }],
      error: /Use --force/,
    },
    { name: 'start takes a blocked task with force', tasks: [{ id: 'fn-1.2', status: 'blocked' }], force: true },
    {
      name: 'start refuses unmet dependencies',
      tasks: [{ id: 'fn-1.1' }, { id: 'fn-1.2', deps: ['fn-1.1'] }],
      error: /dependency fn-1.1 is 'todo'/,
    },
    {
      name: 'start refuses a task in progress by someone else',
      tasks: [{ id: 'fn-1.2', status: 'in_progress', assignee: 'other' }],
      error: /claimed by 'other'/,
    },
    {
      name: 'start resumes your own in_progress task',
      tasks: [{ id: 'fn-1.2', status: 'in_progress', assignee: 'me' }],
    },
  ];
  for (const c of startTable) {
    it(c.name, async () => {
      const folder = setup(c.tasks);
      const run = startItem('fn-1.2', { folder, actor: 'me', force: c.force, now: () => NOW, env: {} });
      if (c.error) return assert.rejects(run, (e: Error) => e instanceof OperationError && c.error!.test(e.message));
      await run;
      assert.equal(task('fn-1.2').status, 'in_progress');
      assert.equal(task('fn-1.2').assignee, 'me');
    });
  }

  it('start with force takes over a claim and notes from whom', async () => {
    const folder = setup([{ id: 'fn-1.1', status: 'in_progress', assignee: 'other' }]);
    await startItem('fn-1.1', { folder, actor: 'me', force: true, now: () => NOW, env: {} });
    assert.equal(task('fn-1.1').claim_note, 'Taken over from other');
    assert.equal(task('fn-1.1').claimed_at, '2026-06-01T12:00:00.000000Z');
  });

  it('start writes to a new state file when the repository keeps flow state', async () => {
    const folder = setup([{ id: 'fn-1.1' }]);
    fakeGitDir(ws);
    writeFlowState(ws, { 'fn-1.9': { status: 'done' } });
    const committed = ws.read('.flow/tasks/fn-1.1.json');
    await startItem('fn-1.1', { folder, actor: 'me', now: () => NOW, env: {} });
    assert.equal(ws.read('.flow/tasks/fn-1.1.json'), committed);
    assert.equal(
      (JSON.parse(ws.read('.git/flow-state/tasks/fn-1.1.state.json')) as { status: string }).status,
      'in_progress',
    );
  });

  it('done completes an in_progress task and writes the summary and evidence into the md', async () => {
    const folder = setup([{ id: 'fn-1.1', status: 'in_progress', assignee: 'me' }]);
    await completeItem('fn-1.1', {
      folder,
      actor: 'me',
      summary: 'Did it',
      evidence: { commits: ['a1', 'b2'], tests: ['npm test'] },
      now: () => NOW,
      env: {},
    });
    assert.equal(task('fn-1.1').status, 'done');
    assert.deepEqual(task('fn-1.1').evidence, { commits: ['a1', 'b2'], tests: ['npm test'], prs: [] });
    assert.match(
      ws.read('.flow/tasks/fn-1.1.md'),
      /## Done summary\nDid it\n\n## Evidence\n- Commits: a1, b2\n- Tests: npm test\n- PRs:\n$/,
    );
  });

  it('done refuses a task that is not in progress', async () => {
    const folder = setup([{ id: 'fn-1.1' }]);
    await assert.rejects(completeItem('fn-1.1', { folder, actor: 'me', env: {} }), /Expected 'in_progress'/);
  });

  it('block stores blocked_reason in JSON and the reason in the md Done summary', async () => {
    const folder = setup([{ id: 'fn-1.1', status: 'in_progress' }]);
    await blockItem('fn-1.1', { folder, reason: 'needs an API key', now: () => NOW, env: {} });
    assert.equal(task('fn-1.1').status, 'blocked');
    assert.equal(task('fn-1.1').blocked_reason, 'needs an API key');
    assert.match(ws.read('.flow/tasks/fn-1.1.md'), /## Done summary\nBlocked:\nneeds an API key\n/);
    const plan = await loadPlan(folder, {});
    assert.equal(plan.items[0]!.reason, 'needs an API key');
  });

  it('a blocked task whose reason is only in the md still shows it', async () => {
    const folder = setup([{ id: 'fn-1.1', status: 'blocked' }]);
    ws.write(
      '.flow/tasks/fn-1.1.md',
      '# fn-1.1 T\n\n## Done summary\nBlocked:\nflaky CI\n\n## Evidence\n- Commits:\n- Tests:\n- PRs:\n',
    );
    assert.equal((await loadPlan(folder, {})).items[0]!.reason, 'flaky CI');
  });

  const nextTable: {
    name: string;
    tasks: FlowTaskSpec[];
    epics?: Record<string, { status?: string; deps?: string[] }>;
    expected: Record<string, unknown>;
  }[] = [
    {
      name: 'next picks the first ready task by priority, then task number',
      tasks: [{ id: 'fn-1.1', priority: 5 }, { id: 'fn-1.2', priority: 1 }, { id: 'fn-1.3' }],
      expected: { status: 'work', task: 'fn-1.2', reason: 'ready_task' },
    },
    {
      name: 'next sorts a null priority as 999',
      tasks: [{ id: 'fn-1.1' }, { id: 'fn-1.2', priority: 998 }],
      expected: { status: 'work', task: 'fn-1.2', reason: 'ready_task' },
    },
    {
      name: 'next resumes your own in_progress task first',
      tasks: [{ id: 'fn-1.1' }, { id: 'fn-1.2', status: 'in_progress', assignee: 'me' }],
      expected: { status: 'work', task: 'fn-1.2', reason: 'resume_in_progress' },
    },
    {
      name: 'next skips tasks with unmet dependencies',
      tasks: [
        { id: 'fn-1.1', status: 'in_progress', assignee: 'x' },
        { id: 'fn-1.2', deps: ['fn-1.1'] },
      ],
      expected: { status: 'none', task: null, reason: 'none' },
    },
    {
      name: 'next skips done epics',
      tasks: [{ id: 'fn-1.1' }, { id: 'fn-2.1' }],
      epics: { 'fn-1': { status: 'done' } },
      expected: { status: 'work', task: 'fn-2.1' },
    },
    {
      name: 'next reports epics blocked by epic dependencies',
      tasks: [{ id: 'fn-2.1' }],
      epics: { 'fn-1': {}, 'fn-2': { deps: ['fn-1'] } },
      expected: { status: 'none', reason: 'blocked_by_epic_deps', blocked_epics: { 'fn-2': ['fn-1'] } },
    },
  ];
  for (const c of nextTable) {
    it(c.name, () => {
      const folder = setup(c.tasks, c.epics);
      const flow = nextWork({ folder, actor: 'me', env: {} }).flow as unknown as Record<string, unknown>;
      for (const [k, v] of Object.entries(c.expected)) assert.deepEqual(flow[k], v, k);
    });
  }

  const releaseTable: { name: string; spec: FlowTaskSpec; state?: boolean; status: string; assignee: string | null }[] =
    [
      {
        name: "release gives the run actor's in_progress task back to todo, its claim removed",
        spec: { id: 'fn-1.1', status: 'in_progress', assignee: 'me', extra: { claimed_at: '2026-01-10T08:00:00Z' } },
        status: 'todo',
        assignee: null,
      },
      {
        name: 'release gives back an in_progress task held in the flow-state overlay, in both files',
        spec: { id: 'fn-1.1', assignee: 'me' },
        state: true,
        status: 'todo',
        assignee: null,
      },
      {
        name: 'release leaves a task another actor claimed since',
        spec: { id: 'fn-1.1', status: 'in_progress', assignee: 'other' },
        status: 'in_progress',
        assignee: 'other',
      },
      {
        name: 'release leaves a done task alone',
        spec: { id: 'fn-1.1', status: 'done', assignee: 'me' },
        status: 'done',
        assignee: 'me',
      },
      { name: 'release leaves a todo task alone', spec: { id: 'fn-1.1' }, status: 'todo', assignee: null },
    ];
  for (const c of releaseTable) {
    it(c.name, async () => {
      const folder = setup([c.spec]);
      if (c.state) {
        fakeGitDir(ws);
        writeFlowState(ws, { 'fn-1.1': { status: 'in_progress', assignee: 'me', claimed_at: '2026-01-10T08:00:00Z' } });
      }
      await releaseItem('fn-1.1', { folder, actor: 'me', now: () => NOW, env: {} });
      const seen = c.state
        ? (JSON.parse(ws.read('.git/flow-state/tasks/fn-1.1.state.json')) as Record<string, unknown>)
        : task('fn-1.1');
      assert.equal(seen.status, c.status);
      assert.equal(seen.assignee ?? null, c.assignee);
      if (c.status === 'todo') assert.equal(seen.claimed_at ?? null, null);
      if (c.state) assert.equal(task('fn-1.1').status, 'todo');
    });
  }
});
