/**
 * ISO-8601 timestamps as the seed systems write them, parsed without the traps of `Date.parse`.
 *
 * Accepted: `2026-01-11T20:16:42Z`, with a fraction of any length (`.123Z` from JavaScript's
 * `toISOString`, `.440246Z` from Python's `isoformat`), with an offset (`+02:00`, `+0200`, `-05:00`), with a
 * space instead of `T`, and without a zone (read as UTC, as flowctl and the bash runners mean it).
 * This is the fix for seed-systems.md §4.8-2: jq's `fromdateiso8601` rejects `.123Z`, which silently disabled
 * quantum-loop's stale detection.
 */
const ISO =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?)?\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?$/;

/** Milliseconds since the Unix epoch for an ISO-8601 string, or `undefined` when it is not one. */
export function parseIsoTime(text: string | null | undefined): number | undefined {
  if (typeof text !== 'string') return undefined;
  const m = ISO.exec(text.trim());
  if (!m) return undefined;
  const [, y, mo, d, h = '0', mi = '0', s = '0', frac = '', zone] = m;
  const ms = frac ? Math.floor(Number(`0.${frac}`) * 1000) : 0;
  let t = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s), ms);
  if (Number.isNaN(t)) return undefined;
  if (zone && zone !== 'Z' && zone !== 'z') {
    const sign = zone.startsWith('-') ? -1 : 1;
    const digits = zone.slice(1).replace(':', '');
    const offsetMin = Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2, 4) || '0');
    t -= sign * offsetMin * 60_000;
  }
  return t;
}

/** `new Date(ms).toISOString()`: the form quantum-loop's node runner writes (`…:00.123Z`). */
export function isoString(ms: number): string {
  return new Date(ms).toISOString();
}

/**
 * The form flowctl writes: Python `datetime.utcnow().isoformat() + "Z"` (microseconds, e.g.
 * `2026-01-11T20:16:42.440246Z`, seed-systems.md §2.4). JavaScript clocks give milliseconds, padded to six digits.
 */
export function flowIsoString(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}
