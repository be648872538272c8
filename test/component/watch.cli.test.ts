import * as assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseRunLogLine, runLogLine, type EngineEvent } from '../../src/core/model/runEvent';
import { bash, edit, say, startModelServer, write, type ModelServer } from '../support/modelServer';
import { scriptedClaudeStub } from '../support/claude';
import { cliPath } from '../support/cli';
import { agentEnv, useWorkspaces, type Workspace } from '../support/engineHarness';

const cli = cliPath;

interface Proc {
  child: ChildProcess;
  stdout: () => string;
  exit: Promise<number | null>;
}

function start(ws: Workspace, server: ModelServer, args: string[]): Proc {
  const env = { ...process.env, ...agentEnv(ws, server), RALPH_TRUST: '1' } as NodeJS.ProcessEnv;
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  const child = spawn(process.execPath, [cli, ...args], { cwd: ws.dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (b: Buffer) => {
    out += b.toString();
  });
  child.stderr!.on('data', (b: Buffer) => {
    err += b.toString();
  });
  const exit = new Promise<number | null>((resolve) =>
    child.once('close', (code) => {
      if (code !== 0 && err) process.stderr.write(`[${args.join(' ')}] ${err}`);
      resolve(code);
    }),
  );
  return { child, stdout: () => out, exit };
}

async function until<T>(f: () => T | undefined, what: string, ms = 30_000): Promise<T> {
  const t0 = Date.now();
  for (;;) {
    const v = f();
    if (v !== undefined) return v;
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function doTask(ws: Workspace, name: string) {
  return [
    write(ws.file(`${name}.txt`), `${name}\n`),
    edit(ws.file('RALPH_TASK.md'), `- [ ] Create ${name}.txt`, `- [x] Create ${name}.txt`),
    bash(`sleep 0.3; git add ${name}.txt RALPH_TASK.md && git commit -q -m "feat: ${name}"`),
    say(`Created ${name}.txt.`),
  ];
}

describe('ralph watch --json follows a run started in another process', function () {
  this.timeout(120_000);
  const make = useWorkspaces();

  it("from its start and from its middle: the same events in the same order as its log, and the run's exit code", async () => {
    const ws = make({
      'RALPH_TASK.md': '# T\n\n- [ ] Create one.txt\n- [ ] Create two.txt\n- [ ] Create three.txt\n',
      // What is followed is the run's log: the claude CLI's light stand-in (test/support/stubs/scriptedClaude.cjs) runs it.
      '.ralph/config.json': JSON.stringify({
        claudePath: scriptedClaudeStub,
        gates: { basic: 'true' },
        timing: { betweenIterationsMs: 300, killGraceMs: 1000 },
      }),
    });
    const server = await startModelServer([...doTask(ws, 'one'), ...doTask(ws, 'two')]);
    try {
      const run = start(ws, server, ['run', '--max-iterations', '2']);
      const runsDir = ws.file('.ralph/runs');
      // Attach as soon as the run's folder exists: the log has at most its first events then.
      const runId = await until(
        () =>
          fs.existsSync(runsDir)
            ? fs.readdirSync(runsDir).find((d) => fs.existsSync(path.join(runsDir, d, 'run.json')))
            : undefined,
        'the run record',
      );
      const early = start(ws, server, ['watch', '--json']);
      const log = path.join(runsDir, runId, 'events.jsonl');
      await until(
        () => (fs.existsSync(log) && /"type":"agentStarted"/.test(fs.readFileSync(log, 'utf8')) ? true : undefined),
        'the first agent',
      );
      const middle = start(ws, server, ['watch', '--run', runId, '--json']);
      const [runCode, earlyCode, middleCode] = await Promise.all([run.exit, early.exit, middle.exit]);
      assert.equal(runCode, 2, 'max iterations reached');
      assert.equal(earlyCode, runCode);
      assert.equal(middleCode, runCode);

      const lines = fs.readFileSync(log, 'utf8').split('\n').filter(Boolean);
      const seqs = lines.map((l, i) => {
        const p = parseRunLogLine(l, log, i + 1, 0);
        assert.notEqual(p.kind, 'problem', l);
        return p.kind === 'problem' ? 0 : p.entry.seq;
      });
      assert.deepEqual(
        seqs,
        lines.map((_, i) => i + 1),
        'seq 1…N, no gaps',
      );
      assert.deepEqual(
        early.stdout().split('\n').filter(Boolean),
        lines,
        'the early watcher printed the log, line for line',
      );
      assert.deepEqual(middle.stdout().split('\n').filter(Boolean), lines, 'the late watcher replayed, then followed');
      // Finished: a watch replays and exits with the same code.
      const after = start(ws, server, ['watch', '--run', runId, '--json']);
      assert.equal(await after.exit, 2);
      assert.deepEqual(after.stdout().split('\n').filter(Boolean), lines);
    } finally {
      await server.close();
    }
  });

  it('refuses with exit 1 when no run is active and none is named', async () => {
    const ws = make({ 'RALPH_TASK.md': '- [ ] x\n' });
    const server = await startModelServer([]);
    try {
      const w = start(ws, server, ['watch', '--json']);
      assert.equal(await w.exit, 1);
      assert.match(JSON.parse(w.stdout()).error, /^No active runs/);
      assert.equal(JSON.parse(w.stdout()).success, false);
    } finally {
      await server.close();
    }
  });

  describe('on a run that already ended or crashed', () => {
    const RUN = '20261201T090000Z-aa11';
    const AT = '2026-12-01T09:00:00.000Z';
    const started: EngineEvent = {
      type: 'runStarted',
      runId: RUN,
      folder: '/ws',
      source: 'RALPH_TASK.md',
      agent: 'claude',
      maxIterations: 5,
      gates: {},
    };
    function folder(state: string, pid: number, events: EngineEvent[]): string {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ralph-watch-'));
      fs.mkdirSync(path.join(dir, '.ralph', 'runs', RUN), { recursive: true });
      fs.writeFileSync(
        path.join(dir, '.ralph', 'runs', RUN, 'run.json'),
        JSON.stringify({ runId: RUN, pid, host: os.hostname(), startedAt: AT, state, iteration: 1, currentItem: null }),
      );
      fs.writeFileSync(
        path.join(dir, '.ralph', 'runs', RUN, 'events.jsonl'),
        events.map((e, i) => runLogLine(i + 1, AT, 0, e)).join(''),
      );
      return dir;
    }
    const cliRun = (dir: string, args: string[]) =>
      spawnSync(process.execPath, [cli, '-C', dir, ...args], { encoding: 'utf8' });

    it("replays the activity in text, prints the final status line and exits with the run's code", () => {
      const dir = folder('stopped', 999_999, [
        started,
        { type: 'stopRequested', file: 'STOP', graceful: false },
        {
          type: 'runEnded',
          state: 'stopped',
          reason: 'stopped by STOP',
          completionReason: 'STOPPED',
          exitCode: 3,
          iterations: 1,
          costUsd: 0.5,
          done: 0,
          total: 1,
        },
      ]);
      try {
        const r = cliRun(dir, ['watch', '--run', RUN]);
        assert.equal(r.status, 3, r.stderr);
        const lines = r.stdout.trim().split('\n');
        assert.match(lines[0]!, /^\[\d\d:\d\d:\d\d\] ═══ RALPH START — run 20261201T090000Z-aa11/);
        assert.ok(
          lines.some((l) => /RALPH STOP — STOP REQUESTED — stopped by STOP/.test(l)),
          r.stdout,
        );
        assert.match(lines.at(-1)!, /^stopped — stop requested \(Ralph: Stop or ralph stop\) · LOOP 1\/5 · \$0\.5000$/);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });

    it('reports a run whose engine is gone as crashed, exit 1', () => {
      const dir = folder('running', 999_999, [started]);
      try {
        const r = cliRun(dir, ['watch', '--run', RUN, '--json']);
        assert.equal(r.status, 1);
        assert.match(r.stderr, /run 20261201T090000Z-aa11 crashed: the engine \(pid 999999\) is gone/);
        assert.equal(r.stdout.trim().split('\n').length, 1);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });

    it('follows the only active flow-next driver run (progress.txt and its iteration log) until its completion marker, exit 0', async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ralph-watch-flow-'));
      // flow-next's run id names its host and driver pid: this process stands in for the live driver.
      const id = `20261201T090000Z-${os.hostname()}-dev-${process.pid}-ab12`;
      const runDir = path.join(dir, 'scripts', 'ralph', 'runs', id);
      const progress = path.join(runDir, 'progress.txt');
      fs.mkdirSync(runDir, { recursive: true });
      fs.writeFileSync(progress, `# Ralph Progress Log\nRun: ${id}\nStarted: ${AT}\n---\n`);
      fs.writeFileSync(
        path.join(runDir, 'iter-001.log'),
        `${JSON.stringify({ type: 'assistant', message: { id: 'm1', model: 'claude-sonnet-4-5', role: 'assistant', content: [{ type: 'text', text: 'Working on fn-1.1' }], usage: { input_tokens: 1000, output_tokens: 50, cache_read_input_tokens: 20000, cache_creation_input_tokens: 0 } } })}\n`,
      );
      try {
        const w = spawn(process.execPath, [cli, '-C', dir, 'watch', '--json'], { stdio: ['ignore', 'pipe', 'pipe'] });
        let out = '';
        let err = '';
        w.stdout!.on('data', (b: Buffer) => {
          out += b.toString();
        });
        w.stderr!.on('data', (b: Buffer) => {
          err += b.toString();
        });
        const exit = new Promise<number | null>((resolve) => w.once('close', resolve));
        await until(
          () => (/"type":"tokens"/.test(out) ? true : undefined),
          `the live part of the run (stdout ${out}, stderr ${err})`,
        );
        fs.appendFileSync(
          progress,
          `## 2026-12-01T09:05:00Z\niteration=1\nstatus=work\nspec=fn-1\ntask=fn-1.1\nreason=\nclaude_rc=0\nverdict=SHIP\npromise=\niter_log=scripts/ralph/runs/${id}/iter-001.log\nlast_output:\n---\n  done\n---\n\ncompletion_reason=DONE\npromise=COMPLETE\n`,
        );
        assert.equal(await exit, 0, err);
        const events = out
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as { seq: number; type: string });
        assert.deepEqual(
          events.map((e) => e.type),
          ['runStarted', 'iterationStarted', 'output', 'tokens', 'iterationEnded', 'runEnded'],
        );
        assert.deepEqual(
          events.map((e) => e.seq),
          [1, 2, 3, 4, 5, 6],
        );
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });

    it('refuses a run that does not exist', () => {
      const dir = folder('stopped', 999_999, [started]);
      try {
        const r = cliRun(dir, ['watch', '--run', 'nope', '--json']);
        assert.equal(r.status, 1);
        assert.equal(JSON.parse(r.stdout).error, 'Run nope not found');
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  });
});
