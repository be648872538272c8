import { parseIsoTime } from '../model/time';

/**
 * IJFW subagent checkpoints (seed-systems.md §1.4): one JSON file per subagent,
 * `.ijfw/wave-<waveId>/subagent-<subId>.checkpoint.json`, overwritten on each checkpoint. Three shapes exist in the
 * wild and all are read here, purely from the file's text: A (the v1 envelope, `ts`), B (the state-SDK verb,
 * `{waveId, subagentId, checkpoint, updated_at}`) and C (hand-written "retroactive" records, `recorded_at`).
 */

/** Wave and subagent ids (§1.3, IJFW's path-traversal guard). Nothing else is ever put into a path. */
export const WAVE_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** Is `id` a valid wave or subagent id (`^[A-Za-z0-9_-]{1,64}$`)? */
export function isValidId(id: unknown): id is string {
  return typeof id === 'string' && WAVE_ID.test(id);
}

/** `subagent-<subId>.checkpoint.json`: the file's name is the subagent's identity (a checkpoint's `sub_id` may lie). */
const CHECKPOINT_FILE = /^subagent-([A-Za-z0-9_-]{1,64})\.checkpoint\.json$/;

/** The subagent id a checkpoint file's name carries, or `undefined` when the name is not a checkpoint's or the id is invalid. */
export function subIdOfFile(name: string): string | undefined {
  return CHECKPOINT_FILE.exec(name)?.[1];
}

/** `events-<subId>.jsonl` (state-SDK per-subagent event log): the subagent id, or `undefined`. */
export function subIdOfEventsFile(name: string): string | undefined {
  return /^events-([A-Za-z0-9_-]{1,64})\.jsonl$/.exec(name)?.[1];
}

/** Which of the three shapes a checkpoint has (§1.4). */
export type CheckpointShape = 'v1' | 'sdk' | 'retro' | 'unknown';

/** Statuses that count as done (§1.5-1 and §1.5-2). */
export const DONE_STATUSES: readonly string[] = ['DONE', 'DONE_WITH_CONCERNS'];

/**
 * What Ralph reads from one checkpoint file. Fields come from the unwrapped payload (shape B's `checkpoint`); every
 * field is optional because the payload is free-form. `sub_id` / `wave_id` inside the file are reported but never
 * trusted (§1.10-4: a payload can overwrite them).
 */
export interface Checkpoint {
  shape: CheckpointShape;
  /** The checkpoint's own time (ms since epoch): `ts` (A), `updated_at` or `checkpoint.ts` (B), `recorded_at` (C); undefined when none parses (§1.10-2). */
  timeMs?: number;
  /** The field the time came from, e.g. `ts`. */
  timeField?: string;
  /**
   * A key that looks like a time (`time`, `created_at`, `savedAt`, …) and holds an ISO time, in a checkpoint without
   * any of the time keys read ({@link CHECKPOINT_TIME_KEYS}): its age is then the file's mtime, and readWave.ts warns.
   */
  unknownTimeKey?: string;
  /** The payload's `status` (shape C always `DONE`; state-SDK tests write `{status: 'DONE'}`), as written. */
  status?: string;
  /** The `Status:` line of a stored agent report (`report`, §1.5-2), e.g. `DONE`, `BLOCKED`. */
  reportStatus?: string;
  /** The payload's `Commit:` line of the report, when any (freshness is not checked: see the README). */
  reportCommit?: string;
  nextStep?: string;
  lastAction?: string;
  toolUseCount?: number;
  filesCreated: string[];
  filesModified: string[];
  /** `commits_made` (A) or `commits` (C). */
  commits: string[];
  blockers?: string;
  branch?: string;
  /** The subagent id the file claims (`sub_id`, `subagentId`, `subagent_id`), shown when it differs from the file name. */
  claimedSubId?: string;
  /** The wave id the file claims (`wave_id`, `waveId`, `wave`). */
  claimedWaveId?: string;
  /**
   * The worktree the checkpoint names (`worktree`, `worktree_path` or `worktreePath`, an absolute path), as written:
   * used only after readWave.ts has confirmed it is a git worktree of the workspace.
   */
  claimedWorktree?: string;
}

/**
 * The top-level keys a checkpoint's own time is read from, in this order after the shape's own (§1.10-2): `ts`
 * (shape A), `timestamp` (the name the seed's checkpoint writer uses), `updated_at` (B), `recorded_at` (C).
 */
export const CHECKPOINT_TIME_KEYS: readonly string[] = ['ts', 'timestamp', 'updated_at', 'recorded_at'];

/** A key name that says "a time": `time`, `date`, `*_at`, `*At`, `*Time`, `*_time`, `*stamp`. */
const TIME_LIKE_KEY = /(^|_)(time|date)$|_at$|[a-z]At$|[a-z]Time$|stamp$/i;

/** The result of reading a checkpoint's text: a checkpoint, or why it is unreadable. */
export type CheckpointRead = { ok: true; checkpoint: Checkpoint } | { ok: false; reason: string };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v.length > 0 ? v : undefined);
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

/**
 * The status-protocol line of an agent report (§1.5-2, IJFW v1.4.4): the last line matching `^Status:\s*(\S+)\s*$`
 * (one of `DONE | DONE_WITH_CONCERNS | NEEDS_CONTEXT | BLOCKED`), and its `Commit:` line. Pure.
 */
