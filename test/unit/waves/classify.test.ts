import * as assert from 'node:assert/strict';
import { parseCheckpoint } from '../../../src/core/waves/checkpoint';
import {
  classifySub,
  classifyWave,
  countDispositions,
  DEFAULT_WINDOWS,
  nextTransitionAt,
  type SubObservation,
  type WaveObservation,
} from '../../../src/core/waves/classify';
import { decidePass, severityOf } from '../../../src/core/waves/pass';
import type { WaveState } from '../../../src/core/waves/waveState';

const NOW = Date.parse('2026-05-18T15:00:00Z');
const ago = (s: number) => new Date(NOW - s * 1000).toISOString();

function sub(
  subId: string,
  body: Record<string, unknown> | string,
  extra: Partial<SubObservation> = {},
): SubObservation {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  return {
    subId,
    root: '/ws',
    file: `/ws/.ijfw/wave-W/subagent-${subId}.checkpoint.json`,
    text,
    read: parseCheckpoint(text),
    mtimeMs: NOW - 600_000,
    ...extra,
  };
}
function wave(subs: SubObservation[], state?: Partial<WaveState>, pending: string[] = []): WaveObservation {
  return {
    waveId: 'W',
    roots: ['/ws'],
    claims: [],
    subs,
    pending,
    problems: [],
    ...(state ? { state: { subagents: [], doneTasks: new Set(), ...state } } : {}),
  };
}

describe('orphan classification (seed-systems.md §1.10-1)', () => {
  const table: { name: string; obs: SubObservation; state?: Partial<WaveState>; want: string; done?: string }[] = [
    {
      name: 'an old checkpoint with next_step is RESUMED',
      obs: sub('A', { ts: ago(120), next_step: 'n' }),
      want: 'RESUMED',
    },
    {
      name: 'an old checkpoint with only last_action is RESUMED',
      obs: sub('A', { ts: ago(120), last_action: 'l' }),
      want: 'RESUMED',
    },
    {
      name: 'an old checkpoint with neither is STALE',
      obs: sub('A', { ts: ago(120), tool_use_count: 3 }),
      want: 'STALE',
    },
    {
      name: 'an unreadable old checkpoint is STALE (age from mtime)',
      obs: sub('A', '{"ts":', { mtimeMs: NOW - 120_000 }),
      want: 'STALE',
    },
    {
      name: 'an unreadable fresh checkpoint is ACTIVE',
      obs: sub('A', '{"ts":', { mtimeMs: NOW - 5_000 }),
      want: 'ACTIVE',
    },
    { name: 'a checkpoint 30 s old is ACTIVE', obs: sub('A', { ts: ago(30), next_step: 'n' }), want: 'ACTIVE' },
    {
      name: 'a checkpoint 75 s old is still ACTIVE (activity window 90 s)',
      obs: sub('A', { ts: ago(75), next_step: 'n' }),
      want: 'ACTIVE',
    },
    {
      name: 'an old checkpoint with a recent events log is ACTIVE',
      obs: sub('A', { ts: ago(300), next_step: 'n' }, { eventsMtimeMs: NOW - 10_000 }),
      want: 'ACTIVE',
    },
    {
      name: 'an old checkpoint with a recent STATE.md updated_at is ACTIVE',
      obs: sub('A', { ts: ago(300), next_step: 'n' }),
      state: { updatedAtMs: NOW - 10_000 },
      want: 'ACTIVE',
    },
    {
      name: 'checkpoint status DONE is RESOLVED',
      obs: sub('A', { ts: ago(300), status: 'DONE' }),
      want: 'RESOLVED',
      done: 'checkpoint-status',
    },
    {
      name: 'a fresh checkpoint with DONE is RESOLVED at once',
      obs: sub('A', { ts: ago(1), status: 'DONE_WITH_CONCERNS' }),
      want: 'RESOLVED',
      done: 'checkpoint-status',
    },
    {
      name: 'a report with Status: DONE is RESOLVED',
      obs: sub('A', { ts: ago(300), report: 'r\nStatus: DONE' }),
      want: 'RESOLVED',
      done: 'report',
    },
    {
      name: 'a report with Status: BLOCKED is not DONE',
      obs: sub('A', { ts: ago(300), report: 'Status: BLOCKED', last_action: 'x' }),
      want: 'RESUMED',
    },
    {
      name: 'a STATE.md tasks entry <subId>:DONE:<k> is RESOLVED',
      obs: sub('A', { ts: ago(300), next_step: 'n' }),
      state: { doneTasks: new Set(['A']) },
      want: 'RESOLVED',
      done: 'state-tasks',
    },
    {
      name: 'wave status review is RESOLVED',
      obs: sub('A', { ts: ago(300), next_step: 'n' }),
      state: { status: 'review' },
      want: 'RESOLVED',
      done: 'wave-status',
    },
    {
      name: 'wave status complete is RESOLVED',
      obs: sub('A', { ts: ago(300) }),
      state: { status: 'complete' },
      want: 'RESOLVED',
      done: 'wave-status',
    },
    {
      name: 'wave status in_progress is no DONE',
      obs: sub('A', { ts: ago(300) }),
      state: { status: 'in_progress' },
      want: 'STALE',
    },
    {
      name: 'a checkpoint time in the future is ACTIVE',
      obs: sub('A', { ts: ago(-600), next_step: 'n' }),
      want: 'ACTIVE',
    },
  ];
  for (const t of table) {
    it(t.name, () => {
      const v = classifySub(t.obs, wave([t.obs], t.state), NOW, DEFAULT_WINDOWS);
      assert.equal(v.disposition, t.want);
      assert.equal(v.doneSource, t.done);
    });
  }

  it('crosses the window strictly after both windows have passed', () => {
    const o = sub('A', { ts: ago(90), next_step: 'n' });
    const w = wave([o]);
    const at = classifySub(o, w, NOW, DEFAULT_WINDOWS);
    assert.equal(at.disposition, 'ACTIVE');
    assert.equal(at.orphanAtMs, NOW + 1);
    assert.equal(classifySub(o, w, NOW + 1, DEFAULT_WINDOWS).disposition, 'RESUMED');
  });

  it('uses configured windows', () => {
    const o = sub('A', { ts: ago(10), next_step: 'n' });
    assert.equal(classifySub(o, wave([o]), NOW, DEFAULT_WINDOWS).disposition, 'ACTIVE');
    assert.equal(
      classifySub(o, wave([o]), NOW, { orphanAfterMs: 5_000, inactiveAfterMs: 8_000 }).disposition,
      'RESUMED',
    );
  });

  it('never calls a roster subagent without a checkpoint an orphan', () => {
    const v = classifyWave(wave([], undefined, ['P1']), NOW + 3_600_000);
    assert.deepEqual(
      v.subagents.map((s) => [s.subId, s.disposition]),
      [['P1', 'PENDING']],
    );
    assert.equal(nextTransitionAt(v), undefined);
  });

  it('gives the next transition as the earliest ACTIVE orphan time', () => {
    const v = classifyWave(
      wave([
        sub('A', { ts: ago(30), next_step: 'n' }),
        sub('B', { ts: ago(60), next_step: 'n' }),
        sub('C', { ts: ago(300), status: 'DONE' }),
      ]),
      NOW,
    );
    assert.equal(nextTransitionAt(v), NOW - 60_000 + 90_000 + 1);
    assert.deepEqual(countDispositions(v), { RESOLVED: 1, RESUMED: 0, STALE: 0, ACTIVE: 2, PENDING: 0, orphans: 0 });
  });
});

