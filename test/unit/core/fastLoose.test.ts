import * as assert from 'node:assert/strict';
import { fastLoose, type FastShape } from '../../../src/core/model/fastLoose';
import { quantumFileFast, quantumFileSchema } from '../../../src/core/model/quantum';
import {
  flowEpicFast,
  flowEpicSchema,
  flowMetaFast,
  flowMetaSchema,
  flowRuntimeFast,
  flowRuntimeSchema,
  flowTaskFileFast,
  flowTaskSchema,
} from '../../../src/core/model/flowNext';

/** Same keys in the same order, same values (arrays by value), recursively. */
function sameValue(a: unknown, b: unknown): void {
  assert.equal(JSON.stringify(a), JSON.stringify(b));
  if (a && typeof a === 'object') {
    assert.deepEqual(Object.keys(a), Object.keys(b as object));
    for (const k of Object.keys(a)) sameValue((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]);
  }
}

const schemas: [string, FastShape, { safeParse(v: unknown): { success: boolean; data?: unknown } }][] = [
  ['task file', flowTaskFileFast, flowTaskSchema.partial({ id: true })],
  ['epic', flowEpicFast, flowEpicSchema],
  ['state', flowRuntimeFast, flowRuntimeSchema],
  ['meta', flowMetaFast, flowMetaSchema],
  ['quantum.json', quantumFileFast, quantumFileSchema],
];

const task = {
  assignee: null,
  claim_note: '',
  claimed_at: null,
  created_at: '2026-01-10T07:32:10.987913Z',
  depends_on: ['fn-1.1'],
  epic: 'fn-1',
  id: 'fn-1.2',
  priority: null,
  spec_path: '.flow/tasks/fn-1.2.md',
  status: 'todo',
  title: 'Task',
  updated_at: '2026-01-10T07:32:10.987913Z',
};
const epic = {
  depends_on_epics: [],
  id: 'fn-1',
  plan_review_status: 'unknown',
  status: 'open',
  title: 'Epic 1',
  branch_name: null,
  next_task: 3,
};
const state = {
  status: 'done',
  updated_at: '2026-01-11T00:00:00Z',
  evidence: { commits: ['abc'], tests: [], extra: 1 },
  blocked_reason: null,
};
const meta = { schema_version: 2, next_epic: 4, setup: { x: 1 } };
const story = (i: number, extra: Record<string, unknown> = {}) => ({
  id: `US-${i}`,
  title: `Story ${i}`,
  description: 'd',
  acceptanceCriteria: ['a'],
  priority: i,
  status: i % 2 ? 'pending' : 'passed',
  dependsOn: i > 1 ? [`US-${i - 1}`] : [],
  tasks: [
    { id: 'T-1', title: 't', filePaths: ['a.ts'], commands: ['npm test'], testFirst: true, status: 'done', x: 1 },
  ],
  review: {
    specCompliance: { status: 'pending', issues: [], reviewedAt: null },
    codeQuality: { status: 'passed', issues: [{ a: 1 }], reviewedAt: '2026-01-01' },
  },
  retries: {
    attempts: 1,
    maxAttempts: 3,
    failureLog: [{ phase: 'impl', timestamp: '2026-01-01T00:00:00Z', error: 'boom', attempt: 1 }],
  },
  notes: '',
  ...extra,
});
const quantum = {
  project: 'p',
  branchName: 'b',
  designPath: null,
  stories: [
    story(1),
    story(2, { startedAt: null, worktree: 'w', extra: [1] }),
    { id: 'US-3' },
    { id: 'US-4', retries: {} },
  ],
  progress: [{ timestamp: 't', iteration: 1, storyId: 'US-1', action: 'story_passed', filesChanged: ['a'], x: 2 }],
  codebasePatterns: ['p'],
  fileConflicts: [{ file: 'a', stories: ['US-1'] }],
  testCommand: 'npm test',
  staleThresholdMinutes: 20,
  execution: { mode: 'parallel', maxParallel: 2, currentWave: 1, activeWorktrees: [] },
  routing: { a: 1 },
  userIntent: { text: 't', source_message_id: null },
  userClarifications: [{ q: 1 }],
  intentDrift: { a: [1] },
  reviews: {},
  deslop: { any: true },
  other: 1,
};
/** quantum.json variants inside a story and inside its retries. */
function quantumVariants(): unknown[] {
  const out: unknown[] = [];
  for (const v of variants(story(5), [
    'id',
    'title',
    'priority',
    'status',
    'dependsOn',
    'tasks',
    'review',
    'retries',
    'startedAt',
    'worktree',
  ]))
    out.push({ stories: [v] });
  for (const v of variants(story(6).retries, ['attempts', 'maxAttempts', 'failureLog']))
    out.push({ stories: [{ id: 'US-6', retries: v }] });
  for (const v of variants(story(6).retries.failureLog[0]!, ['phase', 'timestamp', 'attempt']))
    out.push({ stories: [{ id: 'US-6', retries: { failureLog: [v] } }] });
  return out;
}

