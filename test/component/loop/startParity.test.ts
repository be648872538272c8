import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { EngineEvent } from '../../../src/core/loop/events';
import { startRun, type EngineOptions } from '../../../src/core/loop/startRun';
import { ralphConfigSchema } from '../../../src/core/model/config';
import { ralphFile } from '../../../src/core/model/ralphPaths';
import { tryHoldLock } from '../../../src/core/store/fileLock';
import { runCli } from '../../support/cli';
import { shellStub } from '../../support/stubs/installStubs';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';
import { gitInit } from '../../support/workspace';

const story = (id: string, status: string) => ({
  id,
  title: `Story ${id}`,
  status,
  priority: 1,
  dependsOn: [],
  retries: { attempts: 0, maxAttempts: 3 },
});
const DEAD_RUN = '20261201-000000-dead';

/** What a start showed: its refusal (or end), the warnings before the run started, the records and the stories. */
interface Seen {
  refusal: string | null;
  exitCode: number | null;
  end: string | null;
  warnings: string[];
  deadRecord: Record<string, unknown> | null;
  stories: { id: string; status: string }[];
  runFolders: number;
}

/**
 * The same start as a sequential and as a parallel run: a quantum workspace (a clean git repository), set up by
 * `prepare`, started with an already-cancelled signal (so that nothing but the start and its recovery runs).
 */