describe('pass severity (seed-systems.md §1.2 step 6)', () => {
  for (const [ds, want] of [
    [[], 'PASS'],
    [['RESOLVED', 'ACTIVE', 'PENDING'], 'PASS'],
    [['RESUMED'], 'NOTE'],
    [['STALE'], 'MEDIUM'],
    [['RESUMED', 'STALE'], 'MEDIUM'],
    [['STALE', 'RESUMED'], 'MEDIUM'],
  ] as const) {
    it(`${ds.join(' + ') || 'nothing'} → ${want}`, () => assert.equal(severityOf(ds), want));
  }

  it('makes RESUMED, STALE and not-yet-logged RESOLVED subs findings, with brief paths for RESUMED', () => {
    const v = classifyWave(
      wave([
        sub('A', { ts: ago(300), next_step: 'go on' }),
        sub('B', { ts: ago(300) }),
        sub('C', { ts: ago(300), status: 'DONE' }),
        sub('D', { ts: ago(300), status: 'DONE' }),
        sub('E', { ts: ago(5) }),
      ]),
      NOW,
    );
    const d = decidePass(v, '1.5.0', new Set(['D']));
    assert.equal(d.severity, 'MEDIUM');
    assert.deepEqual(d.findings, [
      {
        subId: 'A',
        disposition: 'RESUMED',
        checkpoint_age_ms: 300_000,
        next_step: 'go on',
        brief_path: '.planning/1.5.0/resume-A.md',
      },
      { subId: 'B', disposition: 'STALE', checkpoint_age_ms: 300_000, next_step: '' },
      { subId: 'C', disposition: 'RESOLVED', checkpoint_age_ms: 300_000, next_step: '' },
    ]);
  });
});
