import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { quantumFileSchema } from '../../../src/core/model/quantum';
import { quantumJson, tempWorkspace, type TempWorkspace } from '../../support/workspace';
import { cliPath, runCliAsync } from '../../support/cli';

/**
 * The two safety properties of the store, checked against real processes running dist/cli.js:
 * the cross-process lock loses no update, and the atomic write never leaves a broken file.
 * Each `task block` appends one failure-log entry and counts one attempt, so every update is visible.
 */
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/**
 * Resolves with `'changed'` once `file` reads other than `before` (checked at each change the folder reports, not by
 * polling: reading a 50 kB file every few ms starved the writers on a loaded machine), or with `'exited'` when
 * `exited` settles first (a writer that ends before its first write must fail the test, not hang it).
 */
async function changedOrExited(file: string, before: string, exited: Promise<unknown>): Promise<'changed' | 'exited'> {
  let watcher: fs.FSWatcher | undefined;
  try {
    return await Promise.race([
      new Promise<'changed'>((resolve) => {
        const check = () => {
          if (fs.readFileSync(file, 'utf8') !== before) resolve('changed');
        };
        watcher = fs.watch(path.dirname(file), check);
        check();
      }),
      exited.then(() => 'exited' as const),
    ]);
  } finally {
    watcher?.close();
  }
}

describe('cli: write safety', function () {
  // Hundreds of CLI processes per test: the limit catches a hang, it is no bound on a loaded machine's speed (180 s
  // was too little beside the e2e tier at a load average of 25).
  this.timeout(900_000);
  let ws: TempWorkspace;
  /** The killer test's writers of the moment (one per lane): ended after a failure too (each repeats a million times). */
  const writers = new Set<ReturnType<typeof spawn>>();
  afterEach(() => {
    for (const w of writers) if (w.exitCode === null && w.signalCode === null) w.kill('SIGKILL');
    writers.clear();
    ws?.dispose();
  });

  type Story = { status: string; retries: { attempts: number; maxAttempts: number; failureLog: { error: string }[] } };
  const story = (text: string): Story => quantumFileSchema.parse(JSON.parse(text)).stories[0] as unknown as Story;

  it('two processes doing 500 conflicting updates each on one quantum.json lose none', async () => {
    ws = tempWorkspace('ralph-safety-');
    ws.write('quantum.json', quantumJson([{ id: 'US-001', status: 'in_progress', maxAttempts: 100_000 }]));
    const [a, b] = await Promise.all([
      runCliAsync(ws.dir, ['task', 'block', 'US-001', '--reason', 'a', '--repeat', '500', '--json']),
      runCliAsync(ws.dir, ['task', 'block', 'US-001', '--reason', 'b', '--repeat', '500', '--json']),
    ]);
    assert.deepEqual([a.code, b.code, a.stderr, b.stderr], [0, 0, '', '']);
    const s = story(ws.read('quantum.json'));
    assert.equal(s.retries.attempts, 1000);
    const errors = s.retries.failureLog.map((e) => e.error);
    assert.equal(errors.length, 1000);
    for (const who of ['a', 'b']) {
      const mine = errors.filter((e) => e.startsWith(`${who}#`)).map((e) => Number(e.slice(2)));
      assert.deepEqual(
        mine,
        Array.from({ length: 500 }, (_, i) => i),
        `every update of process ${who}, in order`,
      );
    }
    assert.ok(!ws.exists('quantum.json.lock'), 'the lock is released');
  });

  it('a writer killed with SIGKILL at random points 200 times always leaves the old or the new file', async () => {
    // Two lanes of 100 kills, each on its own workspace, so both cores work (Node's start-up dominates a round).
    const lanes = [tempWorkspace('ralph-kill-'), tempWorkspace('ralph-kill-')];
    try {
      const results = await Promise.all(lanes.map((lane, n) => killLane(lane, n, 100)));
      const interrupted = results.reduce((a, b) => a + b, 0);
      assert.ok(interrupted >= 140, `most kills landed while the writer was writing (${interrupted}/200)`);
    } finally {
      for (const lane of lanes) lane.dispose();
    }
  });

  /** Runs `rounds` spawn-and-kill rounds on one workspace; returns how many kills came after at least one write. */
  async function killLane(lane: TempWorkspace, laneNo: number, rounds: number): Promise<number> {
    // A larger file makes each write take long enough to be interrupted inside it.
    const padding = Array.from({ length: 400 }, (_, i) => `pattern ${i} ${'x'.repeat(100)}`);
    lane.write(
      'quantum.json',
      quantumJson([{ id: 'US-001', status: 'in_progress', maxAttempts: 1_000_000 }], { codebasePatterns: padding }),
    );
    let interrupted = 0;
    for (let round = 0; round < rounds; round++) {
      const before = lane.read('quantum.json');
      const attemptsBefore = story(before).retries.attempts;
      const tag = `k${laneNo}-${round}`;
      const child = spawn(
        process.execPath,
        [cliPath, '-C', lane.dir, 'task', 'block', 'US-001', '--reason', tag, '--repeat', '1000000'],
        { stdio: ['ignore', 'ignore', 'pipe'] },
      );
      writers.add(child);
      let stderr = '';
      child.stderr.on('data', (d) => {
        if (stderr.length < 4096) stderr += String(d);
      });
      const exited = new Promise<unknown>((r) => child.once('exit', r));
      void exited.then(() => writers.delete(child));
      // Kill at a random point: one round in four anywhere in start-up, the others at a random moment after the
      // writer's first write, i.e. in the middle of its lock / read / write / rename loop.
      if (round % 4 === 0) await sleep(Math.random() * 250);
      else {
        const first = await changedOrExited(path.join(lane.dir, 'quantum.json'), before, exited);
        assert.equal(first, 'changed', `writer ${tag} ended before its first write: ${stderr}`);
        await sleep(Math.random() * 30);
      }
      child.kill('SIGKILL');
      await exited;
      const s = story(lane.read('quantum.json')); // throws on a torn or invalid file
      const mine = s.retries.failureLog.slice(attemptsBefore).map((e) => e.error);
      assert.equal(s.retries.attempts, s.retries.failureLog.length, 'attempts and the log moved together');
      assert.deepEqual(
        mine,
        mine.map((_, i) => `${tag}#${i}`),
        'the file is exactly one of the states the writer produced',
      );
      if (mine.length) interrupted++;
      // The killed writer's lock would block the next writer until it goes stale (LOCK_STALE_MS): clear it, as the
      // stale rule would, and remove the killed writer's abandoned temporary files.
      fs.rmSync(path.join(lane.dir, 'quantum.json.lock'), { recursive: true, force: true });
      for (const f of fs.readdirSync(lane.dir))
        if (/^\.quantum\.json\.\d+\.[0-9a-f]+\.tmp$/.test(f)) fs.rmSync(path.join(lane.dir, f));
    }
    return interrupted;
  }
});
