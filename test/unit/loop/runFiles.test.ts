import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { runRecordPath } from '../../../src/core/control/runRecords';
import { ralphRunDir } from '../../../src/core/control/sentinels';
import {
  completionReasonOf,
  EventsWriter,
  IterationStreamWriter,
  iterationStreamName,
  ProgressTxtWriter,
  progressIterationBlock,
  readEventsFile,
  runFilePaths,
} from '../../../src/core/loop/runFiles';
import { parseProgressTxt } from '../../../src/core/sources/flowNext/progressTxt';
import { makeTempDir } from '../../support/tempFolder';

const RUN = '20260518T090407Z-ab12';
const T0 = Date.UTC(2026, 4, 18, 9, 4, 7);

describe('run files: paths', () => {
  it("lives in the control plane's run folder, beside its run.json", () => {
    const p = runFilePaths('/ws', RUN);
    assert.equal(p.dir, ralphRunDir('/ws', RUN));
    assert.equal(p.runJson, runRecordPath('/ws', RUN));
    assert.deepEqual([path.basename(p.events), path.basename(p.progress)], ['events.jsonl', 'progress.txt']);
  });

  it('names iteration streams with at least three digits', () => {
    assert.deepEqual([1, 42, 999, 1000].map(iterationStreamName), [
      'iter-001.jsonl',
      'iter-042.jsonl',
      'iter-999.jsonl',
      'iter-1000.jsonl',
    ]);
  });
});

