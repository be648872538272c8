import * as assert from 'node:assert/strict';
import { gitTopLevel, workspaceRoot, type PathKind, type RootProbe } from '../../../src/core/store/workspaceRoot';

/** A probe over an in-memory tree: path → 'dir' | file text. */
function probe(tree: Record<string, 'dir' | string>): RootProbe {
  return {
    kind: (p): PathKind => (tree[p] === undefined ? undefined : tree[p] === 'dir' ? 'dir' : 'file'),
    head: (p, n) => (typeof tree[p] === 'string' && tree[p] !== 'dir' ? tree[p].slice(0, n) : undefined),
  };
}

/** `git rev-parse --show-toplevel` without git: the rule flowctl's get_repo_root relies on. */
describe('gitTopLevel / workspaceRoot', () => {
  const repo = { '/r/.git': 'dir', '/r/.git/HEAD': 'ref: refs/heads/main\n' } as const;
  const table: { name: string; tree: Record<string, 'dir' | string>; start: string; top: string | undefined }[] = [
    { name: 'the repository folder itself', tree: repo, start: '/r', top: '/r' },
    { name: 'a subfolder walks up', tree: repo, start: '/r/a/b', top: '/r' },
    { name: 'outside any repository', tree: repo, start: '/elsewhere/x', top: undefined },
    {
      name: 'a linked worktree (.git is a gitdir: file)',
      tree: { ...repo, '/w/.git': 'gitdir: /r/.git/worktrees/w\n' },
      start: '/w/src',
      top: '/w',
    },
    {
      name: 'a nested repository wins over the outer one',
      tree: { ...repo, '/r/sub/.git': 'dir', '/r/sub/.git/HEAD': 'x' },
      start: '/r/sub/x',
      top: '/r/sub',
    },
    {
      name: 'a .git folder without HEAD is not a repository',
      tree: { ...repo, '/r/sub/.git': 'dir' },
      start: '/r/sub',
      top: '/r',
    },
    {
      name: 'a .git file that is not gitdir: is ignored',
      tree: { ...repo, '/r/sub/.git': 'junk' },
      start: '/r/sub',
      top: '/r',
    },
    { name: 'inside .git there is no work tree', tree: repo, start: '/r/.git/refs', top: undefined },
  ];
  for (const c of table) {
    it(c.name, () => {
      assert.equal(gitTopLevel(c.start, probe(c.tree)), c.top);
      assert.equal(workspaceRoot(c.start, probe(c.tree)), c.top ?? c.start);
    });
  }
});

/** breaker-s6 row 07: a folder with `.ralph/` below the git top level stays the workspace (a `git init` above it). */
describe('workspaceRoot: the nearest .ralph/ below the git top level', () => {
  const repo = { '/r/.git': 'dir', '/r/.git/HEAD': 'ref: refs/heads/main\n' } as const;
  const table: { name: string; tree: Record<string, 'dir' | string>; start: string; root: string }[] = [
    {
      name: 'a workspace with .ralph/ under a parent repository (git init in the parent)',
      tree: { ...repo, '/r/ws/.ralph': 'dir' },
      start: '/r/ws',
      root: '/r/ws',
    },
    {
      name: 'a subfolder of that workspace',
      tree: { ...repo, '/r/ws/.ralph': 'dir' },
      start: '/r/ws/src/a',
      root: '/r/ws',
    },
    {
      name: 'the nearest .ralph/ wins',
      tree: { ...repo, '/r/ws/.ralph': 'dir', '/r/ws/src/.ralph': 'dir' },
      start: '/r/ws/src/a',
      root: '/r/ws/src',
    },
    {
      name: '.ralph/ at the top level: the top level',
      tree: { ...repo, '/r/.ralph': 'dir' },
      start: '/r/a/b',
      root: '/r',
    },
    { name: 'no .ralph/ anywhere: the top level (flowctl)', tree: repo, start: '/r/a/b', root: '/r' },
    { name: 'a .ralph file is not a workspace', tree: { ...repo, '/r/ws/.ralph': 'x' }, start: '/r/ws', root: '/r' },
    {
      name: 'outside any repository: the start folder',
      tree: { '/p/ws/.ralph': 'dir' },
      start: '/p/ws/src',
      root: '/p/ws/src',
    },
  ];
  for (const c of table) it(c.name, () => assert.equal(workspaceRoot(c.start, probe(c.tree)), c.root));
});
