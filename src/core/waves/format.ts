import type { WaveJson } from '../model/waves';

/** `W12-A0 [in_progress]: 1 orphan (1 resumable), 2 active, 3 done` (pure): a wave in one line. */
export function formatWaveLine(w: Pick<WaveJson, 'wave_id' | 'status' | 'counts'>): string {
  const c = w.counts;
  const parts: string[] = [];
  if (c.orphans)
    parts.push(
      `${c.orphans} orphan${c.orphans === 1 ? '' : 's'} (${[c.RESUMED ? `${c.RESUMED} resumable` : '', c.STALE ? `${c.STALE} stale` : ''].filter(Boolean).join(', ')})`,
    );
  if (c.ACTIVE) parts.push(`${c.ACTIVE} active`);
  if (c.PENDING) parts.push(`${c.PENDING} without a checkpoint`);
  if (c.RESOLVED) parts.push(`${c.RESOLVED} done`);
  return `${w.wave_id}${w.status ? ` [${w.status}]` : ''}: ${parts.join(', ') || 'no subagents'}`;
}

/** `1m13s`, `42s`, `350ms`: an age for people. */
export function formatAge(ms: number | null): string {
  if (ms === null) return '-';
  if (ms < 1000) return `${Math.max(0, Math.round(ms))}ms`;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}
