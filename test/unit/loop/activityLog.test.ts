import * as assert from 'node:assert/strict';
import { contextFigure } from '../../../src/core/control/contextFigure';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { makeTempDir } from '../../support/tempFolder';
import { ActivityLog } from '../../../src/core/loop/activityLog';
import {
  ACTIVITY,
  labelled,
  loopEndText,
  loopStartText,
  maxLoopsReason,
  ralphStopText,
  tasksDetail,
  tokensText,
} from '../../../src/core/control/activityText';

/** A fixed local clock: 2026-05-18 09:04:07. */
const clock = () => new Date(2026, 4, 18, 9, 4, 7);

const fig = (tokens: number) => contextFigure({ tokens, window: 200_000, warnAt: 148_750, rotateAt: 170_000 });

describe('activity log: lines (seed-systems.md §3.12)', () => {
  let dir: string;
  let log: ActivityLog;
  beforeEach(() => {
    dir = makeTempDir('ralph-activity-');
    log = new ActivityLog(dir, { now: clock });
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('appends "[HH:MM:SS] text" in local time, creating .ralph/', async () => {
    await log.append(loopStartText(1, tasksDetail(1, 3)));
    await log.append(loopEndText(1, ACTIVITY.NATURAL_END));
    assert.equal(
      fs.readFileSync(log.paths.activity, 'utf8'),
      '[09:04:07] LOOP 1 START — Tasks: 1/3 complete (2 remaining)\n[09:04:07] LOOP 1 END — NATURAL END\n',
    );
  });

  it('stamps every line of a multi-line text', async () => {
    await log.append('first\nsecond');
    assert.equal(fs.readFileSync(log.paths.activity, 'utf8'), '[09:04:07] first\n[09:04:07] second\n');
  });

  it('keeps the order of appends that were not awaited one by one', async () => {
    await Promise.all(Array.from({ length: 50 }, (_, i) => log.append(`line ${i}`)));
    const lines = fs.readFileSync(log.paths.activity, 'utf8').trimEnd().split('\n');
    assert.deepEqual(
      lines,
      Array.from({ length: 50 }, (_, i) => `[09:04:07] line ${i}`),
    );
  });

  it('writes errors.log as "[HH:MM:SS] message"', async () => {
    await log.error('gate basic failed (exit 1)');
    assert.equal(fs.readFileSync(log.paths.errors, 'utf8'), '[09:04:07] gate basic failed (exit 1)\n');
  });

  it('writes progress.md with its header once, then dated entries', async () => {
    await log.progress('Task T001 done');
    await log.progress('Task T002 done\n');
    assert.equal(
      fs.readFileSync(log.paths.progress, 'utf8'),
      '# Progress Log\n\n### 2026-05-18 09:04:07\nTask T001 done\n\n### 2026-05-18 09:04:07\nTask T002 done\n',
    );
  });

  it('rejects when the log cannot be written, and later appends still run', async () => {
    fs.mkdirSync(path.join(dir, '.ralph'));
    fs.mkdirSync(log.paths.activity);
    await assert.rejects(log.append('x'));
    fs.rmdirSync(log.paths.activity);
    await log.append('y');
    assert.equal(fs.readFileSync(log.paths.activity, 'utf8'), '[09:04:07] y\n');
  });
});

describe('activity log: rotation (50 MiB × 3 in production)', () => {
  let dir: string;
  beforeEach(() => {
    dir = makeTempDir('ralph-rotate-');
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('rotates before a write would pass the cap, keeping three generations and dropping the oldest', async () => {
    const log = new ActivityLog(dir, { maxBytes: 100, keep: 3, now: clock });
    // Each line is 20 bytes: "[09:04:07] line-NNN\n"; five fit in 100 bytes.
    for (let i = 0; i < 30; i++) await log.append(`line-${String(i).padStart(3, '0')}`);
    const names = fs.readdirSync(path.join(dir, '.ralph')).sort();
    assert.deepEqual(names, ['activity.log', 'activity.log.1', 'activity.log.2', 'activity.log.3']);
    for (const n of names) assert.ok(fs.statSync(path.join(dir, '.ralph', n)).size <= 100, n);
    const read = (n: string) =>
      fs
        .readFileSync(path.join(dir, '.ralph', n), 'utf8')
        .trimEnd()
        .split('\n')
        .map((l) => l.slice(11));
    assert.deepEqual(read('activity.log'), ['line-025', 'line-026', 'line-027', 'line-028', 'line-029']);
    assert.deepEqual(read('activity.log.1'), ['line-020', 'line-021', 'line-022', 'line-023', 'line-024']);
    assert.deepEqual(read('activity.log.3')[0], 'line-010');
  });

  it('never rotates an empty file, even for a line longer than the cap', async () => {
    const log = new ActivityLog(dir, { maxBytes: 10, now: clock });
    await log.append('a line longer than ten bytes');
    assert.deepEqual(fs.readdirSync(path.join(dir, '.ralph')), ['activity.log']);
  });
});

describe("activity log: texts of the engine's lines", () => {
  const table: [string, string, string][] = [
    ['a loop start', loopStartText(3, tasksDetail(2, 5)), 'LOOP 3 START — Tasks: 2/5 complete (3 remaining)'],
    ['a retried loop start', loopStartText(3, 'retry after rate limit', 2), 'LOOP 3.2 START — retry after rate limit'],
    ['a loop end with detail', loopEndText(4, ACTIVITY.ROTATE, '172000 tokens'), 'LOOP 4 END — ROTATE (172000 tokens)'],
    ['a graceful yield', loopEndText(2, ACTIVITY.GRACEFUL_YIELD), 'LOOP 2 END — GRACEFUL YIELD'],
    ['the max-loops stop', ralphStopText(maxLoopsReason(25)), 'RALPH STOP — Max loops (25) reached'],
    ['a stall', labelled(ACTIVITY.STALL, '3 natural ends without progress'), 'STALL — 3 natural ends without progress'],
    ['completion', labelled(ACTIVITY.COMPLETE), 'COMPLETE'],
    ['a gate line', labelled(ACTIVITY.GATE, 'basic exit=0'), 'GATE — basic exit=0'],
    [
      'tokens below warn: the one context figure, of the window, with its marks',
      tokensText({ figure: fig(50_000) }),
      'TOKENS: 50k/200k 25% (warn 149k · rotate 170k)',
    ],
    [
      'tokens approaching the limit',
      tokensText({ figure: fig(130_000) }),
      'TOKENS: 130k/200k 65% (warn 149k · rotate 170k) - approaching limit',
    ],
    [
      'tokens past warn',
      tokensText({ figure: fig(150_000) }),
      'TOKENS: 150k/200k 75% (warn 149k · rotate 170k) - approaching limit',
    ],
    [
      'tokens at rotation',
      tokensText({ figure: fig(165_000) }),
      'TOKENS: 165k/200k 83% (warn 149k · rotate 170k) - rotation imminent',
    ],
    [
      'tokens with the byte estimate',
      tokensText({
        figure: contextFigure({ tokens: 10_000, window: 200_000, warnAt: 131_250, rotateAt: 150_000 }),
        estimate: {
          bytesRead: 20_480,
          bytesWritten: 1024,
          assistantChars: 512,
          shellOutputChars: 0,
          subagentChars: 4096,
        },
      }),
      'TOKENS: 10k/200k 5% (warn 131k · rotate 150k) [read:20KB write:1KB assist:1KB shell:0KB sub:4KB]',
    ],
  ];
  for (const [name, got, expected] of table) it(`formats ${name}`, () => assert.equal(got, expected));
});
