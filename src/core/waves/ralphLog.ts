import type { SubView } from './classify';
import type { PassDecision } from './pass';

/**
 * `.planning/<phase>/RALPH-LOG.md` (seed-systems.md §1.2 step 5, §1.8): append-only, one H3 entry per disposition
 * dated by ISO timestamp, and an entry for every pass (for an empty pass: `PASS (no orphans in wave <id>)`, "the
 * proof telemetry works"). Each pass ends with a summary entry holding the canonical `gate-result` block.
 */

/** The log's entry heading: `### <ISO> — <WORD> <rest>`. */
const HEADING = /^### (\S+) — (\S+)(?: (.*))?$/;

/** What one pass appends (pure). `dispatch(subId)` is the suggested command for a RESUMED sub. */
export function renderLogEntries(d: PassDecision, o: { at: string; block: string; dispatch: (subId: string) => string }): string {
  const out: string[] = [];
  for (const s of d.subs) {
    out.push(`### ${o.at} — ${s.disposition} ${s.subId}`);
    out.push(`- wave: ${d.waveId}   checkpoint_age_ms: ${s.checkpointAgeMs ?? 0}`);
    if (s.disposition === 'RESUMED') {
      out.push(`- next_step: ${JSON.stringify(s.nextStep ?? '')}`);
      out.push(`- brief: .planning/${d.phase}/resume-${s.subId}.md`);
      out.push(`- suggested dispatch: ${o.dispatch(s.subId)}`);
    } else if (s.disposition === 'STALE') {
      out.push(`- no useful checkpoint: ${staleReason(s)}; recommend a fresh redispatch`);
    } else {
      out.push(`- DONE from ${s.doneSource ?? 'a DONE source'}; no action`);
    }
    out.push('');
  }
  const headline = d.findings.length
    ? `${d.severity} (wave ${d.waveId}: ${count(d, 'RESUMED')} resumed, ${count(d, 'STALE')} stale, ${count(d, 'RESOLVED')} resolved)`
    : `${d.severity} (no orphans in wave ${d.waveId})`;
  out.push(`### ${o.at} — ${headline}`, '', o.block.replace(/\n$/, ''), '');
  return out.join('\n') + '\n';
}

function count(d: PassDecision, disp: string): number {
  return d.findings.filter((f) => f.disposition === disp).length;
}

/** Why a STALE sub has nothing to resume from (§1.10-3). */
export function staleReason(s: SubView): string {
  // One line whatever the parser's message quotes from the file: a log entry's structure never comes from a checkpoint.
  return s.unreadable ? `checkpoint unreadable (${s.unreadable.replace(/\s+/g, ' ').slice(0, 200)})` : 'neither next_step nor last_action recorded';
}

/**
 * Scans log lines for the subagents already logged RESOLVED in `waveId` (an entry `### <ISO> — RESOLVED <subId>`
 * followed by `- wave: <waveId>`). Feed it lines in order; `done()` gives the set. Constant memory per line.
 */
export function resolvedScanner(waveId: string): { line(l: string): void; done(): Set<string> } {
  const found = new Set<string>();
  let pending: string | undefined;
  return {
    line(l: string) {
      const h = HEADING.exec(l);
      if (h) {
        pending = h[2] === 'RESOLVED' && h[3] ? h[3].trim() : undefined;
        return;
      }
      if (pending !== undefined) {
        const w = /^- wave: (\S+)/.exec(l);
        if (w) {
          if (w[1] === waveId) found.add(pending);
          pending = undefined;
        }
      }
    },
    done: () => found,
  };
}

/** The set of subIds logged RESOLVED for `waveId` in a whole log text (pure; tests and small logs). */
export function loggedResolved(text: string, waveId: string): Set<string> {
  const s = resolvedScanner(waveId);
  for (const l of text.split(/\r?\n/)) s.line(l);
  return s.done();
}
