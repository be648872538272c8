import * as assert from 'node:assert/strict';
import { OperationError } from '../../../src/core/model/operationError';
import { quantumFileSchema } from '../../../src/core/model/quantum';
import {
  quantumNext,
  planQuantumBlock,
  planQuantumDone,
  planQuantumRelease,
  planQuantumReset,
  planQuantumStale,
  planQuantumStart,
} from '../../../src/core/sources/quantum/quantumOps';
import type { QuantumDoc } from '../../../src/core/sources/quantum/readQuantum';
import { quantumJson, type StorySpec } from '../../support/workspace';

const NOW = Date.UTC(2026, 5, 1, 12, 0, 0);
const doc = (stories: StorySpec[], extra: Record<string, unknown> = {}): QuantumDoc => {
  const text = quantumJson(stories, extra);
  return { file: 'quantum.json', text, data: quantumFileSchema.parse(JSON.parse(text)) };
};
type Story = {
  status: string;
  startedAt?: string | null;
  retries: { attempts: number; failureLog: Record<string, unknown>[] };
};
const stories = (text: string) => (JSON.parse(text) as { stories: Story[] }).stories;

describe('quantum-loop: eligibility (seed-systems.md §4.3)', () => {
  const table: { name: string; stories: StorySpec[]; expected: ReturnType<typeof quantumNext> }[] = [
    {
      name: 'every story passed is COMPLETE',
      stories: [{ id: 'A', status: 'passed' }],
      expected: { status: 'complete', stories: [] },
    },
    {
      name: 'pending stories with passed dependencies are eligible, by priority',
      stories: [
        { id: 'A', priority: 2 },
        { id: 'B', priority: 1 },
        { id: 'C', priority: 3, deps: ['A'] },
      ],
      expected: { status: 'work', stories: ['B', 'A'] },
    },
    {
      name: 'a missing priority sorts last',
      stories: [{ id: 'A' }, { id: 'B', priority: 5 }],
      expected: { status: 'work', stories: ['B', 'A'] },
    },
    {
      name: 'a failed story with attempts left is eligible',
      stories: [{ id: 'A', status: 'failed', attempts: 1 }],
      expected: { status: 'work', stories: ['A'] },
    },
    {
      name: 'a failed story out of attempts is not eligible',
      stories: [{ id: 'A', status: 'failed', attempts: 3 }],
      expected: { status: 'blocked', stories: [] },
    },
    {
      name: 'in_progress stories are never eligible',
      stories: [{ id: 'A', status: 'in_progress' }],
      expected: { status: 'blocked', stories: [] },
    },
    {
      name: 'an unknown dependency is never satisfied',
      stories: [{ id: 'A', deps: ['NOPE'] }],
      expected: { status: 'blocked', stories: [] },
    },
    {
      name: 'dependants of a failed-out story are blocked implicitly',
      stories: [
        { id: 'A', status: 'failed', attempts: 3 },
        { id: 'B', deps: ['A'] },
      ],
      expected: { status: 'blocked', stories: [] },
    },
  ];
  for (const c of table) it(c.name, () => assert.deepEqual(quantumNext(doc(c.stories).data.stories), c.expected));
});

