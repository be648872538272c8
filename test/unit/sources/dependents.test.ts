import * as assert from 'node:assert/strict';
import { transitiveDependents } from '../../../src/core/sources/dependents';

/** flowctl 4.4.0's `find_dependents`: the reverse depends_on graph walked breadth-first, ids in plain order. */
describe('transitiveDependents', () => {
  const table: { name: string; nodes: [string, string[]][]; id: string; out: string[] }[] = [
    {
      name: 'none',
      nodes: [
        ['a', []],
        ['b', []],
      ],
      id: 'a',
      out: [],
    },
    {
      name: 'a chain, transitively',
      nodes: [
        ['a', []],
        ['b', ['a']],
        ['c', ['b']],
        ['d', ['c']],
      ],
      id: 'a',
      out: ['b', 'c', 'd'],
    },
    {
      name: 'a diamond, each once',
      nodes: [
        ['a', []],
        ['b', ['a']],
        ['c', ['a']],
        ['d', ['b', 'c']],
      ],
      id: 'a',
      out: ['b', 'c', 'd'],
    },
    {
      name: 'a fan-out',
      nodes: [
        ['a', []],
        ['x3', ['a']],
        ['x1', ['a']],
        ['x2', ['a']],
      ],
      id: 'a',
      out: ['x1', 'x2', 'x3'],
    },
    {
      name: 'code-unit order, as Python sorted()',
      nodes: [
        ['fn-1.1', []],
        ['fn-1.2', ['fn-1.1']],
        ['fn-1.10', ['fn-1.1']],
      ],
      id: 'fn-1.1',
      out: ['fn-1.10', 'fn-1.2'],
    },
    {
      name: 'a cycle ends the walk and never lists the start',
      nodes: [
        ['a', ['c']],
        ['b', ['a']],
        ['c', ['b']],
      ],
      id: 'a',
      out: ['b', 'c'],
    },
    {
      name: 'only dependents, not dependencies',
      nodes: [
        ['a', []],
        ['b', ['a']],
        ['c', ['b']],
      ],
      id: 'b',
      out: ['c'],
    },
    {
      name: 'unknown dependencies are ignored',
      nodes: [
        ['a', ['zz']],
        ['b', ['a']],
      ],
      id: 'a',
      out: ['b'],
    },
  ];
  for (const c of table) {
    it(c.name, () =>
      assert.deepEqual(
        transitiveDependents(
          c.nodes.map(([id, deps]) => ({ id, deps })),
          c.id,
        ),
        c.out,
      ),
    );
  }
});
