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
export function renderLogEntries(
  d: PassDecision,
  o: { at: string; block: string; dispatch: (subId: string) => string },
): string {
  const out: string[] = [];
  for (const s of d.subs) {
    out.push(`### ${o.at} — ${s.disposition} ${s.subId}`);
    out.push(`- wave: ${d.waveId}   checkpoint_age_ms: ${Math.round(s.checkpointAgeMs ?? 0)}`);
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
  return s.unreadable
    ? `checkpoint unreadable (${s.unreadable.replace(/\s+/g, ' ').slice(0, 200)})`
    : 'neither next_step nor last_action recorded';
}

/**
 * Scans log lines for the subagents already logged RESOLVED in `waveId` (an entry `### <ISO> — RESOLVED <subId>`
 * followed by `- wave: <waveId>`). Feed it lines in order; `done()` gives the set. Constant memory per line.
 */
export function resolvedScanner(waveId: string): ResolvedScanner {
  const found = new Set<string>();
  let pending: string | undefined;
  const line = (l: string) => {
    const h = HEADING.exec(l);
    if (h) {
      pending = h[2] === 'RESOLVED' && h[3] ? h[3].trim() : undefined;
      return;
    }
    if (pending !== undefined) {
      const w = WAVE_LINE.exec(l);
      if (w) {
        if (w[1] === waveId) found.add(pending);
        pending = undefined;
      }
    }
  };
  const lines = (b: Uint8Array) => {
    const n = b.length;
    const buf = Buffer.from(b.buffer, b.byteOffset, n);
    const lineAt = (start: number): number => {
      let e = buf.indexOf(0x0a, start);
      if (e < 0) e = n;
      line(buf.toString('utf8', start, e > start && buf[e - 1] === 0x0d ? e - 1 : e));
      return e + 1;
    };
    const settle = (p: number): number => {
      while (pending !== undefined && p < n) {
        if (startsWithAt(buf, p, HEADING_START) || startsWithAt(buf, p, WAVE_START)) {
          p = lineAt(p);
        } else {
          const e = buf.indexOf(0x0a, p);
          p = e < 0 ? n : e + 1;
        }
      }
      return p;
    };
    let p = settle(0);
    while (p < n) {
      const at = buf.indexOf(RESOLVED_NEEDLE, p);
      if (at < 0) break;
      p = settle(lineAt(buf.lastIndexOf(0x0a, at) + 1));
    }
  };
  return { line, lines, done: () => found };
}

/** A scan of RALPH-LOG.md for the RESOLVED entries of one wave (see {@link resolvedScanner}). */
export interface ResolvedScanner {
  /** One line, without its line break. */
  line(l: string): void;
  /**
   * UTF-8 bytes holding whole lines (ending at a `\n`; a last line without one is given to {@link line}), as
   * {@link line} on each line (one trailing `\r` dropped) in order, without decoding the lines that cannot matter:
   * a RESOLVED heading is found by a byte search for ` — RESOLVED`, and only while one is pending are the following
   * lines looked at (a heading ends it, a `- wave:` line settles it); any other line changes nothing. The log grows
   * by every pass, so this is most of a steady pass's log cost (bench/waves.bench.ts). A `\n` byte never sits inside
   * a multi-byte character, so each line decodes as it would from the whole text.
   */
  lines(bytes: Uint8Array): void;
  done(): Set<string>;
}

const WAVE_LINE = /^- wave: (\S+)/;
const RESOLVED_NEEDLE = Buffer.from(' — RESOLVED', 'utf8');
const HEADING_START = Buffer.from('### ', 'utf8');
const WAVE_START = Buffer.from('- wave: ', 'utf8');

function startsWithAt(buf: Buffer, p: number, prefix: Buffer): boolean {
  if (p + prefix.length > buf.length) return false;
  for (let i = 0; i < prefix.length; i++) if (buf[p + i] !== prefix[i]) return false;
  return true;
}

/** The set of subIds logged RESOLVED for `waveId` in a whole log text (pure; tests and small logs). */
export function loggedResolved(text: string, waveId: string): Set<string> {
  const s = resolvedScanner(waveId);
  const b = Buffer.from(text, 'utf8');
  const last = b.lastIndexOf(0x0a);
  if (last >= 0) s.lines(b.subarray(0, last + 1));
  if (last + 1 < b.length) s.line(b.toString('utf8', last + 1));
  return s.done();
}
