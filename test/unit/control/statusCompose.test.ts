import * as assert from 'node:assert/strict';
import {
  aggregateFlow,
  composeStatus,
  type FlowAggregate,
  type StatusBasis,
  type StatusCompletion,
} from '../../../src/core/control/statusCompose';
import type { ItemStatus, PlanItem } from '../../../src/core/model/plan';
import { parseIsoTime } from '../../../src/core/model/time';

/** A small deterministic generator (tests repeat). */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** A flow-next plan item; `over` sets the rest. */
function task(id: string, status: ItemStatus, over: Partial<PlanItem> = {}): PlanItem {
  return {
    source: 'flow-next',
    kind: 'task',
    id,
    rootId: 'fn-1',
    title: `T ${id}`,
    status,
    rawStatus: status,
    dependsOn: [],
    file: `.flow/tasks/${id}.json`,
    ...over,
  };
}

const day = (d: number) => `2026-01-0${d}T00:00:00Z`;

function basisOf(flow: FlowAggregate, quantumLast: StatusCompletion | null = null): StatusBasis {
  return {
    head: {
      success: true,
      flow_exists: true,
      flow_dialect: 'epics',
      epics: { open: 1, done: 0 },
      specs: { open: 1, done: 0 },
      quantum_exists: quantumLast !== null,
      stories: { pending: 0, in_progress: 0, passed: 1, failed: 0, blocked: 0 },
      checklists: [],
      unverified_claims: [],
      unreadable_items: 0,
      runs: [],
      recent_runs: [],
      waves: [],
      problems: [],
    },
    flow,
    rest: {
      count: 3,
      done: 1,
      in_progress: [{ source: 'quantum', id: 'US-1', title: 'S', since: null }],
      blocked: [{ source: 'quantum', id: 'US-2', title: 'S2', reason: null }],
    },
    quantumLast,
  };
}

const quantumAt = (d: number): StatusCompletion => ({
  source: 'quantum',
  id: 'US-3',
  title: 'S3',
  at: day(d),
  ms: Date.UTC(2026, 0, d),
});