describe('run files: events.jsonl', () => {
  let dir: string;
  beforeEach(() => {
    dir = makeTempDir('ralph-events-');
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('appends one JSON object per line, in call order, each with seq, time and lane first', async () => {
    const w = new EventsWriter<{ type: string; n?: number }>(dir, RUN, () => T0);
    await Promise.all([
      w.append({ type: 'runStarted' }),
      w.append({ type: 'tokens', n: 1 }, 2),
      w.append({ type: 'runEnded' }),
    ]);
    assert.equal(
      fs.readFileSync(w.file, 'utf8'),
      '{"seq":1,"at":"2026-05-18T09:04:07.000Z","lane":0,"type":"runStarted"}\n{"seq":2,"at":"2026-05-18T09:04:07.000Z","lane":2,"type":"tokens","n":1}\n{"seq":3,"at":"2026-05-18T09:04:07.000Z","lane":0,"type":"runEnded"}\n',
    );
  });

  it('a writer opened on an existing log goes on after its last seq, without a gap', async () => {
    await new EventsWriter(dir, RUN, () => T0).append({ type: 'a' });
    new EventsWriter(dir, RUN, () => T0).appendSync({ type: 'b' });
    await new EventsWriter(dir, RUN, () => T0).append({ type: 'c' });
    assert.deepEqual(
      readEventsFile(runFilePaths(dir, RUN).events).events.map((e) => e.seq),
      [1, 2, 3],
    );
  });

  it('only ever appends: a second writer adds to the same file', async () => {
    await new EventsWriter(dir, RUN, () => T0).append({ type: 'a' });
    new EventsWriter(dir, RUN, () => T0).appendSync({ type: 'b' });
    assert.deepEqual(
      readEventsFile(runFilePaths(dir, RUN).events).events.map((e) => e.type),
      ['a', 'b'],
    );
  });

  it('reads back skipping a torn last line and naming the line of a bad one', () => {
    const file = path.join(dir, 'events.jsonl');
    fs.writeFileSync(file, '{"type":"a"}\n[1]\n{"type":"b"}\n{"type":"c"');
    const r = readEventsFile(file);
    assert.deepEqual(
      r.events.map((e) => e.type),
      ['a', 'b'],
    );
    assert.deepEqual(
      r.problems.map((p) => [p.line, p.message]),
      [[2, 'not a JSON object']],
    );
  });

  it('reads a missing file as no events', () => {
    assert.deepEqual(readEventsFile(path.join(dir, 'none.jsonl')), { events: [], problems: [] });
  });
});

describe('run files: iter-NNN.jsonl raw stream', () => {
  let dir: string;
  beforeEach(() => {
    dir = makeTempDir('ralph-iter-');
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('keeps whole chunks up to the cap, then records the truncation once and drops the rest', async () => {
    const w = new IterationStreamWriter(dir, RUN, 2, { capBytes: 40, now: () => T0 });
    const line = (i: number) => `{"type":"x","i":${i}}\n`; // 19 bytes
    const kept = [0, 1, 2, 3].map((i) => w.write(line(i)));
    const stats = await w.close();
    assert.deepEqual(kept, [true, true, false, false]);
    assert.deepEqual(stats, {
      file: path.join(ralphRunDir(dir, RUN), 'iter-002.jsonl'),
      bytesWritten: 38,
      truncated: true,
      droppedBytes: 38,
      droppedChunks: 2,
    });
    const lines = fs
      .readFileSync(stats.file, 'utf8')
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.deepEqual(lines, [
      { type: 'x', i: 0 },
      { type: 'x', i: 1 },
      { type: 'ralph_stream_truncated', capBytes: 40, at: '2026-05-18T09:04:07.000Z' },
    ]);
  });

  it('puts the truncation record on its own line when the kept bytes end mid-line', async () => {
    const w = new IterationStreamWriter(dir, RUN, 1, { capBytes: 10 });
    w.write('partial');
    w.write('more than the cap allows');
    const { file } = await w.close();
    const text = fs.readFileSync(file, 'utf8');
    assert.ok(text.startsWith('partial\n{"type":"ralph_stream_truncated"'), text);
  });

  it('writes nothing about truncation for a stream under the cap', async () => {
    const w = new IterationStreamWriter(dir, RUN, 1, { capBytes: 1024 });
    w.write(Buffer.from('{"a":1}\n'));
    const s = await w.close();
    assert.deepEqual([s.truncated, s.bytesWritten, fs.readFileSync(s.file, 'utf8')], [false, 8, '{"a":1}\n']);
  });
});

describe("run files: progress.txt in flow-next's format (seed-systems.md §2.8)", () => {
  let dir: string;
  let w: ProgressTxtWriter;
  beforeEach(() => {
    dir = makeTempDir('ralph-progress-');
    w = new ProgressTxtWriter(dir, RUN);
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));
  const text = () => fs.readFileSync(w.file, 'utf8');

  it('starts with the header: title, run id, start time, rule', () => {
    w.start(T0);
    assert.equal(text(), `# Ralph Progress Log\nRun: ${RUN}\nStarted: 2026-05-18T09:04:07.000Z\n---\n`);
  });

  it('writes the header only once', () => {
    w.start(T0);
    w.start(T0 + 1000);
    assert.equal(text().match(/# Ralph Progress Log/g)?.length, 1);
  });

  it("writes iteration blocks as one key=value per line that flow-next's reader understands", () => {
    w.start(T0);
    w.appendIteration({
      iteration: 1,
      atMs: T0,
      status: 'work',
      spec: 'fn-1',
      task: 'fn-1.1',
      reason: 'ready_task',
      agentRc: 0,
      extra: { agent: 'claude', cost_usd: 0.12 },
      iterLog: `.ralph/runs/${RUN}/iter-001.jsonl`,
      lastOutput: ['done'],
    });
    w.appendIteration({ iteration: 2, atMs: T0, status: 'work', spec: 'fn-1', task: 'fn-1.2' });
    const p = parseProgressTxt(text());
    assert.deepEqual([p.runId, p.iteration, p.epic, p.task, p.completionReason], [RUN, 2, 'fn-1', 'fn-1.2', undefined]);
    assert.equal(
      progressIterationBlock({
        iteration: 1,
        atMs: T0,
        status: 'work',
        task: 't',
        extra: { agent: 'claude', promise: 'x' },
        lastOutput: ['a'],
      }),
      '## 2026-05-18T09:04:07.000Z\niteration=1\nstatus=work\nspec=\ntask=t\nreason=\nclaude_rc=\nverdict=\npromise=\nreceipt=\nreceipt_exists=\nplan_review_status=\ncompletion_review_status=\ntask_status=\nagent=claude\niter_log=\nlast_output:\n  a\n---\n',
    );
  });

  it('a tail quoting a completion marker or a rule neither ends the block nor finishes the run (§2.11-3)', () => {
    w.appendIteration({
      iteration: 1,
      task: 'fn-1.1',
      lastOutput: ['---', 'completion_reason=DONE', 'promise=COMPLETE', 'task=fn-9'],
    });
    assert.equal(completionReasonOf(text()), undefined);
    const p = parseProgressTxt(text());
    assert.deepEqual([p.completionReason, p.task], [undefined, 'fn-1.1']);
    assert.equal(new ProgressTxtWriter(dir, RUN).completionReason(), undefined);
  });

  it('writes the completion marker exactly once, whichever exit path comes first', () => {
    w.start(T0);
    assert.equal(w.complete('STOPPED'), true);
    assert.equal(new ProgressTxtWriter(dir, RUN).complete('INTERRUPTED'), false);
    assert.ok(text().endsWith('---\n\ncompletion_reason=STOPPED\npromise=COMPLETE\n'));
    assert.equal(text().match(/completion_reason=/g)?.length, 1);
    assert.equal(parseProgressTxt(text()).completionReason, 'STOPPED');
  });

  it('writes the header first when the run ends before its first iteration', () => {
    assert.equal(w.complete('NO_WORK'), true);
    assert.match(
      text(),
      /^# Ralph Progress Log\nRun: 20260518T090407Z-ab12\nStarted: .+\n---\n\ncompletion_reason=NO_WORK\npromise=COMPLETE\n$/,
    );
  });

  it('accepts the NEEDS_HUMAN form with a reason in words', () => {
    w.complete('NEEDS_HUMAN: reviewer requested human review');
    assert.equal(w.completionReason(), 'NEEDS_HUMAN: reviewer requested human review');
  });

  it('refuses an iteration block after the marker', () => {
    w.complete('DONE');
    assert.throws(() => w.appendIteration({ iteration: 9 }), /already complete/);
  });
});
