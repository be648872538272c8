import { pastStaleThreshold } from '../../model/quantumStale';
import {
  QUANTUM_DEFAULT_MAX_ATTEMPTS,
  QUANTUM_DEFAULT_STALE_MINUTES,
  storyRetries,
  type QuantumFailureEntry,
  type QuantumStory,
} from '../../model/quantum';
import { OperationError } from '../../model/operationError';
import { isoString, parseIsoTime } from '../../model/time';
import * as path from 'node:path';
import { applyJsonChanges, refuseDuplicateKeys, type JsonChange } from '../../store/jsonEdit';
import { transitiveDependents } from '../dependents';
import type { QuantumDoc } from './readQuantum';

/**
 * quantum-loop story operations (seed-systems.md §4.2–§4.7) as pure planners over the text of `quantum.json`:
 * each returns the decision and the new text (edited in place with jsonc-parser, so only the changed values
 * differ). The caller commits it with `commitPlan` under the file's lock.
 */

/** The eligibility answer of §4.3: every story passed, nothing eligible, or the eligible ids by priority. */
export type QuantumNextResult =
  { status: 'complete'; stories: [] } | { status: 'blocked'; stories: [] } | { status: 'work'; stories: string[] };

/**
 * §4.3 DAG query: eligible = not `in_progress`, and `pending` or (`failed` with attempts < maxAttempts), and every
 * `dependsOn` id names a `passed` story (an unknown id is never satisfied). Sorted by priority ascending with a
 * missing priority last (the parallel query's 999; fixes §4.8-5, the sequential query sorted it first), ties in
 * file order. Pure.
 */
export function quantumNext(stories: readonly QuantumStory[]): QuantumNextResult {
  if (stories.length && stories.every((s) => s.status === 'passed')) return { status: 'complete', stories: [] };
  const status = new Map(stories.map((s) => [s.id, s.status]));
  const eligible = stories
    .map((s, i) => ({ s, i }))
    .filter(({ s }) => isEligible(s) && s.dependsOn.every((d) => status.get(d) === 'passed'))
    .sort((a, b) => (a.s.priority ?? 999) - (b.s.priority ?? 999) || a.i - b.i)
    .map(({ s }) => s.id);
  return eligible.length ? { status: 'work', stories: eligible } : { status: 'blocked', stories: [] };
}

function isEligible(s: QuantumStory): boolean {
  if (s.status === 'pending') return true;
  const r = storyRetries(s);
  return s.status === 'failed' && r.attempts < r.maxAttempts;
}

function storyIndex(doc: QuantumDoc, id: string): number {
  const i = doc.data.stories.findIndex((s) => s.id === id);
  if (i < 0) throw new OperationError('not_found', `Story ${id} not found in quantum.json`);
  return i;
}

/** Changes that append a failure entry and set attempts, creating `retries` / `failureLog` when absent. */
function failureChanges(doc: QuantumDoc, i: number, attempts: number, entry: QuantumFailureEntry): JsonChange[] {
  const story = doc.data.stories[i]!;
  const base = ['stories', i, 'retries'];
  if (!story.retries)
    return [
      { op: 'set', path: base, value: { attempts, maxAttempts: QUANTUM_DEFAULT_MAX_ATTEMPTS, failureLog: [entry] } },
    ];
  const raw = rawStory(doc, i);
  const hasLog = Array.isArray((raw.retries as Record<string, unknown> | undefined)?.failureLog);
  return [
    { op: 'set', path: [...base, 'attempts'], value: attempts },
    hasLog
      ? { op: 'append', path: [...base, 'failureLog'], value: entry }
      : { op: 'set', path: [...base, 'failureLog'], value: [entry] },
  ];
}

const rawCache = new WeakMap<QuantumDoc, Record<string, unknown>[]>();

/** The story as plain JSON (the schema fills defaults, so key presence is read from the raw parse). */
function rawStory(doc: QuantumDoc, i: number): Record<string, unknown> {
  let stories = rawCache.get(doc);
  if (!stories) {
    stories = (JSON.parse(doc.text) as { stories: Record<string, unknown>[] }).stories;
    rawCache.set(doc, stories);
  }
  return stories[i] ?? {};
}

