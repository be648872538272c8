import { parseIsoTime } from './time';

/** Default stale threshold in minutes (§4.7, the PRD's `staleThresholdMinutes` default). */
export const QUANTUM_DEFAULT_STALE_MINUTES = 20;

/**
 * The §4.7 stale rule on one story (pure, no zod: the plan tree reads it at activation): `in_progress` with a
 * readable `startedAt` more than `thresholdMinutes` before `nowMs`. A story without a readable `startedAt` is not stale
 * (core stale detection only warns about it). Whether a live run holds the story is the caller's to check.
 * Used by `planQuantumStale` (`ralph stale`) and the plan tree's `stale` rows.
 */
export function pastStaleThreshold(
  story: { status: string; startedAt?: string | null },
  nowMs: number,
  thresholdMinutes: number = QUANTUM_DEFAULT_STALE_MINUTES,
): boolean {
  if (story.status !== 'in_progress') return false;
  const started = parseIsoTime(story.startedAt ?? undefined);
  return started !== undefined && nowMs - started > thresholdMinutes * 60_000;
}
