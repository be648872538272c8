import { z } from 'zod';
import type { FastField, FastShape } from './fastLoose';

/**
 * Schema of quantum-loop's `quantum.json` (seed-systems.md §4.1), the whole shape including later versions'
 * fields (`startedAt`, `staleThresholdMinutes`, `execution`, `userIntent` …). Loose everywhere: unknown keys are
 * kept. Reading is lenient where real files differ (a story without `retries` reads as 0 of 3 attempts), strict
 * on types (a `priority` that is a string is an error naming its file and line).
 */

export const QUANTUM_STORY_STATUSES = ['pending', 'in_progress', 'passed', 'failed', 'blocked'] as const;
export type QuantumStoryStatus = (typeof QUANTUM_STORY_STATUSES)[number];

/** One entry of `retries.failureLog` (§4.1): phase from the agent or the runner, ISO timestamp. */
export const quantumFailureEntrySchema = z.looseObject({
  phase: z.string(),
  timestamp: z.string(),
  attempt: z.number().optional(),
  error: z.string().optional(),
  files: z.string().optional(),
});
export type QuantumFailureEntry = z.infer<typeof quantumFailureEntrySchema>;

const reviewStageSchema = z.looseObject({
  status: z.string().optional(),
  issues: z.array(z.unknown()).optional(),
  reviewedAt: z.string().nullable().optional(),
});

export const quantumTaskSchema = z.looseObject({
  id: z.string(),
  title: z.string().optional(),
  description: z.string().optional(),
  filePaths: z.array(z.string()).optional(),
  commands: z.array(z.string()).optional(),
  testFirst: z.boolean().optional(),
  status: z.string().optional(),
});

/** Default `retries.maxAttempts` (§4.2: `--max-retries` default 3). */
export const QUANTUM_DEFAULT_MAX_ATTEMPTS = 3;

export const quantumRetriesSchema = z.looseObject({
  attempts: z.number().int().nonnegative().default(0),
  maxAttempts: z.number().int().positive().default(QUANTUM_DEFAULT_MAX_ATTEMPTS),
  failureLog: z.array(quantumFailureEntrySchema).default([]),
});

export const quantumStorySchema = z.looseObject({
  id: z.string().min(1),
  title: z.string().default(''),
  description: z.string().optional(),
  acceptanceCriteria: z.array(z.string()).optional(),
  /** 1..N, lower first; missing sorts last (§4.3, the parallel query's 999). */
  priority: z.number().optional(),
  /** One of {@link QUANTUM_STORY_STATUSES}; other values are kept and reported, never counted. */
  status: z.string().default('pending'),
  dependsOn: z.array(z.string()).default([]),
  tasks: z.array(quantumTaskSchema).optional(),
  review: z
    .looseObject({ specCompliance: reviewStageSchema.optional(), codeQuality: reviewStageSchema.optional() })
    .optional(),
  retries: quantumRetriesSchema.optional(),
  notes: z.string().optional(),
  startedAt: z.string().nullable().optional(),
  worktree: z.string().optional(),
});
export type QuantumStory = z.infer<typeof quantumStorySchema>;

export const quantumProgressEntrySchema = z.looseObject({
  timestamp: z.string().optional(),
  iteration: z.number().optional(),
  storyId: z.string().optional(),
  action: z.string().optional(),
  details: z.string().optional(),
  filesChanged: z.array(z.string()).optional(),
  learnings: z.string().optional(),
});

export { QUANTUM_DEFAULT_STALE_MINUTES } from './quantumStale';

export const quantumFileSchema = z.looseObject({
  project: z.string().optional(),
  branchName: z.string().optional(),
  description: z.string().optional(),
  prdPath: z.string().optional(),
  designPath: z.string().nullable().optional(),
  createdAt: z.string().optional(),
  updatedAt: z.string().optional(),
  stories: z.array(quantumStorySchema),
  progress: z.array(quantumProgressEntrySchema).optional(),
  codebasePatterns: z.array(z.string()).optional(),
  fileConflicts: z
    .array(z.looseObject({ file: z.string(), stories: z.array(z.string()), reconciliationTask: z.string().optional() }))
    .optional(),
  testCommand: z.string().optional(),
  staleThresholdMinutes: z.number().positive().optional(),
  execution: z
    .looseObject({
      mode: z.string().optional(),
      maxParallel: z.number().optional(),
      currentWave: z.number().optional(),
      activeWorktrees: z.array(z.string()).optional(),
    })
    .optional(),
  routing: z.looseObject({}).optional(),
  userIntent: z
    .looseObject({
      text: z.string().optional(),
      timestamp: z.string().optional(),
      source_message_id: z.string().nullable().optional(),
    })
    .optional(),
  userClarifications: z.array(z.looseObject({})).optional(),
  intentDrift: z.record(z.string(), z.unknown()).optional(),
  reviews: z.record(z.string(), z.unknown()).optional(),
  deslop: z.unknown().optional(),
});
export type QuantumFile = z.infer<typeof quantumFileSchema>;

