import { classifyText } from '../stream/classify';
import { type AgentEvent, ev } from '../stream/events';

/**
 * When a usage limit resets, read from what an agent CLI passes on of its provider's HTTP 429: the error message
 * ("… will reset at 2026-12-06T10:00:00.000Z", "Please try again in 20m0s") or the response headers (`retry-after`,
 * OpenAI's `x-ratelimit-reset-requests` / `-tokens` durations). The failover (failover.ts) compares it with
 * `failoverAfterMinutes`; a limit with no reset found stays "unknown". Pure.
 */

const UNITS = 'ms|hours|hour|h|minutes|minute|mins|min|m|seconds|second|secs|sec|s';

// Units longest first ("ms" before "m", "minutes" before "m"): `1h0m0s` has no word boundary between its parts.
const WHOLE_DURATION = new RegExp(`^(?:\\s*\\d+(?:\\.\\d+)?\\s*(?:${UNITS}))+$`);
const DURATION_PARTS = new RegExp(`(\\d+(?:\\.\\d+)?)\\s*(${UNITS})`, 'g');

const UNIT_MS: Readonly<Record<string, number>> = {
  h: 3_600_000,
  hour: 3_600_000,
  hours: 3_600_000,
  m: 60_000,
  min: 60_000,
  mins: 60_000,
  minute: 60_000,
  minutes: 60_000,
  s: 1000,
  sec: 1000,
  secs: 1000,
  second: 1000,
  seconds: 1000,
  ms: 1,
};

/** Milliseconds of an OpenAI reset duration (`1h0m0s`, `20m0s`, `6m0s`, `3600s`, `1.5s`, `250ms`), or null. */
export function durationMs(text: string): number | null {
  const t = text.trim().toLowerCase();
  if (!t) return null;
  const parts = WHOLE_DURATION.test(t) ? [...t.matchAll(DURATION_PARTS)] : [];
  if (!parts.length) return null;
  return Math.round(parts.reduce((sum, p) => sum + Number(p[1]) * UNIT_MS[p[2]!]!, 0));
}

const ISO_RESET =
  /\breset(?:s|ting)?\s+(?:at|on)\s+(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)/i;
const IN_RESET = new RegExp(
  `\\b(?:try again|retry|resets?|available again)\\s+in\\s+((?:\\d+(?:\\.\\d+)?\\s*(?:${UNITS})\\s*)+)`,
  'i',
);

/** Codex's "try again at 10:16 AM" / "try again at Dec 7th, 2026 10:16 AM": a wall-clock time in the CLI's zone. */
const CLOCK_RESET =
  /\btry again at (?:([A-Z][a-z]{2}) (\d{1,2})(?:st|nd|rd|th)?,? (\d{4}),? )?(\d{1,2}):(\d{2})\s*([AP]M)\b/;
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/**
 * The reset a limit message names, epoch ms: an ISO time after "reset(s) at/on"; a wall-clock time after "try again
 * at" (Codex prints the reset in its local time zone, which ralph shares: the same day, else the next one, when no
 * date is given); or a duration after "try again in" / "resets in" counted from `now` (epoch ms: when the CLI
 * reported it). Null when it names none.
 */
export function resetFromText(text: string, now: number): number | null {
  const iso = ISO_RESET.exec(text);
  if (iso) {
    const at = Date.parse(iso[1]!.replace(' ', 'T'));
    if (Number.isFinite(at)) return at;
  }
  const clock = CLOCK_RESET.exec(text);
  if (clock) {
    const [, mon, day, year, hh, mm, ampm] = clock;
    const hours = (Number(hh) % 12) + (ampm === 'PM' ? 12 : 0);
    const base = new Date(now);
    const month = mon ? MONTHS.indexOf(mon) : -1;
    const at = mon
      ? new Date(Number(year), month < 0 ? base.getMonth() : month, Number(day), hours, Number(mm))
      : new Date(base.getFullYear(), base.getMonth(), base.getDate(), hours, Number(mm));
    // A time of day already past (by more than the minute the message rounds to) is tomorrow's.
    if (!mon && at.getTime() < now - 60_000) at.setDate(at.getDate() + 1);
    if (Number.isFinite(at.getTime())) return at.getTime();
  }
  const inText = IN_RESET.exec(text);
  if (inText) {
    const ms = durationMs(inText[1]!);
    if (ms !== null) return now + ms;
  }
  return null;
}

/**
 * The reset the response headers of a 429 name, epoch ms: `retry-after` (seconds or an HTTP date), else the later of
 * `x-ratelimit-reset-requests` and `x-ratelimit-reset-tokens` (durations) from `now`. Header names in any case.
 */
export function resetFromHeaders(headers: Readonly<Record<string, unknown>>, now: number): number | null {
  const h = new Map(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), typeof v === 'string' ? v : '']));
  const retryAfter = h.get('retry-after');
  if (retryAfter) {
    if (/^\d+(?:\.\d+)?$/.test(retryAfter.trim())) return now + Math.round(Number(retryAfter) * 1000);
    const at = Date.parse(retryAfter);
    if (Number.isFinite(at)) return at;
  }
  const waits = ['x-ratelimit-reset-requests', 'x-ratelimit-reset-tokens']
    .map((k) => durationMs(h.get(k) ?? ''))
    .filter((ms): ms is number => ms !== null);
  return waits.length ? now + Math.max(...waits) : null;
}

/**
 * The `rateLimit` event of a usage limit an agent CLI gave up on, when its reset is known (none otherwise: the
 * outcome is then a limit with an unknown reset, from the error's status or text). `limitType` as Claude names its
 * windows; the CLIs without such an event report `usage_limit`.
 */
export function limitRejected(resetsAt: number | null, limitType = 'usage_limit'): AgentEvent[] {
  if (resetsAt === null) return [];
  return [ev({ type: 'rateLimit', status: 'rejected', resetsAt, limitType, utilization: null, overageStatus: null })];
}

/**
 * The reset of a limit error an agent CLI reported (`text`: its message; `headers`: the provider's response headers
 * when the CLI passes them on), when `status` is 429 or the text says it is a usage limit; else null. `now`: when the
 * CLI reported it (its line's timestamp), epoch ms.
 */
export function limitResetOf(o: {
  text: string;
  status: number | null;
  now: number;
  headers?: Readonly<Record<string, unknown>>;
}): number | null {
  if (o.status !== 429 && classifyText(o.text)?.kind !== 'rateLimited') return null;
  return resetFromText(o.text, o.now) ?? (o.headers ? resetFromHeaders(o.headers, o.now) : null);
}
