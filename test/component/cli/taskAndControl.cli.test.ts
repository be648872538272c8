import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as os from 'node:os';
import {
  flowJson,
  gitInit,
  quantumJson,
  tempWorkspace,
  writeFlow,
  writeFlowState,
  type TempWorkspace,
} from '../../support/workspace';
import { runCli, runCliInProcess } from '../../support/cli';

/**
 * The CLI over temporary workspaces, covering what flow-next's own async tests cover (seed-systems.md §2.10:
 * ci_test.sh's pause/resume/stop, auto-detection, several runs, completed-run exclusion, reset, cascade, status
 * parsing) and the "done when" checks. The commands run in this process (`runCliInProcess`: their output,
 * exit codes and files are the point); the usage error's exit code is checked on a process too.
 */
describe('cli: ralph status, task, stale, pause/resume/stop', () => {
  let ws: TempWorkspace;
  afterEach(() => ws?.dispose());
  const ciRun = (id: string, body = 'iteration: 1\nepic: fn-1\ntask: fn-1.1\n') =>
    ws.write(`scripts/ralph/runs/${id}/progress.txt`, body);
  const completed =
    '## 2026-01-15T10:00:00Z - iter 1\nstatus=work epic=fn-1 task=fn-1.1 reason=ready_task\n\ncompletion_reason=DONE\npromise=COMPLETE\n';

  describe('status', () => {
    it('status --json parses and carries both the v0.8 and HEAD keys', async () => {
      ws = tempWorkspace('ralph-cli-');
      writeFlow(ws, [{ id: 'fn-1.1', status: 'done' }, { id: 'fn-1.2' }]);
      const s = await runCliInProcess(ws.dir, ['status', '--json']);
      assert.equal(s.code, 0);
      const j = s.json();
      assert.deepEqual(
        [j.success, j.flow_exists, j.epics, j.specs, j.tasks, j.progress],
        [
          true,
          true,
          { open: 1, done: 0 },
          { open: 1, done: 0 },
          { todo: 1, in_progress: 0, blocked: 0, done: 1 },
          '1/2',
        ],
      );
      assert.deepEqual(j.runs, []);
    });

    it('status --json counts the statuses of the flow-state overlay', async () => {
      ws = tempWorkspace('ralph-cli-');
      gitInit(ws);
      writeFlow(ws, [{ id: 'fn-1.1' }, { id: 'fn-1.2' }, { id: 'fn-1.3' }]);
      writeFlowState(ws, { 'fn-1.1': { status: 'done' }, 'fn-1.2': { status: 'in_progress', assignee: 'bot' } });
      const j = (await runCliInProcess(ws.dir, ['status', '--json'])).json();
      assert.deepEqual(j.tasks, { todo: 1, in_progress: 1, blocked: 0, done: 1 });
      assert.deepEqual(
        (j.in_progress as { id: string; assignee: string }[]).map((i) => [i.id, i.assignee]),
        [['fn-1.2', 'bot']],
      );
    });

    it('status lists active runs under runs and finished ones under recent_runs', async () => {
      ws = tempWorkspace('ralph-cli-');
      writeFlow(ws, [{ id: 'fn-1.1' }]);
      ciRun('test-run');
      ciRun('old', completed);
      const j = (await runCliInProcess(ws.dir, ['status', '--json'])).json();
      const rows = (key: string) =>
        (j[key] as Record<string, unknown>[]).map((r) => [r.id, r.state, r.iteration, r.current_task, r.reason]);
      assert.deepEqual(rows('runs'), [['test-run', 'running', 1, 'fn-1.1', null]]);
      assert.deepEqual(rows('recent_runs'), [['old', 'completed', 1, 'fn-1.1', 'DONE']]);
      const text = (await runCliInProcess(ws.dir, ['status'])).stdout;
      assert.match(text, /^Epics: 1 open, 0 done\nTasks: 1 todo, 0 in_progress, 0 done, 0 blocked\n/);
      assert.match(text, /Active runs:\n {2}test-run \(iteration 1, working on fn-1.1\)\n/);
    });

    it('status counts quantum stories and checklists, and lists blocked items with reasons', async () => {
      ws = tempWorkspace('ralph-cli-');
      ws.write(
        'quantum.json',
        quantumJson([
          { id: 'US-001', status: 'passed' },
          {
            id: 'US-002',
            status: 'blocked',
            failureLog: [
              {
                phase: 'stale_detection',
                timestamp: '2026-01-01T00:00:00Z',
                error: 'Story exceeded 20 minute stale threshold',
              },
            ],
          },
        ]),
      );
      ws.write('RALPH_TASK.md', '- [x] a\n- [X] b\n- [ ] c\n');
      const j = (await runCliInProcess(ws.dir, ['status', '--json'])).json();
      assert.deepEqual(j.stories, { pending: 0, in_progress: 0, passed: 1, failed: 0, blocked: 1 });
      assert.deepEqual(j.checklists, [{ path: 'RALPH_TASK.md', done: 2, total: 3 }]);
      assert.equal(j.progress, '3/5');
      assert.deepEqual(j.blocked, [
        { source: 'quantum', id: 'US-002', title: 'Story US-002', reason: 'Story exceeded 20 minute stale threshold' },
      ]);
    });
  });

  describe('task reset', () => {
    it('reset of a todo task succeeds with an empty list', async () => {
      ws = tempWorkspace('ralph-cli-');
      writeFlow(ws, [{ id: 'fn-1.1' }]);
      const r = await runCliInProcess(ws.dir, ['task', 'reset', 'fn-1.1', '--json']);
      assert.deepEqual([r.code, r.json()], [0, { success: true, reset: [], message: 'fn-1.1 already todo' }]);
    });

    it('reset refuses an in_progress task with exit 1 and the error JSON', async () => {
      ws = tempWorkspace('ralph-cli-');
      writeFlow(ws, [{ id: 'fn-1.1', status: 'in_progress' }]);
      const r = await runCliInProcess(ws.dir, ['task', 'reset', 'fn-1.1', '--json']);
      assert.equal(r.code, 1);
      assert.equal(r.json().success, false);
      assert.match(String(r.json().error), /in_progress/);
    });

    it('reset in text mode prints "Reset: a, b" and errors as "Error: …" on stderr', async () => {
      ws = tempWorkspace('ralph-cli-');
      writeFlow(ws, [
        { id: 'fn-1.1', status: 'done' },
        { id: 'fn-1.2', status: 'done', deps: ['fn-1.1'] },
        { id: 'fn-1.3', status: 'in_progress' },
      ]);
      assert.equal(
        (await runCliInProcess(ws.dir, ['task', 'reset', 'fn-1.1', '--cascade'])).stdout,
        'Reset: fn-1.1, fn-1.2\n',
      );
      const bad = await runCliInProcess(ws.dir, ['task', 'reset', 'fn-1.3']);
      assert.deepEqual([bad.code, bad.stdout], [1, '']);
      assert.match(bad.stderr, /^Error: Cannot reset in_progress task fn-1.3/);
    });

    it("reset --cascade --json prints flowctl's list and git diff shows only the changed keys", async () => {
      ws = tempWorkspace('ralph-cli-');
      gitInit(ws);
      writeFlow(ws, [
        { id: 'fn-1.1', status: 'done', assignee: 'a' },
        { id: 'fn-1.2', status: 'done', deps: ['fn-1.1'], assignee: 'a' },
        { id: 'fn-1.3', status: 'done', deps: ['fn-1.2'], assignee: 'a' },
        { id: 'fn-1.4', status: 'done', assignee: 'a' },
      ]);
      const git = (...a: string[]) =>
        execFileSync('git', ['-c', 'user.email=t@t', '-c', 'user.name=t', ...a], { cwd: ws.dir, encoding: 'utf8' });
      git('add', '.flow');
      git('commit', '-qm', 'init');
      const r = await runCliInProcess(ws.dir, ['task', 'reset', 'fn-1.1', '--cascade', '--json']);
      assert.deepEqual(r.json(), { success: true, reset: ['fn-1.1', 'fn-1.2', 'fn-1.3'] });
      const changed = git('diff', '-U0', '--', '.flow/tasks/*.json')
        .split('\n')
        .filter((l) => /^[-+] /.test(l))
        .map((l) => `${l.charAt(0)}${l.slice(1).trim().split(':')[0] ?? ''}`);
      const perTask = [
        '-"assignee"',
        '-"claim_note"',
        '-"claimed_at"',
        '-"status"',
        '+"status"',
        '-"updated_at"',
        '+"updated_at"',
      ];
      assert.deepEqual(changed.sort(), [...perTask, ...perTask, ...perTask].sort());
      assert.deepEqual(git('diff', '--name-only').trim().split('\n').sort(), [
        '.flow/tasks/fn-1.1.json',
        '.flow/tasks/fn-1.1.md',
        '.flow/tasks/fn-1.2.json',
        '.flow/tasks/fn-1.2.md',
        '.flow/tasks/fn-1.3.json',
        '.flow/tasks/fn-1.3.md',
      ]);
    });

    it('reset of a quantum story cascades through dependsOn and --force takes an in_progress story', async () => {
      ws = tempWorkspace('ralph-cli-');
      ws.write(
        'quantum.json',
        quantumJson([
          { id: 'US-001', status: 'passed' },
          { id: 'US-002', status: 'failed', deps: ['US-001'], attempts: 2 },
          { id: 'US-003', status: 'in_progress' },
        ]),
      );
      assert.deepEqual((await runCliInProcess(ws.dir, ['task', 'reset', 'US-001', '--cascade', '--json'])).json(), {
        success: true,
        reset: ['US-001', 'US-002'],
      });
      assert.equal((await runCliInProcess(ws.dir, ['task', 'reset', 'US-003', '--json'])).code, 1);
      assert.deepEqual((await runCliInProcess(ws.dir, ['task', 'reset', 'US-003', '--force', '--json'])).json(), {
        success: true,
        reset: ['US-003'],
      });
    });

    it('an unknown id exits 1 naming it', async () => {
      ws = tempWorkspace('ralph-cli-');
      ws.write('quantum.json', quantumJson([{ id: 'US-001' }]));
      const r = await runCliInProcess(ws.dir, ['task', 'start', 'US-404', '--json']);
      assert.equal(r.code, 1);
      assert.match(String(r.json().error), /US-404/);
    });

    it('a quantum.json that does not parse is never written and the error names file:line:column', async () => {
      ws = tempWorkspace('ralph-cli-');
      const bad = '{\n  "stories": [\n    { "id": "US-001", "status": "passed" ]\n}\n';
      ws.write('quantum.json', bad);
      const r = await runCliInProcess(ws.dir, ['task', 'reset', 'US-001', '--json']);
      assert.equal(r.code, 1);
      assert.match(String(r.json().error), /quantum\.json:3:\d+: invalid JSON/);
      assert.equal(ws.read('quantum.json'), bad);
    });
  });

  describe('task start, done, block and next', () => {
    it('a story goes through start, block, start and done', async () => {
      ws = tempWorkspace('ralph-cli-');
      ws.write('quantum.json', quantumJson([{ id: 'US-001', priority: 1 }]));
      assert.deepEqual((await runCliInProcess(ws.dir, ['next', '--json'])).json().item, {
        source: 'quantum',
        id: 'US-001',
        title: 'Story US-001',
      });
      assert.equal((await runCliInProcess(ws.dir, ['task', 'start', 'US-001', '--json'])).json().status, 'in_progress');
      assert.deepEqual(
        (
          await runCliInProcess(ws.dir, [
            'task',
            'block',
            'US-001',
            '--reason',
            'typecheck failed',
            '--phase',
            'typecheck',
            '--json',
          ])
        ).json(),
        { success: true, id: 'US-001', source: 'quantum', status: 'failed', attempts: 1 },
      );
      await runCliInProcess(ws.dir, ['task', 'start', 'US-001']);
      assert.equal((await runCliInProcess(ws.dir, ['task', 'done', 'US-001', '--json'])).json().status, 'passed');
      assert.equal(
        ((await runCliInProcess(ws.dir, ['next', '--json'])).json().quantum as { status: string }).status,
        'complete',
      );
    });

    it('a flow task is claimed by FLOW_ACTOR', async () => {
      ws = tempWorkspace('ralph-cli-');
      writeFlow(ws, [{ id: 'fn-1.1' }]);
      assert.equal((await runCliInProcess(ws.dir, ['task', 'start', 'fn-1.1'])).code, 0);
      assert.equal((JSON.parse(ws.read('.flow/tasks/fn-1.1.json')) as { assignee: string }).assignee, 'tester');
      assert.deepEqual(
        ((await runCliInProcess(ws.dir, ['next', '--json'])).json().flow as { reason: string }).reason,
        'resume_in_progress',
      );
    });
  });

  describe('stale', () => {
    it('stale --apply handles .123Z and +02:00 timestamps', async () => {
      ws = tempWorkspace('ralph-cli-');
      ws.write(
        'quantum.json',
        quantumJson([
          { id: 'US-001', status: 'in_progress', startedAt: '2026-01-01T10:00:00.123Z' },
          { id: 'US-002', status: 'in_progress', startedAt: '2026-01-01T12:00:00+02:00', attempts: 2 },
          { id: 'US-003', status: 'in_progress' },
          { id: 'US-004', status: 'in_progress', startedAt: new Date().toISOString() },
        ]),
      );
      const r = await runCliInProcess(ws.dir, ['stale', '--apply', '--json']);
      const j = r.json();
      assert.deepEqual(
        (j.stale as { id: string; becomes: string }[]).map((s) => [s.id, s.becomes]),
        [
          ['US-001', 'failed'],
          ['US-002', 'blocked'],
        ],
      );
      assert.deepEqual(j.warnings, ['US-003 is in_progress without startedAt']);
      const stories = (
        JSON.parse(ws.read('quantum.json')) as {
          stories: { status: string; startedAt: string | null; retries: { attempts: number } }[];
        }
      ).stories;
      assert.deepEqual(
        stories.map((s) => [s.status, s.startedAt === null, s.retries.attempts]),
        [
          ['failed', true, 1],
          ['blocked', true, 3],
          ['in_progress', false, 0],
          ['in_progress', false, 0],
        ],
      );
    });

    it('stale without --apply writes nothing', async () => {
      ws = tempWorkspace('ralph-cli-');
      ws.write(
        'quantum.json',
        quantumJson([{ id: 'US-001', status: 'in_progress', startedAt: '2026-01-01T10:00:00Z' }]),
      );
      const before = ws.read('quantum.json');
      assert.equal(((await runCliInProcess(ws.dir, ['stale', '--json'])).json().stale as unknown[]).length, 1);
      assert.equal(ws.read('quantum.json'), before);
    });

    it('--stale-timeout overrides the file threshold', async () => {
      ws = tempWorkspace('ralph-cli-');
      ws.write(
        'quantum.json',
        quantumJson([
          { id: 'US-001', status: 'in_progress', startedAt: new Date(Date.now() - 15 * 60_000).toISOString() },
        ]),
      );
      assert.equal(
        ((await runCliInProcess(ws.dir, ['stale', '--stale-timeout', '10', '--json'])).json().stale as unknown[])
          .length,
        1,
      );
      assert.equal(((await runCliInProcess(ws.dir, ['stale', '--json'])).json().stale as unknown[]).length, 0);
    });
  });

  describe('pause, resume, stop (flowctl ci_test.sh)', () => {
    it('pause --json finds the single active run by itself and creates PAUSE', async () => {
      ws = tempWorkspace('ralph-cli-');
      ciRun('test-run');
      assert.deepEqual((await runCliInProcess(ws.dir, ['pause', '--json'])).json(), {
        success: true,
        run: 'test-run',
        action: 'paused',
      });
      assert.ok(ws.exists('scripts/ralph/runs/test-run/PAUSE'));
      assert.equal(
        ((await runCliInProcess(ws.dir, ['status', '--json'])).json().runs as { paused: boolean }[])[0]!.paused,
        true,
      );
    });

    it('resume removes PAUSE', async () => {
      ws = tempWorkspace('ralph-cli-');
      ciRun('test-run');
      ws.write('scripts/ralph/runs/test-run/PAUSE', '');
      assert.deepEqual((await runCliInProcess(ws.dir, ['resume', '--run', 'test-run', '--json'])).json(), {
        success: true,
        run: 'test-run',
        action: 'resumed',
      });
      assert.ok(!ws.exists('scripts/ralph/runs/test-run/PAUSE'));
    });

    it('stop creates STOP', async () => {
      ws = tempWorkspace('ralph-cli-');
      ciRun('test-run');
      assert.deepEqual((await runCliInProcess(ws.dir, ['stop', '--json'])).json(), {
        success: true,
        run: 'test-run',
        action: 'stop_requested',
      });
      assert.ok(ws.exists('scripts/ralph/runs/test-run/STOP'));
    });

    it('two active runs are an error naming both; --run picks one', async () => {
      ws = tempWorkspace('ralph-cli-');
      ciRun('run-a');
      ciRun('run-b');
      const r = await runCliInProcess(ws.dir, ['pause', '--json']);
      assert.deepEqual(
        [r.code, r.json()],
        [1, { success: false, error: 'Multiple active runs, specify --run: run-a, run-b' }],
      );
      assert.equal((await runCliInProcess(ws.dir, ['pause', '--run', 'run-b', '--json'])).json().run, 'run-b');
    });

    it('a completed run is excluded from auto-detection', async () => {
      ws = tempWorkspace('ralph-cli-');
      ciRun('live');
      ciRun('finished', completed);
      assert.equal((await runCliInProcess(ws.dir, ['pause', '--json'])).json().run, 'live');
      const r = await runCliInProcess(ws.dir, ['stop', '--run', 'finished', '--json']);
      assert.deepEqual([r.code, r.json().error], [1, 'Run finished not found or not active']);
    });

    it('no active run exits 1 with "No active runs"', async () => {
      ws = tempWorkspace('ralph-cli-');
      const r = await runCliInProcess(ws.dir, ['pause']);
      assert.deepEqual([r.code, r.stderr], [1, 'Error: No active runs\n']);
    });

    it('our own run is controlled through .ralph/runs/<id>/', async () => {
      ws = tempWorkspace('ralph-cli-');
      ws.write(
        '.ralph/runs/r1/run.json',
        flowJson({
          schemaVersion: 1,
          runId: 'r1',
          pid: process.pid,
          host: os.hostname(),
          startedAt: '2026-01-01T00:00:00Z',
          state: 'running',
          iteration: 1,
          currentItem: null,
        }),
      );
      assert.equal((await runCliInProcess(ws.dir, ['pause', '--json'])).json().run, 'r1');
      assert.ok(ws.exists('.ralph/runs/r1/PAUSE'));
      assert.equal(
        ((await runCliInProcess(ws.dir, ['status', '--json'])).json().runs as { state: string }[])[0]!.state,
        'paused',
      );
    });
  });

  describe('help and usage', () => {
    for (const cmd of [
      ['status'],
      ['next'],
      ['task', 'start'],
      ['task', 'done'],
      ['task', 'block'],
      ['task', 'reset'],
      ['stale'],
      ['pause'],
      ['resume'],
      ['stop'],
    ]) {
      it(`ralph ${cmd.join(' ')} --help documents its exit codes`, async () => {
        const r = await runCliInProcess(process.cwd(), [...cmd, '--help']);
        assert.equal(r.code, 0);
        assert.match(r.stdout, /Exit codes:/);
      });
    }

    // As a process: the exit code the bin ends with.
    it('an unknown option is a usage error with exit 2', () => {
      assert.equal(runCli(process.cwd(), ['status', '--bogus']).code, 2);
    });
  });
});
