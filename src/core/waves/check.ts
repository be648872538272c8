import {
  appendFileSync,
  chmodSync,
  chownSync,
  closeSync,
  lstatSync,
  mkdirSync,
  open,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  realpathSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import * as path from 'node:path';
import { withDirLock } from '../store/dirLock';
import { formatProblem, type FileProblem } from '../store/parseError';
import {
  classifySub,
  classifyWave,
  claimsIndex,
  DEFAULT_WINDOWS,
  type OrphanWindows,
  type SubObservation,
  type SubView,
  type WaveView,
} from './classify';
import { canonicalGateResult, formatGateResultBlock, type CanonicalGateResult } from './gateResult';
import {
  briefPath,
  decidePass,
  logPath,
  PHASE_ID,
  type PassDecision,
  type WaveFinding,
  type WaveSeverity,
} from './pass';
import { resolvedScanner, renderLogEntries } from './ralphLog';
import { joinName, locateWave, readWave, WaveError } from './readWave';
import { renderResumeBrief, untickedBrief } from './resumeBrief';
import { formatAge, relPath, waveJson, type WaveJson } from './summary';

/**
 * One pass of wave recovery (seed-systems.md §1.2, the `ijfw-ralph-loop-runner`'s job as a program): locate the wave,
 * read its checkpoints, classify, write a resume brief per RESUMED orphan, append the pass to RALPH-LOG.md, and return
 * the gate result. It never modifies or deletes a checkpoint and never dispatches anything.
 */

export interface WaveCheckOptions {
  /** The workspace folder (its `.ijfw/` and `.planning/`). */
  folder: string;
  /** `.planning/<phase>/` receives the briefs and the log; must match {@link PHASE_ID}. */
  phase: string;
  /** The wave; default the most recently modified `.ijfw/wave-<id>/`. */
  waveId?: string;
  /** Extra worktree roots whose `.ijfw/wave-<id>/` checkpoints are read too (§1.3 worktree rule). */
  roots?: readonly string[];
  windows?: OrphanWindows;
  /** The clock (ms since epoch); injectable for tests. Default `Date.now`. */
  clock?: () => number;
  /** Four hex digits for the canonical gate id; default random. */
  nonce?: () => string;
  /** Monotonic ms for the pass's duration; default `performance.now`. */
  hrtime?: () => number;
  /**
   * Watch mode: when this pass decides the same as the pass with this {@link WaveCheckResult.pass_key} (same severity,
   * same findings and next steps), nothing is written or logged (`logged: false`), so file events that change nothing
   * add no log noise.
   */
  unlessSameAs?: string;
  /**
   * Write new briefs while the wave is still being read (default true; used only with one root and without
   * `unlessSameAs`): each RESUMED orphan's brief is started on libuv's threads as soon as its checkpoint is read, so
   * the file system's work of creating them overlaps the reading. False writes every brief after classification, as
   * before (a test holds both equal).
   */
  pipelineBriefs?: boolean;
}

/** What `ralph waves check --json` prints: the runner's gate result (severity, findings) plus the context. */
export interface WaveCheckResult {
  success: true;
  severity: WaveSeverity;
  findings: WaveFinding[];
  /** null when the folder has no wave at all (an empty pass). */
  wave_id: string | null;
  phase: string;
  /** Every subagent of the wave with its disposition (ACTIVE and PENDING included). */
  wave: WaveJson | null;
  log_path: string;
  /** Briefs written (or rewritten) by this pass; a brief already up to date is not rewritten. */
  briefs_written: string[];
  /** IJFW's canonical gate result (the fenced block of the text output and the log), status mapped from severity. */
  gate_result: CanonicalGateResult;
  problems: FileProblem[];
  /** False when the pass was the same as `unlessSameAs` and nothing was written. */
  logged: boolean;
  /** The pass's decision in one string (severity, wave, findings and next steps), for `unlessSameAs`. */
  pass_key: string;
}

/** The decision of a pass as one comparable string. */
export function passKey(d: PassDecision): string {
  return JSON.stringify([d.waveId, d.severity, d.findings.map((f) => [f.subId, f.disposition, f.next_step])]);
}

/** The validated roots: the folder first, then each `--root` (resolved against the folder), which must be folders. */
export function resolveRoots(folder: string, extra: readonly string[] = []): string[] {
  const out = [folder];
  for (const r of extra) {
    const abs = path.resolve(folder, r);
    let ok = false;
    try {
      ok = statSync(abs).isDirectory();
    } catch {
      ok = false;
    }
    if (!ok) throw new WaveError(`root not found: ${r}`);
    if (!out.includes(abs)) out.push(abs);
  }
  return out;
}

/** A word for a shell: as is when plain, else single-quoted. */
export function shellWord(s: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/** The suggested command to resume a sub from its brief (logged, never run): `ralph [-C <worktree>] run --source <brief>`. */
export function dispatchCommand(folder: string, phase: string, sub: Pick<SubView, 'subId' | 'worktree'>): string {
  const rel = briefPath(phase, sub.subId);
  return sub.worktree
    ? `ralph -C ${shellWord(sub.worktree)} run --source ${shellWord(path.join(folder, rel))}`
    : `ralph run --source ${rel}`;
}

/** A line longer than this (bytes) is dropped by {@link readLoggedResolved}: log lines Ralph writes are short. */
const MAX_LOG_LINE = 1024 * 1024;

/**
 * The subIds already logged RESOLVED for the wave: the log read in 256 KiB chunks (bounded memory: a partial line is
 * carried, up to {@link MAX_LOG_LINE}) and scanned as bytes (ralphLog.ts `lines`), so only the lines that matter are
 * decoded.
 */
export function readLoggedResolved(file: string, waveId: string): Set<string> {
  const scan = resolvedScanner(waveId);
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return scan.done();
  }
  try {
    let buf = Buffer.allocUnsafe(256 * 1024);
    let have = 0;
    for (;;) {
      if (have === buf.length) {
        if (buf.length > MAX_LOG_LINE) {
          have = 0;
        } else {
          const bigger = Buffer.allocUnsafe(buf.length * 2);
          buf.copy(bigger, 0, 0, have);
          buf = bigger;
        }
      }
      const n = readSync(fd, buf, have, buf.length - have, null);
      if (n === 0) break;
      const end = have + n;
      const last = buf.lastIndexOf(0x0a, end - 1);
      if (last < 0) {
        have = end;
        continue;
      }
      scan.lines(buf.subarray(0, last + 1));
      buf.copy(buf, 0, last + 1, end);
      have = end - last - 1;
    }
    if (have) scan.line(buf.toString('utf8', 0, have));
  } finally {
    closeSync(fd);
  }
  return scan.done();
}

/** Appends `text` in one write, after a newline when the file does not end with one (append-only, §1.2 step 5). */
function appendLog(file: string, text: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  let prefix = '';
  try {
    const size = statSync(file).size;
    if (size > 0) {
      const fd = openSync(file, 'r');
      try {
        const b = Buffer.alloc(1);
        readSync(fd, b, 0, 1, size - 1);
        if (b[0] !== 0x0a) prefix = '\n';
      } finally {
        closeSync(fd);
      }
    }
  } catch {
    // No log yet.
  }
  appendFileSync(file, prefix + text, { encoding: 'utf8' });
}

/**
 * Runs one pass (see the module's comment). Throws {@link WaveError} for an invalid phase, wave id or root, or a
 * named wave that does not exist. Takes the log's cross-process lock for the whole pass, so two passes never log the
 * same RESOLVED twice.
 */
export async function checkWave(o: WaveCheckOptions): Promise<WaveCheckResult> {
  if (!PHASE_ID.test(o.phase))
    throw new WaveError(
      `invalid phase ${JSON.stringify(o.phase)}: letters, digits, '.', '_' and '-', at most 64, not starting with '.'`,
    );
  const roots = resolveRoots(o.folder, o.roots);
  const waveId = locateWave(roots, o.waveId);
  const clock = o.clock ?? Date.now;
  const hr = o.hrtime ?? (() => performance.now());
  const startedAt = hr();
  const logFile = path.join(o.folder, ...logPath(o.phase).split('/'));
  // No wave at all (no `.ijfw/wave-*/`): nothing to recover, so nothing is written — no `.planning/<phase>/`, no log
  // entry, no lock file. The result says so (PASS, `wave_id` null, `logged` false).
  if (!waveId) return noWaveResult(o, clock(), hr() - startedAt);
  // The log's lock is proper-lockfile's protocol without proper-lockfile (store/dirLock.ts): loading that library was
  // about half of dist/cli-waves.js's start. The pass under it is synchronous but for the writes of new briefs, which
  // run on libuv's threads while the wave is read (`pipelineBriefs`) and are awaited before the log is appended.
  return withDirLock(logFile, async (lock) => {
    // The pass's instant, taken before the reading (a sub is classified as soon as its checkpoint is read).
    const now = clock();
    const at = new Date(now).toISOString();
    const windows = o.windows ?? DEFAULT_WINDOWS;
    // One listing instead of a failed open per new brief.
    const planDir = path.join(o.folder, '.planning', o.phase);
    const names = listNames(planDir);
    const existing = new Set(names);
    let madeDir = false;
    const ensureDir = () => {
      if (madeDir) return;
      mkdirSync(planDir, { recursive: true });
      madeDir = true;
    };
    const briefFile = (subId: string) => joinName(planDir, `resume-${subId}.md`);
    const brief = (s: SubView) =>
      renderResumeBrief({ waveId, phase: o.phase, sub: s, checkpointRel: relPath(o.folder, s.file!), writtenAt: at });
    // Briefs started while reading (one root, nothing to compare with: a pass that may be skipped writes nothing
    // before it knows): subId → its write. Each promise resolves, recording a failure in `failed`.
    const started = new Map<string, Promise<void>>();
    const failed: unknown[] = [];
    const known = new Map<SubObservation, SubView>();
    let onSub: Parameters<typeof readWave>[2];
    if (o.unlessSameAs === undefined && roots.length === 1 && o.pipelineBriefs !== false) {
      removeLeftoverTemps(planDir, names);
      let claimsByAgent: ReturnType<typeof claimsIndex> | undefined;
      onSub = (obs, wave) => {
        claimsByAgent ??= claimsIndex(wave.claims);
        const v = classifySub(
          obs,
          { waveId, state: wave.state, claims: wave.claims, roots, claimsByAgent },
          now,
          windows,
        );
        known.set(obs, v);
        if (v.disposition !== 'RESUMED' || existing.has(`resume-${v.subId}.md`)) return;
        lock.keepFresh();
        ensureDir();
        started.set(
          v.subId,
          writeNewBriefAsync(briefFile(v.subId), brief(v)).catch((err: unknown) => void failed.push(err)),
        );
      };
    }
    try {
      const view: WaveView = classifyWave(readWave(roots, waveId, onSub), now, windows, known);
      const decision: PassDecision = decidePass(view, o.phase, readLoggedResolved(logFile, view.waveId));
      const key = passKey(decision);
      const skip = o.unlessSameAs !== undefined && o.unlessSameAs === key;
      const written: string[] = [];
      if (!skip && !onSub) removeLeftoverTemps(planDir, names);
      for (const s of skip ? [] : decision.subs) {
        if (s.disposition !== 'RESUMED') continue;
        const rel = briefPath(o.phase, s.subId);
        if (started.has(s.subId)) {
          written.push(rel);
          continue;
        }
        lock.keepFresh();
        const file = briefFile(s.subId);
        const text = brief(s);
        const exists = existing.has(path.basename(file));
        const old = exists ? readIfExists(file) : undefined;
        // The same brief (timestamps aside) is left alone, so a box the loop already ticked stays ticked.
        if (old !== undefined && sameBrief(old, text)) continue;
        ensureDir();
        writeBrief(file, text, exists);
        written.push(rel);
      }
      await Promise.all(started.values());
      if (failed.length) throw failed[0];
      return finishPass(o, lock, { view, decision, key, skip, written, now, at, logFile, started: startedAt, hr });
    } finally {
      // Never release the lock with a brief still being written (a throw above).
      await Promise.all(started.values());
    }
  });
}

/** What a pass has decided and written when it formats its gate result and appends to the log. */
interface PassSoFar {
  view: WaveView;
  decision: PassDecision;
  key: string;
  skip: boolean;
  written: string[];
  now: number;
  at: string;
  logFile: string;
  started: number;
  hr: () => number;
}

/** The end of {@link checkWave}'s pass, under the log's lock: the gate result, the log entry, the result. */
function finishPass(o: WaveCheckOptions, lock: { keepFresh(): void }, p: PassSoFar): WaveCheckResult {
  const { view, decision, key, skip, written, now, at, logFile, started, hr } = p;
  const bySub = new Map(decision.subs.map((s) => [s.subId, s]));
  const dispatch = (subId: string) => dispatchCommand(o.folder, o.phase, bySub.get(subId) ?? { subId });
  const gate = canonicalGateResult(decision, {
    nowMs: now,
    nonce: (o.nonce ?? randomNonce)(),
    durationMs: hr() - started,
    dispatch,
  });
  const block = formatGateResultBlock(gate);
  const entries = renderLogEntries(decision, { at, block, dispatch });
  if (!skip) {
    lock.keepFresh();
    appendLog(logFile, entries);
  }
  return {
    success: true,
    severity: decision.severity,
    findings: decision.findings,
    wave_id: view.waveId,
    phase: o.phase,
    wave: waveJson(view, o.folder),
    log_path: logPath(o.phase),
    briefs_written: written,
    gate_result: gate,
    problems: view.problems,
    logged: !skip,
    pass_key: key,
  };
}

/**
 * Four lowercase hex digits for the canonical gate id (`randomBytes(2).toString('hex')`'s shape). Not a secret:
 * `Math.random`, so a pass does not load node:crypto (bench/waves.bench.ts).
 */
function randomNonce(): string {
  return Math.floor(Math.random() * 0x10000)
    .toString(16)
    .padStart(4, '0');
}

function listNames(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** Temp files of {@link writeBrief}: `resume-<subId>.md.<pid>.<n>.tmp`. */
const BRIEF_TEMP = /^resume-[A-Za-z0-9_-]{1,64}\.md\.[0-9]+\.[0-9]+\.tmp$/;
let briefTemps = 0;

/**
 * Writes a brief atomically (a temp file beside it, then a rename: never half-written), synchronously and without
 * fsync: a brief is regenerated from its checkpoint by the next pass, and per-file fsyncs, thread-pool round trips or
 * a library's per-file realpath / stat / exit-handler bookkeeping dominated a pass over a large wave
 * (bench/waves.bench.ts: 334 new briefs). A brief rewritten in place keeps its mode and
 * owner, and a symlinked brief is written through to its target. The temp file is removed when the write fails; one
 * left by a process killed mid-write is removed by the next pass ({@link removeLeftoverTemps}).
 */
function writeBrief(file: string, text: string, exists: boolean): void {
  let target = file;
  let keep: { mode: number; uid: number; gid: number } | undefined;
  if (exists) {
    try {
      if (lstatSync(file).isSymbolicLink()) target = realpathSync(file);
      const st = statSync(target);
      keep = { mode: st.mode & 0o7777, uid: st.uid, gid: st.gid };
    } catch {
      // Gone meanwhile: written as a new brief.
    }
  }
  const tmp = `${target}.${process.pid}.${briefTemps++}.tmp`;
  try {
    writeFileSync(tmp, text, keep ? { encoding: 'utf8', mode: keep.mode } : { encoding: 'utf8' });
    if (keep) {
      chmodSync(tmp, keep.mode);
      if (process.getuid && (keep.uid !== process.getuid() || keep.gid !== process.getgid?.())) {
        try {
          chownSync(tmp, keep.uid, keep.gid);
        } catch {
          // Not allowed to give it away: the brief is ours now.
        }
      }
    }
    renameSync(tmp, target);
  } catch (err) {
    try {
      unlinkSync(tmp);
    } catch {
      // Never created.
    }
    throw err;
  }
}

/**
 * {@link writeBrief} of a brief that did not exist when the pass listed `.planning/<phase>/`, with its first step
 * asynchronous: the temp file (`<file>.<pid>.<n>.tmp`, opened as `writeFileSync` opens it: `w`, mode 0o666 before
 * the umask) is created on libuv's threads — the file system creating an inode is most of a new brief's cost — so it
 * overlaps what the main thread does meanwhile (reading the wave); once open, the brief is written whole, closed and
 * renamed over `file` synchronously, in the open's callback. The temp is removed when any step fails. Exported for
 * its tests.
 */
export function writeNewBriefAsync(file: string, text: string): Promise<void> {
  const tmp = `${file}.${process.pid}.${briefTemps++}.tmp`;
  return new Promise<void>((resolve, reject) => {
    open(tmp, 'w', 0o666, (openErr, fd) => {
      if (openErr) return reject(openErr);
      try {
        try {
          writeFileSync(fd, text, 'utf8');
        } finally {
          closeSync(fd);
        }
        renameSync(tmp, file);
      } catch (err) {
        try {
          unlinkSync(tmp);
        } catch {
          // Never created.
        }
        return reject(err as Error);
      }
      resolve();
    });
  });
}

/**
 * Removes brief temp files a pass killed mid-write left in `.planning/<phase>/` (`names`: its listing). Only called
 * under the log's lock, which every pass writing there holds, so no live pass is writing them.
 */
function removeLeftoverTemps(dir: string, names: readonly string[]): void {
  for (const n of names) {
    if (!BRIEF_TEMP.test(n)) continue;
    try {
      unlinkSync(path.join(dir, n));
    } catch {
      // Removed meanwhile.
    }
  }
}

function readIfExists(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** Two briefs are the same when they differ only in the "Written … at <ISO>" line, the age in it, and the final tick. */
function sameBrief(a: string, b: string): boolean {
  const norm = (t: string) => untickedBrief(t).replace(/^Written by .*$/m, '');
  return norm(a) === norm(b);
}

/** The result of a pass over a folder without any wave: PASS, nothing found, nothing written. */
function noWaveResult(o: WaveCheckOptions, now: number, durationMs: number): WaveCheckResult {
  const decision: PassDecision = { waveId: '(none)', phase: o.phase, severity: 'PASS', findings: [], subs: [] };
  const gate = canonicalGateResult(decision, {
    nowMs: now,
    nonce: (o.nonce ?? randomNonce)(),
    durationMs,
    dispatch: () => '',
  });
  return {
    success: true,
    severity: 'PASS',
    findings: [],
    wave_id: null,
    phase: o.phase,
    wave: null,
    log_path: logPath(o.phase),
    briefs_written: [],
    gate_result: gate,
    problems: [],
    logged: false,
    pass_key: passKey(decision),
  };
}

/** The text output of a pass: one line per finding, the rest of the wave, problems, then the canonical block last (§1.9). */
export function formatCheckText(r: WaveCheckResult): string {
  const out: string[] = [];
  if (!r.wave_id) {
    out.push(`No waves: no .ijfw/wave-<id>/ in this folder, nothing to check — ${r.severity} (nothing written)`);
  } else {
    // One word for the result: the gate result's status (NOTE is reported as WARN there), the IJFW severity beside it.
    const status = r.gate_result.status;
    out.push(
      `Wave ${r.wave_id} (phase ${r.phase}): ${status}${status !== r.severity ? ` (IJFW severity ${r.severity})` : ''}${r.findings.length ? '' : ' — no orphans'}`,
    );
    for (const f of r.findings) {
      const tail =
        f.disposition === 'RESUMED'
          ? `  next_step: ${JSON.stringify(f.next_step)}  brief: ${f.brief_path}`
          : f.disposition === 'STALE'
            ? '  no useful checkpoint: redispatch fresh'
            : '';
      out.push(`  ${f.disposition.padEnd(8)} ${f.subId}  checkpoint ${formatAge(f.checkpoint_age_ms)} old${tail}`);
    }
    for (const s of r.wave?.subagents ?? []) {
      if (s.disposition === 'ACTIVE')
        out.push(
          `  ACTIVE   ${s.sub_id}  checkpoint ${formatAge(s.checkpoint_age_ms)} old, orphan in ${formatAge(s.orphan_in_ms ?? 0)} without activity`,
        );
      else if (s.disposition === 'PENDING') out.push(`  PENDING  ${s.sub_id}  no checkpoint yet`);
    }
  }
  out.push(`Log: ${r.log_path}`);
  for (const p of r.problems) out.push(`Problem: ${formatProblem(p)}`);
  return out.join('\n') + '\n' + formatGateResultBlock(r.gate_result);
}
