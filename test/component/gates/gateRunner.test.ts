import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  gateSummary,
  isFailingLine,
  runGate,
  SUMMARY_MAX_BYTES,
  type GateResult,
  type GateRunOptions,
} from '../../../src/core/gates/gateRunner';
import { resolveContainment } from '../../../src/core/process/containment';
import { gitWorkerReady, holdGitWorker } from '../../../src/core/git/gitWorker';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';
import { liveGroupMembers, processesRunning, spawnsDuring, waitForFile } from '../../support/processes';

/** The gate's process group id: the pid in its log name (`<L>-<ts>-<pid>.log`). */
const groupOf = (r: GateResult) => Number(/-(\d+)\.log$/.exec(r.logPath)![1]);

/**
 * The gate's behaviour, started from this process (the sequential engine) and from the small helper process a
 * parallel run holds (git/gitWorker.ts `spawnInWorker`: the output appended to the log by its path).
 */
function gateBehaviour(): void {
  describe('gate runner: a passing gate (seed-systems.md §3.10)', () => {
    let ws: TempFolder;
    let r: GateResult;
    const activity: string[] = [];
    before(async () => {
      ws = makeTempFolder('ralph-gates-', { ralphDir: true });
      ws.write('.ralph/gates/basic-latest.summary', 'label: basic\nexit: 1\n');
      r = await runGate({
        folder: ws.dir,
        label: 'basic',
        command: '  echo  "all good" ;\n pwd ',
        timeoutMs: 60_000,
        onActivity: (t) => activity.push(t),
      });
    });
    after(() => ws.dispose());

    it('returns exit 0, not timed out, with the output as its tail', () => {
      assert.deepEqual([r.exitCode, r.timedOut, r.cancelled, r.failingLines], [0, false, false, []]);
      assert.deepEqual([r.tail.length, r.tail[0]], [2, 'all good']);
    });

    it('runs from the workspace root', () => {
      assert.equal(fs.realpathSync(r.tail[1]!), fs.realpathSync(ws.dir));
    });

    it('writes a timestamped log with the header and footer lines', () => {
      assert.match(path.basename(r.logPath), /^basic-\d{8}T\d{6}Z-\d+\.log$/);
      const lines = fs.readFileSync(r.logPath, 'utf8').split('\n');
      assert.match(
        lines[0]!,
        new RegExp(`^=== gate-run label=basic ts=\\d{8}T\\d{6}Z cwd=${ws.dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`),
      );
      assert.equal(lines[1], '=== cmd:   echo  "all good" ;');
      assert.match(lines.at(-2)!, /^=== gate-run end exit=0 duration=\d+s ===$/);
    });

    it('writes the per-run .exit and the latest exit and command without a newline', () => {
      assert.equal(fs.readFileSync(r.logPath.replace(/\.log$/, '.exit'), 'utf8'), '0');
      assert.equal(ws.read('.ralph/gates/basic-latest.exit'), '0');
      assert.equal(ws.read('.ralph/gates/basic-latest.cmd'), 'echo "all good" ; pwd');
    });

    it('gives the log a second name, basic-latest.log (never a symlink)', () => {
      assert.equal(ws.read('.ralph/gates/basic-latest.log'), fs.readFileSync(r.logPath, 'utf8'));
      assert.equal(fs.lstatSync(path.join(ws.dir, '.ralph/gates/basic-latest.log')).isSymbolicLink(), false);
    });

    it('deletes the summary of an earlier failure', () => {
      assert.equal(ws.exists('.ralph/gates/basic-latest.summary'), false);
      assert.equal(r.summary, undefined);
    });

    it('reports start and end to the activity log', () => {
      assert.deepEqual(
        activity.map((a) => a.split(' ').slice(0, 2).join(' ')),
        ['GATE start', 'GATE end'],
      );
      assert.match(activity[1]!, /label=basic exit=0 duration=\d+s log=\.ralph\/gates\/basic-latest\.log$/);
    });
  });

  describe('gate runner: a failing gate', () => {
    let ws: TempFolder;
    let r: GateResult;
    const script = [
      'echo "compiling"',
      'echo "src/a.ts(3,5): error TS2322: Type string is not assignable to type number."',
      'echo " FAIL  test/a.test.ts > adds" >&2',
      'echo "AssertionError [ERR_ASSERTION]: expected 1 to equal 2"',
      'echo "    at Context.<anonymous> (test/a.test.ts:3:9)"',
      'echo "=== coverage gaps ==="',
      'echo "src/b.ts: 40%"',
      'echo "==="',
      'printf "no newline at the end"',
      'exit 3',
    ].join('\n');
    before(async () => {
      ws = makeTempFolder('ralph-gates-', { ralphDir: true });
      r = await runGate({ folder: ws.dir, label: 'full', command: script, timeoutMs: 60_000 });
    });
    after(() => ws.dispose());

    it('returns the exit code of the command', () => {
      assert.equal(r.exitCode, 3);
    });

    it('collects the first failing lines from stdout and stderr, without stack frames', () => {
      assert.deepEqual(r.failingLines, [
        'src/a.ts(3,5): error TS2322: Type string is not assignable to type number.',
        ' FAIL  test/a.test.ts > adds',
        'AssertionError [ERR_ASSERTION]: expected 1 to equal 2',
      ]);
    });

    it('writes latest.exit with the code and no newline', () => {
      assert.equal(ws.read('.ralph/gates/full-latest.exit'), '3');
    });

    it('writes the summary with label, exit, duration, log and cmd, then coverage gaps and failing lines', () => {
      const s = ws.read('.ralph/gates/full-latest.summary');
      assert.equal(s, r.summary);
      const lines = s.split('\n');
      assert.deepEqual(lines.slice(0, 2), ['label: full', 'exit: 3']);
      assert.match(lines[2]!, /^duration: \d+s$/);
      assert.equal(lines[3], `log: ${r.logRelPath}`);
      assert.match(r.logRelPath, /^\.ralph\/gates\/full-\d{8}T\d{6}Z-\d+\.log$/);
      assert.match(lines[4]!, /^cmd: echo "compiling" echo /);
      assert.deepEqual(lines.slice(5, 7), ['coverage_gaps:', '  src/b.ts: 40%']);
      assert.equal(lines[7], 'failing:');
    });

    it('records the last failed label and log', () => {
      assert.equal(ws.read('.ralph/gates/last-failed-label'), 'full');
      assert.equal(ws.read('.ralph/gates/last-failed-log'), '.ralph/gates/full-latest.log');
    });

    it('puts the footer on its own line after output without a final newline', () => {
      const lines = fs.readFileSync(r.logPath, 'utf8').split('\n');
      assert.equal(lines.at(-3), 'no newline at the end');
      assert.match(lines.at(-2)!, /^=== gate-run end exit=3 /);
    });
  });

  describe('gate runner: ending the process group', () => {
    let ws: TempFolder;
    beforeEach(() => {
      ws = makeTempFolder('ralph-gates-', { ralphDir: true });
    });
    afterEach(() => ws.dispose());

    it('a gate that times out gets exit 124 and leaves no process in its group, even ones ignoring SIGTERM', async () => {
      const activity: string[] = [];
      const opts: GateRunOptions = {
        folder: ws.dir,
        label: 'final',
        timeoutMs: 300,
        killGraceMs: 300,
        onActivity: (t) => activity.push(t),
        command: "trap '' TERM; (trap '' TERM; sleep 120) & sleep 120 & sleep 120; wait",
      };
      const r = await runGate(opts);
      assert.deepEqual([r.exitCode, r.timedOut, r.cancelled], [124, true, false]);
      assert.deepEqual(liveGroupMembers(groupOf(r)), []);
      assert.ok(
        activity.some((a) => a.startsWith('GATE TIMEOUT label=final')),
        activity.join('\n'),
      );
      assert.match(
        fs.readFileSync(r.logPath, 'utf8'),
        /=== gate-run TIMEOUT after 0\.3s: SIGTERM to the process group, SIGKILL after 0\.3s ===/,
      );
      assert.equal(ws.read('.ralph/gates/final-latest.exit'), '124');
    });

    it('an aborted gate is cancelled with exit 130 and leaves no process in its group', async () => {
      const ac = new AbortController();
      const started = path.join(ws.dir, 'started');
      const run = runGate({
        folder: ws.dir,
        label: 'basic',
        timeoutMs: 60_000,
        killGraceMs: 2_000,
        signal: ac.signal,
        command: `touch "${started}"; sleep 120 & sleep 120; wait`,
      });
      await waitForFile(started);
      ac.abort();
      const r = await run;
      assert.deepEqual([r.exitCode, r.cancelled, r.timedOut], [130, true, false]);
      assert.deepEqual(liveGroupMembers(groupOf(r)), []);
    });

    it('a gate aborted before it starts runs nothing and is cancelled', async () => {
      const ac = new AbortController();
      ac.abort();
      const r = await runGate({
        folder: ws.dir,
        label: 'basic',
        command: `touch "${path.join(ws.dir, 'ran')}"`,
        signal: ac.signal,
      });
      assert.deepEqual([r.exitCode, r.cancelled], [130, true]);
      assert.equal(ws.exists('ran'), false);
    });

    it('a passing gate that leaves a background process behind still leaves its group empty', async () => {
      const r = await runGate({
        folder: ws.dir,
        label: 'unit',
        timeoutMs: 60_000,
        killGraceMs: 2_000,
        command: 'sleep 120 & echo spawned',
      });
      assert.equal(r.exitCode, 0);
      assert.deepEqual(liveGroupMembers(groupOf(r)), []);
    });

    it('a process the gate detaches into its own session is ended with the gate', async () => {
      const r = await runGate({
        folder: ws.dir,
        label: 'unit',
        timeoutMs: 60_000,
        killGraceMs: 2_000,
        command: '(setsid sleep 351 >/dev/null 2>&1 </dev/null &); echo detached',
      });
      assert.equal(r.exitCode, 0);
      const left = processesRunning('sleep 351');
      assert.deepEqual(left, [], 'the detached sleep is gone');
    });

    it('a command killed by a signal reports 128 + the signal number', async () => {
      const r = await runGate({ folder: ws.dir, label: 'lint', command: 'kill -KILL $$' });
      assert.equal(r.exitCode, 137);
    });
  });

  describe('gate runner: containment (issue 12, nothing escapes)', () => {
    let ws: TempFolder;
    const stray: number[] = [];
    beforeEach(() => {
      ws = makeTempFolder('ralph-gates-', { ralphDir: true });
    });
    afterEach(() => {
      for (const pid of stray.splice(0))
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          /* gone */
        }
      ws.dispose();
    });
    const escape = (n: number) => `(setsid env -i /bin/sleep ${n} >/dev/null 2>&1 </dev/null &); echo detached`;

    it('containment "auto" runs the gate in a PID namespace here', () => {
      assert.equal(resolveContainment('auto').kind, 'pid-namespace', resolveContainment('auto').detail);
    });

    it('a process the gate detaches with setsid and a cleared environment (setsid env -i) is ended with the gate', async () => {
      const r = await runGate({
        folder: ws.dir,
        label: 'unit',
        timeoutMs: 60_000,
        killGraceMs: 2_000,
        command: escape(361),
        containment: 'auto',
      });
      assert.equal(r.exitCode, 0);
      const left = processesRunning('/bin/sleep 361');
      stray.push(...left);
      assert.deepEqual(left, [], 'the setsid env -i sleep is gone');
    });

    it('a gate that times out in its namespace still gets exit 124 and leaves nothing, detached or not', async () => {
      const r = await runGate({
        folder: ws.dir,
        label: 'final',
        timeoutMs: 300,
        killGraceMs: 300,
        command: `${escape(362)}; trap '' TERM; sleep 120`,
        containment: 'auto',
      });
      assert.deepEqual([r.exitCode, r.timedOut], [124, true]);
      const left = processesRunning('/bin/sleep 362');
      stray.push(...left);
      assert.deepEqual(left, []);
      assert.deepEqual(liveGroupMembers(groupOf(r)), []);
    });

    it('containment "marker" (the fallback) still ends a setsid process that kept its environment', async () => {
      assert.equal(resolveContainment('marker').kind, 'marker');
      const r = await runGate({
        folder: ws.dir,
        label: 'unit',
        timeoutMs: 60_000,
        killGraceMs: 2_000,
        command: '(setsid sleep 363 >/dev/null 2>&1 </dev/null &); echo detached',
        containment: 'marker',
      });
      assert.equal(r.exitCode, 0);
      assert.deepEqual(processesRunning('sleep 363'), []);
    });
  });
}

