import * as assert from 'node:assert/strict';
import {
  aggregateFlow,
  claimedOf,
  composeFromAggregate,
  composeStatus,
  type FlowAggregate,
  type StatusBasis,
  type StatusBasisItem,
} from '../../../src/core/control/statusCompose';

/** A small deterministic generator (tests repeat). */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const STATUSES = ['done', 'todo', 'in_progress', 'blocked', 'weird'] as const;

/** A random flow-next item: few distinct times (ties), some done items without a time or with one that does not parse. */
function randomItem(r: () => number, id: string): StatusBasisItem {
  const status = STATUSES[Math.floor(r() * STATUSES.length)]!;
  const item: StatusBasisItem = {
    id,
    title: `T ${id} ${Math.floor(r() * 3)}`,
    status: status === 'weird' ? 'todo' : status,
    raw: status,
  };
  if (status === 'in_progress') {
    if (r() < 0.5) item.since = '2026-01-01T00:00:00Z';
    if (r() < 0.5) item.assignee = 'bot@example.invalid';
  }
  if (status === 'blocked' && r() < 0.5) item.reason = 'why';
  const t = r();
  if (t < 0.8) {
    const day = 1 + Math.floor(r() * 4);
    item.at = `2026-01-0${day}T00:00:00Z`;
    if (t < 0.7) item.ms = Date.UTC(2026, 0, day);
  }
  return item;
}

function basisOf(items: StatusBasisItem[], claimedIds: string[], quantumMs?: number): StatusBasis {
  return {
    head: {
      success: true,
      flow_exists: true,
      flow_dialect: 'epics',
      epics: { open: 1, done: 0 },
      specs: { open: 1, done: 0 },
      quantum_exists: quantumMs !== undefined,
      stories: { pending: 0, in_progress: 0, passed: 1, failed: 0, blocked: 0 },
      checklists: [],
      unverified_claims: claimedIds.map((id) => ({
        source: 'flow-next',
        id,
        title: id,
        run: 'r1',
      })) as StatusBasis['head']['unverified_claims'],
      unreadable_items: 0,
      runs: [],
      recent_runs: [],
      waves: [],
      problems: [],
    },
    items,
    rest: {
      count: 3,
      done: 1,
      in_progress: [{ source: 'quantum', id: 'US-1', title: 'S', since: null }],
      blocked: [{ source: 'quantum', id: 'US-2', title: 'S2', reason: null }],
    },
    quantumLast:
      quantumMs === undefined
        ? null
        : { source: 'quantum', id: 'US-3', title: 'S3', at: new Date(quantumMs).toISOString(), ms: quantumMs },
  };
}

const day = (d: number) => ({ at: `2026-01-0${d}T00:00:00Z`, ms: Date.UTC(2026, 0, d) });

