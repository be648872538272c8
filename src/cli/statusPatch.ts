import * as fs from 'node:fs';
import * as path from 'node:path';
import { printAnswer } from './brokenPipe';
import { cacheDir } from '../core/store/cacheDir';
import { fnv1a } from '../core/store/fnv';
import {
  aggregateFlow,
  basisItemOf,
  claimedOf,
  composeFromAggregate,
  patchFlowAggregate,
  type FlowAggregate,
  type FlowItemChange,
  type StatusBasis,
  type StatusBasisItem,
} from '../core/control/statusCompose';
import { formatStatusText } from '../core/control/statusText';
import { escapeControls, terminalSafeJson } from '../core/control/terminalText';
import { parseIsoTime } from '../core/model/time';
import type { FlowTask } from '../core/model/flowNext';
import { flowItem } from '../core/sources/flowNext/flowItem';
import {
  flowTaskRecord,
  readFlowTaskFile,
  readFlowTaskState,
  withFlowTaskState,
  type FlowWorkspace,
} from '../core/sources/flowNext/readFlow';
import { taskStateFile } from '../core/sources/flowNext/stateDir';
import { readLimitFor, setReadLimits } from '../core/store/readJsonFile';
import { relativeTo } from '../core/store/relativePath';
import {
  SNAPSHOT_MAX_CHANGED,
  writeSnapshotPatched,
  type SnapshotKey,
  type SnapshotLookup,
} from '../core/store/snapshotCache';

/**
 * `ralph status` after a task file changed (issue 10, "one file changed"): the answer is patched, not recomputed.
 * Beside a stored status answer (core/store/snapshotCache.ts) the CLI keeps its {@link StatusPatchFile}: the
 * composition's basis (control/statusCompose.ts) plus, per flow-next task, what a re-read must confirm. When the
 * lookup finds only flow-next task files, their state files, or the listed task / state folders changed,
 * {@link patchStatus} re-reads those tasks alone, patches the summed-up flow-next tasks (control/statusCompose.ts
 * `patchFlowAggregate`) and composes the answer again: work in the number of changed tasks, not of all tasks.
 *
 * The side file is text (version 2, issue 10's "one changed" speed): a first line, the JSON {@link StatusPatchHead}
 * (the basis without its items, their {@link FlowAggregate}, the folders and limits), then one line per flow-next
 * task in item order, `<JSON rel file>\t<JSON id>\t<JSON FlowPatchRow>`. JSON never writes a raw newline or tab
 * inside a value, so a changed file's line is found by searching the text for `\n<JSON rel file>\t`, a state
 * file's by `\t<JSON id>\t`, and only those lines are parsed: a patch reads the file but parses a few hundred bytes.
 *
 * A patch is refused (the caller computes the answer from scratch) unless it is sure to equal the uncached answer:
 * a changed task must still parse (same reader, same limits), keep its id, epic and `depends_on` (the plan graph's
 * cycle problems and the item order stay), keep its state file present or absent, and not be blocked without
 * `blocked_reason` (that reason comes from the markdown); a changed folder must list the same names. Anything else
 * that changed (quantum.json, a checklist, an epic, config, runs) refuses. No side file is written while a claim
 * baseline is open (src/cli/statusCommand.ts: a task's status then changes `unverified_claims` and `progress`, which
 * the basis keeps). Tested: patched == uncached over every fixture and generated plans
 * (test/component/cli/snapshotCache.cli.test.ts).
 */

const FORMAT = 'ralph-status-basis';
/** 2: text, one line per task ({@link StatusPatchHead}); 1 was one JSON document with every item. */
const VERSION = 2;

/**
 * How many completion candidates the side file keeps (control/statusCompose.ts `FlowAggregate.latest`): more than
 * a patch can change ({@link SNAPSHOT_MAX_CHANGED}), so one patch can always tell `last_completed`; after patches
 * that took candidates away the list shrinks, and a patch that would need more declines (the answer is recomputed).
 */
export const LATEST_KEPT = 2 * SNAPSHOT_MAX_CHANGED;

/** One flow-next task's line (after its file and id): `[item index, epic id, depends_on, has a state file, its basis item]`. */
export type FlowPatchRow = [k: number, epic: string, deps: string[], hasState: 0 | 1, item: StatusBasisItem];