describe('gate runner, started from this process', () => gateBehaviour());

describe('gate runner, started from the helper process of a parallel run (issue 19)', () => {
  let release: () => Promise<void>;
  before(() => {
    release = holdGitWorker();
  });
  after(async () => {
    await release();
  });

  it('starts the gate from the helper: after the helper itself, no spawn in this thread', async () => {
    const ws = makeTempFolder('ralph-gates-', { ralphDir: true });
    try {
      assert.equal(await gitWorkerReady(), true); // starts the helper and waits until it is up
      const { value: r, spawns } = await spawnsDuring(() =>
        runGate({
          folder: ws.dir,
          label: 'basic',
          command: 'echo from-helper; echo err >&2; exit 3',
          timeoutMs: 60_000,
        }),
      );
      assert.equal(spawns, 0);
      assert.equal(r.exitCode, 3);
      assert.match(
        fs.readFileSync(r.logPath, 'utf8'),
        /=== cmd: [^\n]*\n===\nfrom-helper\nerr\n=== gate-run end exit=3/,
      );
    } finally {
      ws.dispose();
    }
  });

  gateBehaviour();
});

describe('gate runner: a gate whose helper process dies (issue 19)', () => {
  let release: () => Promise<void>;
  before(() => {
    release = holdGitWorker();
  });
  after(async () => {
    await release();
  });

  it('a gate whose helper dies ends at once with exit 127, its log saying why, its processes gone with the helper', async () => {
    const ws = makeTempFolder('ralph-gates-', { ralphDir: true });
    try {
      assert.equal(await gitWorkerReady(), true);
      const marker = ws.file('started');
      const gate = runGate({
        folder: ws.dir,
        label: 'basic',
        command: `echo $$ > '${marker}'; exec sleep 364`,
        timeoutMs: 60_000,
        killGraceMs: 1_000,
      });
      await waitForFile(marker);
      const kids = fs
        .readdirSync(`/proc/${process.pid}/task`)
        .flatMap((tid) =>
          fs.readFileSync(`/proc/${process.pid}/task/${tid}/children`, 'utf8').split(' ').filter(Boolean).map(Number),
        );
      const helperPid = kids.find((k) => {
        try {
          return fs.readFileSync(`/proc/${k}/cmdline`, 'utf8').split('\0')[1] === '-e';
        } catch {
          return false;
        }
      });
      assert.ok(helperPid, 'the helper process is a child of this one');
      process.kill(helperPid, 'SIGKILL');
      const r = await gate;
      assert.equal(r.exitCode, 127);
      assert.match(
        fs.readFileSync(r.logPath, 'utf8'),
        /=== gate-run lost the gate's exit: the helper process that started it ended before it did ===/,
      );
      assert.deepEqual(processesRunning('sleep 364'), []);
    } finally {
      ws.dispose();
    }
  });
});

