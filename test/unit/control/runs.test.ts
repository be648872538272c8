import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { pauseRun, resolveActiveRun, resumeRun, stopRun } from '../../../src/core/control/runControl';
import { createRunRecord, readRunRecord, updateRunRecord } from '../../../src/core/control/runRecords';
import { listRuns, type RunProbe } from '../../../src/core/control/runs';
import { checkSentinels, honourStop } from '../../../src/core/control/sentinels';
import { OperationError } from '../../../src/core/model/operationError';
import { writeFaults } from '../../../src/core/store/writePlan';
import { tempWorkspace, type TempWorkspace } from '../../support/workspace';

const HOST = 'box';
const alive = (pids: number[]): RunProbe => ({ isAlive: (p) => pids.includes(p), hostNames: [HOST] });
const flowRun = (ws: TempWorkspace, id: string, body = 'iteration: 1\n') =>
  ws.write(`scripts/ralph/runs/${id}/progress.txt`, body);
const marker = (reason: string) =>
  `## 2026-01-15T10:00:00Z - iter 2\nstatus=work epic=fn-1 task=fn-1.2 reason=ready_task\n\ncompletion_reason=${reason}\npromise=COMPLETE\n`;
const ourRun = (ws: TempWorkspace, id: string, rec: Record<string, unknown>) =>
  ws.write(
    `.ralph/runs/${id}/run.json`,
    JSON.stringify(
      {
        schemaVersion: 1,
        runId: id,
        pid: 100,
        host: HOST,
        startedAt: '2026-01-01T00:00:00Z',
        state: 'running',
        iteration: 2,
        currentItem: { source: 'quantum', id: 'US-002' },
        ...rec,
      },
      null,
      2,
    ) + '\n',
  );

