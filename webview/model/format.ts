import type { LogKind } from '../../src/protocol/dashboard';

/** 142 → "142", 14_200 → "14.2k", 142_000 → "142k", 1_500_000 → "1.5M" (tokens). */
export function formatTokens(n: number): string {
  if (n < 1000) return String(Math.round(n));
  if (n < 10_000) return `${(n / 1000).toFixed(1).replace(/\.0$/, '')}k`;
  if (n < 1_000_000) return `${Math.round(n / 1000)}k`;
  return `${(n / 1_000_000).toFixed(1).replace(/\.0$/, '')}M`;
}

/** USD with two decimals, four under a cent (PrimeIntellect-ai/prime-agent#894): "$1.23", "$0.0042". */
export function formatUsd(usd: number): string {
  if (usd > 0 && usd < 0.01) return `$${usd.toFixed(4)}`;
  return `$${usd.toFixed(2)}`;
}

/** Milliseconds as "850 ms", "12.3 s", "4m 05s", "2h 03m". */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.floor(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

/** Local time of day "HH:MM:SS". */
export function formatClock(epochMs: number): string {
  const d = new Date(epochMs);
  return [d.getHours(), d.getMinutes(), d.getSeconds()].map((n) => String(n).padStart(2, '0')).join(':');
}

/**
 * The codicon before each line's kind: the log's own text is plain words (no emoji, which a machine without an emoji
 * font draws as empty boxes), so the page marks a line's kind with VS Code's icon font instead.
 */
export const LOG_KIND_ICONS: Record<LogKind, string> = {
  loop: 'circle-small',
  tokens: 'pulse',
  gate: 'beaker',
  guard: 'shield',
  question: 'question',
  error: 'error',
};