describe('gate runner: files kept', () => {
  let ws: TempFolder;
  beforeEach(() => {
    ws = makeTempFolder('ralph-gates-', { ralphDir: true });
  });
  afterEach(() => ws.dispose());

  it('keeps only the newest logs of a label, with their exit files, and leaves other labels alone', async () => {
    ws.write('.ralph/gates/unit-20000101T000000Z-1.log', 'old unit\n');
    const results: GateResult[] = [];
    for (let i = 0; i < 4; i++)
      results.push(await runGate({ folder: ws.dir, label: 'basic', command: `echo ${i}`, keep: 2 }));
    const files = fs
      .readdirSync(path.join(ws.dir, '.ralph/gates'))
      .filter((f) => /^basic-\d/.test(f))
      .sort();
    const expected = results
      .slice(2)
      .flatMap((r) => [path.basename(r.logPath), path.basename(r.logPath).replace(/\.log$/, '.exit')])
      .sort();
    assert.deepEqual(files, expected);
    assert.ok(ws.exists('.ralph/gates/unit-20000101T000000Z-1.log'));
  });

  it('keeps 10 logs per label by default (§3.10)', async () => {
    for (let i = 0; i < 11; i++) await runGate({ folder: ws.dir, label: 'lint', command: 'true' });
    const logs = fs.readdirSync(path.join(ws.dir, '.ralph/gates')).filter((f) => /^lint-\d.*\.log$/.test(f));
    assert.equal(logs.length, 10);
  });

  it('the same verdict again: latest.exit keeps its file and gets a new mtime, latest.cmd is left as it was, latest.log is the new log', async () => {
    const gates = path.join(ws.dir, '.ralph/gates');
    await runGate({ folder: ws.dir, label: 'basic', command: 'echo one' });
    const old = new Date(Date.now() - 3_600_000);
    for (const f of ['basic-latest.exit', 'basic-latest.cmd']) fs.utimesSync(path.join(gates, f), old, old);
    const [exitBefore, cmdBefore] = ['basic-latest.exit', 'basic-latest.cmd'].map((f) =>
      fs.statSync(path.join(gates, f)),
    );
    const r = await runGate({ folder: ws.dir, label: 'basic', command: 'echo one' });
    const exitAfter = fs.statSync(path.join(gates, 'basic-latest.exit'));
    const cmdAfter = fs.statSync(path.join(gates, 'basic-latest.cmd'));
    assert.equal(exitAfter.ino, exitBefore!.ino);
    assert.ok(exitAfter.mtimeMs > exitBefore!.mtimeMs + 3_000_000, 'the mtime says when the latest gate ended');
    assert.deepEqual([cmdAfter.ino, cmdAfter.mtimeMs], [cmdBefore!.ino, cmdBefore!.mtimeMs]);
    assert.equal(ws.read('.ralph/gates/basic-latest.log'), fs.readFileSync(r.logPath, 'utf8'));
    // A different verdict and command are written anew.
    await runGate({ folder: ws.dir, label: 'basic', command: 'exit 4' });
    assert.deepEqual(
      [ws.read('.ralph/gates/basic-latest.exit'), ws.read('.ralph/gates/basic-latest.cmd')],
      ['4', 'exit 4'],
    );
  });

  it('a link planted at latest.exit, latest.cmd or latest.log is replaced, never written or touched through', async () => {
    const outside = makeTempFolder('ralph-outside-');
    try {
      const gates = path.join(ws.dir, '.ralph/gates');
      await runGate({ folder: ws.dir, label: 'basic', command: 'true' });
      const old = new Date(Date.now() - 3_600_000);
      for (const [f, text] of [
        ['basic-latest.exit', '0'],
        ['basic-latest.cmd', 'true'],
        ['basic-latest.log', 'theirs\n'],
      ] as const) {
        const target = path.join(outside.dir, f);
        fs.writeFileSync(target, text);
        fs.utimesSync(target, old, old);
        fs.rmSync(path.join(gates, f));
        fs.symlinkSync(target, path.join(gates, f));
      }
      await runGate({ folder: ws.dir, label: 'basic', command: 'true' });
      for (const f of ['basic-latest.exit', 'basic-latest.cmd', 'basic-latest.log']) {
        assert.equal(fs.lstatSync(path.join(gates, f)).isSymbolicLink(), false, f);
        const t = fs.statSync(path.join(outside.dir, f));
        assert.equal(Math.round(t.mtimeMs), old.getTime(), `${f}: the link's target is untouched`);
      }
      assert.equal(fs.readFileSync(path.join(outside.dir, 'basic-latest.log'), 'utf8'), 'theirs\n');
    } finally {
      outside.dispose();
    }
  });

  // Breaker finding: a hard link is a planted link too. `lutimes` acts on the inode, so a latest.exit that is a second
  // name of a file outside the workspace (same text, `ln ~/x .ralph/gates/basic-latest.exit`) had its mtime set.
  it('a hard link planted at latest.exit is replaced, never touched through', async () => {
    const outside = makeTempFolder('ralph-outside-');
    try {
      const gates = path.join(ws.dir, '.ralph/gates');
      await runGate({ folder: ws.dir, label: 'basic', command: 'true' });
      const old = new Date(Date.now() - 3_600_000);
      const target = path.join(outside.dir, 'theirs');
      fs.writeFileSync(target, '0');
      fs.utimesSync(target, old, old);
      fs.rmSync(path.join(gates, 'basic-latest.exit'));
      fs.linkSync(target, path.join(gates, 'basic-latest.exit'));
      await runGate({ folder: ws.dir, label: 'basic', command: 'true' });
      assert.equal(Math.round(fs.statSync(target).mtimeMs), old.getTime(), "the link's target is untouched");
      assert.notEqual(fs.statSync(path.join(gates, 'basic-latest.exit')).ino, fs.statSync(target).ino);
      assert.equal(ws.read('.ralph/gates/basic-latest.exit'), '0');
    } finally {
      outside.dispose();
    }
  });

  it('refuses an unknown label', async () => {
    await assert.rejects(
      runGate({ folder: ws.dir, label: 'smoke' as 'basic', command: 'true' }),
      /unknown gate label "smoke"/,
    );
  });
});

