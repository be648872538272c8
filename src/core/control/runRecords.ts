import { randomBytes } from 'node:crypto';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { FINAL_RUN_STATES, runRecordSchema, type RunRecord } from '../model/runRecord';
import { OperationError } from '../model/operationError';
import { isoString } from '../model/time';
import { readTextIfExists } from '../store/atomicWrite';
import { newJsonText, applyJsonChanges, refuseDuplicateKeys, type JsonChange } from '../store/jsonEdit';
import { FileProblemError, workspacePath, type FileProblem } from '../store/parseError';
import {
  listDirSync,
  parseJsonFileText,
  parseJsonWithSchema,
  readTextSync,
  schemaProblem,
} from '../store/readJsonFile';
import type { z } from 'zod';
import { commitPlan } from '../store/writePlan';
import { ralphRunDir } from './sentinels';
import { ralphFile, ralphRunFile } from '../model/ralphPaths';

/** Path of a run's record. */
export function runRecordPath(folder: string, runId: string): string {
  return ralphRunFile(folder, runId, 'record');
}

/** A new run id: `<YYYYMMDDTHHMMSSZ>-<4 hex>` (sortable by start, like flow-next's ids, §2.8). */
export function newRunId(nowMs: number = Date.now()): string {
  return `${isoString(nowMs)
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z')}-${randomBytes(2).toString('hex')}`;
}

/**
 * Creates `.ralph/runs/<runId>/run.json` for a starting run (the loop engine calls this once, at start).
 * Fills `pid`, `host`, `startedAt` and `state: "starting"` unless given. Validated against the schema; written
 * atomically, in order with the process's later writes of it (the engine holds the folder's lock).
 */
export async function createRunRecord(
  folder: string,
  init: Partial<RunRecord> & { runId?: string } = {},
  nowMs: number = Date.now(),
): Promise<RunRecord> {
  const runId = init.runId ?? newRunId(nowMs);
  const record = runRecordSchema.parse({
    pid: process.pid,
    host: os.hostname(),
    startedAt: isoString(nowMs),
    state: 'starting',
    iteration: 0,
    currentItem: null,
    ...init,
    runId,
    updatedAt: isoString(nowMs),
  });
  const file = runRecordPath(folder, runId);
  await mkdir(path.dirname(file), { recursive: true });
  await commitPlan(
    file,
    async () => {
      const before = await readTextIfExists(file);
      if (before !== undefined) throw new OperationError('invalid_state', `Run ${runId} already exists`);
      return { writes: [{ file, before, after: newJsonText(record) }], result: undefined };
    },
    // Its engine holds the folder's lock, as for every later write ({@link updateRunRecord}).
    { processOnly: true },
  );
  return record;
}

/**
 * Every run record of a folder (`.ralph/runs/<id>/run.json`), in run-id order: the one reader of that folder for
 * `ralph status`, run control and crash recovery. A record that does not parse or validate is a problem (file
 * relative to the folder, line, column) and is skipped; a run folder without a record is skipped.
 */
export function listRunRecords(folder: string): {
  records: { dir: string; record: RunRecord }[];
  problems: FileProblem[];
} {
  const records: { dir: string; record: RunRecord }[] = [];
  const problems: FileProblem[] = [];
  for (const e of listDirSync(ralphFile(folder, 'runs'))) {
    if (!e.isDir) continue;
    const file = runRecordPath(folder, e.name);
    const text = readTextSync(file);
    if (text === undefined) continue;
    const shown = workspacePath(folder, file);
    const r = parseJsonFileText(shown, text, runRecordSchema);
    if (!r.ok) problems.push(r.problem);
    // The record names its own folder: a runId that differs (`../../outside`) would make recovery and control
    // write elsewhere, or look for a run.json that is not there. Such a record is skipped.
    else if (r.value.runId !== e.name)
      problems.push({
        ...schemaProblem(shown, text, { issues: [{ path: ['runId'], message: '' }] } as unknown as z.ZodError),
        message: `runId ${JSON.stringify(r.value.runId)} is not its folder's name (${JSON.stringify(e.name)}): record skipped`,
      });
    else records.push({ dir: ralphRunDir(folder, e.name), record: r.value });
  }
  return { records, problems };
}

/** Reads a run record; throws `FileProblemError` (file:line:column) when it does not parse or validate. */
export async function readRunRecord(folder: string, runId: string): Promise<RunRecord | undefined> {
  const file = runRecordPath(folder, runId);
  const text = await readTextIfExists(file);
  return text === undefined ? undefined : parseJsonWithSchema(workspacePath(folder, file), text, runRecordSchema);
}

/**
 * The text this process last wrote to each run record (resolved path), at most {@link OWN_WRITES_KEPT} of them: a
 * record that still holds it was validated when it was written, and is not parsed against the schema again.
 */
const ownWrites = new Map<string, string>();
const OWN_WRITES_KEPT = 32;

/**
 * Updates fields of a run record in place (state, iteration, currentItem, completion…), with `updatedAt` set
 * to now. Unknown keys and formatting stay. Each patched field is validated against its schema before anything is
 * written, the record as read against the whole schema unless it is what this process wrote last. Written by the
 * run's engine only, which holds the folder's engine lock (runShell.ts `holdFolderLock`, crash recovery included):
 * the writes are ordered within the process (writePlan.ts `processOnly`), and the compare before the rename still
 * keeps an edit made meanwhile by anyone else (readRunRecord reads it back).
 */