describe('control: status composition from summed-up flow-next tasks (statusCompose.ts)', () => {
  it('composes the same snapshot from the aggregate, whatever number of candidates it keeps', () => {
    const r = rng(1);
    for (let n = 0; n < 300; n++) {
      const items = Array.from({ length: Math.floor(r() * 30) }, (_, k) => randomItem(r, `fn-1.${k}`));
      const claimed = items.filter(() => r() < 0.1).map((i) => i.id);
      const b = basisOf(items, claimed, r() < 0.3 ? Date.UTC(2026, 0, 1 + Math.floor(r() * 5)) : undefined);
      const whole = composeStatus(b);
      for (const keep of [1, 2, 5, 64]) {
        const agg = aggregateFlow(items, claimedOf(b.head), keep);
        assert.ok(agg.latest.length <= keep);
        assert.deepEqual(composeFromAggregate(b, agg), whole, `case ${n}, keep ${keep}`);
        // Through JSON (the side file) too.
        assert.equal(
          JSON.stringify(composeFromAggregate(b, JSON.parse(JSON.stringify(agg)) as FlowAggregate)),
          JSON.stringify(whole),
        );
      }
    }
  });

  const table: {
    name: string;
    items: StatusBasisItem[];
    change: [number, Partial<StatusBasisItem>][];
    keep: number;
    quantumMs?: number;
    declines?: boolean;
    last: string | null;
  }[] = [
    {
      name: 'the newest completion is undone: the next newest wins',
      keep: 3,
      last: 'b',
      items: [
        { id: 'a', title: 'A', status: 'done', raw: 'done', ...day(1) },
        { id: 'b', title: 'B', status: 'done', raw: 'done', ...day(2) },
        { id: 'c', title: 'C', status: 'done', raw: 'done', ...day(3) },
      ],
      change: [[2, { status: 'todo', raw: 'todo' }]],
    },
    {
      name: 'a later item as new as the newest does not win',
      keep: 3,
      last: 'a',
      items: [
        { id: 'a', title: 'A', status: 'done', raw: 'done', ...day(2) },
        { id: 'b', title: 'B', status: 'todo', raw: 'todo' },
      ],
      change: [[1, { status: 'done', raw: 'done', ...day(2) }]],
    },
    {
      name: 'an earlier item as new as the newest wins',
      keep: 3,
      last: 'a',
      items: [
        { id: 'a', title: 'A', status: 'todo', raw: 'todo' },
        { id: 'b', title: 'B', status: 'done', raw: 'done', ...day(2) },
      ],
      change: [[0, { status: 'done', raw: 'done', ...day(2) }]],
    },
    {
      name: 'every kept candidate changed while others exist: declined',
      keep: 1,
      declines: true,
      last: null,
      items: [
        { id: 'a', title: 'A', status: 'done', raw: 'done', ...day(1) },
        { id: 'b', title: 'B', status: 'done', raw: 'done', ...day(2) },
      ],
      change: [[1, { status: 'todo', raw: 'todo' }]],
    },
    {
      name: 'every kept candidate changed and none other exists: no flow-next completion',
      keep: 1,
      last: null,
      items: [
        { id: 'a', title: 'A', status: 'todo', raw: 'todo' },
        { id: 'b', title: 'B', status: 'done', raw: 'done', ...day(2) },
      ],
      change: [[1, { status: 'todo', raw: 'todo' }]],
    },
    {
      name: 'a changed item newer than every kept one joins a list that is not complete',
      keep: 1,
      last: 'a',
      items: [
        { id: 'a', title: 'A', status: 'todo', raw: 'todo' },
        { id: 'b', title: 'B', status: 'done', raw: 'done', ...day(2) },
        { id: 'c', title: 'C', status: 'done', raw: 'done', ...day(1) },
      ],
      change: [[0, { status: 'done', raw: 'done', ...day(4) }]],
    },
    {
      name: 'a newer quantum completion wins over the patched flow-next one',
      keep: 3,
      quantumMs: Date.UTC(2026, 0, 9),
      last: 'US-3',
      items: [{ id: 'a', title: 'A', status: 'todo', raw: 'todo' }],
      change: [[0, { status: 'done', raw: 'done', ...day(4) }]],
    },
    {
      name: 'in progress and blocked lists keep plan order',
      keep: 3,
      last: null,
      items: [
        { id: 'a', title: 'A', status: 'blocked', raw: 'blocked', reason: 'r' },
        { id: 'b', title: 'B', status: 'todo', raw: 'todo' },
        { id: 'c', title: 'C', status: 'in_progress', raw: 'in_progress' },
      ],
      change: [
        [1, { status: 'in_progress', raw: 'in_progress', assignee: 'x' }],
        [2, { status: 'blocked', raw: 'blocked' }],
        [0, { status: 'in_progress', raw: 'in_progress' }],
      ],
    },
  ];

  for (const c of table) {
    if (c.declines) continue;
    it(`after a change: ${c.name}`, () => {
      const b = basisOf(c.items, [], c.quantumMs);
      const after = c.items.slice();
      for (const [k, over] of c.change) after[k] = { ...c.items[k]!, ...over };
      const snap = composeStatus({ ...b, items: after });
      assert.equal(snap.last_completed?.id ?? null, c.last);
      assert.deepEqual(composeFromAggregate(b, aggregateFlow(after, claimedOf(b.head), c.keep)), snap);
    });
  }
});
