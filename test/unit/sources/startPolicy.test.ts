import * as assert from 'node:assert/strict';
import type { ItemStatus, PlanItem, PlanSnapshot } from '../../../src/core/model/plan';
import { startOfferOf } from '../../../src/core/sources/startPolicy';

function it2(
  source: PlanItem['source'],
  id: string,
  status: ItemStatus,
  dependsOn: string[] = [],
  extra: Partial<PlanItem> = {},
): PlanItem {
  const rootId = source === 'flow-next' ? id.replace(/\.\d+$/, '') : source === 'quantum' ? 'quantum.json' : 'T.md';
  return {
    source,
    kind: source === 'flow-next' ? 'task' : source === 'quantum' ? 'story' : 'checkbox',
    id,
    rootId,
    title: id,
    status,
    rawStatus: status,
    dependsOn,
    file: rootId,
    ...extra,
  };
}

const plan: PlanSnapshot = {
  folder: '/ws',
  problems: [],
  cycles: [],
  roots: [
    {
      source: 'flow-next',
      kind: 'epic',
      id: 'fn-1',
      title: '',
      status: 'open',
      dependsOn: [],
      file: '',
      itemIds: ['fn-1.1', 'fn-1.2', 'fn-1.3'],
    },
    {
      source: 'flow-next',
      kind: 'epic',
      id: 'fn-2',
      title: '',
      status: 'open',
      dependsOn: ['fn-1'],
      file: '',
      itemIds: ['fn-2.1'],
    },
    {
      source: 'flow-next',
      kind: 'epic',
      id: 'fn-3',
      title: '',
      status: 'done',
      dependsOn: [],
      file: '',
      itemIds: ['fn-3.1'],
    },
  ],
  items: [
    it2('flow-next', 'fn-1.1', 'todo'),
    it2('flow-next', 'fn-1.2', 'todo', ['fn-1.1', 'fn-9.9']),
    it2('flow-next', 'fn-1.3', 'in_progress'),
    it2('flow-next', 'fn-2.1', 'todo'),
    it2('flow-next', 'fn-3.1', 'todo'),
    it2('quantum', 'US-1', 'done'),
    it2('quantum', 'US-2', 'todo', ['US-1'], { priority: 2 }),
    it2('quantum', 'US-3', 'todo', ['US-2']),
    it2('quantum', 'US-4', 'blocked', [], { reason: 'no key' }),
    it2('quantum', 'US-5', 'failed', [], { attempts: 1, maxAttempts: 3, priority: 1 }),
    it2('quantum', 'US-6', 'todo', ['US-404']),
    it2('checklist', 'T.md:3', 'done'),
    it2('checklist', 'T.md:4', 'todo'),
  ],
};

describe('Start Here / ralph run --item: startOfferOf', () => {
  const table: [string, Partial<ReturnType<typeof startOfferOf>>][] = [
    ['fn-1.1', { ready: true, source: 'flow', openDependencies: [] }],
    ['fn-1.2', { ready: false, why: 'fn-1.2 waits on fn-1.1 (todo)', openDependencies: ['fn-1.1'], next: 'fn-1.1' }],
    ['fn-1.3', { ready: true }],
    [
      'fn-2.1',
      { ready: false, why: 'its epic fn-2 waits on the epic fn-1', openDependencies: ['fn-1'], next: 'fn-1.1' },
    ],
    ['fn-3.1', { ready: false, why: 'fn-3.1 belongs to the closed epic fn-3', next: 'fn-1.1' }],
    ['US-1', { ready: false, why: 'US-1 is already done', next: 'US-5' }],
    ['US-2', { ready: true, source: 'quantum' }],
    ['US-3', { ready: false, why: 'US-3 waits on US-2 (todo)', openDependencies: ['US-2'], next: 'US-5' }],
    ['US-4', { ready: false, why: 'US-4 is blocked: no key', next: 'US-5' }],
    ['US-5', { ready: true }],
    ['US-6', { ready: false, why: 'US-6 waits on US-404 (missing)', openDependencies: ['US-404'] }],
    ['T.md:4', { ready: true, source: 'T.md' }],
    ['T.md:3', { ready: false, why: 'T.md:3 is already done', next: 'T.md:4' }],
    ['nope', { ready: false, why: 'no task, story or box nope' }],
  ];
  for (const [id, want] of table) {
    it(`${id}: ${want.ready ? 'ready' : want.why}`, () => {
      const got = startOfferOf(plan, id);
      for (const [k, v] of Object.entries(want)) assert.deepEqual(got[k as keyof typeof got], v, `${id}.${k}`);
    });
  }
});
