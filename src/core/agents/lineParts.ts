import { z } from 'zod';
import { type AgentEvent, ev, rawTypeOf } from '../stream/events';

/**
 * The small readers every stream mapper uses on a decoded JSON line: lenient zod fields (a wrong type reads as null,
 * never a failed line), plain-object and text views of a value, and the `unknown` event of a line a mapper cannot map.
 */

/** A number field: absent, null or not a number → null. */
export const optNum = z.number().nullish().catch(null);
/** A string field: absent, null or not a string → null. */
export const optStr = z.string().nullish().catch(null);

/*
 * The plain readers below do what `optNum` / `optStr` do, without zod: a mapper calls them on every line, and a zod
 * object of lenient fields (each a `.nullish().catch(null)` chain) cost about a quarter of a stream's decoding in a
 * fresh process (bench/agents.bench.ts), where most of an iteration's lines are read before V8 has optimised zod's
 * generic parse. Rare lines (retries, compaction, rate limits) keep their zod schemas.
 */

/** A number field: a finite number as it is; absent, null or any other value → null (as {@link optNum}). */
export const numOrNull = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
/** A string field: a string as it is; absent, null or any other value → null (as {@link optStr}). */
export const strOrNull = (v: unknown): string | null => (typeof v === 'string' ? v : null);
/** A boolean field: a boolean as it is; anything else → null. */
export const boolOrNull = (v: unknown): boolean | null => (typeof v === 'boolean' ? v : null);
/** A plain object field (not an array, not null), or null. */
export const recordOrNull = (v: unknown): Record<string, unknown> | null =>
  v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
/** An array field, or null. */
export const arrayOrNull = (v: unknown): unknown[] | null => (Array.isArray(v) ? v : null);

/**
 * A content field of Claude's shape: a string, or an array of blocks that are each an object with a string `type`;
 * else null (the line does not have that shape).
 */
export function contentOrNull(v: unknown): string | Record<string, unknown>[] | null {
  if (typeof v === 'string') return v;
  if (!Array.isArray(v)) return null;
  for (const b of v) if (recordOrNull(b) === null || typeof (b as { type?: unknown }).type !== 'string') return null;
  return v as Record<string, unknown>[];
}

/** The value as a plain object (`{}` for anything else: arrays, null, scalars). */
export const asRecord = (v: unknown): Record<string, unknown> =>
  v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};

/** A string as it is, anything else as '' . */
export const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** A string as it is, null / undefined as '', anything else as its JSON. */
export const textOf = (v: unknown): string => (typeof v === 'string' ? v : v == null ? '' : JSON.stringify(v));

/** The event of a line the mapper does not map (with why, when a schema refused it). */
export const unknownEvent = (line: Record<string, unknown>, issue?: string): AgentEvent =>
  ev({ type: 'unknown', rawType: rawTypeOf(line), raw: line, ...(issue ? { issue } : {}) });

/**
 * The `init` event of a CLI whose stream names only its session (Codex's `thread.started`, opencode's first
 * `sessionID`, Copilot's `session.start`): no cwd, tools, permission mode or version to report; `model` when it says one.
 */
export const sessionInit = (sessionId: string | null, model: string | null = null): AgentEvent =>
  ev({ type: 'init', sessionId, model, cwd: null, tools: [], permissionMode: null, agentVersion: null });

/** The first issue of a schema that refused a line: `path: message` (`(line)` for the line itself). */
export function issueOf(err: z.ZodError): string {
  const i = err.issues[0];
  return i ? `${i.path.join('.') || '(line)'}: ${i.message}` : 'invalid';
}
