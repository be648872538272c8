import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import { RunFollower } from '../../../src/core/control/runFollower';
import { runViewOf, withFollowEnd } from '../../../src/core/control/runView';
import {
  runLogLine,
  type EngineEvent,
  type RunLogEntry,
  type UnknownRunLogEntry,
} from '../../../src/core/model/runEvent';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

const RUN = '20261201T090000Z-ab12';
const AT = '2026-12-01T09:00:00.000Z';
const LOG = `.ralph/runs/${RUN}/events.jsonl`;
const HOST = os.hostname();

const started: EngineEvent = {
  type: 'runStarted',
  runId: RUN,
  folder: '/ws',
  source: 'flow-next',
  agent: 'claude',
  maxIterations: 3,
  gates: {},
};
const progress = (done: number): EngineEvent => ({ type: 'progress', done, total: 3, text: `${done}/3 done` });
const end: EngineEvent = {
  type: 'runEnded',
  state: 'stopped',
  reason: 'stopped by STOP',
  completionReason: 'STOPPED',
  exitCode: 3,
  iterations: 1,
  costUsd: 0,
  done: 1,
  total: 3,
};
const line = (seq: number, e: EngineEvent) => runLogLine(seq, AT, 0, e);

function record(t: TempFolder, state: string, pid = 999_999): void {
  t.write(
    `.ralph/runs/${RUN}/run.json`,
    JSON.stringify({ runId: RUN, pid, host: HOST, startedAt: AT, state, iteration: 1, currentItem: null }),
  );
}

const types = (entries: (RunLogEntry | UnknownRunLogEntry)[]) => entries.map((e) => e.type);

describe('RunFollower: our runs', () => {
  let t: TempFolder;
  beforeEach(() => {
    t = makeTempFolder('ralph-follow-');
  });
  afterEach(() => t.dispose());

  it('reads nothing while the log does not exist yet, then its entries once it does', () => {
    const f = new RunFollower(t.dir, RUN, { kind: 'ralph', isAlive: () => true, hostNames: [HOST] });
    assert.deepEqual(f.poll(), { entries: [], problems: [], offset: 0, end: null });
    t.write(LOG, line(1, started));
    assert.deepEqual(types(f.poll().entries), ['runStarted']);
  });

  it('leaves a partial last line for the next read', () => {
    const whole = line(2, progress(1));
    t.write(LOG, line(1, started) + whole.slice(0, 10));
    const f = new RunFollower(t.dir, RUN, { isAlive: () => true, hostNames: [HOST] });
    const first = f.poll();
    assert.deepEqual(types(first.entries), ['runStarted']);
    assert.equal(first.offset, Buffer.byteLength(line(1, started)));
    assert.deepEqual(first.problems, []);
    fs.appendFileSync(`${t.dir}/${LOG}`, whole.slice(10));
    const second = f.poll();
    assert.deepEqual(
      second.entries.map((e) => e.seq),
      [2],
    );
  });

  it('starts from an offset and goes on from there', () => {
    t.write(LOG, line(1, started) + line(2, progress(1)) + line(3, progress(2)));
    const f = new RunFollower(t.dir, RUN, {
      fromOffset: Buffer.byteLength(line(1, started)),
      isAlive: () => true,
      hostNames: [HOST],
    });
    assert.deepEqual(
      f.poll().entries.map((e) => e.seq),
      [2, 3],
    );
  });

  it('reports a bad line as a problem with file and line, and goes on', () => {
    t.write(LOG, `${line(1, started)}not json\n${line(2, progress(1))}`);
    const b = new RunFollower(t.dir, RUN, { isAlive: () => true, hostNames: [HOST] }).poll();
    assert.deepEqual(types(b.entries), ['runStarted', 'progress']);
    assert.equal(b.problems.length, 1);
    assert.equal(b.problems[0]!.line, 2);
    assert.match(b.problems[0]!.file, /events\.jsonl$/);
  });

  it("ends with the run's exit code when it reads runEnded", () => {
    record(t, 'stopped');
    t.write(LOG, line(1, started) + line(2, end));
    const f = new RunFollower(t.dir, RUN, { isAlive: () => true, hostNames: [HOST] });
    assert.deepEqual(f.poll().end, { kind: 'ended', exitCode: 3 });
    assert.deepEqual(f.poll(), { entries: [], problems: [], offset: f.offset, end: { kind: 'ended', exitCode: 3 } });
  });

  it('reports a run whose engine died without ending it as crashed', () => {
    record(t, 'running');
    t.write(LOG, line(1, started));
    const f = new RunFollower(t.dir, RUN, { isAlive: () => false, hostNames: [HOST] });
    const b1 = f.poll();
    assert.equal(b1.end, null, 'entries first');
    const b2 = f.poll();
    assert.equal(b2.end?.kind, 'crashed');
    assert.equal(withFollowEnd(runViewOf(RUN, b1.entries), b2.end!).state, 'crashed');
  });

  it('does not call a run of another host crashed', () => {
    record(t, 'running');
    t.write(LOG, line(1, started));
    const f = new RunFollower(t.dir, RUN, { isAlive: () => false, hostNames: ['elsewhere'] });
    f.poll();
    assert.equal(f.poll().end, null);
  });

  it('ends a run whose record is final although its log has no runEnded (after the grace)', () => {
    record(t, 'stopped');
    t.write(LOG, line(1, started));
    const f = new RunFollower(t.dir, RUN, { isAlive: () => true, hostNames: [HOST], endGraceMs: 0 });
    f.poll();
    assert.deepEqual(f.poll().end, { kind: 'ended', exitCode: 3 });
  });

  it('follows a log that grows while followed, emitting every entry once and the end', async () => {
    record(t, 'running', process.pid);
    const f = new RunFollower(t.dir, RUN, { pollMs: 10, hostNames: [HOST] });
    const seen: number[] = [];
    f.on('entries', (es) => seen.push(...es.map((e) => e.seq)));
    const ended = new Promise<unknown>((resolve) => f.on('end', resolve));
    f.start();
    fs.mkdirSync(`${t.dir}/.ralph/runs/${RUN}`, { recursive: true });
    for (let i = 1; i <= 20; i++) {
      fs.appendFileSync(`${t.dir}/${LOG}`, line(i, i === 20 ? end : progress(i)));
      await new Promise((r) => setTimeout(r, 2));
    }
    assert.deepEqual(await ended, { kind: 'ended', exitCode: 3 });
    assert.deepEqual(
      seen,
      Array.from({ length: 20 }, (_, i) => i + 1),
    );
  });
});

