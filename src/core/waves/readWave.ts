import { closeSync, constants as fsConstants, fstatSync, openSync, readdirSync, readSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { parseJsonText, workspacePath, type FileProblem } from '../store/parseError';
import {
  CHECKPOINT_TIME_KEYS,
  isValidId,
  parseCheckpoint,
  subIdOfEventsFile,
  subIdOfFile,
  type CheckpointRead,
} from './checkpoint';
import type { SubObservation, WaveObservation } from './classify';
import { parseClaims, parseWaveState, type ClaimSummary, type WaveState } from './waveState';

/**
 * Reads IJFW waves from disk (seed-systems.md §1.3): the effect shell under the pure classification. Synchronous,
 * bounded reads (a checkpoint is at most 4096 characters by contract; more than {@link MAX_CHECKPOINT_BYTES} is
 * unreadable). Paths are built only from checked ids and names listed by `readdir`; never from a file's content.
 * Nothing here writes.
 */

/** Largest checkpoint read (IJFW caps them at 4096 characters; §1.4). Larger files count as unreadable. */
export const MAX_CHECKPOINT_BYTES = 64 * 1024;
/** Largest STATE.md read. */
export const MAX_STATE_BYTES = 1024 * 1024;
/** Largest claims.json read (IJFW caps blackboard files at 4 000 000 bytes; §1.7). */
export const MAX_CLAIMS_BYTES = 4_000_000;

/** Thrown for a wave id that fails `^[A-Za-z0-9_-]{1,64}$` or a wave that does not exist. */
export class WaveError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WaveError';
  }
}

/** The folder of a wave in a root: `<root>/.ijfw/wave-<waveId>` (the id must be checked). */
export function waveDir(root: string, waveId: string): string {
  if (!isValidId(waveId))
    throw new WaveError(`invalid wave id ${JSON.stringify(waveId)}: ids match ^[A-Za-z0-9_-]{1,64}$`);
  return path.join(root, '.ijfw', `wave-${waveId}`);
}

/**
 * `path.join(dir, name)` for a normalized `dir` (path.join's or path.resolve's output) and a plain entry name (what
 * `readdir` lists, or `resume-<checked id>.md`: no separator, not empty, `.` or `..`), without path.join's
 * character-by-character normalization: a pass joins a name per checkpoint and per brief, and 1,000 cold path.join
 * calls cost ~10 ms (bench/waves.bench.ts). Pure.
 */
export function joinName(dir: string, name: string): string {
  return dir.endsWith(path.sep) ? dir + name : dir + path.sep + name;
}

