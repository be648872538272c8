import type { Disposition, SubView, WaveView } from './classify';

/**
 * One pass of wave recovery, decided (pure): which subagents become findings, and the runner's severity
 * (seed-systems.md §1.2 step 6). RESOLVED is a finding only at the first pass that sees it (§1.10-1).
 */

/** The runner's severity sketch (§1.2): any STALE → MEDIUM, else any RESUMED → NOTE, else PASS (MEDIUM wins). */
export type WaveSeverity = 'PASS' | 'NOTE' | 'MEDIUM';

/** A finding of the runner's gate result (§1.2 output contract), in its field names. */
export interface WaveFinding {
  subId: string;
  disposition: Extract<Disposition, 'RESUMED' | 'STALE' | 'RESOLVED'>;
  /** now − the checkpoint's time, ms. */
  checkpoint_age_ms: number;
  /** The sub's own `next_step`, exactly; `""` when it recorded none. */
  next_step: string;
  /** Workspace-relative path of the resume brief (RESUMED only). */
  brief_path?: string;
}

/** The decided pass: severity, findings, and the subagents behind them (same order). */
export interface PassDecision {
  waveId: string;
  phase: string;
  severity: WaveSeverity;
  findings: WaveFinding[];
  subs: SubView[];
}

/**
 * Phases name a folder under `.planning/` (e.g. `1.5.0`): letters, digits, `.`, `_`, `-`, 1–64 characters, not
 * starting with a dot. Anything else is refused before a path is built.
 */
export const PHASE_ID = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$/;

/** `.planning/<phase>/resume-<subId>.md`, workspace-relative (both ids already checked). */
export function briefPath(phase: string, subId: string): string {
  return `.planning/${phase}/resume-${subId}.md`;
}

/** `.planning/<phase>/RALPH-LOG.md`, workspace-relative. */
export function logPath(phase: string): string {
  return `.planning/${phase}/RALPH-LOG.md`;
}

/** Severity of a set of dispositions (§1.2 step 6; MEDIUM wins over NOTE). */
export function severityOf(dispositions: Iterable<Disposition>): WaveSeverity {
  let s: WaveSeverity = 'PASS';
  for (const d of dispositions) {
    if (d === 'STALE') return 'MEDIUM';
    if (d === 'RESUMED') s = 'NOTE';
  }
  return s;
}

/**
 * Decides a pass over a classified wave. `loggedResolved` holds the subIds whose RESOLVED entry the log of this
 * wave already has; they are not findings again. ACTIVE and PENDING subagents are never findings.
 */
export function decidePass(view: WaveView, phase: string, loggedResolved: ReadonlySet<string>): PassDecision {
  const subs = view.subagents.filter(
    (s) =>
      s.disposition === 'RESUMED' ||
      s.disposition === 'STALE' ||
      (s.disposition === 'RESOLVED' && !loggedResolved.has(s.subId)),
  );
  const findings = subs.map((s): WaveFinding => ({
    subId: s.subId,
    disposition: s.disposition as WaveFinding['disposition'],
    checkpoint_age_ms: Math.round(s.checkpointAgeMs ?? 0),
    next_step: s.nextStep ?? '',
    ...(s.disposition === 'RESUMED' ? { brief_path: briefPath(phase, s.subId) } : {}),
  }));
  return { waveId: view.waveId, phase, severity: severityOf(subs.map((s) => s.disposition)), findings, subs };
}