/** The first line of the side file of a stored status answer (`$XDG_CACHE_HOME/ralph/<fnv(folder)>-status.basis.json`). */
export interface StatusPatchHead {
  format: typeof FORMAT;
  version: number;
  folder: string;
  /** Named by the snapshot entry (`basis`): a side file of another entry is not used. */
  id: string;
  /** The composition's basis without its flow-next items (control/statusCompose.ts). */
  basis: Omit<StatusBasis, 'items'>;
  /** The flow-next items summed up, keeping {@link LATEST_KEPT} completion candidates. */
  flow: FlowAggregate;
  /** The flow-state folder (absolute), when the workspace has `.flow/`. */
  stateDir?: string;
  /** Listed folders (absolute) → fnv of their sorted names. */
  listings: Record<string, string>;
  /** The read limits the answer was computed with (store/readJsonFile.ts). */
  limits: { jsonBytes: number; textBytes: number };
}

/**
 * A side file's content before it is written (no id yet): its head and its task lines, UTF-8, each after a `\n`
 * (bytes: a patch searches them without decoding the whole text), in parts written one after the other (a patch
 * copies nothing: the read file's unchanged stretches and the changed lines).
 */
export interface StatusPatch {
  head: Omit<StatusPatchHead, 'id'>;
  rows: readonly Buffer[];
}

/** A side file as read: its head parsed, the task lines as bytes ({@link StatusPatch}; parsed only where a patch needs them). */
export interface StatusPatchFile {
  head: StatusPatchHead;
  rows: Buffer;
}

/** The side file of `folder`'s stored status answer (absolute). */
export function basisFile(folder: string, env: NodeJS.ProcessEnv = process.env): string {
  return path.join(cacheDir(env), `${fnv1a(folder)}-status.basis.json`);
}

const LF = 0x0a;
const NEWLINE = Buffer.from('\n');

function listingHash(dir: string): string {
  return fnv1a(fs.readdirSync(dir).sort().join('\0'));
}

/** The line of one task (after its `\n`): its file (relative to the folder, `/`-separated), its id, and its {@link FlowPatchRow}. */
function rowLine(relFile: string, row: FlowPatchRow): string {
  return `\n${JSON.stringify(relFile)}\t${JSON.stringify(row[4].id)}\t${JSON.stringify(row)}`;
}

/** The side file's content for an answer just computed from `basis` (and the flow-next workspace it read). */
export function statusPatchFile(folder: string, basis: StatusBasis, flow: FlowWorkspace | undefined): StatusPatch {
  const rel = relativeTo(folder);
  const listings: Record<string, string> = {};
  if (flow) {
    for (const dir of [path.join(flow.flowDir, 'tasks'), path.join(flow.state.dir, 'tasks')]) {
      try {
        listings[dir] = listingHash(dir);
      } catch {
        // not listed: a change to it refuses the patch
      }
    }
  }
  const { items, ...rest } = basis;
  const tasks = flow?.tasks ?? [];
  let rows = '';
  for (let k = 0; k < tasks.length; k++) {
    const t = tasks[k]!;
    rows += rowLine(rel(t.file), [k, t.epicId, t.merged.depends_on, t.stateFile ? 1 : 0, items[k]!]);
  }
  return {
    head: {
      format: FORMAT,
      version: VERSION,
      folder,
      basis: rest,
      flow: aggregateFlow(items, claimedOf(basis.head), LATEST_KEPT),
      ...(flow ? { stateDir: flow.state.dir } : {}),
      listings,
      limits: { jsonBytes: readLimitFor('x.json'), textBytes: readLimitFor('x.md') },
    },
    rows: [Buffer.from(rows, 'utf8')],
  };
}

/** Writes the side file atomically and returns its id, or `undefined` when it could not be written. */
export function writeStatusPatchFile(content: StatusPatch, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const id = `${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2, 10)}`;
  const file = basisFile(content.head.folder, env);
  const tmp = `${file}.${process.pid}.tmp`;
  let fd: number | undefined;
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    // format, version, folder first (as statusPatchFile orders them): the order store/snapshotCache.ts
    // `removeFolderCaches` reads.
    const head: StatusPatchHead = { ...content.head, id };
    fd = fs.openSync(tmp, 'w');
    for (const part of [Buffer.from(JSON.stringify(head), 'utf8'), ...content.rows, NEWLINE]) {
      for (let at = 0; at < part.length;) at += fs.writeSync(fd, part, at);
    }
    fs.closeSync(fd);
    fd = undefined;
    fs.renameSync(tmp, file);
    return id;
  } catch {
    if (fd !== undefined)
      try {
        fs.closeSync(fd);
      } catch {
        /* closed */
      }
    try {
      fs.unlinkSync(tmp);
    } catch {
      /* never written */
    }
    return undefined;
  }
}