describe('a sequential and a parallel start refuse and recover the same way', function () {
  this.timeout(120_000);
  const made: TempFolder[] = [];
  let bin = '';
  before(() => {
    bin = shellStub('claude', 'exit 0');
  });
  after(() => {
    for (const t of made) {
      if (fs.existsSync(t.file('.ralph'))) fs.chmodSync(t.file('.ralph'), 0o755);
      t.dispose();
    }
    fs.rmSync(bin, { recursive: true, force: true });
  });

  const workspace = (stories: unknown[]): TempFolder => {
    const t = makeTempFolder('ralph-parity-');
    made.push(t);
    t.write('quantum.json', JSON.stringify({ project: 'p', stories }, null, 2) + '\n');
    t.write('.gitignore', '.ralph/\n');
    gitInit(t, { commit: true });
    return t;
  };

  const start = async (
    t: TempFolder,
    parallel: boolean,
    o: Partial<EngineOptions> & { gates?: Record<string, string> } = {},
  ): Promise<Seen> => {
    const { gates = { basic: 'true' }, ...rest } = o;
    const config = ralphConfigSchema.parse({ claudePath: path.join(bin, 'claude'), gates });
    const cancel = new AbortController();
    cancel.abort();
    const run = startRun({ folder: t.dir, config, source: 'quantum', parallel, signal: cancel.signal, ...rest });
    const events: EngineEvent[] = [];
    run.events.on('event', (e) => events.push(e));
    const shown = (s: string) => s.split(t.dir).join('<folder>');
    let refusal: string | null = null;
    let exitCode: number | null = null;
    let end: string | null = null;
    await run.result.then(
      (r) => {
        end = r.state;
        exitCode = r.exitCode;
      },
      (err: Error & { exitCode?: number }) => {
        refusal = shown(`${err.name}: ${err.message}`);
        exitCode = err.exitCode ?? 1;
      },
    );
    const started = events.findIndex((e) => e.type === 'runStarted');
    const warnings = events
      .slice(0, started < 0 ? events.length : started)
      .flatMap((e) => (e.type === 'warning' ? [shown(e.message)] : []));
    const deadFile = t.file(`.ralph/runs/${DEAD_RUN}/run.json`);
    const dead = fs.existsSync(deadFile)
      ? (JSON.parse(fs.readFileSync(deadFile, 'utf8')) as Record<string, unknown>)
      : null;
    const runs = t.file('.ralph/runs');
    return {
      refusal,
      exitCode,
      end,
      warnings,
      deadRecord: dead && {
        state: dead.state,
        endState: dead.endState,
        endReason: dead.endReason,
        claimBaseline: dead.claimBaseline,
      },
      stories: (JSON.parse(t.read('quantum.json')) as { stories: { id: string; status: string }[] }).stories.map(
        (s) => ({ id: s.id, status: s.status }),
      ),
      runFolders: fs.existsSync(runs) ? fs.readdirSync(runs).filter((n) => n !== DEAD_RUN).length : 0,
    };
  };

  /** Runs `prepare` then the start, once sequential and once parallel, and returns both. */
  const both = async (
    stories: unknown[],
    prepare: (t: TempFolder) => Promise<(() => Promise<void>) | void> | void,
    o: Partial<EngineOptions> & { gates?: Record<string, string> } = {},
  ): Promise<[Seen, Seen]> => {
    const out: Seen[] = [];
    for (const parallel of [false, true]) {
      const t = workspace(stories);
      const undo = await prepare(t);
      try {
        out.push(await start(t, parallel, o));
      } finally {
        if (undo) await undo();
      }
    }
    return [out[0]!, out[1]!];
  };

  it('no gates: the same refusal, nothing recorded', async () => {
    const [seq, par] = await both([story('US-001', 'pending')], () => undefined, { gates: {} });
    assert.match(seq.refusal ?? '', /^EngineRefusal: No gates configured/);
    assert.deepEqual(par, seq);
    assert.equal(seq.runFolders, 0);
  });

  it('a locked folder: the same refusal naming the folder, nothing recorded', async () => {
    const [seq, par] = await both([story('US-001', 'pending')], async (t) => {
      fs.mkdirSync(t.file('.ralph'), { recursive: true });
      const release = await tryHoldLock(ralphFile(t.dir, 'engineLock'), () => undefined);
      assert.ok(release, 'the test holds the folder lock');
      return release;
    });
    assert.match(seq.refusal ?? '', /^EngineRefusal: Another Ralph run is active in <folder>/);
    assert.deepEqual(par, seq);
  });

  it('a .ralph/ that cannot be written (a full or read-only disk): the same storage refusal, exit 74', async () => {
    const [seq, par] = await both([story('US-001', 'pending')], (t) => {
      fs.mkdirSync(t.file('.ralph'), { recursive: true });
      fs.chmodSync(t.file('.ralph'), 0o555);
    });
    assert.match(seq.refusal ?? '', /^EngineRefusal: \.ralph\/ is read-only/);
    assert.equal(seq.exitCode, 74);
    assert.deepEqual(par, seq);
  });

  it('an untrusted configuration naming a program: `ralph run` and `ralph run --parallel` refuse the same way', () => {
    const out = [false, true].map((parallel) => {
      const t = workspace([story('US-001', 'pending')]);
      t.write('.ralph/config.json', JSON.stringify({ claudePath: path.join(bin, 'claude') }));
      const r = runCli(t.dir, ['run', '--source', 'quantum', ...(parallel ? ['--parallel'] : [])], {
        RALPH_TRUST: '',
      });
      return {
        code: r.code,
        stderr: r.stderr.split(t.dir).join('<folder>'),
        runs: fs.existsSync(t.file('.ralph/runs')),
      };
    });
    assert.match(out[0]!.stderr, /trust/i);
    assert.equal(out[0]!.code, 1);
    assert.deepEqual(out[1], out[0]);
  });

  it('a dead run with open claims: the same warnings, the same record and the same put-backs', async () => {
    const prepare = (t: TempFolder) => {
      t.write(
        `.ralph/runs/${DEAD_RUN}/run.json`,
        JSON.stringify(
          {
            schemaVersion: 1,
            runId: DEAD_RUN,
            pid: 2 ** 22 - 3,
            host: os.hostname(),
            startedAt: '2026-12-01T00:00:00.000Z',
            state: 'running',
            iteration: 2,
            currentItem: { source: 'quantum', id: 'US-002', title: 'Story US-002' },
            claimBaseline: { at: '2026-12-01T00:00:01.000Z', source: 'quantum', label: 'quantum.json', done: [] },
          },
          null,
          2,
        ) + '\n',
      );
    };
    // US-001 was claimed done by the dead run's agent (no gate verified it); US-002 was its item in progress.
    const [seq, par] = await both([story('US-001', 'passed'), story('US-002', 'in_progress')], prepare);
    assert.equal(seq.refusal, null);
    assert.ok(
      seq.warnings.some((w) =>
        w.startsWith(`run ${DEAD_RUN} had crashed (engine pid ${2 ** 22 - 3} is gone): marked crashed`),
      ),
      seq.warnings.join('\n'),
    );
    assert.ok(
      seq.warnings.some((w) => w.includes('put back US-001 (claimed done, never verified)')),
      seq.warnings.join('\n'),
    );
    assert.equal(seq.stories.find((s) => s.id === 'US-001')?.status, 'pending');
    assert.deepEqual(par.warnings, seq.warnings);
    assert.deepEqual(par.deadRecord, seq.deadRecord);
    assert.deepEqual(par.stories, seq.stories);
    assert.equal(par.end, seq.end);
  });
});