export async function updateRunRecord(
  folder: string,
  runId: string,
  patch: Partial<Omit<RunRecord, 'runId'>>,
  nowMs: number = Date.now(),
): Promise<void> {
  const file = runRecordPath(folder, runId);
  const key = path.resolve(file);
  const full = { ...patch, updatedAt: isoString(nowMs) };
  const shown = workspacePath(folder, file);
  checkPatch(shown, full);
  const { result } = await commitPlan(
    file,
    async () => {
      const before = await readTextIfExists(file);
      if (before === undefined) throw new OperationError('not_found', `Run ${runId} has no run.json`);
      if (ownWrites.get(key) !== before) {
        parseJsonWithSchema(shown, before, runRecordSchema);
        refuseDuplicateKeys(shown, before);
      }
      const after = patchedRecordText(before, full);
      return { writes: [{ file, before, after }], result: after };
    },
    { processOnly: true },
  );
  ownWrites.delete(key);
  ownWrites.set(key, result);
  if (ownWrites.size > OWN_WRITES_KEPT) ownWrites.delete(ownWrites.keys().next().value!);
}

/**
 * Throws a {@link FileProblemError} naming `shown` when a value of `patch` does not fit its field of the run record's
 * schema (the schema has no rule across fields, so the fields valid one by one make a valid record of a valid one); an
 * `undefined` value deletes its field, which must then be optional.
 */
function checkPatch(shown: string, patch: Readonly<Record<string, unknown>>): void {
  const shape = runRecordSchema.shape as Record<string, z.ZodType | undefined>;
  for (const [k, value] of Object.entries(patch)) {
    const r = shape[k]?.safeParse(value);
    if (r && !r.success)
      throw new FileProblemError({
        file: shown,
        line: 0,
        column: 0,
        message: `refused: ${k}: ${r.error.issues[0]?.message ?? 'invalid'}: not written`,
      });
  }
}

/**
 * The text of run.json `before` (valid JSON, no duplicate keys) with the top-level `patch` applied (an `undefined`
 * value deletes its key). Ralph writes run.json itself in {@link newJsonText}'s form; a text in that form is patched as
 * an object and written in the same form (each key keeps its place, a new one goes last), which is what the
 * format-keeping edit ({@link applyJsonChanges}) gives there, at a fraction of its cost (a lane writes its run.json
 * about a dozen times per story). A text in any other form (a person reformatted it) goes
 * through {@link applyJsonChanges} and keeps its formatting. Pure.
 */
export function patchedRecordText(before: string, patch: Readonly<Record<string, unknown>>): string {
  const doc = JSON.parse(before) as unknown;
  if (doc && typeof doc === 'object' && !Array.isArray(doc) && newJsonText(doc) === before) {
    const o = doc as Record<string, unknown>;
    for (const [k, value] of Object.entries(patch)) {
      if (value === undefined) delete o[k];
      else o[k] = value;
    }
    return newJsonText(o);
  }
  const changes: JsonChange[] = Object.entries(patch).map(([k, value]) =>
    value === undefined ? { op: 'delete', path: [k] } : { op: 'set', path: [k], value },
  );
  return applyJsonChanges(before, changes);
}

/**
 * Marks a run interrupted, synchronously: for the second Ctrl-C, when the process exits at once and the engine
 * never writes its end. Sets `state: "stopped"`, `endState: "cancelled"`, `completion.reason: "INTERRUPTED"`,
 * clears `currentItem` and `agentPgid`, so `ralph status` shows the run stopped, not crashed. The file is replaced
 * atomically (temporary file + rename) and only when it parses and validates and is not final yet; without the
 * record's lock, because nothing asynchronous runs any more in the exiting engine and no other process writes a
 * live run's record. Returns whether it wrote; never throws (an exit path has nobody to tell).
 */
export function markRunInterruptedSync(
  folder: string,
  runId: string,
  reason = 'interrupted (Ctrl-C twice)',
  nowMs: number = Date.now(),
): boolean {
  const file = runRecordPath(folder, runId);
  try {
    const before = readFileSync(file, 'utf8');
    const shown = workspacePath(folder, file);
    const rec = parseJsonWithSchema(shown, before, runRecordSchema);
    if (FINAL_RUN_STATES.includes(rec.state)) return false;
    const at = isoString(nowMs);
    const patch: Partial<RunRecord> = {
      state: 'stopped',
      currentItem: null,
      completion: { reason: 'INTERRUPTED', at },
      endState: 'cancelled',
      endReason: reason,
      endedAt: at,
      agentPgid: null,
      agentToken: null,
      updatedAt: at,
    };
    const after = applyJsonChanges(
      before,
      Object.entries(patch).map(([k, value]) => ({ op: 'set', path: [k], value }) as JsonChange),
    );
    parseJsonWithSchema(shown, after, runRecordSchema);
    const tmp = `${file}.tmp-${process.pid}`;
    writeFileSync(tmp, after);
    renameSync(tmp, file);
    return true;
  } catch {
    return false;
  }
}
