import * as fs from 'node:fs';
import * as path from 'node:path';
import { cacheDir } from '../core/store/cacheDir';
import { fnv1a } from '../core/store/fnv';
import { basisItemOf, composeStatus, type StatusBasis } from '../core/control/statusCompose';
import { formatStatusText } from '../core/control/statusText';
import { escapeControls, terminalSafeJson } from '../core/control/terminalText';
import { parseIsoTime } from '../core/model/time';
import type { FlowTask } from '../core/model/flowNext';
import { flowItem } from '../core/sources/flowNext/flowItem';
import { flowTaskRecord, readFlowTaskFile, readFlowTaskState, withFlowTaskState, type FlowWorkspace } from '../core/sources/flowNext/readFlow';
import { taskStateFile } from '../core/sources/flowNext/stateDir';
import { readLimitFor, setReadLimits } from '../core/store/readJsonFile';
import { relativeTo } from '../core/store/relativePath';
import { writeSnapshotPatched, type SnapshotKey, type SnapshotLookup } from '../core/store/snapshotCache';

/**
 * `ralph status` after a task file changed (issue 10, "one file changed"): the answer is patched, not recomputed.
 * Beside a stored status answer (core/store/snapshotCache.ts) the CLI keeps its {@link StatusPatchFile}: the
 * composition's basis (control/statusCompose.ts) plus, per flow-next task, what a re-read must confirm. When the
 * lookup finds only flow-next task files, their state files, or the listed task / state folders changed,
 * {@link patchStatus} re-reads those tasks alone, replaces their items in the basis and composes the answer again.
 *
 * A patch is refused (the caller computes the answer from scratch) unless it is sure to equal the uncached answer:
 * a changed task must still parse (same reader, same limits), keep its id, epic and `depends_on` (the plan graph's
 * cycle problems and the item order stay), keep its state file present or absent, and not be blocked without
 * `blocked_reason` (that reason comes from the markdown); a changed folder must list the same names. Anything else
 * that changed (quantum.json, a checklist, an epic, config, runs) refuses. Tested: patched == uncached over every
 * fixture and generated plans (test/component/cli/snapshotCache.cli.test.ts).
 */

const FORMAT = 'ralph-status-basis';
const VERSION = 1;

/** One flow-next task of the basis (same index as its item): `[relative file, epic id, depends_on, has a state file]`. */
export type FlowPatchRow = [file: string, epic: string, deps: string[], hasState: 0 | 1];

/** The side file of a stored status answer (`$XDG_CACHE_HOME/ralph/<fnv(folder)>-status.basis.json`). */
export interface StatusPatchFile {
  format: typeof FORMAT;
  version: number;
  /** Named by the snapshot entry (`basis`): a side file of another entry is not used. */
  id: string;
  folder: string;
  basis: StatusBasis;
  /** flow-next tasks, in item order (the basis's first items). */
  rows: FlowPatchRow[];
  /** The flow-state folder (absolute), when the workspace has `.flow/`. */
  stateDir?: string;
  /** Listed folders (absolute) → fnv of their sorted names. */
  listings: Record<string, string>;
  /** The read limits the answer was computed with (store/readJsonFile.ts). */
  limits: { jsonBytes: number; textBytes: number };
}

/** The side file of `folder`'s stored status answer (absolute). */
export function basisFile(folder: string, env: NodeJS.ProcessEnv = process.env): string {
  return path.join(cacheDir(env), `${fnv1a(folder)}-status.basis.json`);
}

function listingHash(dir: string): string {
  return fnv1a(fs.readdirSync(dir).sort().join('\0'));
}

/** The patch file's content for an answer just computed from `basis` (and the flow-next workspace it read). */
export function statusPatchFile(folder: string, basis: StatusBasis, flow: FlowWorkspace | undefined): Omit<StatusPatchFile, 'id'> {
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
  return {
    format: FORMAT, version: VERSION, folder, basis,
    rows: (flow?.tasks ?? []).map((t) => [rel(t.file), t.epicId, t.merged.depends_on, t.stateFile ? 1 : 0]),
    ...(flow ? { stateDir: flow.state.dir } : {}),
    listings,
    limits: { jsonBytes: readLimitFor('x.json'), textBytes: readLimitFor('x.md') },
  };
}

/** Writes the side file atomically and returns its id, or `undefined` when it could not be written. */
export function writeStatusPatchFile(content: Omit<StatusPatchFile, 'id'>, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const id = `${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2, 10)}`;
  const file = basisFile(content.folder, env);
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(tmp, JSON.stringify({ ...content, id }));
    fs.renameSync(tmp, file);
    return id;
  } catch {
    try { fs.unlinkSync(tmp); } catch { /* never written */ }
    return undefined;
  }
}

