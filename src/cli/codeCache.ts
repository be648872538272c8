import { closeSync, fstatSync, openSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import Module, { createRequire } from 'node:module';
import * as path from 'node:path';
import type * as Vm from 'node:vm';

/** What {@link loadWithCodeCache} did with the cache: used it, found it rejected by V8, found none, or made none. */
export type CodeCacheUse = 'accepted' | 'rejected' | 'absent' | 'racy';

/**
 * Loads a CommonJS bundle of ralph's (`dist/cli-read.js`) as `require` would (each call anew: the caller keeps it), with a V8 code cache beside it: the
 * bytecode of the functions a call compiled, stored when one call exits and handed to V8 by the next, which then
 * neither parses nor compiles them again (docs/decisions/0020-code-cache.md).
 *
 * Where: `<bundle>.<node version>-<arch>.v8cache`, in the bundle's own folder: whoever can write that file can write
 * the bundle beside it, so it trusts nothing the bundle does not. (In the user's cache folder, which an agent can
 * write, forged bytecode would run in the next `ralph` outside the agent's containment.)
 *
 * Verified before use: the file starts with the bundle's size, mtime, ctime and inode as read from the open bundle,
 * and is made only when that ctime is older than `nowMs()` by {@link CODE_CACHE_RACY_MS} (git's racy-clean rule: a
 * bundle rewritten since, even to the same size, has a later ctime; no call sets a ctime back). V8 then rejects data
 * made by another V8 version, with other flags or for a source of another length. Rejected or stale data is ignored
 * (the bundle is compiled as usual) and replaced when the process exits. Written atomically (a temporary file, then
 * a rename); a folder that cannot be written (a read-only install) goes without. Never throws for the cache.
 */
export function loadWithCodeCache(
  file: string,
  nowMs: () => number = Date.now,
): { exports: unknown; cache: CodeCacheUse } {
  const fd = openSync(file, 'r');
  let source: string;
  let stamp: string | undefined;
  try {
    const st = fstatSync(fd);
    source = readFileSync(fd, 'utf8');
    if (nowMs() - st.ctimeMs >= CODE_CACHE_RACY_MS)
      stamp = `${CACHE_MAGIC} ${st.size} ${st.mtimeMs} ${st.ctimeMs} ${st.ino}\n`;
  } finally {
    closeSync(fd);
  }
  const cacheFile = `${file}.${process.version}-${process.arch}.v8cache`;
  const cached = stamp !== undefined ? readCache(cacheFile, stamp) : undefined;
  // Loaded here, not at the entry's start: a call answered from the answer cache never needs it.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { Script: VmScript } = require('node:vm') as typeof Vm;
  const script = new VmScript(Module.wrap(source), { filename: file, ...(cached ? { cachedData: cached } : {}) });
  const cache: CodeCacheUse =
    stamp === undefined ? 'racy' : !cached ? 'absent' : script.cachedDataRejected ? 'rejected' : 'accepted';
  if (stamp !== undefined && cache !== 'accepted') {
    if (!pending.length) process.once('exit', writeCodeCaches);
    const line = stamp;
    pending.push(() => writeCache(cacheFile, line, script));
  }
  const mod = new Module(file, module);
  mod.filename = file;
  const run = script.runInThisContext() as (...args: unknown[]) => void;
  run.call(mod.exports, mod.exports, createRequire(file), mod, file, path.dirname(file));
  mod.loaded = true;
  return { exports: mod.exports, cache };
}

/** How much older than now a bundle's ctime must be for a code cache to be made of it (ms). */
export const CODE_CACHE_RACY_MS = 2000;

/** The first bytes of a cache file; then the bundle's stamp, a line feed, and V8's data. */
const CACHE_MAGIC = 'ralph-v8-cache-1';

const pending: (() => void)[] = [];

/**
 * Writes the code caches of the bundles loaded without a usable one, with every function compiled so far (run at the
 * process's exit). Never throws.
 */
export function writeCodeCaches(): void {
  for (const write of pending.splice(0)) write();
}

/** The V8 data of `cacheFile` when it was made from the bundle `stamp` describes; else `undefined`. */
function readCache(cacheFile: string, stamp: string): Buffer | undefined {
  try {
    const data = readFileSync(cacheFile);
    if (data.length <= stamp.length || data.toString('latin1', 0, stamp.length) !== stamp) return undefined;
    return data.subarray(stamp.length);
  } catch {
    return undefined;
  }
}

/** Writes `script`'s code cache atomically; failures are ignored. */
function writeCache(cacheFile: string, stamp: string, script: Vm.Script): void {
  const tmp = `${cacheFile}.${process.pid}.tmp`;
  try {
    writeFileSync(tmp, Buffer.concat([Buffer.from(stamp, 'latin1'), script.createCachedData()]));
    renameSync(tmp, cacheFile);
  } catch {
    try {
      unlinkSync(tmp);
    } catch {
      /* never written */
    }
  }
}