function hasKey(doc: QuantumDoc, i: number, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(rawStory(doc, i), key);
}

/**
 * The change that gives back story `i`'s `startedAt` when the story returns to `pending` (release, reset): none
 * when the key is absent; `null` (quantum-loop's "cleared") when another story of the file carries the key, so the
 * file already writes it; else the key is deleted, so a `start` followed by a `release` (a run that did no work)
 * leaves a file that never had `startedAt` as it was, instead of adding `"startedAt": null`.
 */
function giveBackStartedAt(doc: QuantumDoc, i: number): JsonChange[] {
  if (!hasKey(doc, i, 'startedAt')) return [];
  const fileKeepsIt = doc.data.stories.some((_, j) => j !== i && hasKey(doc, j, 'startedAt'));
  return [
    fileKeepsIt
      ? { op: 'set', path: ['stories', i, 'startedAt'], value: null }
      : { op: 'delete', path: ['stories', i, 'startedAt'] },
  ];
}

/** The new text with `changes` and the file's `updatedAt`; refuses a file that repeats a key (never written). */
function withUpdatedAt(doc: QuantumDoc, changes: JsonChange[], now: string): string {
  if (!changes.length) return doc.text;
  // quantum.json lives at the workspace root, so its base name is its workspace-relative name.
  refuseDuplicateKeys(path.basename(doc.file), doc.text);
  const all: JsonChange[] = [...changes];
  if (doc.data.updatedAt !== undefined) all.push({ op: 'set', path: ['updatedAt'], value: now });
  return applyJsonChanges(doc.text, all);
}

/** Result of a planner: the new text (equal to the old when nothing changes) and a message. */
export interface QuantumPlan<T = undefined> {
  text: string;
  result: T;
}

/**
 * `start`: a `pending` story, or a `failed` one with attempts left, becomes `in_progress` with `startedAt` now
 * (§4.5/§4.7). Refuses `passed`, exhausted and `blocked` stories and unmet dependencies unless `force`;
 * an `in_progress` story is a successful no-op.
 */
export function planQuantumStart(doc: QuantumDoc, id: string, opts: { force?: boolean }, nowMs: number): QuantumPlan {
  const i = storyIndex(doc, id);
  const s = doc.data.stories[i]!;
  if (s.status === 'in_progress') return { text: doc.text, result: undefined };
  if (!opts.force) {
    if (!isEligible(s))
      throw new OperationError(
        'invalid_state',
        `Cannot start story ${id}: status is '${s.status}'${s.status === 'failed' ? ' with no attempts left' : ''}. Use --force to override.`,
      );
    const status = new Map(doc.data.stories.map((x) => [x.id, x.status]));
    const unmet = s.dependsOn.filter((d) => status.get(d) !== 'passed');
    if (unmet.length)
      throw new OperationError(
        'deps_not_done',
        `Cannot start story ${id}: dependencies not passed: ${unmet.join(', ')}`,
      );
  }
  const now = isoString(nowMs);
  return {
    text: withUpdatedAt(
      doc,
      [
        { op: 'set', path: ['stories', i, 'status'], value: 'in_progress' },
        { op: 'set', path: ['stories', i, 'startedAt'], value: now },
      ],
      now,
    ),
    result: undefined,
  };
}

/**
 * `done`: an `in_progress` story becomes `passed` and `startedAt` is cleared (§4.7). Other states need `force`.
 * The story's `updatedAt` is set to now so `status` can tell when it passed: §4.1 has no story completion field
 * (quantum-loop itself records a pass as a `story_passed` progress entry, which the agent writes).
 */
export function planQuantumDone(doc: QuantumDoc, id: string, opts: { force?: boolean }, nowMs: number): QuantumPlan {
  const i = storyIndex(doc, id);
  const s = doc.data.stories[i]!;
  if (s.status !== 'in_progress' && !opts.force)
    throw new OperationError(
      'invalid_state',
      `Cannot complete story ${id}: status is '${s.status}'. Expected 'in_progress'.`,
    );
  const now = isoString(nowMs);
  const changes: JsonChange[] = [
    { op: 'set', path: ['stories', i, 'status'], value: 'passed' },
    { op: 'set', path: ['stories', i, 'updatedAt'], value: now },
  ];
  if (hasKey(doc, i, 'startedAt')) changes.push({ op: 'set', path: ['stories', i, 'startedAt'], value: null });
  return { text: withUpdatedAt(doc, changes, now), result: undefined };
}

