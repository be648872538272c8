import * as assert from 'node:assert/strict';
import { countCheckboxes, parseCheckboxes } from '../../../src/core/sources/checklist/checklist';
import { detectSources } from '../../../src/core/sources/detect';
import { findCycles, loadPlan } from '../../../src/core/sources/plan';
import { quantumJson, tempWorkspace } from '../../support/workspace';

describe('checklists (seed-systems.md §3.7, §3.15-5)', () => {
  const table: [string, string, { done: number; total: number }][] = [
    ['[x] and [X] both count as done', '- [x] a\n- [X] b\n- [ ] c\n', { done: 2, total: 3 }],
    ['star bullets and numbered items are boxes', '* [ ] a\n1. [x] b\n', { done: 1, total: 2 }],
    ['indented boxes count', '  - [ ] nested\n', { done: 0, total: 1 }],
    ['lines without a space after the bullet are not boxes', '-[ ] a\n- [] b\n- [y] c\n', { done: 0, total: 0 }],
    ['CRLF files count the same', '- [x] a\r\n- [ ] b\r\n', { done: 1, total: 2 }],
  ];
  for (const [name, text, expected] of table) it(name, () => assert.deepEqual(countCheckboxes(text), expected));

  it('a [risky] mark is flagged and removed from the title', () => {
    assert.deepEqual(parseCheckboxes('- [ ] T001 [risky] migrate db\n').items[0], {
      line: 1,
      done: false,
      mark: ' ',
      text: 'T001 migrate db',
      risky: true,
    });
  });

  it('ralph doctor counts boxes with the same grammar as the plan graph', async () => {
    const ws = tempWorkspace();
    try {
      ws.write('RALPH_TASK.md', '# T\n- [x] a\n- [X] b\n- [ ] c\n+ [ ] not a box\n');
      const doctor = (await detectSources(ws.dir)).sources.find((s) => s.kind === 'checklist')!;
      const plan = await loadPlan(ws.dir, {});
      assert.deepEqual(doctor.count, {
        total: plan.items.length,
        done: plan.items.filter((i) => i.status === 'done').length,
        unit: 'tasks',
      });
    } finally {
      ws.dispose();
    }
  });
});

describe('plan graph', () => {
  it('names every dependency cycle', () => {
    assert.deepEqual(
      findCycles([
        { id: 'a', deps: ['b'] },
        { id: 'b', deps: ['c'] },
        { id: 'c', deps: ['a'] },
        { id: 'd', deps: ['a'] },
      ]),
      [['a', 'b', 'c', 'a']],
    );
  });

  it('a self-dependency is a cycle', () => {
    assert.deepEqual(findCycles([{ id: 'a', deps: ['a'] }]), [['a', 'a']]);
  });

  it('finds the cycles the plain Map-and-objects walk finds, in its order (random graphs with duplicate ids and unknown deps)', () => {
    // The walk before the index-array rewrite (issue 10 speed), kept here as the reference.
    const reference = (nodes: { id: string; deps: string[] }[]): string[][] => {
      const deps = new Map(nodes.map((n) => [n.id, n.deps]));
      const color = new Map<string, 1 | 2>();
      const cycles: string[][] = [];
      for (const start of nodes) {
        if (color.has(start.id)) continue;
        const stack: { id: string; next: number }[] = [{ id: start.id, next: 0 }];
        const onPath: string[] = [start.id];
        color.set(start.id, 1);
        while (stack.length) {
          const top = stack.at(-1)!;
          const ds = deps.get(top.id) ?? [];
          if (top.next >= ds.length) {
            color.set(top.id, 2);
            stack.pop();
            onPath.pop();
            continue;
          }
          const d = ds[top.next++]!;
          if (!deps.has(d)) continue;
          const c = color.get(d);
          if (c === 1) cycles.push([...onPath.slice(onPath.indexOf(d)), d]);
          else if (c === undefined) {
            color.set(d, 1);
            stack.push({ id: d, next: 0 });
            onPath.push(d);
          }
        }
      }
      return cycles;
    };
    let seed = 7;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    for (let g = 0; g < 400; g++) {
      const n = 1 + rnd(12);
      const nodes = Array.from({ length: n + rnd(3) }, () => ({
        id: `n${rnd(n)}`,
        deps: Array.from({ length: rnd(4) }, () => `n${rnd(n + 2)}`),
      }));
      assert.deepEqual(findCycles(nodes), reference(nodes), JSON.stringify(nodes));
    }
  });

  it('a quantum dependency cycle is reported as a problem naming it', async () => {
    const ws = tempWorkspace();
    try {
      ws.write(
        'quantum.json',
        quantumJson([
          { id: 'US-001', deps: ['US-002'] },
          { id: 'US-002', deps: ['US-001'] },
        ]),
      );
      const plan = await loadPlan(ws.dir, {});
      assert.deepEqual(plan.cycles, [['US-001', 'US-002', 'US-001']]);
      assert.match(plan.problems[0]!.message, /dependency cycle: US-001 → US-002 → US-001/);
    } finally {
      ws.dispose();
    }
  });

  it('maps every source to roots and items with normalized statuses', async () => {
    const ws = tempWorkspace();
    try {
      ws.write(
        'quantum.json',
        quantumJson([
          { id: 'US-001', status: 'passed', priority: 1 },
          {
            id: 'US-002',
            status: 'failed',
            attempts: 3,
            failureLog: [{ phase: 'test', timestamp: '2026-01-01T00:00:00Z', error: 'red' }],
          },
        ]),
      );
      ws.write('specs/auth/tasks.md', '- [ ] T001 first\n');
      const plan = await loadPlan(ws.dir, {});
      assert.deepEqual(
        plan.roots.map((r) => [r.source, r.id, r.status]),
        [
          ['quantum', 'quantum.json', 'open'],
          ['checklist', 'specs/auth/tasks.md', 'open'],
        ],
      );
      assert.deepEqual(
        plan.items.map((i) => [i.id, i.status, i.rawStatus, i.reason]),
        [
          ['US-001', 'done', 'passed', undefined],
          ['US-002', 'blocked', 'failed', 'red'],
          ['specs/auth/tasks.md:1', 'todo', ' ', undefined],
        ],
      );
    } finally {
      ws.dispose();
    }
  });
});