describe('control: run states', () => {
  let ws: TempWorkspace;
  beforeEach(() => {
    ws = tempWorkspace('ralph-runs-');
  });
  afterEach(() => ws.dispose());

  const table: {
    name: string;
    make: (ws: TempWorkspace) => void;
    probe?: RunProbe;
    state: string;
    active: boolean;
    reason?: string;
  }[] = [
    {
      name: 'a flow-next run without a completion marker is running',
      make: (w) => flowRun(w, 'r'),
      state: 'running',
      active: true,
    },
    {
      name: 'a flow-next run with PAUSE is paused',
      make: (w) => {
        flowRun(w, 'r');
        w.write('scripts/ralph/runs/r/PAUSE', '');
      },
      state: 'paused',
      active: true,
    },
    {
      name: 'a flow-next run with STOP is stopping until its marker is written',
      make: (w) => {
        flowRun(w, 'r');
        w.write('scripts/ralph/runs/r/STOP', '');
      },
      state: 'stopping',
      active: true,
    },
    {
      name: 'a flow-next run with the DONE marker is completed',
      make: (w) => flowRun(w, 'r', marker('DONE')),
      state: 'completed',
      active: false,
      reason: 'DONE',
    },
    {
      name: 'a flow-next run with the STOPPED marker is stopped',
      make: (w) => flowRun(w, 'r', marker('STOPPED')),
      state: 'stopped',
      active: false,
      reason: 'STOPPED',
    },
    {
      name: 'a v0.8 run whose pid is dead on this host is crashed',
      make: (w) => flowRun(w, '20260115T100000Z-box-me-4242-ab12'),
      probe: alive([]),
      state: 'crashed',
      active: false,
    },
    {
      name: 'a v0.8 run whose pid is alive is running',
      make: (w) => flowRun(w, '20260115T100000Z-box-me-4242-ab12'),
      probe: alive([4242]),
      state: 'running',
      active: true,
    },
    {
      name: 'a v0.8 run from another host is never called crashed',
      make: (w) => flowRun(w, '20260115T100000Z-other-me-4242-ab12'),
      probe: alive([]),
      state: 'running',
      active: true,
    },
    {
      name: 'a HEAD run id without a pid is active',
      make: (w) => flowRun(w, '20260801-100000-ab12'),
      probe: alive([]),
      state: 'running',
      active: true,
    },
    {
      name: 'our run whose engine is alive is running',
      make: (w) => ourRun(w, 'o', {}),
      probe: alive([100]),
      state: 'running',
      active: true,
    },
    {
      name: 'our run whose engine died is crashed',
      make: (w) => ourRun(w, 'o', {}),
      probe: alive([]),
      state: 'crashed',
      active: false,
    },
    {
      name: 'our completed run keeps its reason',
      make: (w) => ourRun(w, 'o', { state: 'completed', completion: { reason: 'DONE', at: '2026-01-01T01:00:00Z' } }),
      probe: alive([]),
      state: 'completed',
      active: false,
      reason: 'DONE',
    },
    {
      name: 'our run with its own PAUSE is paused',
      make: (w) => {
        ourRun(w, 'o', {});
        w.write('.ralph/runs/o/PAUSE', '');
      },
      probe: alive([100]),
      state: 'paused',
      active: true,
    },
    {
      name: 'our run under the global scripts/ralph/PAUSE is paused',
      make: (w) => {
        ourRun(w, 'o', {});
        w.write('scripts/ralph/PAUSE', '');
      },
      probe: alive([100]),
      state: 'paused',
      active: true,
    },
    {
      name: 'our run with a global STOP newer than its start is stopping',
      make: (w) => {
        ourRun(w, 'o', {});
        w.write('.ralph/stop-requested', '');
      },
      probe: alive([100]),
      state: 'stopping',
      active: true,
    },
    {
      name: 'a global STOP older than the run start is ignored',
      make: (w) => {
        ourRun(w, 'o', { startedAt: new Date(Date.now() + 60_000).toISOString() });
        w.write('scripts/ralph/STOP', '');
      },
      probe: alive([100]),
      state: 'running',
      active: true,
    },
  ];
  for (const c of table) {
    it(c.name, () => {
      c.make(ws);
      const [run] = listRuns(ws.dir, c.probe ?? alive([])).runs;
      assert.equal(run?.state, c.state);
      assert.equal(run?.active, c.active);
      assert.equal(run?.reason, c.reason);
    });
  }

  it('a run record that does not parse is a problem naming its file and line', () => {
    ws.write('.ralph/runs/bad/run.json', '{\n  "runId": "bad",\n  oops\n}\n');
    const { runs, problems } = listRuns(ws.dir, alive([]));
    assert.deepEqual(runs, []);
    assert.equal(problems[0]?.file, '.ralph/runs/bad/run.json');
    assert.equal(problems[0]?.line, 3);
  });
});