/**
 * `release`: a run that ends without finishing its `in_progress` story (stopped, cancelled, a cap, an error) gives it
 * back: `pending` again, `startedAt` cleared (`null`, or removed when no other story carries the key: see
 * `giveBackStartedAt`), attempts and failure log untouched. Without it the story stays
 * `in_progress` and quantum-loop's query skips it, so the project reads BLOCKED (§4.8-4). With `alsoPassed`, a
 * `passed` story goes back too (the engine never marked it: an agent's unverified claim). Other states: no-op.
 */
export function planQuantumRelease(
  doc: QuantumDoc,
  id: string,
  nowMs: number,
  opts: { alsoPassed?: boolean } = {},
): QuantumPlan {
  const i = storyIndex(doc, id);
  const status = doc.data.stories[i]!.status;
  if (status !== 'in_progress' && !(opts.alsoPassed && status === 'passed'))
    return { text: doc.text, result: undefined };
  const now = isoString(nowMs);
  const changes: JsonChange[] = [
    { op: 'set', path: ['stories', i, 'status'], value: 'pending' },
    ...giveBackStartedAt(doc, i),
  ];
  return { text: withUpdatedAt(doc, changes, now), result: undefined };
}

/**
 * `block` (a failed attempt): the story becomes `failed`, `attempts += 1`, `startedAt` cleared, and a failure
 * entry `{phase, timestamp, attempt, error}` is appended (§4.2, §4.6; phase default `agent_failed`). Refuses
 * `passed`. A failed story with attempts ≥ maxAttempts reads as blocked (§4.2).
 */
export function planQuantumBlock(
  doc: QuantumDoc,
  id: string,
  opts: { reason: string; phase?: string },
  nowMs: number,
): QuantumPlan<{ attempts: number; status: string }> {
  const i = storyIndex(doc, id);
  const s = doc.data.stories[i]!;
  if (s.status === 'passed') throw new OperationError('invalid_state', `Cannot block story ${id}: status is 'passed'.`);
  const now = isoString(nowMs);
  const attempts = storyRetries(s).attempts + 1;
  const entry: QuantumFailureEntry = {
    phase: opts.phase ?? 'agent_failed',
    timestamp: now,
    attempt: attempts,
    error: opts.reason,
  };
  const changes: JsonChange[] = [
    { op: 'set', path: ['stories', i, 'status'], value: 'failed' },
    ...failureChanges(doc, i, attempts, entry),
  ];
  if (hasKey(doc, i, 'startedAt')) changes.push({ op: 'set', path: ['stories', i, 'startedAt'], value: null });
  return { text: withUpdatedAt(doc, changes, now), result: { attempts, status: 'failed' } };
}

/**
 * `reset <id> [--cascade] [--force]` for quantum-loop: a `passed`, `failed` or `blocked` story → `pending` with
 * `attempts` 0 (its failure log kept, `startedAt` cleared); `in_progress` refused unless `force`; `pending` is a
 * successful no-op. Cascade: every transitive dependent through `dependsOn`, whatever its status (as flowctl's
 * `find_dependents`), reset unless it is `in_progress` or `pending`.
 * The returned list mirrors flowctl's `reset` (the story itself first, then dependents in file order).
 */
