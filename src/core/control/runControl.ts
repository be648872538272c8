import { mkdir, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { OperationError } from '../model/operationError';
import { readTextIfExists, removeIfExists, writeTextAtomic } from '../store/atomicWrite';
import { readRunViewNow } from './runFollower';
import { answerFilePath } from '../loop/question';
import { listRuns, type RunInfo, type RunProbe } from './runs';
import { GLOBAL_PAUSE_FILES } from './sentinels';
import { RUN_FILES } from '../model/ralphPaths';

/**
 * `pause | resume | stop [--run ID]` (seed-systems.md §2.7) for flow-next runs and ours. Auto-detection as
 * flowctl: exactly one active run → it; none → `No active runs`; several → `Multiple active runs, specify --run:
 * a, b`; `--run X` not active → `Run X not found or not active`.
 */
export function resolveActiveRun(folder: string, runId?: string, probe: RunProbe = {}): RunInfo {
  const active = listRuns(folder, probe).runs.filter((r) => r.active);
  if (runId !== undefined) {
    const r = active.find((x) => x.id === runId);
    if (!r) throw new OperationError('run_not_active', `Run ${runId} not found or not active`);
    return r;
  }
  if (active.length === 0) throw new OperationError('no_active_run', 'No active runs');
  if (active.length > 1)
    throw new OperationError(
      'several_active_runs',
      `Multiple active runs, specify --run: ${active.map((r) => r.id).join(', ')}`,
    );
  return active[0]!;
}

/** flowctl's answer shape (§2.7): `{"success": true, "run": id, "action": "paused"|"resumed"|"stop_requested"}`. */
export interface ControlAnswer {
  success: true;
  run: string;
  action: 'paused' | 'resumed' | 'stop_requested';
  /** Which kind of run, and the sentinel files created or removed (absolute paths). */
  kind: RunInfo['kind'];
  files: string[];
}

async function touch(file: string, text = ''): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, text, { flag: text ? 'w' : 'a' });
}

/**
 * Writes the PAUSE sentinel in a run's folder (made if missing); `reason` (e.g. `blocked: US-003: tests fail`) becomes
 * its text, for a person to read. The one writer of PAUSE: `ralph pause` and the engine pausing on a blocked item.
 * Returns the file.
 */
export async function writePauseSentinel(runDir: string, reason = ''): Promise<string> {
  const file = path.join(runDir, RUN_FILES.pause);
  await touch(file, reason);
  return file;
}

/** Creates the run's PAUSE sentinel (`<run dir>/PAUSE`). */
export async function pauseRun(folder: string, runId?: string, probe?: RunProbe): Promise<ControlAnswer> {
  const run = resolveActiveRun(folder, runId, probe);
  const file = await writePauseSentinel(run.dir);
  return { success: true, run: run.id, action: 'paused', kind: run.kind, files: [file] };
}

/**
 * Removes the run's PAUSE sentinel; for our runs also the global `scripts/ralph/PAUSE`, which would otherwise
 * keep the run paused. Reports the files actually removed.
 */
export async function resumeRun(folder: string, runId?: string, probe?: RunProbe): Promise<ControlAnswer> {
  const run = resolveActiveRun(folder, runId, probe);
  const candidates = [
    path.join(run.dir, RUN_FILES.pause),
    ...(run.kind === 'ralph' ? GLOBAL_PAUSE_FILES.map((f) => path.join(folder, f)) : []),
  ];
  const files: string[] = [];
  for (const f of candidates) if (await removeIfExists(f)) files.push(f);
  return { success: true, run: run.id, action: 'resumed', kind: run.kind, files };
}

/** Creates the run's STOP sentinel; the run stops before its next iteration, and the file is kept for audit. */
export async function stopRun(folder: string, runId?: string, probe?: RunProbe): Promise<ControlAnswer> {
  const run = resolveActiveRun(folder, runId, probe);
  const file = path.join(run.dir, RUN_FILES.stop);
  await touch(file);
  return { success: true, run: run.id, action: 'stop_requested', kind: run.kind, files: [file] };
}

/**
 * The run `ralph watch` follows: `--run ID` (any run, active or finished, ours or flow-next's); otherwise the
 * active run of ours, or, when none of ours is active, the only active flow-next run. Throws `OperationError`
 * `run_not_found` (`Run X not found`), `no_active_run` (`No active runs`) or `several_active_runs`
 * (`Multiple active runs, specify --run: a, b`).
 */