/** A file's text when it exists and is at most `max` bytes; `{tooLarge}` when larger; `undefined` when absent. */
export function readBounded(
  file: string,
  max: number,
): { text: string; mtimeMs: number } | { tooLarge: number; mtimeMs: number } | undefined {
  let fd: number;
  try {
    // Non-blocking: opening a FIFO (STATE.md made a pipe) would wait for a writer forever and hang the pass.
    fd = openSync(file, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR' || code === 'ENXIO') return undefined;
    throw err;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return undefined;
    if (st.size > max) return { tooLarge: st.size, mtimeMs: st.mtimeMs };
    const buf = Buffer.allocUnsafe(st.size);
    let n = 0;
    while (n < st.size) {
      const r = readSync(fd, buf, n, st.size - n, n);
      if (r === 0) break;
      n += r;
    }
    return { text: buf.toString('utf8', 0, n), mtimeMs: st.mtimeMs };
  } finally {
    closeSync(fd);
  }
}

/** One buffer for every checkpoint read ({@link MAX_CHECKPOINT_BYTES} + 1 bytes, allocated on first use). */
let checkpointBuf: Buffer | undefined;

/**
 * Reads a checkpoint as {@link readBounded} does, with three calls and no `stat` (a wave of 1,000 checkpoints is read
 * per pass, bench/waves.bench.ts; Node 20's Stats objects cost more than the read): open, one read of up to
 * `MAX_CHECKPOINT_BYTES + 1` bytes into a shared buffer (a regular file reads short only at its end), close. The
 * file's mtime is asked (`fstat`) only when `needMtime(text)` says so — a checkpoint with its own time never needs it
 * (§1.10-2) — or the file is over the limit. `undefined` when absent or not a regular file.
 */
function readCheckpointFile(
  file: string,
  needMtime: (text: string) => boolean,
): { text: string; mtimeMs?: number } | { tooLarge: number; mtimeMs: number } | undefined {
  let fd: number;
  try {
    // Non-blocking: a FIFO swapped in after the listing must not hang the pass (no effect on a regular file).
    fd = openSync(file, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR' || code === 'ENXIO') return undefined;
    throw err;
  }
  try {
    const buf = (checkpointBuf ??= Buffer.allocUnsafe(MAX_CHECKPOINT_BYTES + 1));
    let n: number;
    try {
      n = readSync(fd, buf, 0, buf.length, 0);
    } catch (err) {
      // A folder or another non-file opened read-only.
      if ((err as NodeJS.ErrnoException).code === 'EISDIR' || (err as NodeJS.ErrnoException).code === 'EAGAIN')
        return undefined;
      throw err;
    }
    if (n > MAX_CHECKPOINT_BYTES) {
      const st = fstatSync(fd);
      return { tooLarge: st.size, mtimeMs: st.mtimeMs };
    }
    const text = buf.toString('utf8', 0, n);
    if (!needMtime(text)) return { text };
    const st = fstatSync(fd);
    if (!st.isFile()) return undefined;
    return { text, mtimeMs: st.mtimeMs };
  } finally {
    closeSync(fd);
  }
}

function entries(dir: string): { name: string; isFile: boolean; isDir: boolean }[] {
  try {
    return readdirSync(dir, { withFileTypes: true }).map((e) => ({
      name: e.name,
      isFile: e.isFile(),
      isDir: e.isDirectory(),
    }));
  } catch {
    return [];
  }
}

/** A wave folder found under `.ijfw/`: its id and when anything in it last changed (ms since epoch). */
export interface WaveListing {
  waveId: string;
  root: string;
  mtimeMs: number;
}

/**
 * Every `.ijfw/wave-<id>/` folder of the roots whose id is valid, newest first ("most recently modified": the
 * latest of the folder's own mtime — which a new checkpoint, a rename-based rewrite or a new events log moves — and
 * its STATE.md's).
 */
export function listWaves(roots: readonly string[]): WaveListing[] {
  const out: WaveListing[] = [];
  for (const root of roots) {
    for (const e of entries(path.join(root, '.ijfw'))) {
      if (!e.isDir || !e.name.startsWith('wave-')) continue;
      const id = e.name.slice('wave-'.length);
      if (!isValidId(id)) continue;
      const dir = path.join(root, '.ijfw', e.name);
      let m = 0;
      try {
        m = statSync(dir).mtimeMs;
        m = Math.max(m, statSync(path.join(dir, 'STATE.md')).mtimeMs);
      } catch {
        // Vanished while listing: keep what was seen.
      }
      out.push({ waveId: id, root, mtimeMs: m });
    }
  }
  return out.sort((a, b) => b.mtimeMs - a.mtimeMs || (a.waveId < b.waveId ? -1 : 1));
}

/** Wave ids of the roots (unique, sorted). */
export function waveIds(roots: readonly string[]): string[] {
  return [...new Set(listWaves(roots).map((w) => w.waveId))].sort();
}

/**
 * The wave to inspect (§1.2 input `waveId`): `waveId` when given (checked, and its folder must exist in a root),
 * else the most recently modified `.ijfw/wave-<id>/`. Throws {@link WaveError}; `undefined` when there is no wave.
 */
export function locateWave(roots: readonly string[], waveId?: string): string | undefined {
  if (waveId !== undefined) {
    const dirs = roots.map((r) => waveDir(r, waveId));
    if (!dirs.some((d) => entries(path.dirname(d)).some((e) => e.isDir && e.name === `wave-${waveId}`))) {
      throw new WaveError(`no wave ${waveId}: ${path.join('.ijfw', `wave-${waveId}`)} not found`);
    }
    return waveId;
  }
  return listWaves(roots)[0]?.waveId;
}

/** What {@link readWave} has read before the checkpoints: the wave's STATE.md (once found) and the claims. */
export interface WaveContext {
  state?: WaveState;
  claims: readonly ClaimSummary[];
}

/**
 * Reads one wave from the workspace folder (`roots[0]`) and extra worktree roots: every checkpoint (de-duplicated by
 * subId; the newer checkpoint time wins, the workspace on a tie), the events logs' mtimes, STATE.md (the workspace's,
 * else the first root that has one) and the blackboard claims. Problems name the file (workspace-relative) and, for
 * JSON, the line and column. `onSub` is called with each checkpoint's observation as soon as it is read, with the
 * claims and the STATE.md read so far (a caller can start work on a sub while the rest is read); with several roots
 * an observation may still lose to a newer one of a later root.
 */
export function readWave(
  roots: readonly string[],
  waveId: string,
  onSub?: (obs: SubObservation, wave: WaveContext) => void,
): WaveObservation {
  const folder = roots[0]!;
  const rel = (f: string) => workspacePath(folder, f);
  const problems: FileProblem[] = [];
  const subs = new Map<string, SubObservation>();
  let state: WaveState | undefined;

  // The claims and each root's STATE.md are read before its checkpoints, so `onSub` has what classifying a sub
  // needs; a STATE.md problem is still listed after the root's checkpoint problems.
  let claims: ClaimSummary[] = [];
  const claimsFile = path.join(folder, '.ijfw', 'blackboard', 'claims.json');
  const c = readBounded(claimsFile, MAX_CLAIMS_BYTES);
  if (c && 'text' in c) claims = parseClaims(c.text);
  const wave: WaveContext = { claims };

  for (const root of roots) {
    const dir = waveDir(root, waveId);
    let stateProblem: FileProblem | undefined;
    if (!state) {
      const stFile = path.join(dir, 'STATE.md');
      const st = readBounded(stFile, MAX_STATE_BYTES);
      if (st && 'text' in st) {
        const p = parseWaveState(st.text);
        if (p.ok) state = wave.state = p.state;
        else stateProblem = { file: rel(stFile), line: 1, column: 1, message: p.reason };
      } else if (st) {
        stateProblem = {
          file: rel(stFile),
          line: 0,
          column: 0,
          message: `not read: ${st.tooLarge} bytes, over the ${MAX_STATE_BYTES}-byte limit`,
        };
      }
    }
    const list = entries(dir);
    const events = new Map<string, number>();
    for (const e of list) {
      const sub = e.isFile ? subIdOfEventsFile(e.name) : undefined;
      if (sub) {
        try {
          events.set(sub, statSync(joinName(dir, e.name)).mtimeMs);
        } catch {
          // Removed meanwhile.
        }
      }
    }
    for (const e of list) {
      if (!e.isFile || !e.name.endsWith('.checkpoint.json') || !e.name.startsWith('subagent-')) continue;
      const file = joinName(dir, e.name);
      const subId = subIdOfFile(e.name);
      if (!subId) {
        problems.push({
          file: rel(file),
          line: 0,
          column: 0,
          message: 'ignored: the subagent id in the name does not match ^[A-Za-z0-9_-]{1,64}$',
        });
        continue;
      }
      let read: CheckpointRead | undefined;
      // The mtime is the age only of a checkpoint without a time of its own (§1.10-2), so it is asked only then.
      const got = readCheckpointFile(file, (text) => {
        read = parseCheckpoint(text);
        return !read.ok || read.checkpoint.timeMs === undefined;
      });
      if (!got) continue;
      let obs: SubObservation;
      if ('tooLarge' in got) {
        const reason = `${got.tooLarge} bytes, over the ${MAX_CHECKPOINT_BYTES}-byte limit`;
        problems.push({ file: rel(file), line: 0, column: 0, message: `checkpoint unreadable: ${reason}` });
        obs = { subId, root, file, read: { ok: false, reason }, mtimeMs: got.mtimeMs };
      } else {
        if (!read) throw new Error('unreachable: a checkpoint read without parsing');
        if (!read.ok) {
          const positioned = parseJsonText(rel(file), got.text);
          problems.push(
            positioned.ok
              ? { file: rel(file), line: 0, column: 0, message: `checkpoint unreadable: ${read.reason}` }
              : { ...positioned.problem, message: `checkpoint unreadable: ${positioned.problem.message}` },
          );
        }
        if (read.ok && read.checkpoint.unknownTimeKey)
          problems.push({
            file: rel(file),
            line: 0,
            column: 0,
            message: `checkpoint time key \`${read.checkpoint.unknownTimeKey}\` is not one Ralph reads (${CHECKPOINT_TIME_KEYS.join(', ')}): its age is the file's modification time`,
          });
        obs = {
          subId,
          root,
          file,
          text: got.text,
          read,
          ...(got.mtimeMs !== undefined ? { mtimeMs: got.mtimeMs } : {}),
        };
      }
      const ev = events.get(subId);
      if (ev !== undefined) obs.eventsMtimeMs = ev;
      const named = obs.read.ok ? obs.read.checkpoint.claimedWorktree : undefined;
      if (named && isWorktreeOf(folder, named)) obs.namedWorktree = path.resolve(named);
      const prev = subs.get(subId);
      if (!prev || anchorOf(obs) > anchorOf(prev)) subs.set(subId, obs);
      onSub?.(obs, wave);
    }
    if (stateProblem) problems.push(stateProblem);
  }

  const pending = (state?.subagents ?? []).filter((id) => isValidId(id) && !subs.has(id));
  return {
    waveId,
    roots: [...roots],
    ...(state ? { state } : {}),
    claims,
    subs: [...subs.values()],
    pending: [...new Set(pending)],
    problems,
  };
}

/**
 * Is `dir` a git worktree of `folder`'s repository? Its `.git` is a file `gitdir: <folder>/.git/worktrees/<name>`
 * (what `git worktree add` writes). Reads one small file, runs no git. A checkpoint naming any other path is ignored:
 * a path from a checkpoint is never trusted.
 */
export function isWorktreeOf(folder: string, dir: string): boolean {
  // <folder>/.git/worktrees/<name> must exist, and the worktree's .git must point at it.
  if (!path.isAbsolute(dir)) return false;
  const got = readBounded(path.join(path.resolve(dir), '.git'), 4096);
  if (!got || !('text' in got)) return false;
  const m = /^gitdir:\s*(.+?)\s*$/m.exec(got.text);
  if (!m) return false;
  const gitdir = path.resolve(path.resolve(dir), m[1]!);
  const prefix = path.join(folder, '.git', 'worktrees') + path.sep;
  if (!gitdir.startsWith(prefix) || gitdir.slice(prefix.length).includes(path.sep)) return false;
  try {
    return statSync(gitdir).isDirectory();
  } catch {
    return false;
  }
}

function anchorOf(o: SubObservation): number {
  return (o.read.ok ? o.read.checkpoint.timeMs : undefined) ?? o.mtimeMs ?? 0;
}