export function planQuantumReset(
  doc: QuantumDoc,
  id: string,
  opts: { cascade?: boolean; force?: boolean },
  nowMs: number,
): QuantumPlan<{ reset: string[]; message?: string }> {
  const i = storyIndex(doc, id);
  const s = doc.data.stories[i]!;
  if (s.status === 'in_progress' && !opts.force)
    throw new OperationError('invalid_state', `Cannot reset in_progress story ${id}. Use --force to override.`);
  if (s.status === 'pending') return { text: doc.text, result: { reset: [], message: `${id} already pending` } };
  const chosen = new Set([id]);
  if (opts.cascade) {
    const status = new Map(doc.data.stories.map((x) => [x.id, x.status]));
    for (const d of transitiveDependents(
      doc.data.stories.map((x) => ({ id: x.id, deps: x.dependsOn })),
      id,
    )) {
      const st = status.get(d);
      if (st !== 'in_progress' && st !== 'pending') chosen.add(d);
    }
  }
  const ordered = [id, ...doc.data.stories.filter((x) => x.id !== id && chosen.has(x.id)).map((x) => x.id)];
  const changes: JsonChange[] = [];
  for (const sid of ordered) {
    const k = storyIndex(doc, sid);
    const story = doc.data.stories[k]!;
    changes.push({ op: 'set', path: ['stories', k, 'status'], value: 'pending' });
    if (story.retries) changes.push({ op: 'set', path: ['stories', k, 'retries', 'attempts'], value: 0 });
    changes.push(...giveBackStartedAt(doc, k));
  }
  return { text: withUpdatedAt(doc, changes, isoString(nowMs)), result: { reset: ordered } };
}

/** One stale story found by {@link planQuantumStale}. */
export interface StaleStory {
  id: string;
  startedAt: string;
  /** Minutes since `startedAt` (rounded down). */
  minutes: number;
  /** `failed`, or `blocked` when attempts + 1 ≥ maxAttempts. */
  becomes: 'failed' | 'blocked';
  attempts: number;
}

export interface StaleReport {
  thresholdMinutes: number;
  stale: StaleStory[];
  /** `in_progress` stories without a usable `startedAt`: reported, never changed. */
  warnings: string[];
}

/**
 * §4.7 stale detection: every `in_progress` story whose `now − startedAt > threshold` minutes becomes `blocked`
 * when attempts + 1 ≥ maxAttempts, else `failed`; `attempts += 1`, `startedAt = null`, and a failure entry
 * `{phase: "stale_detection", timestamp, error: "Story exceeded <n> minute stale threshold"}`. The threshold is
 * `thresholdMinutes` (the `--stale-timeout` flag), else the file's `staleThresholdMinutes`, else 20 (fixes §4.8-5:
 * the seed never read the JSON field). Timestamps with milliseconds and offsets parse (fixes §4.8-2). An
 * `in_progress` story without `startedAt` is a warning only. `held` (story id → run id) names stories a live run is
 * working on: they are skipped with a warning.
 */
export function planQuantumStale(
  doc: QuantumDoc,
  opts: { thresholdMinutes?: number; held?: ReadonlyMap<string, string> },
  nowMs: number,
): QuantumPlan<StaleReport> {
  const threshold = opts.thresholdMinutes ?? doc.data.staleThresholdMinutes ?? QUANTUM_DEFAULT_STALE_MINUTES;
  const report: StaleReport = { thresholdMinutes: threshold, stale: [], warnings: [] };
  const now = isoString(nowMs);
  const changes: JsonChange[] = [];
  doc.data.stories.forEach((s, i) => {
    if (s.status !== 'in_progress') return;
    const started = parseIsoTime(s.startedAt ?? undefined);
    if (started === undefined) {
      report.warnings.push(
        s.startedAt
          ? `${s.id} is in_progress with an unreadable startedAt "${s.startedAt}"`
          : `${s.id} is in_progress without startedAt`,
      );
      return;
    }
    if (!pastStaleThreshold(s, nowMs, threshold)) return;
    // A story a live run is working on is not stale, however long it takes: skipped, said why.
    const holder = opts.held?.get(s.id);
    if (holder !== undefined) {
      report.warnings.push(`${s.id} is held by live run ${holder}: skipped`);
      return;
    }
    const r = storyRetries(s);
    const attempts = r.attempts + 1;
    const becomes = attempts >= r.maxAttempts ? 'blocked' : 'failed';
    report.stale.push({
      id: s.id,
      startedAt: s.startedAt!,
      minutes: Math.floor((nowMs - started) / 60_000),
      becomes,
      attempts,
    });
    changes.push({ op: 'set', path: ['stories', i, 'status'], value: becomes });
    changes.push({ op: 'set', path: ['stories', i, 'startedAt'], value: null });
    changes.push(
      ...failureChanges(doc, i, attempts, {
        phase: 'stale_detection',
        timestamp: now,
        error: `Story exceeded ${threshold} minute stale threshold`,
      }),
    );
  });
  return { text: withUpdatedAt(doc, changes, now), result: report };
}
