import { storyRetries, QUANTUM_DEFAULT_MAX_ATTEMPTS, type QuantumFailureEntry } from '../../model/quantum';
import { FileProblemError } from '../../store/parseError';
import { applyJsonChanges, type JsonChange } from '../../store/jsonEdit';
import { commitPlan } from '../../store/writePlan';
import { isoString } from '../../model/time';
import { quantumPath, readQuantum, type QuantumDoc } from '../../sources/quantum/readQuantum';

/**
 * The coordinator's writes to quantum.json in a parallel run: every one through the store's locked,
 * compare-before-replace write (`commitPlan`), edited in place (only the changed values differ). Agents in lanes
 * never write quantum.json (their copy is a checked-out file): the coordinator records what they signal.
 * Fields (seed-systems.md §4.1, §4.6): a story's `status`, `startedAt`, `worktree`, `retries` (attempts and the
 * failure log: `merge_conflict` with `files`, `merge_regression`, `story_timeout`, `verification` …), and
 * `execution.currentWave` (the round number) and `execution.activeWorktrees` (the lanes' trees, relative paths).
 */

type Edit = (doc: QuantumDoc, now: string) => JsonChange[];

/** Applies `edit` to `folder`'s quantum.json under its lock; a file that does not parse is never written. */
export async function editQuantum(folder: string, edit: Edit, nowMs = Date.now()): Promise<void> {
  await commitPlan(quantumPath(folder), async () => {
    const q = readQuantum(folder);
    if (!q?.doc) throw q?.problem ? new FileProblemError(q.problem) : new Error(`${quantumPath(folder)}: not found`);
    const doc = q.doc;
    const now = isoString(nowMs);
    const changes = edit(doc, now);
    if (changes.length && doc.data.updatedAt !== undefined)
      changes.push({ op: 'set', path: ['updatedAt'], value: now });
    return {
      writes: [
        { file: doc.file, before: doc.text, after: changes.length ? applyJsonChanges(doc.text, changes) : doc.text },
      ],
      result: undefined,
    };
  });
}

function indexOf(doc: QuantumDoc, id: string): number {
  const i = doc.data.stories.findIndex((s) => s.id === id);
  if (i < 0) throw new Error(`story ${id} is not in quantum.json any more`);
  return i;
}

/** `execution.<key> = value`, creating `execution` when absent. */
function execution(doc: QuantumDoc, values: { currentWave?: number; activeWorktrees?: string[] }): JsonChange[] {
  if (!doc.data.execution) return [{ op: 'set', path: ['execution'], value: { ...values } }];
  return Object.entries(values).map(([k, v]) => ({ op: 'set' as const, path: ['execution', k], value: v }));
}

/** A failure entry appended, attempts + 1 (`retries` created when absent). */
function failure(
  doc: QuantumDoc,
  i: number,
  entry: Omit<QuantumFailureEntry, 'attempt' | 'timestamp'>,
  now: string,
): JsonChange[] {
  const s = doc.data.stories[i]!;
  const attempts = storyRetries(s).attempts + 1;
  const e = { ...entry, timestamp: now, attempt: attempts };
  const raw = (JSON.parse(doc.text) as { stories: Record<string, { retries?: { failureLog?: unknown } }> })?.stories?.[
    i
  ];
  if (!raw?.retries)
    return [
      {
        op: 'set',
        path: ['stories', i, 'retries'],
        value: { attempts, maxAttempts: QUANTUM_DEFAULT_MAX_ATTEMPTS, failureLog: [e] },
      },
    ];
  return [
    { op: 'set', path: ['stories', i, 'retries', 'attempts'], value: attempts },
    Array.isArray(raw.retries.failureLog)
      ? { op: 'append', path: ['stories', i, 'retries', 'failureLog'], value: e }
      : { op: 'set', path: ['stories', i, 'retries', 'failureLog'], value: [e] },
  ];
}

/**
 * Lanes took the stories of a round: each `in_progress`, `startedAt` now, `worktree` (relative path); the round and the
 * active trees; one locked write of quantum.json.
 */
