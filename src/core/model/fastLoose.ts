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
export type FastKind =
  | 'str'
  | 'str1'
  | 'num'
  | 'pos'
  | 'int'
  | 'int0'
  | 'int1'
  | 'bool'
  | 'unknown'
  | 'record'
  | 'strArray'
  | { arrayOf: FastKind }
  | FastShape;

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

/** What {@link fieldValue} returns for a value that is not plainly valid (no result object per field: less garbage). */
const BAD: unique symbol = Symbol('not plainly valid');

function fieldValue(kind: FastKind, v: unknown): unknown {
  switch (kind) {
    case 'str':
      return typeof v === 'string' ? v : BAD;
    case 'str1':
      return typeof v === 'string' && v.length > 0 ? v : BAD;
    case 'num':
      return typeof v === 'number' && Number.isFinite(v) ? v : BAD;
    case 'pos':
      return typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : BAD;
    case 'int':
      return typeof v === 'number' && Number.isSafeInteger(v) ? v : BAD;
    case 'int0':
      return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : BAD;
    case 'int1':
      return typeof v === 'number' && Number.isSafeInteger(v) && v > 0 ? v : BAD;
    case 'bool':
      return typeof v === 'boolean' ? v : BAD;
    case 'unknown':
      return v;
    case 'record': {
      if (!isPlainObject(v) || hasOwn.call(v, '__proto__')) return BAD;
      const out: Record<string, unknown> = {};
      for (const k of Object.keys(v)) out[k] = v[k];
      return out;
    }
    case 'strArray': {
      if (!Array.isArray(v)) return BAD;
      for (const x of v) if (typeof x !== 'string') return BAD;
      return v.slice();
    }
    default: {
      if (!Array.isArray(kind)) {
        if (!Array.isArray(v)) return BAD;
        const of = (kind as { arrayOf: FastKind }).arrayOf;
        const out = new Array<unknown>(v.length);
        for (let i = 0; i < v.length; i++) {
          const r = fieldValue(of, v[i]);
          if (r === BAD) return BAD;
          out[i] = r;
        }
        return out;
      }
      const o = fastLoose(kind as FastShape, v);
      return o === undefined ? BAD : o;
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
  let known = 0;
  for (const [key, f] of shape) {
    if (!hasOwn.call(v, key)) {
      if (f.required) return undefined;
      if (f.default) out[key] = f.default();
      continue;
    }
    known++;
    const x = v[key];
    if (x === null && f.nullable) {
      out[key] = null;
      continue;
    }
    const r = fieldValue(f.kind, x);
    if (r === BAD) return undefined;
    out[key] = r;
  }
  // Unknown keys after the shape's, in input order; none to look for when every key of `v` was a shape key (counted
  // without Object.keys's array: thousands of files per call).
  let count = 0;
  for (const _ in v) count++;
  if (count > known) {
    const names = shapeNames(shape);
    for (const key of Object.keys(v)) if (!names.has(key)) out[key] = v[key];
  }
  return out;
}

const namesOf = new WeakMap<FastShape, Set<string>>();

/** The keys of a shape, as a set (built once per shape). */
function shapeNames(shape: FastShape): Set<string> {
  let names = namesOf.get(shape);
  if (!names) namesOf.set(shape, (names = new Set(shape.map(([k]) => k))));
  return names;
}
