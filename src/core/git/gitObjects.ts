import { createHash } from 'node:crypto';
import { open } from 'node:fs/promises';
import * as path from 'node:path';
import { inflateSync } from 'node:zlib';
import { runGit } from './git';
import { commonDirFromFiles, headFromFiles } from './gitHead';

/*
 * A commit's tree read from the repository's loose object files instead of a `git rev-parse <commit>^{tree}` process
 * (the parallel run's merge slot needs two trees per merge, inside the one chain every lane's merge waits on). Only a
 * loose commit object (`<common dir>/objects/<2 hex>/<rest>`, gitrepository-layout(5); zlib-deflated
 * `commit <size>\0tree <oid>\n…`, gitformat-commit(5)) whose content hashes to its name is read; a packed object, an
 * alternate object store, a file over {@link MAX_LOOSE_BYTES} or anything unexpected answers `undefined`, and the
 * caller asks git: the answer is always git's. Commits the run just made (a merge, a lane's agent) are usually
 * loose: ralph's own merges turn automatic gc off.
 */

/** Object ids git writes: SHA-1 (40 hex) or SHA-256 (64 hex), lower case. */
const OID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
/** The largest loose object file read (a commit is a few hundred bytes; one with a huge message is git's to read). */
const MAX_LOOSE_BYTES = 64 * 1024;
/** The largest inflated object accepted. */
const MAX_RAW_BYTES = 1024 * 1024;

/**
 * The tree named by loose object file content `compressed`, when it is commit `oid` (its header says `commit` and its
 * length, its content hashes to `oid` with the hash of `oid`'s length) and starts with a tree line; else null. Pure.
 */
export function treeOfLooseCommit(oid: string, compressed: Uint8Array): string | null {
  if (!OID.test(oid)) return null;
  let raw: Buffer;
  try {
    raw = inflateSync(compressed, { maxOutputLength: MAX_RAW_BYTES });
  } catch {
    return null;
  }
  if (
    createHash(oid.length === 64 ? 'sha256' : 'sha1')
      .update(raw)
      .digest('hex') !== oid
  )
    return null;
  const nul = raw.indexOf(0);
  if (nul < 0) return null;
  const header = /^commit (\d+)$/.exec(raw.subarray(0, nul).toString('latin1'));
  if (!header || Number(header[1]) !== raw.length - nul - 1) return null;
  const tree = /^tree ([0-9a-f]+)\n/.exec(raw.subarray(nul + 1, nul + 1 + 6 + 64 + 1).toString('latin1'));
  return tree && tree[1]!.length === oid.length ? tree[1]! : null;
}

/** The content of a file of at most `max` bytes, or null (missing, larger, unreadable). */
async function readBounded(file: string, max: number): Promise<Buffer | null> {
  try {
    const fh = await open(file, 'r');
    try {
      const { size } = await fh.stat();
      if (size > max) return null;
      const buf = Buffer.alloc(size);
      const { bytesRead } = await fh.read(buf, 0, size, 0);
      return bytesRead === size ? buf : null;
    } finally {
      await fh.close();
    }
  } catch {
    return null;
  }
}

/**
 * The tree of commit `oid` in `folder`'s repository (`folder`: the top of a work tree) from its loose object file, or
 * undefined when the files do not tell plainly (then ask git). Never throws.
 */
export async function commitTreeFromFiles(
  folder: string,
  oid: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string | undefined> {
  if (!OID.test(oid)) return undefined;
  const common = await commonDirFromFiles(folder, env);
  if (!common) return undefined;
  // Joined as text (gitHead.ts: a `..` in the common dir's path is the kernel's to resolve, as git does).
  const file = [common.endsWith(path.sep) ? common.slice(0, -1) : common, 'objects', oid.slice(0, 2), oid.slice(2)];
  const compressed = await readBounded(file.join(path.sep), MAX_LOOSE_BYTES);
  return (compressed && treeOfLooseCommit(oid, compressed)) ?? undefined;
}

/**
 * The trees of `folder`'s HEAD (or of commit `at`, when given) and of commit `commit`, as `git rev-parse HEAD^{tree}
 * <commit>^{tree}` gives them: from the files when they tell both (gitHead.ts, {@link commitTreeFromFiles}), else from
 * that one git process; nulls when git cannot tell.
 */
export async function headAndCommitTrees(
  folder: string,
  commit: string,
  at?: string,
): Promise<{ head: string | null; commit: string | null }> {
  const head = at ?? (await headFromFiles(folder));
  const fromFiles = head !== undefined && [
    await commitTreeFromFiles(folder, head),
    await commitTreeFromFiles(folder, commit),
  ];
  if (fromFiles && fromFiles[0] !== undefined && fromFiles[1] !== undefined)
    return { head: fromFiles[0], commit: fromFiles[1] };
  const r = await runGit(folder, ['rev-parse', `${at ?? 'HEAD'}^{tree}`, `${commit}^{tree}`]);
  const [h = null, c = null] = r.exitCode === 0 ? r.stdout.trim().split('\n') : [];
  return { head: h, commit: c };
}