/**
 * The side file `file` when it is one ({@link FORMAT}, {@link VERSION}, a head with the parts a patch reads), else
 * `undefined`; throws only when it cannot be read.
 */
export function readStatusPatchFile(file: string): StatusPatchFile | undefined {
  const bytes = fs.readFileSync(file);
  const nl = bytes.indexOf(LF);
  if (nl < 0) return undefined;
  let head: StatusPatchHead;
  try {
    head = JSON.parse(bytes.toString('utf8', 0, nl)) as StatusPatchHead;
  } catch {
    return undefined;
  }
  if (
    !head ||
    head.format !== FORMAT ||
    head.version !== VERSION ||
    typeof head.id !== 'string' ||
    typeof head.folder !== 'string'
  )
    return undefined;
  if (
    !head.basis ||
    typeof head.basis !== 'object' ||
    !isAggregate(head.flow) ||
    !head.listings ||
    typeof head.listings !== 'object' ||
    !head.limits
  )
    return undefined;
  return { head, rows: bytes.subarray(nl, bytes[bytes.length - 1] === LF ? -1 : undefined) };
}

function isAggregate(a: unknown): a is FlowAggregate {
  const f = a as FlowAggregate | undefined;
  return (
    !!f &&
    typeof f === 'object' &&
    typeof f.count === 'number' &&
    typeof f.done === 'number' &&
    typeof f.candidates === 'number' &&
    !!f.tasks &&
    Array.isArray(f.inProgress) &&
    Array.isArray(f.blocked) &&
    Array.isArray(f.latest)
  );
}

/**
 * The task line holding `needle` in `rows`: where it starts (its `\n`) and ends; `undefined` if none, or more than one
 * when `unique` (a file's line is one by construction; two tasks may claim one id).
 */
function lineWith(rows: Buffer, needle: string, unique: boolean): { start: number; end: number } | undefined {
  const at = rows.indexOf(needle, 0, 'utf8');
  if (at < 0 || (unique && rows.indexOf(needle, at + 1, 'utf8') >= 0)) return undefined;
  const start = rows.lastIndexOf(LF, at);
  const end = rows.indexOf(LF, at + 1);
  return start < 0 ? undefined : { start, end: end < 0 ? rows.length : end };
}

/** A task line's file, id and row, or `undefined` when the line is not well formed. */
function parseLine(line: string): { relFile: string; row: FlowPatchRow } | undefined {
  const parts = line.split('\t');
  if (parts.length !== 3) return undefined;
  try {
    const relFile = JSON.parse(parts[0]!) as unknown;
    const row = JSON.parse(parts[2]!) as FlowPatchRow;
    if (typeof relFile !== 'string' || !Array.isArray(row) || row.length !== 5) return undefined;
    const [k, epic, deps, hasState, item] = row;
    if (
      !Number.isInteger(k) ||
      k < 0 ||
      typeof epic !== 'string' ||
      !Array.isArray(deps) ||
      (hasState !== 0 && hasState !== 1)
    )
      return undefined;
    if (!item || typeof item !== 'object' || typeof item.id !== 'string' || JSON.stringify(item.id) !== parts[1])
      return undefined;
    return { relFile, row };
  } catch {
    return undefined;
  }
}

/**
 * The side file with the changed files' tasks re-read (its head's aggregate and their lines replaced), or
 * `undefined` when a patch could not equal the uncached answer (see the module comment). `changed`: absolute paths
 * the snapshot lookup found changed.
 */
