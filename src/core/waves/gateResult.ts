import type { PassDecision, WaveSeverity } from './pass';

/**
 * IJFW's canonical gate result (seed-systems.md §1.9, `gate-result-schema.js` v1.4.0): a fenced ```` ```gate-result ````
 * block holding JSON, the last thing emitted. The runner's severity maps onto its `status` by our documented mapping
 * (§1.9 suggests it; it is ours, not IJFW's): PASS→PASS, NOTE→WARN, MEDIUM→FLAG (HIGH→FAIL is unused here).
 */

export type CanonicalStatus = 'PASS' | 'CONDITIONAL' | 'WARN' | 'FLAG' | 'FAIL';

/** The severity → status mapping (documented in docs/cli.md). */
export const SEVERITY_TO_STATUS: Record<WaveSeverity, CanonicalStatus> = { PASS: 'PASS', NOTE: 'WARN', MEDIUM: 'FLAG' };

/** The canonical schema (§1.9), field names as IJFW spells them. */
export interface CanonicalGateResult {
  schema_version: '1.0';
  gate_id: string;
  gate: string;
  status: CanonicalStatus;
  project_type: 'software';
  lenses: { model: string; verdict: CanonicalStatus; confidence: number; summary: string }[];
  affected_artifacts: { type: 'file'; ref: string; role: string }[];
  accounting: { duration_ms: number; lenses_invoked: number; cost_usd: number | null };
  remediation: { action: string; target: string; agent_recommended: string; confidence: number }[];
  receipts_ref: string | null;
  supersedes: string | null;
  emitted_at: string;
}

/** The gate name: matches `^[a-z][a-z0-9-]*(:[a-z][a-z0-9-]*)?$` (the runner's roster id). */
export const GATE_NAME = 'ralph-loop-runner';

/** One line summing up a pass: `1 resumed, 0 stale, 2 resolved in wave W12-A0`. */
export function passSummary(d: PassDecision): string {
  const n = (disp: string) => d.findings.filter((f) => f.disposition === disp).length;
  return d.findings.length
    ? `${n('RESUMED')} resumed, ${n('STALE')} stale, ${n('RESOLVED')} resolved in wave ${d.waveId}`
    : `no orphans in wave ${d.waveId}`;
}

/**
 * Builds the canonical block's object (pure). `nowMs` gives `emitted_at` and the gate id's time; `nonce` is its four
 * hex digits (`<gate with ':'→'-'>-<ms>-<4 hex>`); `durationMs` the pass's own duration. `dispatch(subId)` is the
 * suggested command for a RESUMED sub (never run by Ralph).
 */
export function canonicalGateResult(
  d: PassDecision,
  o: { nowMs: number; nonce: string; durationMs: number; dispatch: (subId: string) => string },
): CanonicalGateResult {
  const status = SEVERITY_TO_STATUS[d.severity];
  const artifacts: CanonicalGateResult['affected_artifacts'] = [];
  const remediation: CanonicalGateResult['remediation'] = [];
  for (const f of d.findings) {
    if (f.disposition === 'RESUMED' && f.brief_path) {
      artifacts.push({ type: 'file', ref: f.brief_path, role: `resume brief of ${f.subId}` });
      remediation.push({
        action: `resume ${f.subId} from its next_step: ${o.dispatch(f.subId)}`,
        target: f.subId,
        agent_recommended: 'orchestrator',
        confidence: 0.9,
      });
    } else if (f.disposition === 'STALE') {
      remediation.push({
        action: `redispatch ${f.subId} fresh: no useful checkpoint`,
        target: f.subId,
        agent_recommended: 'orchestrator',
        confidence: 0.9,
      });
    }
  }
  return {
    schema_version: '1.0',
    gate_id: `${GATE_NAME.replace(/:/g, '-')}-${o.nowMs}-${o.nonce}`,
    gate: GATE_NAME,
    status,
    project_type: 'software',
    lenses: [{ model: 'ralph-waves (deterministic)', verdict: status, confidence: 1, summary: passSummary(d) }],
    affected_artifacts: artifacts,
    accounting: { duration_ms: Math.max(0, Math.round(o.durationMs)), lenses_invoked: 1, cost_usd: null },
    remediation,
    receipts_ref: null,
    supersedes: null,
    emitted_at: new Date(o.nowMs).toISOString(),
  };
}

/** The fenced block: ```` ```gate-result ```` , the JSON (2-space indent), ```` ``` ````. */
export function formatGateResultBlock(g: CanonicalGateResult): string {
  return '```gate-result\n' + JSON.stringify(g, null, 2) + '\n```\n';
}