describe('control: auto-detection and sentinels (seed-systems.md §2.7)', () => {
  let ws: TempWorkspace;
  beforeEach(() => {
    ws = tempWorkspace('ralph-ctl-');
  });
  afterEach(() => ws.dispose());
  const refused = (re: RegExp) => (e: Error) => e instanceof OperationError && re.test(e.message);

  it('one active run is found by itself', () => {
    flowRun(ws, 'a');
    flowRun(ws, 'done', marker('DONE'));
    assert.equal(resolveActiveRun(ws.dir, undefined, alive([])).id, 'a');
  });

  it('no active run is an error', () => {
    flowRun(ws, 'done', marker('DONE'));
    assert.throws(() => resolveActiveRun(ws.dir, undefined, alive([])), refused(/^No active runs$/));
  });

  it('several active runs are an error listing them', () => {
    flowRun(ws, 'a');
    ourRun(ws, 'b', {});
    assert.throws(
      () => resolveActiveRun(ws.dir, undefined, alive([100])),
      refused(/^Multiple active runs, specify --run: a, b$/),
    );
  });

  it('--run naming a finished run is an error', () => {
    flowRun(ws, 'done', marker('DONE'));
    assert.throws(() => resolveActiveRun(ws.dir, 'done', alive([])), refused(/^Run done not found or not active$/));
  });

  it('pause, resume and stop of a flow-next run use its own folder; STOP is kept', async () => {
    flowRun(ws, 'a');
    assert.deepEqual(await pauseRun(ws.dir, undefined, alive([])).then((r) => [r.run, r.action]), ['a', 'paused']);
    assert.ok(ws.exists('scripts/ralph/runs/a/PAUSE'));
    assert.equal((await resumeRun(ws.dir, 'a', alive([]))).action, 'resumed');
    assert.ok(!ws.exists('scripts/ralph/runs/a/PAUSE'));
    assert.equal((await stopRun(ws.dir, 'a', alive([]))).action, 'stop_requested');
    assert.ok(ws.exists('scripts/ralph/runs/a/STOP'));
  });

  it('resume of our run also lifts the global PAUSE', async () => {
    ourRun(ws, 'o', {});
    ws.write('scripts/ralph/PAUSE', '');
    ws.write('.ralph/runs/o/PAUSE', '');
    const r = await resumeRun(ws.dir, 'o', alive([100]));
    assert.equal(r.files.length, 2);
    assert.ok(!ws.exists('scripts/ralph/PAUSE'));
  });

  it('a global STOP honoured by a run is removed, the run STOP is kept for audit', async () => {
    ourRun(ws, 'o', {});
    ws.write('.ralph/runs/o/STOP', '');
    ws.write('scripts/ralph/STOP', '');
    ws.write('.ralph/stop-requested', '');
    const check = checkSentinels(ws.dir, { runId: 'o', startedAt: '2026-01-01T00:00:00Z' });
    assert.deepEqual(
      check.stop.map((h) => h.scope),
      ['run', 'global', 'global'],
    );
    const removed = await honourStop(check);
    assert.deepEqual(
      removed.map((f) => path.relative(ws.dir, f)),
      [path.join('scripts', 'ralph', 'STOP'), path.join('.ralph', 'stop-requested')],
    );
    assert.ok(ws.exists('.ralph/runs/o/STOP'));
  });
});