export function patchBasis(p: StatusPatchFile, changed: readonly string[]): StatusPatch | undefined {
  const { head, rows } = p;
  const folder = head.folder;
  const rel = relativeTo(folder);
  const underFolder = folder.endsWith(path.sep) ? folder : folder + path.sep;
  const stateTasks = head.stateDir !== undefined ? path.join(head.stateDir, 'tasks') + path.sep : undefined;
  // The line of the task a changed path is: its file (`<folder>/<rel file>`) or its state file
  // (`<stateDir>/tasks/<id>.state.json`, a task that has one).
  const lineOf = (c: string): { start: number; end: number; relFile: string; row: FlowPatchRow } | undefined => {
    if (stateTasks !== undefined && c.startsWith(stateTasks) && c.endsWith('.state.json')) {
      const id = c.slice(stateTasks.length, -'.state.json'.length);
      const at = lineWith(rows, `\t${JSON.stringify(id)}\t`, true);
      const parsed = at && parseLine(rows.toString('utf8', at.start + 1, at.end));
      if (at && parsed && parsed.row[3] && taskStateFile(head.stateDir!, id) === c) return { ...at, ...parsed };
    }
    if (!c.startsWith(underFolder)) return undefined;
    const relFile = c.slice(underFolder.length).split(path.sep).join('/');
    const at = lineWith(rows, `\n${JSON.stringify(relFile)}\t`, false);
    const parsed = at && parseLine(rows.toString('utf8', at.start + 1, at.end));
    return at && parsed && parsed.relFile === relFile && path.join(folder, relFile) === c
      ? { ...at, ...parsed }
      : undefined;
  };
  const touched = new Map<number, { start: number; end: number; relFile: string; row: FlowPatchRow }>();
  for (const c of changed) {
    const listed = head.listings[c];
    if (listed !== undefined) {
      if (listingHash(c) !== listed) return undefined;
      continue;
    }
    const line = lineOf(c);
    if (!line || line.row[0] >= head.flow.count) return undefined;
    touched.set(line.start, line);
  }
  setReadLimits(head.limits);
  const changes: FlowItemChange[] = [];
  const lines: { start: number; end: number; text: string }[] = [];
  for (const { start, end, relFile, row } of touched.values()) {
    const [k, epic, deps, hasState, before] = row;
    const file = path.join(folder, relFile);
    const r = readFlowTaskFile(undefined, file, rel(file));
    if (!r?.ok || typeof r.value.id !== 'string' || r.value.id !== before.id) return undefined;
    const rec = flowTaskRecord(r.value as FlowTask, file);
    if (rec.epicId !== epic) return undefined;
    if (hasState) {
      const stateFile = taskStateFile(head.stateDir!, rec.id);
      const sr = readFlowTaskState(undefined, stateFile);
      if (!sr?.ok) return undefined;
      withFlowTaskState(rec, stateFile, sr.value);
    }
    if (JSON.stringify(rec.merged.depends_on) !== JSON.stringify(deps)) return undefined;
    if (rec.merged.status === 'blocked' && !rec.merged.blocked_reason) return undefined;
    const after = basisItemOf(flowItem(rec, rel(file)), parseIsoTime);
    changes.push({ k, before, after });
    lines.push({ start, end, text: rowLine(relFile, [k, epic, deps, hasState, after]) });
  }
  const flow = patchFlowAggregate(head.flow, claimedOf(head.basis.head), changes, LATEST_KEPT);
  if (!flow) return undefined;
  lines.sort((a, b) => a.start - b.start);
  const parts: Buffer[] = [];
  let from = 0;
  for (const l of lines) {
    parts.push(rows.subarray(from, l.start), Buffer.from(l.text, 'utf8'));
    from = l.end;
  }
  parts.push(rows.subarray(from));
  const { id: _id, ...kept } = head;
  return { head: { ...kept, flow }, rows: parts };
}

/** `ralph status [--json]` as the uncached command prints it, from a side file's head: `{ json, text }`. */
export function statusOutputs(p: { head: Pick<StatusPatchHead, 'basis' | 'flow'> }): { json: string; text: string } {
  const snapshot = composeFromAggregate(p.head.basis, p.head.flow);
  // The same text as src/cli/statusCommand.ts (jsonDocument: terminal-safe JSON, 2 spaces, a newline).
  return { json: terminalSafeJson(snapshot, 2) + '\n', text: escapeControls(formatStatusText(snapshot)) };
}

/**
 * Answers `ralph status` by patching (see the module comment) after a snapshot lookup `found` missed: prints the
 * answer (`json` or text), sets exit 0, and stores the patched answer and its side file when the changed files are
 * past the racy tick. Returns `false`, having printed nothing, when no patch is possible.
 */
export function patchStatus(
  key: SnapshotKey,
  found: SnapshotLookup,
  json: boolean,
  env: NodeJS.ProcessEnv = process.env,
): boolean {
  const e = found.entry;
  const changed = found.changedAll;
  if (!e?.basis || !changed?.length) return false;
  let patched: StatusPatch | undefined;
  let outputs: { json: string; text: string };
  try {
    const stored = readStatusPatchFile(basisFile(key.folder, env));
    if (!stored || stored.head.id !== e.basis || stored.head.folder !== key.folder) return false;
    patched = patchBasis(stored, changed);
    if (!patched) return false;
    outputs = statusOutputs(patched);
  } catch {
    return false;
  }
  printAnswer(json ? outputs.json : outputs.text, 0);
  const next = patched;
  writeSnapshotPatched(key, found, { outputs, exitCode: 0 }, { env, basis: () => writeStatusPatchFile(next, env) });
  return true;
}