/** Variants of a valid object: each key dropped, each key set to a value of every JSON type, an extra key. */
function variants(base: Record<string, unknown>, keys: readonly string[]): unknown[] {
  const values: unknown[] = [
    null,
    '',
    'x',
    0,
    1,
    1.5,
    -3,
    2 ** 60,
    true,
    [],
    ['a'],
    ['a', 2],
    {},
    { commits: ['c'] },
    { commits: 'c' },
  ];
  const out: unknown[] = [
    base,
    {},
    null,
    [],
    'x',
    3,
    { ...base, extra: { nested: [1] }, zzz: null },
    { zzz: 1, ...base },
  ];
  for (const k of new Set([...keys, ...Object.keys(base)])) {
    const { [k]: _drop, ...rest } = base;
    out.push(rest);
    for (const v of values) out.push({ ...base, [k]: v });
  }
  out.push(JSON.parse('{"__proto__": {"x": 1}, "id": "fn-1"}'));
  return out;
}

/** The fast paths of model/flowNext.ts give zod's exact value, or step aside (model/fastLoose.ts). */
describe('fast loose-object paths (flow-next schemas)', () => {
  for (const [name, shape, schema] of schemas) {
    const base =
      name === 'task file'
        ? task
        : name === 'epic'
          ? epic
          : name === 'state'
            ? state
            : name === 'meta'
              ? meta
              : quantum;
    it(`${name}: the fast value equals zod's, key order included, and never accepts what zod rejects`, () => {
      let fastHits = 0;
      for (const v of [
        ...variants(
          base,
          shape.map(([k]) => k),
        ),
        ...(name === 'quantum.json' ? quantumVariants() : []),
      ]) {
        const z = schema.safeParse(structuredClone(v));
        const f = fastLoose(shape, structuredClone(v));
        if (f === undefined) continue;
        fastHits++;
        assert.ok(z.success, `fast accepted what zod rejects: ${JSON.stringify(v)}`);
        sameValue(f, z.data);
      }
      assert.ok(fastHits > 10, `the fast path took ${fastHits} inputs`);
    });
  }
  it('takes the plain files flowctl writes (so zod is not needed for them)', () => {
    assert.ok(fastLoose(flowTaskFileFast, task));
    assert.ok(fastLoose(flowEpicFast, epic));
    assert.ok(fastLoose(flowRuntimeFast, state));
    assert.ok(fastLoose(flowMetaFast, meta));
    assert.ok(fastLoose(quantumFileFast, quantum));
  });
  it('copies arrays (a default or an input array is never shared)', () => {
    const a = fastLoose(flowTaskFileFast, { id: 'fn-1.1' })!;
    const b = fastLoose(flowTaskFileFast, { id: 'fn-1.1' })!;
    assert.notEqual(a.depends_on, b.depends_on);
    const input = { id: 'fn-1.1', depends_on: ['x'] };
    assert.notEqual(fastLoose(flowTaskFileFast, input)!.depends_on, input.depends_on);
  });
});