/**
 * The basis with the changed files' tasks re-read, or `undefined` when a patch could not equal the uncached answer
 * (see the module comment). `changed`: absolute paths the snapshot lookup found changed.
 */
export function patchBasis(p: StatusPatchFile, changed: readonly string[]): StatusBasis | undefined {
  const folder = p.folder;
  const rel = relativeTo(folder);
  // Which task a changed path is: its file (`<folder>/<row file>`) or its state file (`<stateDir>/tasks/<id>.state.json`).
  const underFolder = folder.endsWith(path.sep) ? folder : folder + path.sep;
  const stateTasks = p.stateDir !== undefined ? path.join(p.stateDir, 'tasks') + path.sep : undefined;
  let byRel: Map<string, number> | undefined;
  let byState: Map<string, number> | undefined;
  const taskOf = (c: string): number | undefined => {
    if (stateTasks !== undefined && c.startsWith(stateTasks) && c.endsWith('.state.json')) {
      byState ??= new Map(p.rows.flatMap((r, k) => (r[3] ? [[p.basis.items[k]!.id, k] as [string, number]] : [])));
      const k = byState.get(c.slice(stateTasks.length, -'.state.json'.length));
      if (k !== undefined && taskStateFile(p.stateDir!, p.basis.items[k]!.id) === c) return k;
    }
    if (!c.startsWith(underFolder)) return undefined;
    byRel ??= new Map(p.rows.map((r, k) => [r[0], k]));
    const k = byRel.get(c.slice(underFolder.length).split(path.sep).join('/'));
    return k !== undefined && path.join(folder, p.rows[k]![0]) === c ? k : undefined;
  };
  const touched = new Set<number>();
  for (const c of changed) {
    const listed = p.listings[c];
    if (listed !== undefined) {
      if (listingHash(c) !== listed) return undefined;
      continue;
    }
    const k = taskOf(c);
    if (k === undefined) return undefined;
    touched.add(k);
  }
  setReadLimits(p.limits);
  const items = p.basis.items.slice();
  for (const k of touched) {
    const [relFile, epic, deps, hasState] = p.rows[k]!;
    const file = path.join(folder, relFile);
    const r = readFlowTaskFile(undefined, file, rel(file));
    if (!r?.ok || typeof r.value.id !== 'string' || r.value.id !== items[k]!.id) return undefined;
    const rec = flowTaskRecord(r.value as FlowTask, file);
    if (rec.epicId !== epic) return undefined;
    if (hasState) {
      const stateFile = taskStateFile(p.stateDir!, rec.id);
      const sr = readFlowTaskState(undefined, stateFile);
      if (!sr?.ok) return undefined;
      withFlowTaskState(rec, stateFile, sr.value);
    }
    if (JSON.stringify(rec.merged.depends_on) !== JSON.stringify(deps)) return undefined;
    if (rec.merged.status === 'blocked' && !rec.merged.blocked_reason) return undefined;
    items[k] = basisItemOf(flowItem(rec, rel(file)), parseIsoTime);
  }
  return { ...p.basis, items };
}

/** `ralph status [--json]` as the uncached command prints it, from a composed snapshot: `{ json, text }`. */
export function statusOutputs(basis: StatusBasis): { json: string; text: string } {
  const snapshot = composeStatus(basis);
  // The same text as src/cli/statusCommand.ts (jsonDocument: terminal-safe JSON, 2 spaces, a newline).
  return { json: terminalSafeJson(snapshot, 2) + '\n', text: escapeControls(formatStatusText(snapshot)) };
}

/**
 * Answers `ralph status` by patching (see the module comment) after a snapshot lookup `found` missed: prints the
 * answer (`json` or text), sets exit 0, and stores the patched answer and its side file when the changed files are
 * past the racy tick. Returns `false`, having printed nothing, when no patch is possible.
 */
export function patchStatus(key: SnapshotKey, found: SnapshotLookup, json: boolean, env: NodeJS.ProcessEnv = process.env): boolean {
  const e = found.entry;
  const changed = found.changedAll;
  if (!e?.basis || !changed?.length) return false;
  let basis: StatusBasis | undefined;
  let stored: StatusPatchFile;
  try {
    stored = JSON.parse(fs.readFileSync(basisFile(key.folder, env), 'utf8')) as StatusPatchFile;
    if (!stored || stored.format !== FORMAT || stored.version !== VERSION || stored.id !== e.basis || stored.folder !== key.folder) return false;
    basis = patchBasis(stored, changed);
  } catch {
    return false;
  }
  if (!basis) return false;
  const outputs = statusOutputs(basis);
  process.stdout.write(json ? outputs.json : outputs.text);
  process.exitCode = 0;
  const next = basis;
  writeSnapshotPatched(key, e.inputs, changed, { outputs, exitCode: 0 }, { env, basis: () => writeStatusPatchFile({ ...stored, basis: next }, env) });
  return true;
}