/** Attempts and limit of a story, with the defaults of §4.1 when `retries` is absent. */
export function storyRetries(story: QuantumStory): {
  attempts: number;
  maxAttempts: number;
  failureLog: QuantumFailureEntry[];
} {
  return {
    attempts: story.retries?.attempts ?? 0,
    maxAttempts: story.retries?.maxAttempts ?? QUANTUM_DEFAULT_MAX_ATTEMPTS,
    failureLog: story.retries?.failureLog ?? [],
  };
}

// ---------------------------------------------------------------------------------------------------------------
// The fast path of {@link quantumFileSchema} (model/fastLoose.ts): the same schema as a flat description, so a
// plain quantum.json of thousands of stories is read without zod; anything it does not plainly accept goes to the
// schema (the value or the positioned error). Keep in step: test/unit/core/fastLoose.test.ts compares them.

const s: FastField = { kind: 'str' };
const sN: FastField = { kind: 'str', nullable: true };
const strs: FastField = { kind: 'strArray' };
const failureFast: FastShape = [
  ['phase', { kind: 'str', required: true }],
  ['timestamp', { kind: 'str', required: true }],
  ['attempt', { kind: 'num' }],
  ['error', s],
  ['files', s],
];
const reviewStageFast: FastShape = [
  ['status', s],
  ['issues', { kind: { arrayOf: 'unknown' } }],
  ['reviewedAt', sN],
];
const taskFast: FastShape = [
  ['id', { kind: 'str', required: true }],
  ['title', s],
  ['description', s],
  ['filePaths', strs],
  ['commands', strs],
  ['testFirst', { kind: 'bool' }],
  ['status', s],
];
const retriesFast: FastShape = [
  ['attempts', { kind: 'int0', default: () => 0 }],
  ['maxAttempts', { kind: 'int1', default: () => QUANTUM_DEFAULT_MAX_ATTEMPTS }],
  ['failureLog', { kind: { arrayOf: failureFast }, default: () => [] }],
];
const storyFast: FastShape = [
  ['id', { kind: 'str1', required: true }],
  ['title', { kind: 'str', default: () => '' }],
  ['description', s],
  ['acceptanceCriteria', strs],
  ['priority', { kind: 'num' }],
  ['status', { kind: 'str', default: () => 'pending' }],
  ['dependsOn', { kind: 'strArray', default: () => [] }],
  ['tasks', { kind: { arrayOf: taskFast } }],
  [
    'review',
    {
      kind: [
        ['specCompliance', { kind: reviewStageFast }],
        ['codeQuality', { kind: reviewStageFast }],
      ],
    },
  ],
  ['retries', { kind: retriesFast }],
  ['notes', s],
  ['startedAt', sN],
  ['worktree', s],
];
const progressFast: FastShape = [
  ['timestamp', s],
  ['iteration', { kind: 'num' }],
  ['storyId', s],
  ['action', s],
  ['details', s],
  ['filesChanged', strs],
  ['learnings', s],
];

/** {@link quantumFileSchema} as a fast path. */
export const quantumFileFast: FastShape = [
  ['project', s],
  ['branchName', s],
  ['description', s],
  ['prdPath', s],
  ['designPath', sN],
  ['createdAt', s],
  ['updatedAt', s],
  ['stories', { kind: { arrayOf: storyFast }, required: true }],
  ['progress', { kind: { arrayOf: progressFast } }],
  ['codebasePatterns', strs],
  [
    'fileConflicts',
    {
      kind: {
        arrayOf: [
          ['file', { kind: 'str', required: true }],
          ['stories', { kind: 'strArray', required: true }],
          ['reconciliationTask', s],
        ],
      },
    },
  ],
  ['testCommand', s],
  ['staleThresholdMinutes', { kind: 'pos' }],
  [
    'execution',
    {
      kind: [
        ['mode', s],
        ['maxParallel', { kind: 'num' }],
        ['currentWave', { kind: 'num' }],
        ['activeWorktrees', strs],
      ],
    },
  ],
  ['routing', { kind: [] }],
  [
    'userIntent',
    {
      kind: [
        ['text', s],
        ['timestamp', s],
        ['source_message_id', sN],
      ],
    },
  ],
  ['userClarifications', { kind: { arrayOf: [] } }],
  ['intentDrift', { kind: 'record' }],
  ['reviews', { kind: 'record' }],
  ['deslop', { kind: 'unknown' }],
];
