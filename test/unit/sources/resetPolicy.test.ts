import * as assert from 'node:assert/strict';
import type { PlanItem, PlanRoot, PlanSnapshot } from '../../../src/core/model/plan';
import { resetOfferOf, resettableItems } from '../../../src/core/sources/resetPolicy';

function item(id: string, status: PlanItem['status'], over: Partial<PlanItem> = {}): PlanItem {
  const source = over.source ?? (id.startsWith('US') ? 'quantum' : id.includes(':') ? 'checklist' : 'flow-next');
  return {
    source,
    kind: source === 'quantum' ? 'story' : source === 'checklist' ? 'checkbox' : 'task',
    id,
    rootId: over.rootId ?? (source === 'flow-next' ? id.split('.')[0]! : 'q'),
    title: id,
    status,
    rawStatus: status,
    dependsOn: [],
    file: 'f',
    ...over,
  };
}
function plan(items: PlanItem[], roots: Partial<PlanRoot>[] = []): PlanSnapshot {
  return {
    folder: '/w',
    items,
    roots: roots.map((r) => ({
      source: 'flow-next',
      kind: 'epic',
      id: 'fn-1',
      title: '',
      status: 'open',
      dependsOn: [],
      file: '',
      itemIds: [],
      ...r,
    })),
    problems: [],
    cycles: [],
  };
}

describe('reset offers from the plan graph (the rules of ralph task reset)', () => {
  const table: [string, PlanItem[], string, boolean, RegExp | null][] = [
    ['a done flow task', [item('fn-1.1', 'done')], 'fn-1.1', true, null],
    ['a blocked flow task', [item('fn-1.1', 'blocked')], 'fn-1.1', true, null],
    ['a failed story', [item('US-1', 'failed', { rawStatus: 'failed' })], 'US-1', true, null],
    ['a passed story', [item('US-1', 'done', { rawStatus: 'passed' })], 'US-1', true, null],
    ['a todo task needs none', [item('fn-1.1', 'todo')], 'fn-1.1', false, /already todo/],
    ['a pending story needs none', [item('US-1', 'todo', { rawStatus: 'pending' })], 'US-1', false, /already pending/],
    ['an in-progress task is refused', [item('fn-1.1', 'in_progress')], 'fn-1.1', false, /in progress/],
    ['a checkbox is unticked in its file', [item('T.md:3', 'done')], 'T.md:3', false, /checkbox/],
    ['an unknown id', [], 'fn-9.9', false, /no task or story/],
  ];
  for (const [name, items, id, ok, why] of table) {
    it(`${name}: ${ok ? 'resettable' : 'not resettable'}`, () => {
      const o = resetOfferOf(plan(items), id);
      assert.equal(o.resettable, ok);
      if (why) assert.match(o.why ?? '', why);
    });
  }
  it('refuses a task of a closed epic', () => {
    const o = resetOfferOf(plan([item('fn-1.1', 'done')], [{ id: 'fn-1', status: 'done' }]), 'fn-1.1');
    assert.equal(o.resettable, false);
    assert.match(o.why!, /closed epic fn-1/);
  });
  it('cascades through dependents, transitively, skipping todo and in-progress ones', () => {
    const p = plan([
      item('fn-1.1', 'done'),
      item('fn-1.2', 'done', { dependsOn: ['fn-1.1'] }),
      item('fn-1.3', 'blocked', { dependsOn: ['fn-1.2'] }),
      item('fn-1.4', 'todo', { dependsOn: ['fn-1.1'] }),
      item('fn-1.5', 'in_progress', { dependsOn: ['fn-1.1'] }),
      item('fn-1.6', 'done', { dependsOn: ['fn-1.4'] }),
    ]);
    assert.deepEqual(resetOfferOf(p, 'fn-1.1').cascade, ['fn-1.2', 'fn-1.3']);
    assert.deepEqual(resetOfferOf(p, 'fn-1.1').leftInProgress, ['fn-1.5'], 'the in-progress dependent it leaves alone');
    assert.deepEqual(resetOfferOf(p, 'fn-1.3').leftInProgress, []);
  });
  it('cascades flow tasks only within their epic, quantum stories across the project', () => {
    const p = plan([
      item('fn-1.1', 'done'),
      item('fn-2.1', 'done', { dependsOn: ['fn-1.1'] }),
      item('US-1', 'done'),
      item('US-2', 'failed', { dependsOn: ['US-1'] }),
    ]);
    assert.deepEqual(resetOfferOf(p, 'fn-1.1').cascade, []);
    assert.deepEqual(resetOfferOf(p, 'US-1').cascade, ['US-2']);
  });
  it('lists the resettable items in plan order', () => {
    const p = plan([item('fn-1.1', 'done'), item('fn-1.2', 'todo'), item('US-1', 'failed'), item('T.md:1', 'done')]);
    assert.deepEqual(
      resettableItems(p).map((i) => i.id),
      ['fn-1.1', 'US-1'],
    );
  });
});
