import { closeSync, constants as fsConstants, openSync, readSync } from 'node:fs';
import { lstat, open, realpath, type FileHandle } from 'node:fs/promises';
import * as path from 'node:path';

/**
 * HEAD's commit read from the repository's files instead of a `git rev-parse` process (a lane asked git
 * four times per story; on 2 cores each process start is dear). Only the plain layouts are read; anything else
 * answers `undefined`, and the caller asks git (git.ts `headSha`), so the answer is always git's:
 *   - `<folder>/.git` is a directory (the repository) or a file `gitdir: <path>` (a linked worktree, a submodule);
 *   - `HEAD` holds a full object id (detached) or `ref: refs/heads/<name>` (gitrepository-layout(5) "HEAD");
 *   - that branch is a loose ref `refs/heads/<name>` in the common directory (`<gitdir>/commondir`, else the gitdir:
 *     gitrepository-layout(5) "commondir"; branches are shared by all worktrees) holding a full object id. A loose
 *     ref wins over `packed-refs` in git, so a loose file found is the answer; no loose file (packed, unborn branch,
 *     reftable's `refs/heads` file) → git.
 * Never used while GIT_DIR / GIT_COMMON_DIR / GIT_WORK_TREE point git elsewhere (git-config(1) ENVIRONMENT).
 * Paths are joined as text, never normalized (no `path.resolve` / `path.join` over a read `..`): git takes the real
 * path of `<.git file's folder>/<gitdir>` and of `<gitdir>/<commondir>` (setup.c `read_gitfile_gently`,
 * `get_common_dir_noenv`: `strbuf_realpath`), where a `..` after a symbolic link leaves the link's target; the kernel
 * resolves an unnormalized path the same way, a lexical `..` does not (a `.git` linked to a worktree's git folder,
 * a workspace opened through a link with a relative `gitdir:`).
 */

/**
 * What a `.git` file or folder tells: the gitdir, or null when it is not the plain form. A relative `gitdir:` is
 * joined to `folder` as text, not normalized (see the module comment: the kernel resolves its `..` as git does). Pure.
 */
export function gitdirOf(folder: string, dotGit: { kind: 'dir' } | { kind: 'file'; text: string }): string | null {
  if (dotGit.kind === 'dir') return path.join(folder, '.git');
  const m = /^gitdir: (.+?)\r?\n?$/.exec(dotGit.text);
  if (!m) return null;
  return under(folder, m[1]!);
}

/** `rel` read from a file, relative to `dir` unless absolute, joined as text (no `..` removed). Pure. */
function under(dir: string, rel: string): string {
  return path.isAbsolute(rel) ? rel : dir.endsWith(path.sep) ? dir + rel : dir + path.sep + rel;
}

/** Object ids git writes: SHA-1 (40 hex) or SHA-256 (64 hex), lower case. */
const OID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/**
 * What `HEAD`'s text names: a commit (`{ oid }`), a branch (`{ branch: "refs/heads/…" }`), or null (anything else:
 * another ref namespace, a malformed name, a name with `..` or a backslash). Pure.
 */
export function parseHeadText(text: string): { oid: string } | { branch: string } | null {
  const t = text.replace(/\r?\n$/, '');
  if (OID.test(t)) return { oid: t };
  const m = /^ref: (refs\/heads\/[A-Za-z0-9._/+@-]+)$/.exec(t);
  if (!m) return null;
  const name = m[1]!;
  if (
    name
      .split('/')
      .some((part) => part === '' || part === '.' || part === '..' || part.startsWith('.') || part.endsWith('.lock'))
  )
    return null;
  return { branch: name };
}

/** A loose ref file's object id, or null (a symbolic ref, garbage). Pure. */
export function parseLooseRef(text: string): string | null {
  const t = text.replace(/\r?\n$/, '');
  return OID.test(t) ? t : null;
}

/** True when the environment points git at another repository or tree: the files of `folder` would not be git's answer. Pure. */
export function gitEnvRedirects(env: NodeJS.ProcessEnv): boolean {
  return !!(env.GIT_DIR || env.GIT_COMMON_DIR || env.GIT_WORK_TREE);
}

