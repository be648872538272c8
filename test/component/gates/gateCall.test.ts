import * as assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { gateLockDir } from '../../../src/core/gates/gateLock';
import { parentDeathPrefix } from '../../../src/core/process/containment';
import { repoRoot } from '../../support/repoRoot';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';
import { listProcesses, liveGroupMembers, processesRunning, waitForFile, waitUntil } from '../../support/processes';

/** `ralph gate` as processes (issue 17, seed-systems.md §3.10): joining, the watchdog, killed waiters. */

const cli = path.join(repoRoot, 'dist', 'cli.js');

interface Done {
  code: number | null;
  out: string;
}

function gate(
  ws: TempFolder,
  args: string[],
  env: Record<string, string> = {},
): { child: ChildProcess; done: Promise<Done> } {
  const child = spawn(process.execPath, [cli, '-C', ws.dir, 'gate', ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const done = new Promise<Done>((resolve) => child.on('close', (code) => resolve({ code, out })));
  return { child, done };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('gate runner: ralph gate processes (issue 17)', function () {
  this.timeout(60_000);
  let ws: TempFolder;
  beforeEach(() => {
    ws = makeTempFolder('ralph-gates-', { ralphDir: true });
  });
  afterEach(() => ws.dispose());

  it('two callers with the same command share one run; a different command is busy (75)', async () => {
    // The shared run lasts long enough that both later callers (separate node processes, slow on a loaded machine) arrive while it runs.
    const cmd = 'echo run >> runs.txt; touch started; sleep 8; echo finished';
    const a = gate(ws, ['unit', '--', cmd]);
    await waitForFile(path.join(ws.dir, 'started'));
    const b = gate(ws, ['unit', '--', cmd]);
    const c = gate(ws, ['unit', '--lock-wait-ms', '300', '--', 'echo other']);
    const [ra, rb, rc] = await Promise.all([a.done, b.done, c.done]);
    assert.equal(ra.code, 0, ra.out);
    assert.equal(rb.code, 0, rb.out);
    assert.equal(ws.read('runs.txt'), 'run\n', 'the command ran once');
    assert.match(rb.out, /=== GATE unit exit=0 .*\n--- tail \(last 60 lines\) ---\nrun\n|finished/);
    assert.equal(rc.code, 75, rc.out);
    assert.match(rc.out, /BUSY/);
    assert.equal(fs.existsSync(gateLockDir(ws.dir, 'unit')), false, 'the lock is released');
  });

  it('two working trees running the same command hold different locks: each runs its own code (no join, no 75)', async () => {
    // The worst case: the second tree shares the first one's .ralph/ (a symlink), so both locks sit in one folder.
    // The one command waits for the other tree's run to start: both pass only when the two ran at the same time.
    const other = makeTempFolder('ralph-gates-tree2-');
    try {
      fs.symlinkSync(path.join(ws.dir, '.ralph'), path.join(other.dir, '.ralph'));
      ws.write('peer', other.dir);
      other.write('peer', ws.dir);
      const cmd =
        'touch started; for i in $(seq 400); do [ -e "$(cat peer)/started" ] && exit 0; sleep 0.1; done; exit 9';
      assert.notEqual(gateLockDir(ws.dir, 'unit'), gateLockDir(other.dir, 'unit'));
      const a = gate(ws, ['unit', '--', cmd]);
      await waitForFile(path.join(ws.dir, 'started'));
      const b = await gate(other, ['unit', '--lock-wait-ms', '300', '--', cmd]).done;
      assert.equal(b.code, 0, b.out);
      assert.equal((await a.done).code, 0, 'the first tree saw the second one run beside it');
    } finally {
      other.dispose();
    }
  });

  it("writes the handoff's Last gate state and leaves the agent's Working set as it was", async () => {
    ws.write(
      '.ralph/handoff.md',
      '# Loop Handoff\n\n## Working set\n- WS-MARKER: halfway through the parser\n\n## Last gate state\n\nold\n',
    );
    const r = await gate(ws, ['unit', '--', 'echo "FAIL one test"; exit 1']).done;
    assert.equal(r.code, 1);
    assert.match(r.out, /--- failing-tests \(first 80 matches\) ---\nFAIL one test\n=== END GATE ===/);
    const handoff = ws.read('.ralph/handoff.md');
    assert.match(handoff, /## Working set\n- WS-MARKER: halfway through the parser\n/);
    assert.match(handoff, /## Last gate state\n[\s\S]*label: unit[\s\S]*exit: 1/);
    assert.doesNotMatch(handoff, /\nold\n/);
  });

  it('a gate that outlives its timeout is killed with its children (124)', async () => {
    // The child announces itself before it becomes `sleep 3031`; it is looked for only after the gate ended, so a
    // loaded machine that reaches the timeout before the test looks cannot make the test miss it. Inside the gate's
    // PID namespace `$!` is not the host's pid: the child is found by its command line.
    const r = gate(
      ws,
      [
        'lint',
        '--timeout-ms',
        '2000',
        '--',
        '(touch child; exec sleep 3031) & until [ -e child ]; do :; done; touch started; sleep 30',
      ],
      { RALPH_GATE_KILL_GRACE: '1' },
    );
    const done = await r.done;
    assert.equal(done.code, 124, done.out);
    assert.ok(fs.existsSync(path.join(ws.dir, 'started')), 'the background child had started');
    assert.equal(ws.read('.ralph/gates/lint-latest.exit'), '124');
    await waitUntil(() => processesRunning('sleep 3031').length === 0);
    const pgid = Number(
      /-(\d+)\.log$/.exec(
        fs.readdirSync(path.join(ws.dir, '.ralph/gates')).find((f) => /^lint-\d/.test(f) && f.endsWith('.log'))!,
      )![1],
    );
    assert.deepEqual(liveGroupMembers(pgid), []);
  });

  it('the waiter gives up with STILL RUNNING (75) while the gate goes on', async () => {
    const r = await gate(ws, ['unit', '--wait-ms', '500', '--', 'sleep 1.5; echo late > late.txt']).done;
    assert.equal(r.code, 75);
    assert.match(r.out, /=== GATE unit STILL RUNNING pid=\d+ waited=\d+s/);
    const again = await gate(ws, ['unit', '--', 'sleep 1.5; echo late > late.txt']).done;
    assert.equal(again.code, 0, 'the same command joins the running gate');
    assert.equal(ws.read('late.txt'), 'late\n');
  });

  it('a runner ended with SIGTERM cancels its gate: the waiter gets the cancelled verdict (130), the command is gone', async () => {
    const a = gate(ws, ['e2e', '--', 'touch started; sleep 3033']);
    await waitForFile(path.join(ws.dir, 'started'));
    const runnerPid = Number(fs.readFileSync(path.join(gateLockDir(ws.dir, 'e2e'), 'pid'), 'utf8'));
    process.kill(runnerPid, 'SIGTERM');
    const r = await a.done;
    assert.equal(r.code, 130, r.out);
    assert.match(r.out, /=== GATE e2e exit=130 /);
    await waitUntil(() => !listProcesses().some((p) => p.cmdline === 'sleep 3033'));
  });

  it('a killed waiter and a killed runner leave no lock that blocks the next gate', async () => {
    const a = gate(ws, ['e2e', '--', 'touch started; sleep 3032']);
    await waitForFile(path.join(ws.dir, 'started'));
    const lock = gateLockDir(ws.dir, 'e2e');
    const runnerPid = Number(fs.readFileSync(path.join(lock, 'pid'), 'utf8'));
    a.child.kill('SIGKILL');
    await a.done;
    // The runner survives its waiter (the gate goes on); kill it hard too, as a crash would.
    process.kill(runnerPid, 'SIGKILL');
    // Its command dies with it (setpriv --pdeathsig, issue 11 breaker-s5 35); where setpriv is missing it is
    // orphaned and ended here so the test leaves nothing behind (found by its command line: inside the gate's PID
    // namespace `$$` is not the host's pid).
    const left = () => listProcesses().filter((p) => p.cmdline === 'sleep 3032');
    for (let i = 0; i < 100 && left().length && parentDeathPrefix(); i++) await sleep(50);
    const orphans = left();
    for (const p of orphans) process.kill(-p.pgid, 'SIGKILL');
    if (parentDeathPrefix())
      assert.deepEqual(
        orphans.map((p) => p.cmdline),
        [],
        'the gate command outlived its killed runner',
      );
    const next = await gate(ws, ['e2e', '--lock-wait-ms', '1000', '--', 'echo next']).done;
    assert.equal(next.code, 0, next.out);
    assert.match(next.out, /next/);
  });
});
