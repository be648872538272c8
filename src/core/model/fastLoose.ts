/**
 * A hand-written fast path for the hot loose-object schemas (flow-next task / epic / state / meta JSON, read by
 * the thousand on every `status`, `next` and `task reset`): checks a parsed JSON value against a flat description
 * of the schema and, when every field is plainly valid, builds the exact value zod's `looseObject` parse would
 * return (same keys, same key order: shape keys first in shape order, then the unknown keys in input order; defaults
 * for absent keys; arrays copied). When anything is not plainly valid it returns `undefined` and the caller runs
 * the zod schema, which produces the value or the positioned error message (file, line, column). So the answer is
 * zod's either way; only the cost differs (zod is not even loaded by the CLI unless a file needs it; src/cli/lazyZod.ts).
 * test/unit/model/fastLoose.test.ts compares the two on valid and invalid inputs, key order included.
 */

/**
 * The kind of one field. `str1`: a non-empty string; `int`: a safe integer; `int0` / `int1`: a safe integer ≥ 0 /
 * > 0; `pos`: a number > 0; `unknown`: any value (kept as is); `record`: a plain object of any values (copied);
 * `{ arrayOf }`: an array of that kind (copied); a {@link FastShape}: a nested loose object.
 */
export type FastKind = 'str' | 'str1' | 'num' | 'pos' | 'int' | 'int0' | 'int1' | 'bool' | 'unknown' | 'record' | 'strArray' | { arrayOf: FastKind } | FastShape;

/** One field: its kind, whether `null` is allowed, and what an absent key becomes (omitted, or a default). */
export interface FastField {
  kind: FastKind;
  nullable?: boolean;
  /** A fresh default value for an absent key; without it an absent key stays absent (optional). */
  default?: () => unknown;
  /** The key must be present (no default): absent → not plainly valid. */
  required?: boolean;
}

/** A loose object's fields, in the schema's shape order. */
export type FastShape = readonly (readonly [key: string, field: FastField])[];

const hasOwn = Object.prototype.hasOwnProperty;

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function fieldValue(kind: FastKind, v: unknown): { ok: true; value: unknown } | undefined {
  switch (kind) {
    case 'str': return typeof v === 'string' ? { ok: true, value: v } : undefined;
    case 'str1': return typeof v === 'string' && v.length > 0 ? { ok: true, value: v } : undefined;
    case 'num': return typeof v === 'number' && Number.isFinite(v) ? { ok: true, value: v } : undefined;
    case 'pos': return typeof v === 'number' && Number.isFinite(v) && v > 0 ? { ok: true, value: v } : undefined;
    case 'int': return typeof v === 'number' && Number.isSafeInteger(v) ? { ok: true, value: v } : undefined;
    case 'int0': return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? { ok: true, value: v } : undefined;
    case 'int1': return typeof v === 'number' && Number.isSafeInteger(v) && v > 0 ? { ok: true, value: v } : undefined;
    case 'bool': return typeof v === 'boolean' ? { ok: true, value: v } : undefined;
    case 'unknown': return { ok: true, value: v };
    case 'record': {
      if (!isPlainObject(v) || hasOwn.call(v, '__proto__')) return undefined;
      const out: Record<string, unknown> = {};
      for (const k of Object.keys(v)) out[k] = v[k];
      return { ok: true, value: out };
    }
    case 'strArray': {
      if (!Array.isArray(v)) return undefined;
      for (const x of v) if (typeof x !== 'string') return undefined;
      return { ok: true, value: v.slice() };
    }
    default: {
      if (!Array.isArray(kind)) {
        if (!Array.isArray(v)) return undefined;
        const of = (kind as { arrayOf: FastKind }).arrayOf;
        const out = new Array<unknown>(v.length);
        for (let i = 0; i < v.length; i++) {
          const r = fieldValue(of, v[i]);
          if (!r) return undefined;
          out[i] = r.value;
        }
        return { ok: true, value: out };
      }
      const o = fastLoose(kind as FastShape, v);
      return o === undefined ? undefined : { ok: true, value: o };
    }
  }
}

/**
 * The value zod's loose-object parse of `v` with `shape` returns, or `undefined` when `v` is not plainly valid
 * (then ask zod). Never throws. Pure.
 */
export function fastLoose(shape: FastShape, v: unknown): Record<string, unknown> | undefined {
  if (!isPlainObject(v) || hasOwn.call(v, '__proto__')) return undefined;
  const out: Record<string, unknown> = {};
  for (const [key, f] of shape) {
    if (!hasOwn.call(v, key)) {
      if (f.required) return undefined;
      if (f.default) out[key] = f.default();
      continue;
    }
    const x = v[key];
    if (x === null && f.nullable) { out[key] = null; continue; }
    const r = fieldValue(f.kind, x);
    if (!r) return undefined;
    out[key] = r.value;
  }
  for (const key of Object.keys(v)) if (!shapeHas(shape, key)) out[key] = v[key];
  return out;
}

function shapeHas(shape: FastShape, key: string): boolean {
  for (const [k] of shape) if (k === key) return true;
  return false;
}
