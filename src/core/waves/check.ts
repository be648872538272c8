import { randomBytes } from 'node:crypto';
import { appendFileSync, closeSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { writeFileAtomicModule } from '../store/atomicWrite';
import { withFileLock } from '../store/fileLock';
import { formatProblem, type FileProblem } from '../store/parseError';
import { classifyWave, DEFAULT_WINDOWS, type OrphanWindows, type SubView, type WaveView } from './classify';
import { canonicalGateResult, formatGateResultBlock, type CanonicalGateResult } from './gateResult';
import { briefPath, decidePass, logPath, PHASE_ID, type PassDecision, type WaveFinding, type WaveSeverity } from './pass';
import { resolvedScanner, renderLogEntries } from './ralphLog';
import { locateWave, readWave, WaveError } from './readWave';
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

/** The subIds already logged RESOLVED for the wave: a line-by-line scan of the log in 64 KiB chunks (bounded memory). */
export function readLoggedResolved(file: string, waveId: string): Set<string> {
  const scan = resolvedScanner(waveId);
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return scan.done();
  }
  try {
    const buf = Buffer.allocUnsafe(64 * 1024);
    // A chunk may end inside a multi-byte character (the headings' em dash): the decoder carries it over.
    const decoder = new StringDecoder('utf8');
    let rest = '';
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      const lines = (rest + decoder.write(buf.subarray(0, n))).split('\n');
      rest = lines.pop()!;
      // A line longer than a chunk is kept only up to 1 MiB: log lines Ralph writes are short.
      if (rest.length > 1024 * 1024) rest = '';
      for (const l of lines) scan.line(l.replace(/\r$/, ''));
    }
    if (rest) scan.line(rest);
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
  if (!PHASE_ID.test(o.phase)) throw new WaveError(`invalid phase ${JSON.stringify(o.phase)}: letters, digits, '.', '_' and '-', at most 64, not starting with '.'`);
  const roots = resolveRoots(o.folder, o.roots);
  const waveId = locateWave(roots, o.waveId);
  const clock = o.clock ?? Date.now;
  const hr = o.hrtime ?? (() => performance.now());
  const started = hr();
  const logFile = path.join(o.folder, ...logPath(o.phase).split('/'));
  // No wave at all (no `.ijfw/wave-*/`): nothing to recover, so nothing is written — no `.planning/<phase>/`, no log
  // entry, no lock file (new-user try, session 3). The result says so (PASS, `wave_id` null, `logged` false).
  if (!waveId) return noWaveResult(o, clock(), hr() - started);
  return withFileLock(logFile, async () => {
    const view: WaveView | undefined = waveId ? classifyWave(readWave(roots, waveId), clock(), o.windows ?? DEFAULT_WINDOWS) : undefined;
    const decision: PassDecision = view
      ? decidePass(view, o.phase, readLoggedResolved(logFile, view.waveId))
      : { waveId: '(none)', phase: o.phase, severity: 'PASS', findings: [], subs: [] };
    const now = view?.now ?? clock();
    const at = new Date(now).toISOString();
    const key = passKey(decision);
    const skip = o.unlessSameAs !== undefined && o.unlessSameAs === key;
    const written: string[] = [];
    // One listing instead of a failed open per new brief.
    const existing = new Set(listNames(path.join(o.folder, '.planning', o.phase)));
    for (const s of skip ? [] : decision.subs) {
      if (s.disposition !== 'RESUMED') continue;
      const rel = briefPath(o.phase, s.subId);
      const file = path.join(o.folder, ...rel.split('/'));
      const text = renderResumeBrief({ waveId: decision.waveId, phase: o.phase, sub: s, checkpointRel: relPath(o.folder, s.file!), writtenAt: at });
      const old = existing.has(path.basename(file)) ? readIfExists(file) : undefined;
      // The same brief (timestamps aside) is left alone, so a box the loop already ticked stays ticked.
      if (old !== undefined && sameBrief(old, text)) continue;
      mkdirSync(path.dirname(file), { recursive: true });
      // Atomic (temp file + rename: never half-written), synchronous and without an fsync per brief: a brief is
      // regenerated from the checkpoint by the next pass, and hundreds of fsyncs or thread-pool round trips would
      // dominate a pass over a large wave (bench/waves.bench.ts).
      writeFileAtomicModule().sync(file, text, { encoding: 'utf8', fsync: false });
      written.push(rel);
    }
    const bySub = new Map(decision.subs.map((s) => [s.subId, s]));
    const dispatch = (subId: string) => dispatchCommand(o.folder, o.phase, bySub.get(subId) ?? { subId });
    const gate = canonicalGateResult(decision, { nowMs: now, nonce: (o.nonce ?? (() => randomBytes(2).toString('hex')))(), durationMs: hr() - started, dispatch });
    const block = formatGateResultBlock(gate);
    const entries = view ? renderLogEntries(decision, { at, block, dispatch }) : `### ${at} — PASS (no wave found under .ijfw/)\n\n${block}\n`;
    if (!skip) appendLog(logFile, entries);
    return {
      success: true,
      severity: decision.severity,
      findings: decision.findings,
      wave_id: view?.waveId ?? null,
      phase: o.phase,
      wave: view ? waveJson(view, o.folder) : null,
      log_path: logPath(o.phase),
      briefs_written: written,
      gate_result: gate,
      problems: view?.problems ?? [],
      logged: !skip,
      pass_key: key,
    };
  });
}

function listNames(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
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
  const gate = canonicalGateResult(decision, { nowMs: now, nonce: (o.nonce ?? (() => randomBytes(2).toString('hex')))(), durationMs, dispatch: () => '' });
  return { success: true, severity: 'PASS', findings: [], wave_id: null, phase: o.phase, wave: null, log_path: logPath(o.phase), briefs_written: [], gate_result: gate, problems: [], logged: false, pass_key: passKey(decision) };
}

/** The text output of a pass: one line per finding, the rest of the wave, problems, then the canonical block last (§1.9). */
export function formatCheckText(r: WaveCheckResult): string {
  const out: string[] = [];
  if (!r.wave_id) {
    out.push(`No waves: no .ijfw/wave-<id>/ in this folder, nothing to check — ${r.severity} (nothing written)`);
  } else {
    out.push(`Wave ${r.wave_id} (phase ${r.phase}): ${r.severity}${r.findings.length ? '' : ' — no orphans'}`);
    for (const f of r.findings) {
      const tail = f.disposition === 'RESUMED' ? `  next_step: ${JSON.stringify(f.next_step)}  brief: ${f.brief_path}`
        : f.disposition === 'STALE' ? '  no useful checkpoint: redispatch fresh' : '';
      out.push(`  ${f.disposition.padEnd(8)} ${f.subId}  checkpoint ${formatAge(f.checkpoint_age_ms)} old${tail}`);
    }
    for (const s of r.wave?.subagents ?? []) {
      if (s.disposition === 'ACTIVE') out.push(`  ACTIVE   ${s.sub_id}  checkpoint ${formatAge(s.checkpoint_age_ms)} old, orphan in ${formatAge(s.orphan_in_ms ?? 0)} without activity`);
      else if (s.disposition === 'PENDING') out.push(`  PENDING  ${s.sub_id}  no checkpoint yet`);
    }
  }
  out.push(`Log: ${r.log_path}`);
  for (const p of r.problems) out.push(`Problem: ${formatProblem(p)}`);
  return out.join('\n') + '\n' + formatGateResultBlock(r.gate_result);
}