export function lanesStarted(
  folder: string,
  starts: readonly { id: string; worktree: string }[],
  round: number,
  active: readonly string[],
): Promise<void> {
  return editQuantum(folder, (doc, now) => [
    ...starts.flatMap(({ id, worktree }): JsonChange[] => {
      const i = indexOf(doc, id);
      return [
        { op: 'set', path: ['stories', i, 'status'], value: 'in_progress' },
        { op: 'set', path: ['stories', i, 'startedAt'], value: now },
        { op: 'set', path: ['stories', i, 'worktree'], value: worktree },
      ];
    }),
    ...execution(doc, { currentWave: round, activeWorktrees: [...active] }),
  ]);
}

/** A lane's attempt failed and the lane retries: attempts + 1 and a failure entry; the story stays `in_progress`. */
export function laneAttemptFailed(folder: string, id: string, phase: string, reason: string): Promise<void> {
  return editQuantum(folder, (doc, now) => failure(doc, indexOf(doc, id), { phase, error: reason }, now));
}

/** The story's attempts so far and its limit (quantum.json `retries`), or null when it is gone. */
export function storyAttempts(folder: string, id: string): { attempts: number; maxAttempts: number } | null {
  const s = readQuantum(folder)?.doc?.data.stories.find((x) => x.id === id);
  return s ? storyRetries(s) : null;
}

/** How a lane's story ended, as quantum.json records it. */
export type StoryEnd =
  | { kind: 'passed' }
  | { kind: 'failed'; phase: string; reason: string; files?: readonly string[] }
  | { kind: 'released' };

/**
 * The coordinator records the end of story `id`'s lane: passed (merged, the feature branch green), failed (a failure
 * entry, attempts + 1; `files` for a merge conflict), or released (`pending` again, its branch kept); `startedAt`
 * cleared and `execution.activeWorktrees` set to the lanes still running.
 */
export function laneEnded(folder: string, id: string, end: StoryEnd, active: readonly string[]): Promise<void> {
  return editQuantum(folder, (doc, now) => {
    const i = indexOf(doc, id);
    const status = end.kind === 'passed' ? 'passed' : end.kind === 'failed' ? 'failed' : 'pending';
    const changes: JsonChange[] = [
      { op: 'set', path: ['stories', i, 'status'], value: status },
      { op: 'set', path: ['stories', i, 'startedAt'], value: null },
      ...execution(doc, { activeWorktrees: [...active] }),
    ];
    if (doc.data.stories[i]!.worktree !== undefined) changes.push({ op: 'delete', path: ['stories', i, 'worktree'] });
    if (end.kind === 'passed') changes.push({ op: 'set', path: ['stories', i, 'updatedAt'], value: now });
    if (end.kind === 'failed')
      changes.push(
        ...failure(
          doc,
          i,
          { phase: end.phase, error: end.reason, ...(end.files?.length ? { files: end.files.join(', ') } : {}) },
          now,
        ),
      );
    return changes;
  });
}

/** A story whose status in the main folder's quantum.json is not the one the coordinator wrote: `from` (expected) → `to` (found). */
export interface StatusDrift {
  id: string;
  expected: string;
  found: string;
}

/**
 * The stories of the main folder's quantum.json whose status differs from what the coordinator of a parallel run
 * wrote or found at its start (pure). In a parallel run the coordinator is the only
 * writer of statuses there (lanes record through it), so any other change (a lane's agent that found the main folder
 * with `git rev-parse --git-common-dir` and set a story `passed`) is to be put back. Stories the coordinator has no
 * status for (added meanwhile) and stories gone are not its to judge here (the run's readers report them).
 */
export function statusDrift(
  expected: ReadonlyMap<string, string>,
  found: readonly { id: string; status: string }[],
): StatusDrift[] {
  const out: StatusDrift[] = [];
  for (const s of found) {
    const want = expected.get(s.id);
    if (want !== undefined && want !== s.status) out.push({ id: s.id, expected: want, found: s.status });
  }
  return out;
}

/** Sets the drifted stories' statuses back to what the coordinator expects (locked, in place). */
export function putBackStatuses(folder: string, drift: readonly StatusDrift[]): Promise<void> {
  return editQuantum(folder, (doc) =>
    drift.flatMap((d) => {
      const i = doc.data.stories.findIndex((s) => s.id === d.id);
      return i < 0 || doc.data.stories[i]!.status === d.expected
        ? []
        : [{ op: 'set' as const, path: ['stories', i, 'status'], value: d.expected }];
    }),
  );
}
