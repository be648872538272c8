import * as fs from 'node:fs';
import * as path from 'node:path';

/** The synchronous readers of `fs` whose first argument is a path. */
const SYNC_READERS = [
  'readFileSync',
  'openSync',
  'statSync',
  'lstatSync',
  'existsSync',
  'readdirSync',
  'accessSync',
  'realpathSync',
  'opendirSync',
  'readlinkSync',
] as const;

/**
 * Runs `f` while recording every path the synchronous `fs` readers are asked about (absolute, present or not), and
 * returns them with `f`'s result. A test oracle only: it wraps the `fs` module object for the call's duration (the
 * bundled code reads it at each call), so a test can check the inputs a command names against what its readers read.
 */
export function recordFsReads<T>(f: () => T): { paths: Set<string>; result: T } {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const mod = require('node:fs') as Record<string, unknown>;
  const paths = new Set<string>();
  const saved: [string, unknown][] = [];
  const note = (p: unknown) => {
    if (typeof p === 'string' || Buffer.isBuffer(p)) paths.add(path.resolve(p.toString()));
  };
  for (const name of SYNC_READERS) {
    const orig = mod[name] as (...a: unknown[]) => unknown;
    const wrapped = Object.assign(function (this: unknown, ...a: unknown[]) {
      note(a[0]);
      return orig.apply(this, a);
    }, orig);
    saved.push([name, orig]);
    mod[name] = wrapped;
  }
  const rp = fs.realpathSync as unknown as { native: (...a: unknown[]) => unknown };
  const native = rp.native;
  (mod.realpathSync as { native: unknown }).native = function (this: unknown, ...a: unknown[]) {
    note(a[0]);
    return native.apply(this, a);
  };
  try {
    return { paths, result: f() };
  } finally {
    for (const [name, orig] of saved) mod[name] = orig;
  }
}