describe('gate runner: summary and failing lines', () => {
  it('a summary longer than 2048 bytes is cut to 2000 bytes plus a pointer to the log', () => {
    const s = gateSummary({
      label: 'full',
      exitCode: 1,
      durationMs: 12_400,
      logRelPath: '.ralph/gates/full-x.log',
      command: 'npm test',
      failingLines: Array.from({ length: 20 }, (_, i) => `FAIL ${'é'.repeat(100)} ${i}`),
    });
    assert.ok(Buffer.byteLength(s) <= SUMMARY_MAX_BYTES, String(Buffer.byteLength(s)));
    assert.ok(s.endsWith('\n[truncated — see .ralph/gates/full-x.log]\n'));
    assert.ok(s.startsWith('label: full\nexit: 1\nduration: 12s\nlog: .ralph/gates/full-x.log\ncmd: npm test\n'));
    assert.ok(!s.includes('\uFFFD'), 'no character is split');
  });

  const lines: [string, boolean][] = [
    [' FAIL  src/a.test.ts', true],
    ['✗ adds numbers', true],
    ['  × renders', true],
    ['✘ [ERROR] Could not resolve "x"', true],
    ['not ok 3 - parses', true],
    ['  2 failing', true],
    ['  1) parser', true],
    ['Error: boom', true],
    ['TypeError: x is not a function', true],
    ['AssertionError [ERR_ASSERTION]: Expected values to be strictly equal', true],
    ['src/x.ts(1,2): error TS2304: Cannot find name', true],
    ['ERROR in ./src/index.ts', true],
    ['  12:5  error  Unexpected any  @typescript-eslint/no-explicit-any', true],
    ['    at Object.<anonymous> (x.js:1:1)', false],
    ['  3 passing', false],
    ['Error handling works', false],
    ['PASS src/a.test.ts', false],
  ];
  for (const [line, failing] of lines)
    it(`"${line.trim()}" ${failing ? 'is' : 'is not'} a failing line`, () =>
      assert.equal(isFailingLine(line), failing));
});