describe('quantum-loop: start, done, block', () => {
  it('start sets in_progress and startedAt with milliseconds', () => {
    const s = stories(planQuantumStart(doc([{ id: 'A' }]), 'A', {}, NOW).text)[0]!;
    assert.equal(s.status, 'in_progress');
    assert.equal(s.startedAt, '2026-06-01T12:00:00.000Z');
  });

  it('start refuses unmet dependencies unless forced', () => {
    const d = doc([{ id: 'A' }, { id: 'B', deps: ['A'] }]);
    assert.throws(() => planQuantumStart(d, 'B', {}, NOW), /dependencies not passed: A/);
    assert.equal(stories(planQuantumStart(d, 'B', { force: true }, NOW).text)[1]!.status, 'in_progress');
  });

  it('start of an in_progress story changes nothing', () => {
    const d = doc([{ id: 'A', status: 'in_progress' }]);
    assert.equal(planQuantumStart(d, 'A', {}, NOW).text, d.text);
  });

  it('done sets passed and clears startedAt', () => {
    const s = stories(
      planQuantumDone(doc([{ id: 'A', status: 'in_progress', startedAt: '2026-01-01T00:00:00Z' }]), 'A', {}, NOW).text,
    )[0]!;
    assert.equal(s.status, 'passed');
    assert.equal(s.startedAt, null);
  });

  it('release gives an in_progress story back as pending, with its attempts kept', () => {
    const d = doc([{ id: 'A', status: 'in_progress', startedAt: '2026-01-01T00:00:00Z', attempts: 2 }]);
    const s = stories(planQuantumRelease(d, 'A', NOW).text)[0]!;
    assert.equal(s.status, 'pending');
    assert.ok(!('startedAt' in s), 'no other story carries startedAt: the key is removed, not set to null');
    assert.equal(s.retries.attempts, 2);
    const kept = doc([
      { id: 'A', status: 'in_progress', startedAt: '2026-01-01T00:00:00Z' },
      { id: 'B', status: 'passed', startedAt: null },
    ]);
    assert.equal(
      stories(planQuantumRelease(kept, 'A', NOW).text)[0]!.startedAt,
      null,
      'the file writes startedAt: cleared to null',
    );
  });

  it('release of a story that is not in_progress changes nothing', () => {
    for (const status of ['pending', 'passed', 'failed', 'blocked']) {
      const d = doc([{ id: 'A', status }]);
      assert.equal(planQuantumRelease(d, 'A', NOW).text, d.text, status);
    }
  });

  it('block fails the story, counts the attempt and appends a failure entry', () => {
    const s = stories(
      planQuantumBlock(doc([{ id: 'A', status: 'in_progress' }]), 'A', { reason: 'tests red', phase: 'test' }, NOW)
        .text,
    )[0]!;
    assert.equal(s.status, 'failed');
    assert.equal(s.retries.attempts, 1);
    assert.deepEqual(s.retries.failureLog, [
      { phase: 'test', timestamp: '2026-06-01T12:00:00.000Z', attempt: 1, error: 'tests red' },
    ]);
  });

  it('block refuses a passed story', () => {
    assert.throws(
      () => planQuantumBlock(doc([{ id: 'A', status: 'passed' }]), 'A', { reason: 'x' }, NOW),
      OperationError,
    );
  });

  it('an unknown story id is refused', () => {
    assert.throws(() => planQuantumStart(doc([{ id: 'A' }]), 'Z', {}, NOW), /Story Z not found/);
  });
});

describe('quantum-loop: reset', () => {
  const log = [{ phase: 'test', timestamp: '2026-01-01T00:00:00Z', error: 'x' }];
  const table: {
    name: string;
    stories: StorySpec[];
    id: string;
    cascade?: boolean;
    force?: boolean;
    reset?: string[];
    message?: string;
    error?: RegExp;
  }[] = [
    { name: 'a passed story becomes pending', stories: [{ id: 'A', status: 'passed' }], id: 'A', reset: ['A'] },
    {
      name: 'a failed story becomes pending',
      stories: [{ id: 'A', status: 'failed', attempts: 2 }],
      id: 'A',
      reset: ['A'],
    },
    {
      name: 'a blocked story becomes pending',
      stories: [{ id: 'A', status: 'blocked', attempts: 3 }],
      id: 'A',
      reset: ['A'],
    },
    {
      name: 'a pending story is a successful no-op',
      stories: [{ id: 'A' }],
      id: 'A',
      reset: [],
      message: 'A already pending',
    },
    {
      name: 'an in_progress story is refused without force',
      stories: [{ id: 'A', status: 'in_progress' }],
      id: 'A',
      error: /Use --force/,
    },
    {
      name: 'an in_progress story is reset with force',
      stories: [{ id: 'A', status: 'in_progress' }],
      id: 'A',
      force: true,
      reset: ['A'],
    },
    {
      name: 'cascade follows dependsOn transitively and skips pending and in_progress dependants',
      stories: [
        { id: 'A', status: 'passed' },
        { id: 'B', status: 'passed', deps: ['A'] },
        { id: 'C', status: 'failed', deps: ['B'] },
        { id: 'D', status: 'in_progress', deps: ['A'] },
        { id: 'E', deps: ['A'] },
        { id: 'F', status: 'passed' },
      ],
      id: 'A',
      cascade: true,
      reset: ['A', 'B', 'C'],
    },
  ];
  for (const c of table) {
    it(c.name, () => {
      const d = doc(c.stories);
      if (c.error) return assert.throws(() => planQuantumReset(d, c.id, c, NOW), c.error);
      const plan = planQuantumReset(d, c.id, c, NOW);
      assert.deepEqual(plan.result.reset, c.reset);
      assert.equal(plan.result.message, c.message);
      const after = stories(plan.text);
      for (const id of c.reset ?? []) {
        const s = after[c.stories.findIndex((x) => x.id === id)]!;
        assert.equal(s.status, 'pending');
        assert.equal(s.retries.attempts, 0);
      }
    });
  }

  it('reset keeps the failure log', () => {
    const plan = planQuantumReset(doc([{ id: 'A', status: 'failed', attempts: 1, failureLog: log }]), 'A', {}, NOW);
    assert.deepEqual(stories(plan.text)[0]!.retries.failureLog, log);
  });
});