/** The most of a ref-like file (HEAD, a loose ref, `.git`, `commondir`) read, bytes: git's own are under 100. */
const SMALL_LIMIT = 4096;

/** A ref-like file's text, or null when it is absent, unreadable or over {@link SMALL_LIMIT} bytes. Never throws. */
async function readSmall(file: string): Promise<string | null> {
  let handle: FileHandle | undefined;
  try {
    // At most one byte past the limit, without blocking on a FIFO put in a file's place.
    handle = await open(file, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
    const buf = Buffer.alloc(SMALL_LIMIT + 1);
    const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
    return bytesRead <= SMALL_LIMIT ? buf.toString('utf8', 0, bytesRead) : null;
  } catch {
    return null;
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

/**
 * HEAD's object id for `folder` from its files, or `undefined` when the files do not tell plainly (then ask git).
 * Never throws. `folder` must be the work tree's top (where `.git` is); a subfolder answers `undefined`.
 */
export async function headFromFiles(folder: string, env: NodeJS.ProcessEnv = process.env): Promise<string | undefined> {
  const gitdir = await gitdirFromFiles(folder, env);
  if (!gitdir) return undefined;
  const headText = await readSmall(under(gitdir, 'HEAD'));
  if (headText === null) return undefined;
  const head = parseHeadText(headText);
  if (!head) return undefined;
  if ('oid' in head) return head.oid;
  const refText = await readSmall(under(await commonDirOf(gitdir), head.branch.split('/').join(path.sep)));
  if (refText === null) return undefined;
  return parseLooseRef(refText) ?? undefined;
}

/**
 * The object id ref `ref` (`refs/…`) names in `folder`'s repository, from its loose ref file (git reads a loose ref
 * before packed-refs, so that file is git's answer), or undefined when the files do not tell plainly: a packed or
 * symbolic ref, another ref store (then ask git). Never throws.
 */
export async function looseRefFromFiles(
  folder: string,
  ref: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string | undefined> {
  if (!/^refs\/[A-Za-z0-9._/-]+$/.test(ref) || ref.includes('..') || ref.includes('//')) return undefined;
  const common = await commonDirFromFiles(folder, env);
  if (!common) return undefined;
  const text = await readSmall(under(common, ref.split('/').join(path.sep)));
  return text === null ? undefined : (parseLooseRef(text) ?? undefined);
}

/**
 * {@link headFromFiles} read synchronously: the same answer, for a caller on a busy event loop (the merge slot of a
 * parallel run reads HEAD before and after each merge, while the lanes' writes keep the thread pool busy; three or
 * four files of a few bytes each cost less read at once than through 12–16 pool round trips). Never throws.
 */
export function headFromFilesSync(folder: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (gitEnvRedirects(env)) return undefined;
  const asFile = readSmallSync(path.join(folder, '.git'));
  const gitdir = asFile !== null ? gitdirOf(folder, { kind: 'file', text: asFile }) : gitdirOf(folder, { kind: 'dir' });
  if (!gitdir) return undefined;
  const headText = readSmallSync(under(gitdir, 'HEAD'));
  if (headText === null) return undefined;
  const head = parseHeadText(headText);
  if (!head) return undefined;
  if ('oid' in head) return head.oid;
  const common = readSmallSync(under(gitdir, 'commondir'));
  const commonDir = common !== null ? under(gitdir, common.replace(/\r?\n$/, '')) : gitdir;
  const refText = readSmallSync(under(commonDir, head.branch.split('/').join(path.sep)));
  if (refText === null) return undefined;
  return parseLooseRef(refText) ?? undefined;
}

/** {@link readSmall}, synchronously. */
function readSmallSync(file: string): string | null {
  let fd: number | undefined;
  try {
    fd = openSync(file, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
    const buf = Buffer.alloc(SMALL_LIMIT + 1);
    const n = readSync(fd, buf, 0, buf.length, 0);
    return n <= SMALL_LIMIT ? buf.toString('utf8', 0, n) : null;
  } catch {
    return null;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** `folder`'s gitdir from its `.git` (the plain forms only, see the module comment), or null. Never throws. */
async function gitdirFromFiles(folder: string, env: NodeJS.ProcessEnv): Promise<string | null> {
  if (gitEnvRedirects(env)) return null;
  const asFile = await readSmall(path.join(folder, '.git'));
  // Not a readable file: a repository folder (EISDIR), or nothing plain (its HEAD is then not found).
  return asFile !== null ? gitdirOf(folder, { kind: 'file', text: asFile }) : gitdirOf(folder, { kind: 'dir' });
}

/** The common directory of `gitdir` (`<gitdir>/commondir`, else the gitdir itself: gitrepository-layout(5)). */
async function commonDirOf(gitdir: string): Promise<string> {
  const common = await readSmall(under(gitdir, 'commondir'));
  return common !== null ? under(gitdir, common.replace(/\r?\n$/, '')) : gitdir;
}

/**
 * The common directory of `folder`'s repository read from its files (the plain layouts of {@link headFromFiles}), or
 * undefined: ask git. Never throws; never answers while the environment points git elsewhere, nor while
 * GIT_OBJECT_DIRECTORY moves the objects (git-config(1) ENVIRONMENT).
 */
export async function commonDirFromFiles(
  folder: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string | undefined> {
  if (env.GIT_OBJECT_DIRECTORY) return undefined;
  const gitdir = await gitdirFromFiles(folder, env);
  return gitdir ? commonDirOf(gitdir) : undefined;
}

/** What one folder on git's way up holds: its `.git` entry and its `HEAD` entry (a bare repository's mark). */
export interface DiscoveryLevel {
  dotGit: 'absent' | 'present' | 'unknown';
  head: 'absent' | 'present' | 'unknown';
}

/**
 * Whether git's repository discovery surely finds nothing from the folders `levels` describe (the physical folder
 * first, then each parent up to `/`): no `.git` at any level and no level that could itself be a repository (git
 * takes a folder with `HEAD`, `objects/` and `refs/` as a bare one: any `HEAD` entry counts here). Anything unknown (a
 * folder that could not be read) answers false, and the caller asks git. `GIT_CEILING_DIRECTORIES` and
 * `GIT_DISCOVERY_ACROSS_FILESYSTEM` only stop git's walk earlier, so they cannot make it find more (git-config(1)
 * ENVIRONMENT; setup.c `setup_git_directory_gently_1`). Pure.
 */
export function discoveryFindsNothing(levels: readonly DiscoveryLevel[]): boolean {
  return levels.length > 0 && levels.every((l) => l.dotGit === 'absent' && l.head === 'absent');
}

async function entryAt(file: string): Promise<DiscoveryLevel['dotGit']> {
  try {
    await lstat(file);
    return 'present';
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR'
      ? 'absent'
      : 'unknown';
  }
}

/**
 * True when `folder` is surely in no git repository, read from the files (two `lstat`s per folder up to `/`) instead
 * of a git process that would only fail: git's answer everywhere else. The walk starts at the real path (git
 * discovers from the physical working folder, `getcwd`), and never decides while GIT_DIR / GIT_COMMON_DIR /
 * GIT_WORK_TREE point git elsewhere. Never throws (a folder that cannot be resolved answers false: ask git).
 */
export async function outsideAnyRepository(folder: string, env: NodeJS.ProcessEnv = process.env): Promise<boolean> {
  if (gitEnvRedirects(env)) return false;
  let dir: string;
  try {
    dir = await realpath(folder);
  } catch {
    return false;
  }
  const levels: DiscoveryLevel[] = [];
  for (;;) {
    const level: DiscoveryLevel = {
      dotGit: await entryAt(path.join(dir, '.git')),
      head: await entryAt(path.join(dir, 'HEAD')),
    };
    levels.push(level);
    if (!discoveryFindsNothing([level])) return false;
    const up = path.dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  return discoveryFindsNothing(levels);
}
