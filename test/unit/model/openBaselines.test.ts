import * as assert from 'node:assert/strict';
import { openBaselines, type ClaimBaseline } from '../../../src/core/model/claimBaseline';

/** Issue 11 rule "the mirror is the truth until settled" (breaker-s5 07/08/34): which baselines hold open claims. */
describe('openBaselines (mirror first, record only without one)', () => {
  const b = (done: string[]): ClaimBaseline => ({
    at: '2026-12-01T00:00:00.000Z',
    source: 'checklist',
    label: 'RALPH_TASK.md',
    done,
  });
  const M = b(['First box #1']);
  const R = b(['First box #1', 'Second box #1']);
  type Case = [
    string,
    { runId: string; baseline: ClaimBaseline | null }[],
    { runId: string; claimBaseline?: unknown }[],
    string | null,
    [string, 'mirror' | 'record', ClaimBaseline][],
  ];
  const cases: Case[] = [
    ['nothing', [], [], null, []],
    [
      'a record without a mirror (older ralph): its claimBaseline',
      [],
      [{ runId: 'r1', claimBaseline: R }],
      null,
      [['r1', 'record', R]],
    ],
    [
      'the mirror wins over a forged record baseline',
      [{ runId: 'r1', baseline: M }],
      [{ runId: 'r1', claimBaseline: R }],
      null,
      [['r1', 'mirror', M]],
    ],
    [
      'a mirror whose record names another run id (07): both',
      [{ runId: 'r1', baseline: M }],
      [{ runId: 'xr1', claimBaseline: R }],
      null,
      [
        ['r1', 'mirror', M],
        ['xr1', 'record', R],
      ],
    ],
    [
      'a mirror whose record says settled (08: claimBaseline null)',
      [{ runId: 'r1', baseline: M }],
      [{ runId: 'r1', claimBaseline: null }],
      null,
      [['r1', 'mirror', M]],
    ],
    [
      'a mirror with no record at all (34: run folder deleted)',
      [{ runId: 'r1', baseline: M }],
      [],
      null,
      [['r1', 'mirror', M]],
    ],
    [
      "a mirror that does not parse: the record's baseline",
      [{ runId: 'r1', baseline: null }],
      [{ runId: 'r1', claimBaseline: R }],
      null,
      [['r1', 'record', R]],
    ],
    [
      "the new run's own mirror and record left out",
      [
        { runId: 'own', baseline: M },
        { runId: 'r1', baseline: M },
      ],
      [{ runId: 'own', claimBaseline: R }],
      'own',
      [['r1', 'mirror', M]],
    ],
    [
      'a record baseline that is not one is ignored',
      [],
      [{ runId: 'r1', claimBaseline: { done: 'x' } }, { runId: 'r2' }],
      null,
      [],
    ],
  ];
  for (const [name, mirrors, records, except, want] of cases) {
    it(name, () =>
      assert.deepEqual(
        openBaselines(mirrors, records, except).map((o) => [o.runId, o.from, o.baseline]),
        want,
      ),
    );
  }
});