describe('control: status composition (statusCompose.ts)', () => {
  const none = new Set<string>();
  const table: {
    name: string;
    items: PlanItem[];
    claimed?: string[];
    quantum?: StatusCompletion;
    last: string | null;
    progress?: string;
    tasks?: Partial<FlowAggregate['tasks']>;
  }[] = [
    {
      name: 'the newest completion wins',
      items: [
        task('a', 'done', { completedAt: day(1) }),
        task('b', 'done', { completedAt: day(3) }),
        task('c', 'done', { completedAt: day(2) }),
      ],
      last: 'b',
    },
    {
      name: 'on equal times the earlier task wins',
      items: [task('a', 'done', { completedAt: day(2) }), task('b', 'done', { completedAt: day(2) })],
      last: 'a',
    },
    {
      name: 'times compare as time, not as text (an offset)',
      items: [
        task('a', 'done', { completedAt: '2026-01-02T01:00:00+02:00' }),
        task('b', 'done', { completedAt: '2026-01-01T23:30:00Z' }),
      ],
      last: 'b',
    },
    {
      name: 'updatedAt stands in for a missing completedAt',
      items: [task('a', 'done', { completedAt: day(1) }), task('b', 'done', { updatedAt: day(2) })],
      last: 'b',
    },
    {
      name: 'a time that does not parse, or none, is no candidate',
      items: [task('a', 'done', { completedAt: 'yesterday' }), task('b', 'done'), task('c', 'done', { updatedAt: '' })],
      last: null,
    },
    {
      name: 'a task that is not done is no candidate, whatever its time',
      items: [task('a', 'todo', { updatedAt: day(4) }), task('b', 'done', { completedAt: day(1) })],
      last: 'b',
    },
    {
      name: 'a newer quantum completion wins',
      items: [task('a', 'done', { completedAt: day(2) })],
      quantum: quantumAt(3),
      last: 'US-3',
    },
    {
      name: 'a quantum completion as new as the flow-next one does not win',
      items: [task('a', 'done', { completedAt: day(2) })],
      quantum: quantumAt(2),
      last: 'a',
    },
    {
      name: 'claimed-but-unverified tasks are left out of done, not out of the counts',
      items: [task('a', 'done'), task('b', 'done'), task('c', 'todo')],
      claimed: ['flow-next:b'],
      last: null,
      progress: '2/6',
      tasks: { done: 2, todo: 1 },
    },
    {
      name: 'an unknown raw status is not counted; items of other sources are skipped',
      items: [
        task('a', 'todo', { rawStatus: 'weird' }),
        task('b', 'blocked'),
        { ...task('US-9', 'done'), source: 'quantum' },
      ],
      last: null,
      progress: '1/5',
      tasks: { todo: 0, blocked: 1, done: 0 },
    },
  ];

  for (const c of table) {
    it(c.name, () => {
      const flow = aggregateFlow(c.items, new Set(c.claimed ?? []), parseIsoTime);
      const snap = composeStatus(basisOf(flow, c.quantum ?? null));
      assert.equal(snap.last_completed?.id ?? null, c.last);
      if (c.progress) assert.equal(snap.progress, c.progress);
      if (c.tasks) for (const [k, v] of Object.entries(c.tasks)) assert.equal(snap.tasks[k as 'todo'], v, k);
    });
  }

  it('in progress and blocked entries keep plan order, flow-next first, with since, assignee and reason', () => {
    const flow = aggregateFlow(
      [
        task('a', 'blocked', { reason: 'r' }),
        task('b', 'in_progress', { startedAt: day(1), assignee: 'x' }),
        task('c', 'in_progress'),
        task('d', 'blocked'),
      ],
      none,
      parseIsoTime,
    );
    const snap = composeStatus(basisOf(flow));
    assert.deepEqual(snap.in_progress, [
      { source: 'flow-next', id: 'b', title: 'T b', since: day(1), assignee: 'x' },
      { source: 'flow-next', id: 'c', title: 'T c', since: null },
      { source: 'quantum', id: 'US-1', title: 'S', since: null },
    ]);
    assert.deepEqual(
      snap.blocked.map((b) => [b.id, b.reason]),
      [
        ['a', 'r'],
        ['d', null],
        ['US-2', null],
      ],
    );
  });

  it('asks the time only of done tasks', () => {
    const asked: string[] = [];
    aggregateFlow(
      [task('a', 'todo', { updatedAt: day(1) }), task('b', 'done', { updatedAt: day(2) })],
      none,
      (iso) => (asked.push(iso), parseIsoTime(iso)),
    );
    assert.deepEqual(asked, [day(2)]);
  });

  it('agrees with the rules written plainly, on random plans', () => {
    const r = rng(1);
    const statuses: ItemStatus[] = ['done', 'todo', 'in_progress', 'blocked'];
    for (let n = 0; n < 300; n++) {
      const items = Array.from({ length: Math.floor(r() * 30) }, (_, k) => {
        const t = r();
        const at = t < 0.7 ? day(1 + Math.floor(r() * 4)) : t < 0.8 ? 'not a time' : undefined;
        return task(`fn-1.${k}`, statuses[Math.floor(r() * statuses.length)]!, at ? { completedAt: at } : {});
      });
      const claimed = new Set(items.filter(() => r() < 0.1).map((i) => `flow-next:${i.id}`));
      const q = r() < 0.3 ? quantumAt(1 + Math.floor(r() * 5)) : null;
      const snap = composeStatus(basisOf(aggregateFlow(items, claimed, parseIsoTime), q));

      // Plainly: candidates sorted newest first, plan order on ties; quantum only when strictly newer.
      const candidates = items
        .map((i, k) => ({ i, k, ms: i.status === 'done' ? parseIsoTime(i.completedAt) : undefined }))
        .filter((c): c is typeof c & { ms: number } => c.ms !== undefined)
        .sort((a, b) => b.ms - a.ms || a.k - b.k);
      const flowLast = candidates[0];
      const last = q && q.ms > (flowLast?.ms ?? -Infinity) ? q.id : (flowLast?.i.id ?? null);
      const done = items.filter((i) => i.status === 'done' && !claimed.has(`flow-next:${i.id}`)).length;
      assert.equal(snap.last_completed?.id ?? null, last, `case ${n}`);
      assert.equal(snap.progress, `${done + 1}/${items.length + 3}`, `case ${n}`);
      assert.equal(snap.tasks.in_progress, items.filter((i) => i.status === 'in_progress').length);
    }
  });
});
