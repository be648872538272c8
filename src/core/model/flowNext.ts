import { z } from 'zod';
import type { FastField, FastShape } from './fastLoose';

/**
 * Schemas of flow-next's `.flow/` files (seed-systems.md §2.2–§2.4). Every object is loose: unknown keys are kept
 * so a newer flowctl's fields survive a round trip. Fields that differ between versions are optional (`epic` in
 * v0.x tasks is `spec` in v1+; `tracker` exists only in v1+ specs).
 */

/** `.flow/meta.json`: `{schema_version: 2, next_epic}` (v0.x) or `{schema_version: 3, next_spec, setup…}` (v1+). */
export const flowMetaSchema = z.looseObject({
  schema_version: z.number().int().optional(),
  next_epic: z.number().int().optional(),
  next_spec: z.number().int().optional(),
});
export type FlowMeta = z.infer<typeof flowMetaSchema>;

/** `.flow/epics/<id>.json` (v0.x) or `.flow/specs/<id>.json` (v1+): one epic / spec. */
export const flowEpicSchema = z.looseObject({
  id: z.string().min(1),
  title: z.string().default(''),
  /** "open" | "done"; other values are kept and reported, never counted. */
  status: z.string().default('open'),
  branch_name: z.string().nullable().optional(),
  spec_path: z.string().optional(),
  next_task: z.number().int().optional(),
  depends_on_epics: z.array(z.string()).default([]),
  plan_review_status: z.string().optional(),
  plan_reviewed_at: z.string().nullable().optional(),
  created_at: z.string().optional(),
  updated_at: z.string().optional(),
});
export type FlowEpic = z.infer<typeof flowEpicSchema>;

/** The raw statuses flowctl writes for a task (§2.5). */
export const FLOW_TASK_STATUSES = ['todo', 'in_progress', 'blocked', 'done'] as const;
export type FlowTaskStatus = (typeof FLOW_TASK_STATUSES)[number];

const evidenceSchema = z.looseObject({
  commits: z.array(z.string()).optional(),
  tests: z.array(z.string()).optional(),
  prs: z.array(z.string()).optional(),
});

/**
 * The runtime fields of a task: in the committed task JSON (v0.x) or, from 2026-01-21 on, in
 * `<git-common-dir>/flow-state/tasks/<id>.state.json` merged over it (§2.4).
 */
const flowRuntimeShape = {
  status: z.string().optional(),
  updated_at: z.string().nullable().optional(),
  claimed_at: z.string().nullable().optional(),
  assignee: z.string().nullable().optional(),
  claim_note: z.string().nullable().optional(),
  evidence: evidenceSchema.nullable().optional(),
  blocked_reason: z.string().nullable().optional(),
  completed_at: z.string().nullable().optional(),
};
export const flowRuntimeSchema = z.looseObject(flowRuntimeShape);
export type FlowRuntime = z.infer<typeof flowRuntimeSchema>;

/** `.flow/tasks/<epicId>.<n>.json`: one task (§2.4). */
export const flowTaskSchema = z.looseObject({
  ...flowRuntimeShape,
  id: z.string().min(1),
  epic: z.string().optional(),
  spec: z.string().optional(),
  title: z.string().default(''),
  status: z.string().default('todo'),
  depends_on: z.array(z.string()).default([]),
  /** null (and absent) sorts as 999 in `next` (§2.5). */
  priority: z.number().nullable().optional(),
  spec_path: z.string().optional(),
  created_at: z.string().optional(),
});
export type FlowTask = z.infer<typeof flowTaskSchema>;

/** The runtime keys that live in a state file and are merged over the committed task (§2.4). */
export const FLOW_RUNTIME_KEYS = [
  'status',
  'updated_at',
  'claimed_at',
  'assignee',
  'claim_note',
  'evidence',
  'blocked_reason',
] as const;

/** Keys `flowctl task reset` deletes (deleted, not set to null; §2.5). */
export const FLOW_RESET_DELETED_KEYS = [
  'blocked_reason',
  'completed_at',
  'assignee',
  'claimed_at',
  'claim_note',
  'evidence',
] as const;

