import { closeSync, openSync, readSync, statSync } from 'node:fs';
import * as path from 'node:path';

/** What is at a path, as far as finding a repository needs: a folder, a file, or nothing (or unreadable). */
export type PathKind = 'dir' | 'file' | undefined;

/** The file-system questions {@link gitTopLevel} asks; injectable so the rule is tested without a disk. */
export interface RootProbe {
  kind(p: string): PathKind;
  /** The first bytes of a file (a `.git` file's `gitdir: …` line), or `undefined` when it cannot be read. */
  head(p: string, bytes: number): string | undefined;
}

/** The real file system. */
export const diskProbe: RootProbe = {
  kind(p) {
    try {
      const st = statSync(p);
      return st.isDirectory() ? 'dir' : st.isFile() ? 'file' : undefined;
    } catch {
      return undefined;
    }
  },
  head(p, bytes) {
    let fd: number | undefined;
    try {
      fd = openSync(p, 'r');
      const buf = Buffer.alloc(bytes);
      const n = readSync(fd, buf, 0, bytes, 0);
      return buf.toString('utf8', 0, n);
    } catch {
      return undefined;
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  },
};

/**
 * The work-tree top level of the git repository holding `start`, as `git rev-parse --show-toplevel` prints it,
 * found without spawning git (every command pays this): the nearest folder at or above `start` holding a `.git`
 * that git would accept, a folder with a `HEAD` file, or a file starting `gitdir:` (a linked worktree or a
 * submodule, whose top level is the folder holding that file). `undefined` outside a repository and inside a
 * `.git` folder (where git answers "must be run in a work tree"). Not followed (git's own rules that flowctl
 * inherits, documented in docs/flowctl-parity.md): `GIT_DIR` / `GIT_WORK_TREE`, `GIT_CEILING_DIRECTORIES`,
 * `safe.directory` ownership checks, `core.worktree`.
 */
export function gitTopLevel(start: string, probe: RootProbe = diskProbe): string | undefined {
  let dir = path.resolve(start);
  if (dir.split(path.sep).includes('.git')) return undefined;
  for (;;) {
    const dotGit = path.join(dir, '.git');
    const kind = probe.kind(dotGit);
    if (kind === 'dir' && probe.kind(path.join(dotGit, 'HEAD')) === 'file') return dir;
    if (kind === 'file' && /^gitdir:/.test(probe.head(dotGit, 8) ?? '')) return dir;
    const up = path.dirname(dir);
    if (up === dir) return undefined;
    dir = up;
  }
}

/**
 * The folder a command works on: flowctl's `get_repo_root` (seed-systems.md §2, the git top level of `start`, the
 * current directory or `-C`, else `start` itself), with one ralph rule before it: going up from
 * `start` towards that top level (the top level itself excluded), the first folder holding a `.ralph/` folder is the
 * workspace. A workspace ralph already works in (its config, run records, claims) stays the workspace when a
 * repository appears above it (an agent ran `git init` in the parent): otherwise the next command would read the
 * parent and never count or put back the claims of a run that crashed. `start` at the top level (the usual case)
 * costs no extra `stat`. Where this differs from flowctl: docs/flowctl-parity.md.
 */
export function workspaceRoot(start: string, probe: RootProbe = diskProbe): string {
  const from = path.resolve(start);
  const top = gitTopLevel(from, probe);
  if (top === undefined) return from;
  for (let dir = from; dir !== top && dir.startsWith(top + path.sep); dir = path.dirname(dir)) {
    if (probe.kind(path.join(dir, '.ralph')) === 'dir') return dir;
  }
  return top;
}