describe('quantum-loop: stale detection (seed-systems.md §4.7)', () => {
  const minutesAgo = (m: number, fmt: (ms: number) => string = (ms) => new Date(ms).toISOString()) =>
    fmt(NOW - m * 60_000);
  const table: {
    name: string;
    stories: StorySpec[];
    extra?: Record<string, unknown>;
    threshold?: number;
    stale: string[];
    becomes?: string[];
    warnings?: number;
  }[] = [
    {
      name: 'a story in progress longer than 20 minutes is stale',
      stories: [{ id: 'A', status: 'in_progress', startedAt: minutesAgo(21) }],
      stale: ['A'],
      becomes: ['failed'],
    },
    {
      name: 'a story in progress exactly 20 minutes is not stale',
      stories: [{ id: 'A', status: 'in_progress', startedAt: minutesAgo(20) }],
      stale: [],
    },
    {
      name: 'millisecond timestamps are read (.123Z)',
      stories: [{ id: 'A', status: 'in_progress', startedAt: new Date(NOW - 30 * 60_000 + 123).toISOString() }],
      stale: ['A'],
    },
    {
      name: 'offset timestamps are read (+02:00)',
      stories: [{ id: 'A', status: 'in_progress', startedAt: '2026-06-01T13:30:00+02:00' }],
      stale: ['A'],
    },
    {
      name: 'a story on its last attempt becomes blocked',
      stories: [{ id: 'A', status: 'in_progress', attempts: 2, startedAt: minutesAgo(60) }],
      stale: ['A'],
      becomes: ['blocked'],
    },
    {
      name: "quantum.json's staleThresholdMinutes is used",
      stories: [{ id: 'A', status: 'in_progress', startedAt: minutesAgo(11) }],
      extra: { staleThresholdMinutes: 10 },
      stale: ['A'],
    },
    {
      name: 'the --stale-timeout flag overrides the file',
      stories: [{ id: 'A', status: 'in_progress', startedAt: minutesAgo(11) }],
      extra: { staleThresholdMinutes: 10 },
      threshold: 30,
      stale: [],
    },
    {
      name: 'in_progress without startedAt is only a warning',
      stories: [{ id: 'A', status: 'in_progress' }],
      stale: [],
      warnings: 1,
    },
    {
      name: 'stories not in progress are never stale',
      stories: [{ id: 'A', status: 'failed', startedAt: minutesAgo(99) }],
      stale: [],
    },
  ];
  for (const c of table) {
    it(c.name, () => {
      const d = doc(c.stories, c.extra);
      const plan = planQuantumStale(d, { thresholdMinutes: c.threshold }, NOW);
      assert.deepEqual(
        plan.result.stale.map((s) => s.id),
        c.stale,
      );
      if (c.becomes)
        assert.deepEqual(
          plan.result.stale.map((s) => s.becomes),
          c.becomes,
        );
      assert.equal(plan.result.warnings.length, c.warnings ?? 0);
      if (!c.stale.length) assert.equal(plan.text, d.text);
    });
  }

  it('a stale story gets attempts + 1, startedAt null and the stale_detection entry', () => {
    const plan = planQuantumStale(doc([{ id: 'A', status: 'in_progress', startedAt: minutesAgo(45) }]), {}, NOW);
    const s = stories(plan.text)[0]!;
    assert.equal(s.startedAt, null);
    assert.equal(s.retries.attempts, 1);
    assert.deepEqual(s.retries.failureLog.at(-1), {
      phase: 'stale_detection',
      timestamp: '2026-06-01T12:00:00.000Z',
      error: 'Story exceeded 20 minute stale threshold',
    });
  });
});
