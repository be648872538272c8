import type { AttemptRecord } from '../model/ralphState';
/**
 * Persistence until verified (agmo ralph, seed-systems.md §5.4 and §5.6-1): attempt 1 is the first try, attempts
 * 2–4 are fixes, attempt 5 is one debugging iteration (root cause first, with every earlier context); then the item
 * is blocked. When the source's own limit is lower (quantum `maxAttempts`, flow-next `MAX_ATTEMPTS_PER_TASK`), its
 * last attempt is the debugging one. Every retry prompt carries **all** earlier failures (§5.4 "retry with ALL prior
 * failure records"), persisted across sessions (fixes §5.6-3: agmo kept them only in the conversation).
 */

/** One failed verification of an item; its schema is in model/ralphState.ts (`.ralph/attempts.json`). */
export type { AttemptRecord } from '../model/ralphState';

/** Default attempts before blocking: 1 try + 3 fixes + 1 debugging pass. */
export const DEFAULT_MAX_ATTEMPTS = 5;

export type AttemptKind = 'first' | 'fix' | 'debug';

/**
 * What the next attempt of an item is, given how many failed already and the source's limit (null = none).
 * Returns 'exhausted' when no attempt is left.
 */
export function nextAttempt(
  failed: number,
  sourceLimit: number | null = null,
): { number: number; kind: AttemptKind; max: number } | 'exhausted' {
  const max = Math.max(1, Math.min(DEFAULT_MAX_ATTEMPTS, sourceLimit ?? DEFAULT_MAX_ATTEMPTS));
  const number = failed + 1;
  if (number > max) return 'exhausted';
  if (number === 1) return { number, kind: 'first', max };
  return { number, kind: number === max ? 'debug' : 'fix', max };
}

/** The prompt section that lists every earlier failure and forbids repeating those approaches. */
export function formatAttemptHistory(records: readonly AttemptRecord[], kind: AttemptKind): string {
  if (!records.length) return '';
  const lines = ['## Earlier attempts at this task (all failed verification)', ''];
  for (const r of records) {
    lines.push(
      `### Previous attempt #${r.number}`,
      `- Approach: ${r.approach || '(unknown)'}`,
      `- Failure cause: ${r.reason}`,
      '- Forbidden: retrying the approach above.',
      '',
    );
  }
  if (kind === 'debug') {
    lines.push(
      '## This is the debugging attempt (the last one)',
      'Do not try another quick fix. Find the root cause first: reproduce the failure, isolate it, trace it, classify it',
      '(syntax, runtime, logic, config, dependency), then fix it, using every attempt above as evidence.',
      '',
    );
  } else {
    lines.push('Take a different approach from every attempt above.', '');
  }
  return lines.join('\n');
}

/** First line of `text` that reads as a sentence, trimmed to 200 characters (for `approach`). */
export function oneLine(text: string): string {
  const sentences = text
    .replace(/\s+/g, ' ')
    .trim()
    .split(/(?<=[.!?])\s+/)
    .filter((s) => s && !/^<\w+>/.test(s));
  return (sentences.at(-1) ?? '').slice(0, 200);
}
