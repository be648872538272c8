import * as assert from 'node:assert/strict';
import {
  DEFAULT_MAX_PARALLEL,
  isQuantumRun,
  parallelOfferOf,
  parallelPickItems,
  type ParallelOfferInput,
} from '../../../src/extension/startChoices';

const base: ParallelOfferInput = { source: undefined, sourceKinds: ['quantum'], args: {}, setting: {} };

describe('Ralph: Start — one story at a time or in parallel (pure)', () => {
  const table: { name: string; input: Partial<ParallelOfferInput>; want: ReturnType<typeof parallelOfferOf> }[] = [
    {
      name: 'quantum.json as the only source: ask, up to 4',
      input: {},
      want: { ask: true, maxParallel: DEFAULT_MAX_PARALLEL },
    },
    {
      name: 'quantum picked among several sources: ask',
      input: { source: 'quantum', sourceKinds: ['flow-next', 'quantum'] },
      want: { ask: true, maxParallel: 4 },
    },
    {
      name: 'quantum.json named by path: ask',
      input: { source: 'sub/quantum.json', sourceKinds: [] },
      want: { ask: true, maxParallel: 4 },
    },
    {
      name: 'a flow-next source: no question, the engine decides',
      input: { source: 'flow', sourceKinds: ['flow-next', 'quantum'] },
      want: { ask: false, choice: null },
    },
    {
      name: 'a checklist: no question',
      input: { source: undefined, sourceKinds: ['checklist'] },
      want: { ask: false, choice: null },
    },
    {
      name: 'several sources and none named yet: no question (Start asked for the source first)',
      input: { sourceKinds: ['flow-next', 'quantum'] },
      want: { ask: false, choice: null },
    },
    {
      name: 'the caller chose parallel: passed on with its maxParallel',
      input: { args: { parallel: true, maxParallel: 2 } },
      want: { ask: false, choice: { parallel: true, maxParallel: 2 } },
    },
    {
      name: 'the caller chose parallel without a number: the configured one',
      input: { args: { parallel: true }, configuredMaxParallel: 6 },
      want: { ask: false, choice: { parallel: true, maxParallel: 6 } },
    },
    {
      name: 'the caller chose one at a time',
      input: { args: { parallel: false } },
      want: { ask: false, choice: { parallel: false } },
    },
    {
      name: 'a story to begin with (Start Here): no question',
      input: { args: { item: 'US-3' } },
      want: { ask: false, choice: null },
    },
    {
      name: 'the person set ralph.parallel: no question, the setting decides',
      input: { setting: { parallel: true } },
      want: { ask: false, choice: null },
    },
    {
      name: "the settings' maxParallel wins over the configuration's",
      input: { setting: { maxParallel: 3 }, configuredMaxParallel: 8 },
      want: { ask: true, maxParallel: 3 },
    },
    {
      name: 'a maxParallel that is not a whole number ≥ 1 is ignored',
      input: { args: { maxParallel: 0 }, setting: { maxParallel: 2.5 }, configuredMaxParallel: '9' },
      want: { ask: true, maxParallel: 4 },
    },
  ];
  for (const t of table) it(t.name, () => assert.deepEqual(parallelOfferOf({ ...base, ...t.input }), t.want));

  it('knows a quantum run by name, path or as the only source', () => {
    assert.deepEqual(
      [
        isQuantumRun('quantum', []),
        isQuantumRun('quantum.json', []),
        isQuantumRun('a\\quantum.json', []),
        isQuantumRun('notquantum.json', []),
        isQuantumRun(undefined, ['quantum']),
        isQuantumRun(undefined, ['quantum', 'checklist']),
      ],
      [true, true, true, false, true, false],
    );
  });

  it('offers one at a time first, then parallel up to N', () => {
    const items = parallelPickItems(3);
    assert.deepEqual(
      items.map((i) => [i.label, i.choice]),
      [
        ['$(list-ordered) Run stories one at a time', { parallel: false }],
        [
          '$(split-horizontal) Run independent stories in parallel (git worktrees, up to 3)',
          { parallel: true, maxParallel: 3 },
        ],
      ],
    );
  });
});