/**
 * Ids (§2.3). v0.8's parser is `^fn-(\d+)(?:-[a-z0-9]{3})?(?:\.(\d+))?$`; v1+ slugs (`fn-114-ralph-opt-in…`) are
 * longer, so the epic part here is `fn-<n>` plus any `-[a-z0-9-]+` suffix, and a task adds `.<m>`.
 */
export const FLOW_EPIC_ID = /^fn-(\d+)(?:-[a-z0-9][a-z0-9-]*)?$/;
export const FLOW_TASK_ID = /^(fn-(\d+)(?:-[a-z0-9][a-z0-9-]*)?)\.(\d+)$/;

/** The epic of a task id: the text before the last `.` (§2.3). */
export function epicOfTaskId(taskId: string): string {
  const dot = taskId.lastIndexOf('.');
  return dot < 0 ? taskId : taskId.slice(0, dot);
}

/** `fn-12-abc` → 12, for numeric epic order (§2.5 `next`). */
export function epicNumber(epicId: string): number {
  const m = /^fn-(\d+)/.exec(epicId);
  return m ? Number(m[1]) : Number.MAX_SAFE_INTEGER;
}

/** `fn-1.12` → 12, the task-number tie-break of `next` (§2.5). */
export function taskNumber(taskId: string): number {
  const m = /\.(\d+)$/.exec(taskId);
  return m ? Number(m[1]) : Number.MAX_SAFE_INTEGER;
}

// ---------------------------------------------------------------------------------------------------------------
// Fast paths (model/fastLoose.ts): the same schemas as flat descriptions, for the thousands of files `status`,
// `next` and `task reset` read. A file they do not plainly accept goes to the zod schema above (the value or the
// positioned error). Keep each in step with its schema: test/unit/model/fastLoose.test.ts compares them.

const optStr: FastField = { kind: 'str' };
const optStrN: FastField = { kind: 'str', nullable: true };
const evidenceFast: FastShape = [
  ['commits', { kind: 'strArray' }],
  ['tests', { kind: 'strArray' }],
  ['prs', { kind: 'strArray' }],
];
const runtimeFast: FastShape = [
  ['status', optStr],
  ['updated_at', optStrN],
  ['claimed_at', optStrN],
  ['assignee', optStrN],
  ['claim_note', optStrN],
  ['evidence', { kind: evidenceFast, nullable: true }],
  ['blocked_reason', optStrN],
  ['completed_at', optStrN],
];

/** {@link flowMetaSchema} as a fast path. */
export const flowMetaFast: FastShape = [
  ['schema_version', { kind: 'int' }],
  ['next_epic', { kind: 'int' }],
  ['next_spec', { kind: 'int' }],
];

/** {@link flowEpicSchema} as a fast path. */
export const flowEpicFast: FastShape = [
  ['id', { kind: 'str1', required: true }],
  ['title', { kind: 'str', default: () => '' }],
  ['status', { kind: 'str', default: () => 'open' }],
  ['branch_name', optStrN],
  ['spec_path', optStr],
  ['next_task', { kind: 'int' }],
  ['depends_on_epics', { kind: 'strArray', default: () => [] }],
  ['plan_review_status', optStr],
  ['plan_reviewed_at', optStrN],
  ['created_at', optStr],
  ['updated_at', optStr],
];

/** {@link flowRuntimeSchema} (a state file) as a fast path. */
export const flowRuntimeFast: FastShape = runtimeFast;

/** A task file: {@link flowTaskSchema} with `id` optional (`flowTaskSchema.partial({ id: true })`), as a fast path. */
export const flowTaskFileFast: FastShape = [
  // The spread runtime shape keeps its place; `status` is overridden in place (a default of 'todo').
  ['status', { kind: 'str', default: () => 'todo' }],
  ...runtimeFast.slice(1),
  ['id', { kind: 'str1' }],
  ['epic', optStr],
  ['spec', optStr],
  ['title', { kind: 'str', default: () => '' }],
  ['depends_on', { kind: 'strArray', default: () => [] }],
  ['priority', { kind: 'num', nullable: true }],
  ['spec_path', optStr],
  ['created_at', optStr],
];
