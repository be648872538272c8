import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { readLoggedResolved } from '../../../src/core/waves/check';
import { loggedResolved, resolvedScanner } from '../../../src/core/waves/ralphLog';
import { makeTempFolder } from '../../support/tempFolder';

/**
 * The RESOLVED-once rule reads RALPH-LOG.md back (issue 18). The scan skips lines by a byte search (ralphLog.ts
 * `lines`, for speed: the log grows by every pass); these tests hold it equal to feeding every line to `line`, the
 * rule as first written (split at `\n`, one trailing `\r` dropped, the last line as it is).
 */
function reference(text: string, waveId: string): string[] {
  const s = resolvedScanner(waveId);
  const parts = text.split('\n');
  const last = parts.pop()!;
  for (const l of parts) s.line(l.replace(/\r$/, ''));
  if (last) s.line(last);
  return [...s.done()].sort();
}

/** Lines that matter and lines that look like they might. */
const PIECES = [
  '### 2026-05-18T14:00:00.000Z — RESOLVED W1-S1',
  '### 2026-05-18T14:00:00.000Z — RESOLVED W1-S2\r',
  '### t — RESOLVED  W1-S3  ',
  '### t — RESOLVED',
  '### t — RESOLVED ',
  '### t — RESUMED W1-S4',
  '### t — PASS (wave W1: 1 resumed — RESOLVED x)',
  '### a b — RESOLVED W1-S5',
  '#### t — RESOLVED W1-S6',
  ' ### t — RESOLVED W1-S7',
  '### t — RESOLVEDX W1-S8',
  '### t — RESOLVED W1-S9\u2028x',
  '- wave: W1   checkpoint_age_ms: 1',
  '- wave: W1\r',
  '- wave: W2   checkpoint_age_ms: 1',
  '- wave:  W1',
  '- wave: ',
  '-  wave: W1',
  '- wave: W1-extra',
  '- DONE from checkpoint-status; no action',
  '',
  '\r',
  'text — RESOLVED W1-S10',
  '```gate-result',
  '{"status":"PASS"}',
  '```',
  'é — ü',
  '### t — RESOLVED é',
];

/** A small deterministic generator (no Math.random: a failure must be reproducible). */
function lcg(seed: number): () => number {
  let x = seed >>> 0;
  return () => (x = (Math.imul(x, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

function randomLog(rand: () => number, lines: number): string {
  const out: string[] = [];
  for (let i = 0; i < lines; i++) {
    const p = PIECES[Math.floor(rand() * PIECES.length)]!;
    // A RESOLVED heading is most often followed by its wave line, as Ralph writes it.
    out.push(p);
    if (p.includes('RESOLVED W1-') && rand() < 0.6)
      out.push(rand() < 0.8 ? '- wave: W1   checkpoint_age_ms: 1' : '- wave: W2');
  }
  const text = out.join(rand() < 0.3 ? '\r\n' : '\n');
  return rand() < 0.5 ? text + '\n' : text;
}

describe('RALPH-LOG.md RESOLVED scan (byte search) equals the line-by-line rule', () => {
  it('on 2,000 generated logs, for wave W1 and W2', () => {
    const rand = lcg(18);
    for (let k = 0; k < 2000; k++) {
      const text = randomLog(rand, 1 + Math.floor(rand() * 12));
      for (const w of ['W1', 'W2'])
        assert.deepEqual([...loggedResolved(text, w)].sort(), reference(text, w), JSON.stringify(text));
    }
  });

  it('on the edge cases: empty, no newline, a trailing \\r on the last line, a pending heading at the end', () => {
    for (const text of [
      '',
      '\n',
      '### t — RESOLVED A',
      '### t — RESOLVED A\n',
      '### t — RESOLVED A\n- wave: W1',
      '### t — RESOLVED A\n- wave: W1\r',
      '### t — RESOLVED A\r',
      '### t — RESOLVED A\n### t — RESOLVED B\n- wave: W1\n',
      '### t — RESOLVED A\nnoise\n\n- wave: W1\n',
    ]) {
      assert.deepEqual([...loggedResolved(text, 'W1')].sort(), reference(text, 'W1'), JSON.stringify(text));
    }
  });

  it('reading the file in chunks gives the same as the whole text (logs of 0.1 to 2 MB, lines across chunk ends)', () => {
    const tmp = makeTempFolder('ralph-logscan-');
    const dir = tmp.dir;
    try {
      const rand = lcg(1018);
      for (const lines of [3000, 20_000, 60_000]) {
        const text = randomLog(rand, lines);
        const file = path.join(dir, `log-${lines}.md`);
        fs.writeFileSync(file, text);
        assert.deepEqual([...readLoggedResolved(file, 'W1')].sort(), reference(text, 'W1'));
      }
      assert.deepEqual([...readLoggedResolved(path.join(dir, 'absent.md'), 'W1')], []);
    } finally {
      tmp.dispose();
    }
  });
});