describe('control: run records', () => {
  let ws: TempWorkspace;
  beforeEach(() => {
    ws = tempWorkspace('ralph-rec-');
  });
  afterEach(() => ws.dispose());

  it('a created record has the pid, host, start time and starting state', async () => {
    const rec = await createRunRecord(ws.dir, { runId: 'r1' }, Date.UTC(2026, 0, 1));
    assert.deepEqual(
      [rec.runId, rec.pid, rec.state, rec.startedAt],
      ['r1', process.pid, 'starting', '2026-01-01T00:00:00.000Z'],
    );
    assert.deepEqual(await readRunRecord(ws.dir, 'r1'), rec);
  });

  it('creating a record twice is refused', async () => {
    await createRunRecord(ws.dir, { runId: 'r1' });
    await assert.rejects(createRunRecord(ws.dir, { runId: 'r1' }), /already exists/);
  });

  it('an update changes only the given fields and keeps unknown keys', async () => {
    await createRunRecord(ws.dir, { runId: 'r1' });
    const file = path.join(ws.dir, '.ralph/runs/r1/run.json');
    fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('{\n', '{\n  "engineExtra": true,\n'));
    await updateRunRecord(ws.dir, 'r1', {
      state: 'running',
      iteration: 1,
      currentItem: { source: 'flow-next', id: 'fn-1.1' },
    });
    const rec = (await readRunRecord(ws.dir, 'r1'))!;
    assert.equal(rec.state, 'running');
    assert.equal((rec as Record<string, unknown>).engineExtra, true);
  });

  it("a parallel run's parallel and lanes[] are typed fields of the record (no cast), and a malformed lane is refused", async () => {
    await createRunRecord(ws.dir, { runId: 'r1', parallel: { maxParallel: 2, featureBranch: 'feat' }, lanes: [] });
    const lane = {
      lane: 1,
      item: 'US-001',
      worktree: '.ralph/lanes/US-001',
      branch: 'ralph/lane/US-001',
      iteration: 3,
      agentPgid: 4321,
      agentToken: 'tok',
    };
    await updateRunRecord(ws.dir, 'r1', { lanes: [lane] });
    const rec = (await readRunRecord(ws.dir, 'r1'))!;
    assert.deepEqual([rec.parallel, rec.lanes], [{ maxParallel: 2, featureBranch: 'feat' }, [lane]]);
    await assert.rejects(updateRunRecord(ws.dir, 'r1', { lanes: [{ ...lane, agentPgid: 'x' }] as never }), /lanes/);
  });

  it('an update that breaks the schema is refused and nothing is written', async () => {
    await createRunRecord(ws.dir, { runId: 'r1' });
    const before = ws.read('.ralph/runs/r1/run.json');
    await assert.rejects(updateRunRecord(ws.dir, 'r1', { state: 'bogus' as never }), /state/);
    await assert.rejects(updateRunRecord(ws.dir, 'r1', { runId: undefined } as never), /runId/);
    assert.equal(ws.read('.ralph/runs/r1/run.json'), before);
  });

  it('updates from one process all land, in call order, with no lock folder beside the record', async () => {
    await createRunRecord(ws.dir, { runId: 'r1' });
    const lockDir = path.join(ws.dir, '.ralph/runs/r1/run.json.lock');
    const seen: boolean[] = [];
    writeFaults.betweenReadAndWrite = () => void seen.push(fs.existsSync(lockDir));
    try {
      await Promise.all([
        updateRunRecord(ws.dir, 'r1', { state: 'running' }),
        updateRunRecord(ws.dir, 'r1', { iteration: 1 }),
        updateRunRecord(ws.dir, 'r1', { iteration: 2, agent: 'codex' }),
        updateRunRecord(ws.dir, 'r1', { costUsd: 0.5 }),
      ]);
    } finally {
      writeFaults.betweenReadAndWrite = undefined;
    }
    const rec = (await readRunRecord(ws.dir, 'r1'))!;
    assert.deepEqual([rec.state, rec.iteration, rec.agent, rec.costUsd], ['running', 2, 'codex', 0.5]);
    assert.deepEqual(seen, [false, false, false, false]);
  });

  it('an edit made by another writer between the read and the rename is kept (the patch is applied to it again)', async () => {
    await createRunRecord(ws.dir, { runId: 'r1' });
    await updateRunRecord(ws.dir, 'r1', { state: 'running' });
    const file = path.join(ws.dir, '.ralph/runs/r1/run.json');
    writeFaults.betweenReadAndWrite = (_files, attempt) => {
      if (attempt === 1)
        fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('{\n', '{\n  "note": "a person",\n'));
    };
    try {
      await updateRunRecord(ws.dir, 'r1', { iteration: 4 });
    } finally {
      writeFaults.betweenReadAndWrite = undefined;
    }
    const rec = (await readRunRecord(ws.dir, 'r1')) as Record<string, unknown>;
    assert.deepEqual([rec.note, rec.iteration, rec.state], ['a person', 4, 'running']);
  });

  it('a record changed by someone else since this process wrote it is checked again before it is updated', async () => {
    await createRunRecord(ws.dir, { runId: 'r1' });
    await updateRunRecord(ws.dir, 'r1', { state: 'running' });
    const file = path.join(ws.dir, '.ralph/runs/r1/run.json');
    const broken = fs.readFileSync(file, 'utf8').replace('"state": "running"', '"state": "sideways"');
    fs.writeFileSync(file, broken);
    await assert.rejects(updateRunRecord(ws.dir, 'r1', { iteration: 2 }), /state/);
    assert.equal(fs.readFileSync(file, 'utf8'), broken);
  });
});