describe('RunFollower: flow-next driver runs', () => {
  let t: TempFolder;
  beforeEach(() => {
    t = makeTempFolder('ralph-follow-flow-');
  });
  afterEach(() => t.dispose());
  const FLOW_RUN = `20261201T090000Z-${HOST}-dev-999999-ab12`;
  const dir = `scripts/ralph/runs/${FLOW_RUN}`;
  const header = `# Ralph Progress Log\nRun: ${FLOW_RUN}\nStarted: ${AT}\n---\n`;
  const block = `## 2026-12-01T09:05:00Z\niteration=1\nstatus=work\nspec=fn-1\ntask=fn-1.1\nreason=\nclaude_rc=0\nverdict=SHIP\npromise=\niter_log=${dir}/iter-001.log\nlast_output:\n---\n  quoted\n---\n`;
  const assistant = JSON.stringify({
    type: 'assistant',
    message: {
      id: 'm1',
      model: 'claude-sonnet-4-5',
      role: 'assistant',
      content: [{ type: 'text', text: 'Working on fn-1.1' }],
      usage: { input_tokens: 1000, output_tokens: 50, cache_read_input_tokens: 20000, cache_creation_input_tokens: 0 },
    },
  });

  it('turns progress.txt and the iteration log into entries: start, iteration, tokens, output, end', () => {
    t.write(`${dir}/progress.txt`, header);
    t.write(`${dir}/iter-001.log`, `${assistant}\n`);
    const f = new RunFollower(t.dir, FLOW_RUN, { isAlive: () => true, hostNames: [HOST] });
    assert.equal(f.kind, 'flow-next');
    const b1 = f.poll();
    assert.deepEqual(types(b1.entries), ['runStarted', 'iterationStarted', 'output', 'tokens']);
    const tok = b1.entries[3] as Extract<RunLogEntry, { type: 'tokens' }>;
    assert.ok(tok.contextTokens > 20_000, `context ${tok.contextTokens}`);
    fs.appendFileSync(`${t.dir}/${dir}/progress.txt`, `${block}\ncompletion_reason=DONE\npromise=COMPLETE\n`);
    const b2 = f.poll();
    assert.deepEqual(types(b2.entries), ['iterationEnded', 'runEnded']);
    assert.deepEqual(b2.end, { kind: 'ended', exitCode: 0 });
    const v = runViewOf(FLOW_RUN, [...b1.entries, ...b2.entries], 'flow-next');
    assert.deepEqual([v.state, v.iteration, v.end?.completionReason], ['completed', 1, 'DONE']);
    assert.deepEqual(
      v.activity.map((a) => a.seq),
      [...b1.entries, ...b2.entries].filter((e) => e.type !== 'tokens').map((e) => e.seq),
    );
  });

  it('dates its entries by the files they come from, not by the time they are read', () => {
    t.write(`${dir}/progress.txt`, `${header}${block}`);
    t.write(`${dir}/iter-001.log`, `${assistant}\n`);
    const written = new Date('2026-12-01T09:05:30.000Z');
    fs.utimesSync(`${t.dir}/${dir}/progress.txt`, written, written);
    fs.utimesSync(`${t.dir}/${dir}/iter-001.log`, written, written);
    const f = new RunFollower(t.dir, FLOW_RUN, { isAlive: () => true, hostNames: [HOST] });
    const entries = f.poll().entries;
    assert.ok(entries.length > 0);
    for (const e of entries) assert.equal(e.at, written.toISOString(), e.type);
  });

  it('reports a driver whose pid is gone without a marker as crashed', () => {
    t.write(`${dir}/progress.txt`, header + block);
    const f = new RunFollower(t.dir, FLOW_RUN, { isAlive: () => false, hostNames: [HOST] });
    f.poll();
    assert.equal(f.poll().end?.kind, 'crashed');
  });
});
