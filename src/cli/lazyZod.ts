import * as path from 'node:path';
import type { z as Z } from 'zod';
import { writeErr } from './terminalOut';

/**
 * `zod`, as the CLI bundles see it (dist/cli-read.js, dist/cli-main.js, dist/cli-waves.js; esbuild.mjs swaps every
 * `import { z } from 'zod'` of those bundles for this module): schemas are *described* at module load and *built*
 * only when first used, and zod itself (~0.7 MB of code, dist/zod.js) is loaded only then. A command that never
 * validates a file with zod (plain files take model/fastLoose.ts's fast paths) never loads it (the schemas' top-level
 * construction and the bundle's compile were a third of a status call).
 *
 * How: `z.<builder>(…)` (string, number, object, looseObject, array, enum, …) returns a *deferred schema*, a proxy
 * that records the builder and its arguments; a chained call of a known chain method (`optional`, `default`, `min`,
 * `partial`, …) on a deferred schema records one more step. Any other use of a deferred schema (`safeParse`,
 * `shape`, `_zod`, passing it to real zod code) builds it: zod is loaded, the arguments are built (deferred schemas
 * inside plain objects and arrays, recursively), the steps are replayed, and from then on the proxy forwards every
 * operation to the real schema, one instance per deferred schema (so a schema shared by two parents stays one).
 * Any other member of `z` (`z.ZodError`, `z.coerce`, …) loads zod and is the real one. The result is the same zod
 * schema as an eager build: only the moment of construction moves.
 *
 * `RALPH_TRACE_ZOD=1` prints the stack of the first load of zod to stderr (to find a module that builds a schema at
 * load time, which defeats the point).
 */

type Step = { name: string; args: unknown[] };
interface Deferred {
  /** The builder of `z` and its arguments, then the chained steps. */
  steps: Step[];
  built?: unknown;
}

const DEFERRED = Symbol('ralph.lazyZod.deferred');

/** Members of `z` that build a schema from their arguments (deferred). */
const BUILDERS = new Set([
  'string',
  'number',
  'boolean',
  'bigint',
  'unknown',
  'any',
  'never',
  'null',
  'undefined',
  'object',
  'looseObject',
  'strictObject',
  'array',
  'enum',
  'literal',
  'union',
  'discriminatedUnion',
  'intersection',
  'record',
  'tuple',
  'optional',
  'nullable',
  'lazy',
  'int',
]);

/** Methods of a schema that return a new schema from it (deferred when called on a deferred schema). */
const CHAIN = new Set([
  'optional',
  'nullable',
  'nullish',
  'default',
  'prefault',
  'catch',
  'min',
  'max',
  'length',
  'int',
  'positive',
  'nonnegative',
  'negative',
  'nonpositive',
  'gt',
  'gte',
  'lt',
  'lte',
  'finite',
  'nonempty',
  'regex',
  'startsWith',
  'endsWith',
  'includes',
  'trim',
  'toLowerCase',
  'toUpperCase',
  'partial',
  'required',
  'pick',
  'omit',
  'extend',
  'loose',
  'strict',
  'passthrough',
  'catchall',
  'array',
  'or',
  'and',
  'describe',
  'meta',
  'refine',
  'superRefine',
  'transform',
  'pipe',
  'readonly',
  'brand',
  'check',
]);

let real: typeof Z | undefined;

/** The real `z` (dist/zod.js beside the running bundle), loaded once. */
function realZ(): typeof Z {
  if (real) return real;
  if (process.env.RALPH_TRACE_ZOD === '1') writeErr(`ralph: loading zod\n${new Error('zod loaded here').stack}\n`);
  // A runtime path, so esbuild leaves zod in its own file.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  real = (require(path.join(__dirname, 'zod.js')) as { z: typeof Z }).z;
  return real;
}

/** Builds `v` when it is a deferred schema; plain objects and arrays are rebuilt with their members built. */
function build(v: unknown): unknown {
  if (v === null || (typeof v !== 'object' && typeof v !== 'function')) return v;
  const d = (v as { [DEFERRED]?: Deferred })[DEFERRED];
  if (d) return materialize(d);
  if (Array.isArray(v)) return v.map(build);
  if (typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v)) out[k] = build((v as Record<string, unknown>)[k]);
    return out;
  }
  return v;
}

function materialize(d: Deferred): unknown {
  if (d.built !== undefined) return d.built;
  const [first, ...rest] = d.steps;
  const z = realZ() as unknown as Record<string, (...a: unknown[]) => unknown>;
  let s = z[first!.name]!(...first!.args.map(build));
  for (const step of rest) s = (s as Record<string, (...a: unknown[]) => unknown>)[step.name]!(...step.args.map(build));
  d.built = s;
  return s;
}

function deferred(steps: Step[]): unknown {
  const d: Deferred = { steps };
  const target = {};
  const actual = () => materialize(d) as object;
  return new Proxy(target, {
    get(_t, prop) {
      if (prop === DEFERRED) return d;
      if (d.built === undefined && typeof prop === 'string' && CHAIN.has(prop))
        return (...args: unknown[]) => deferred([...steps, { name: prop, args }]);
      const o = actual();
      return Reflect.get(o, prop, o);
    },
    has(_t, prop) {
      return prop === DEFERRED || Reflect.has(actual(), prop);
    },
    set(_t, prop, value) {
      return Reflect.set(actual(), prop, value);
    },
    ownKeys() {
      return Reflect.ownKeys(actual());
    },
    getOwnPropertyDescriptor(_t, prop) {
      const desc = Reflect.getOwnPropertyDescriptor(actual(), prop);
      // A proxy may not report a non-configurable property its target lacks.
      return desc ? { ...desc, configurable: true } : undefined;
    },
    getPrototypeOf() {
      return Reflect.getPrototypeOf(actual());
    },
    defineProperty(_t, prop, desc) {
      return Reflect.defineProperty(actual(), prop, desc);
    },
    deleteProperty(_t, prop) {
      return Reflect.deleteProperty(actual(), prop);
    },
  });
}

/** The `z` of the CLI bundles: deferred builders, and the real member for anything else. */
export const z = new Proxy({} as typeof Z, {
  get(_t, prop) {
    if (typeof prop === 'string' && BUILDERS.has(prop)) return (...args: unknown[]) => deferred([{ name: prop, args }]);
    return (realZ() as unknown as Record<string | symbol, unknown>)[prop];
  },
  has(_t, prop) {
    return Reflect.has(realZ(), prop);
  },
});