export function parseReportStatus(report: string): { status?: string; commit?: string } {
  let status: string | undefined;
  let commit: string | undefined;
  for (const line of report.split(/\r?\n/)) {
    const s = /^Status:\s*(\S+)\s*$/.exec(line);
    if (s) status = s[1];
    const c = /^Commit:\s*(\S+)\s*$/.exec(line);
    if (c) commit = c[1];
  }
  return { status, commit };
}

/**
 * Reads a checkpoint from its file text (pure). Accepts the three shapes of §1.4; unwraps shape B to its
 * `checkpoint` object as IJFW's `readLastCheckpoint` does (when `checkpoint` is an object and `waveId` a string).
 * Not JSON, or JSON that is not an object, is unreadable (`ok: false`, a reason naming line and column when known).
 */
export function parseCheckpoint(text: string): CheckpointRead {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    return { ok: false, reason: `invalid JSON: ${(err as Error).message}` };
  }
  if (!isObject(raw)) return { ok: false, reason: 'not a JSON object' };
  let shape: CheckpointShape = 'unknown';
  let payload: Record<string, unknown> = raw;
  let timeMs: number | undefined;
  let timeField: string | undefined;
  const timeFrom = (obj: Record<string, unknown>, field: string, label = field) => {
    if (timeMs !== undefined) return;
    const t = parseIsoTime(str(obj[field]));
    if (t !== undefined) {
      timeMs = t;
      timeField = label;
    }
  };
  if (isObject(raw.checkpoint) && typeof raw.waveId === 'string') {
    shape = 'sdk';
    payload = raw.checkpoint;
    timeFrom(raw, 'updated_at');
    timeFrom(payload, 'ts', 'checkpoint.ts');
  } else if (raw.retroactive === true || ('recorded_at' in raw && 'subagent_id' in raw)) {
    shape = 'retro';
    timeFrom(raw, 'recorded_at');
  } else if (raw.schema_version === 1 || 'ts' in raw || 'timestamp' in raw) {
    shape = 'v1';
    timeFrom(raw, 'ts');
  }
  // A shape we do not know still gets a time when it has one of the known fields (§1.10-2 order).
  for (const f of CHECKPOINT_TIME_KEYS) timeFrom(raw, f);
  let unknownTimeKey: string | undefined;
  if (timeMs === undefined)
    for (const obj of payload === raw ? [raw] : [raw, payload])
      for (const k of Object.keys(obj))
        if (!unknownTimeKey && TIME_LIKE_KEY.test(k) && parseIsoTime(str(obj[k])) !== undefined)
          unknownTimeKey = obj === raw ? k : `checkpoint.${k}`;

  const report = str(payload.report);
  const rs = report ? parseReportStatus(report) : {};
  // Plain assignments in the order of the fields above, not conditional spreads: a pass parses a thousand
  // checkpoints in code that has not warmed up yet (bench/waves.bench.ts).
  const cp = { shape } as Checkpoint;
  if (timeMs !== undefined) {
    cp.timeMs = timeMs;
    cp.timeField = timeField;
  }
  if (unknownTimeKey) cp.unknownTimeKey = unknownTimeKey;
  const status = str(payload.status);
  if (status) cp.status = status;
  if (rs.status) cp.reportStatus = rs.status;
  if (rs.commit) cp.reportCommit = rs.commit;
  const nextStep = str(payload.next_step);
  if (nextStep) cp.nextStep = nextStep;
  const lastAction = str(payload.last_action);
  if (lastAction) cp.lastAction = lastAction;
  if (typeof payload.tool_use_count === 'number') cp.toolUseCount = payload.tool_use_count;
  cp.filesCreated = strings(payload.files_created);
  cp.filesModified = [...strings(payload.files_modified), ...strings(payload.files_changed)];
  cp.commits = [...strings(payload.commits_made), ...strings(payload.commits)];
  const blockers = str(payload.blockers);
  if (blockers) cp.blockers = blockers;
  const branch = str(payload.branch) ?? str(raw.branch);
  if (branch) cp.branch = branch;
  const claimedSub =
    str(raw.subagentId) ?? str(payload.sub_id) ?? str(payload.subagent_id) ?? str(raw.sub_id) ?? str(raw.subagent_id);
  const claimedWave = str(raw.waveId) ?? str(payload.wave_id) ?? str(payload.wave) ?? str(raw.wave_id) ?? str(raw.wave);
  const wt =
    str(payload.worktree) ??
    str(payload.worktree_path) ??
    str(payload.worktreePath) ??
    str(raw.worktree) ??
    str(raw.worktree_path);
  if (wt && wt.startsWith('/')) cp.claimedWorktree = wt;
  if (claimedSub) cp.claimedSubId = claimedSub;
  if (claimedWave) cp.claimedWaveId = claimedWave;
  return { ok: true, checkpoint: cp };
}

/** Where a checkpoint says the subagent is done (§1.5-1, -2), or `undefined`. */
export function checkpointDoneSource(cp: Checkpoint): 'checkpoint-status' | 'report' | undefined {
  if (cp.status && DONE_STATUSES.includes(cp.status)) return 'checkpoint-status';
  if (cp.reportStatus && DONE_STATUSES.includes(cp.reportStatus)) return 'report';
  return undefined;
}

/** Something to resume from (§1.10-3): a `next_step` or a `last_action`. */
export function isUseful(cp: Checkpoint): boolean {
  return cp.nextStep !== undefined || cp.lastAction !== undefined;
}