export function resolveWatchedRun(folder: string, runId?: string, probe: RunProbe = {}): RunInfo {
  const runs = listRuns(folder, probe).runs;
  if (runId !== undefined) {
    const r = runs.find((x) => x.id === runId);
    if (!r) throw new OperationError('run_not_found', `Run ${runId} not found`);
    return r;
  }
  const active = runs.filter((r) => r.active);
  const ours = active.filter((r) => r.kind === 'ralph');
  const pick = ours.length ? ours : active;
  if (pick.length === 0)
    throw new OperationError('no_active_run', 'No active runs (use --run ID to replay a finished one)');
  if (pick.length > 1)
    throw new OperationError(
      'several_active_runs',
      `Multiple active runs, specify --run: ${pick.map((r) => r.id).join(', ')}`,
    );
  return pick[0]!;
}

/** `ralph answer`'s result: the run, the question answered, its item and the answer file written. */
export interface AnswerResult {
  success: true;
  run: string;
  question: string;
  item: string | null;
  file: string;
}

/** Largest answer `ralph answer` (and the dashboard's answer box) writes, bytes of UTF-8: 1 MiB. */
export const MAX_ANSWER_BYTES = 1024 * 1024;

/**
 * Why an answer cannot be written, or undefined: empty, larger than {@link MAX_ANSWER_BYTES}, or holding a NUL byte
 * (the answer goes into the agent's next prompt, which the agent CLI takes as an argument: a NUL would end it, and an
 * unbounded answer would fill every later prompt). Pure.
 */
export function answerTextProblem(text: string): string | undefined {
  if (!text.trim()) return 'The answer is empty';
  if (text.includes('\0')) return 'The answer holds a NUL byte (binary data): answer in text';
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > MAX_ANSWER_BYTES)
    return `The answer is ${(bytes / 1024 / 1024).toFixed(1)} MiB: more than the 1 MiB an answer may be (put it in a file and answer with its path)`;
  return undefined;
}

/**
 * Answers an open question of a run (`ralph answer [--run ID] [--item ID] <text>`): writes `text` to the question's
 * answer file (atomically; the engine picks it up within a second). The run is the single active run unless
 * named; `itemId` is needed when several items wait. Throws `OperationError`: `no_question` (nothing waits, or not
 * that item), `several_active_runs`, `invalid_state` (already answered, or an empty answer).
 */
export async function answerQuestion(
  folder: string,
  text: string,
  opts: { runId?: string; itemId?: string; probe?: RunProbe } = {},
): Promise<AnswerResult> {
  const problem = answerTextProblem(text);
  if (problem) throw new OperationError('invalid_state', problem);
  const run = resolveActiveRun(folder, opts.runId, opts.probe);
  const open = readRunViewNow(folder, run.id, {
    kind: run.kind,
    ...(opts.probe?.isAlive ? { isAlive: opts.probe.isAlive } : {}),
    ...(opts.probe?.hostNames ? { hostNames: opts.probe.hostNames } : {}),
  }).questions;
  const candidates = opts.itemId === undefined ? open : open.filter((q) => q.item?.id === opts.itemId);
  if (!candidates.length)
    throw new OperationError(
      'no_question',
      opts.itemId === undefined
        ? `Run ${run.id} has no open question`
        : `Run ${run.id} has no open question for ${opts.itemId}`,
    );
  if (candidates.length > 1)
    throw new OperationError(
      'no_question',
      `Several items wait for an answer, specify --item: ${candidates.map((q) => q.item?.id ?? q.id).join(', ')}`,
    );
  const q = candidates[0]!;
  // Our engine reads answers from the run folder of the folder it was started in, lanes of a parallel run included
  // (engine.ts `readAnswer`): the answer goes there, whatever path the run log names.
  const file = run.kind === 'ralph' ? answerFilePath(folder, run.id, q.id) : q.answerFile;
  if ((await readTextIfExists(file))?.trim())
    throw new OperationError('invalid_state', `Question ${q.id} of run ${run.id} is already answered (${file})`);
  await mkdir(path.dirname(file), { recursive: true });
  await writeTextAtomic(file, text.endsWith('\n') ? text : `${text}\n`);
  return { success: true, run: run.id, question: q.id, item: q.item?.id ?? null, file };
}
