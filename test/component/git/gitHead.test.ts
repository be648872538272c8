import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { headSha, lastCommitLine, lastCommitSubject } from '../../../src/core/git/gitState';
import {
  headFromFiles as headFromFilesAsync,
  headFromFilesSync,
  looseRefFromFiles,
} from '../../../src/core/git/gitHead';
import { commitTreeFromFiles, headAndCommitTrees } from '../../../src/core/git/gitObjects';
import { headOf } from '../../../src/core/loop/parallel/dispatcher';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';
import { git, gitInit } from '../../support/workspace';
import { spawnsDuring } from '../../support/processes';

/** Issue 19: HEAD read from the repository's files (gitHead.ts) is git's answer, without a git process in the plain layouts. */
describe("engine: HEAD's commit from the files (issue 19, gitHead.ts)", function () {
  this.timeout(60_000);
  let t: TempFolder;
  /** headFromFiles, checked against its synchronous twin (the same answer everywhere). */
  const headFromFiles = async (dir: string, env?: NodeJS.ProcessEnv) => {
    const a = await headFromFilesAsync(dir, env);
    assert.equal(headFromFilesSync(dir, env), a, `the synchronous read of ${dir}`);
    return a;
  };
  const revParse = (dir: string) => git(dir, 'rev-parse', '--verify', '-q', 'HEAD');
  beforeEach(() => {
    t = makeTempFolder('ralph-head-', { files: { 'a.txt': 'a\n' } });
    gitInit(t, { commit: true });
  });
  afterEach(() => t.dispose());
  /** A linked worktree `.ql-wt/S1` on a new `branch` from main, with one commit of its own; its folder. */
  const laneWithCommit = (branch: string): string => {
    const wt = path.join(t.dir, '.ql-wt', 'S1');
    git(t.dir, 'worktree', 'add', '-q', '-b', branch, wt, 'main');
    fs.writeFileSync(path.join(wt, 'b.txt'), 'b\n');
    git(wt, 'add', '-A');
    git(wt, 'commit', '-q', '-m', 'lane');
    return wt;
  };

  it('answers as git in a repository and in a linked worktree, without starting git', async () => {
    const wt = laneWithCommit('ql-wt/S1');
    const r = await spawnsDuring(async () => [
      await headSha(t.dir),
      await headSha(wt),
      await headOf(t.dir),
      await headOf(wt),
    ]);
    assert.deepEqual(r.value, [revParse(t.dir), revParse(wt), revParse(t.dir), revParse(wt)]);
    assert.notEqual(revParse(t.dir), revParse(wt));
    assert.equal(r.spawns, 0, 'no git process for a loose branch ref');
  });

  it("symbolic links: a .git linked to a worktree's git folder, a workspace opened through a link with a relative gitdir: the commit git names", async () => {
    const wt = laneWithCommit('lane');
    const outer = makeTempFolder('ralph-head-link-');
    try {
      // <outer>/ws/.git → <repo>/.git/worktrees/S1, whose commondir is `../..`: git takes the real path (the
      // repository's .git); `../..` read lexically from the link is <outer>, where a stale branch file lies.
      const ws = path.join(outer.dir, 'ws');
      fs.mkdirSync(ws);
      fs.symlinkSync(path.join(t.dir, '.git', 'worktrees', 'S1'), path.join(ws, '.git'));
      outer.write('refs/heads/lane', `${revParse(t.dir)}\n`);
      assert.equal(revParse(ws), revParse(wt), 'control: git reads the worktree through the link');
      assert.notEqual(revParse(ws), revParse(t.dir), 'control: the stale file names another commit');
      assert.equal(await headFromFiles(ws), revParse(ws));
      assert.equal(await headSha(ws), revParse(ws));
      // A worktree whose .git says `gitdir: ../<…>` (a submodule's form), opened through a link to it: git resolves
      // the `..` from the worktree's real folder, not from the link's.
      fs.writeFileSync(path.join(wt, '.git'), `gitdir: ../../.git/worktrees/S1\n`);
      // <outer>/a/lane-link → the worktree: `../../.git/worktrees/S1` read lexically from the link is <outer>/.git/….
      fs.mkdirSync(path.join(outer.dir, 'a'));
      const link = path.join(outer.dir, 'a', 'lane-link');
      fs.symlinkSync(wt, link);
      outer.write('.git/worktrees/S1/HEAD', `${revParse(t.dir)}\n`);
      assert.equal(revParse(link), revParse(wt), 'control: git follows the relative gitdir from the real folder');
      assert.equal(await headFromFiles(link), revParse(wt));
    } finally {
      outer.dispose();
    }
  });

  it("odd branch names, a SHA-256 repository: git's answer (from the files, or from git where they do not tell plainly)", async () => {
    for (const branch of ['x+y@z.1', 'feat/\u00fc#1', 'a,b', 'deep/er/name']) {
      git(t.dir, 'checkout', '-q', '-b', branch);
      t.write(`${branch.replace(/\W/g, '_')}.txt`, branch);
      git(t.dir, 'add', '-A');
      git(t.dir, 'commit', '-q', '-m', branch);
      assert.equal(await headSha(t.dir), revParse(t.dir), branch);
    }
    const sha256 = makeTempFolder('ralph-head-256-', { files: { 'a.txt': 'a\n' } });
    try {
      git(sha256.dir, 'init', '-q', '--object-format=sha256', '-b', 'main');
      git(
        sha256.dir,
        '-c',
        'user.email=t@example.invalid',
        '-c',
        'user.name=t',
        'commit',
        '-q',
        '--allow-empty',
        '-m',
        'one',
      );
      assert.equal(revParse(sha256.dir).length, 64, 'control: a SHA-256 object id');
      assert.equal(await headFromFiles(sha256.dir), revParse(sha256.dir));
    } finally {
      sha256.dispose();
    }
  });

  it("a commit's tree from its loose object is git's answer, without starting git; packed objects and a moved object store are git's to answer", async () => {
    const wt = laneWithCommit('ql-wt/S1');
    const treeOf = (dir: string, rev: string) => git(dir, 'rev-parse', `${rev}^{tree}`);
    const laneHead = revParse(wt);
    git(t.dir, 'merge', '-q', '--no-ff', '--no-edit', 'ql-wt/S1');
    const loose = await spawnsDuring(async () => [
      await commitTreeFromFiles(t.dir, revParse(t.dir)),
      await commitTreeFromFiles(wt, laneHead),
      await headAndCommitTrees(t.dir, laneHead),
    ]);
    assert.deepEqual(loose.value, [
      treeOf(t.dir, 'HEAD'),
      treeOf(t.dir, laneHead),
      { head: treeOf(t.dir, 'HEAD'), commit: treeOf(t.dir, laneHead) },
    ]);
    assert.equal(treeOf(t.dir, 'HEAD'), treeOf(t.dir, laneHead), 'control: a merge of a branch ahead keeps its tree');
    assert.equal(loose.spawns, 0, 'no git process for loose commits');
    assert.equal(await commitTreeFromFiles(t.dir, treeOf(t.dir, 'HEAD')), undefined, 'a tree is not a commit');
    assert.equal(await commitTreeFromFiles(t.dir, 'f'.repeat(40)), undefined, 'no such object');
    assert.equal(await commitTreeFromFiles(t.dir, 'HEAD'), undefined, 'only object ids');
    assert.equal(await commitTreeFromFiles(t.dir, laneHead, { GIT_OBJECT_DIRECTORY: '/nowhere' }), undefined);
    git(t.dir, 'gc', '-q', '--prune=now');
    assert.equal(await commitTreeFromFiles(t.dir, laneHead), undefined, 'packed: not read');
    const packed = await spawnsDuring(() => headAndCommitTrees(t.dir, laneHead));
    assert.deepEqual(packed.value, { head: treeOf(t.dir, 'HEAD'), commit: treeOf(t.dir, laneHead) });
    assert.equal(packed.spawns, 1, 'packed: one git process answers both');
    assert.deepEqual(await headAndCommitTrees(t.dir, 'f'.repeat(40)), { head: null, commit: null }, 'git cannot tell');
  });

  it("a branch's loose ref is git's answer, read without starting git; a packed ref, an odd name and a redirecting environment are left to git", async () => {
    const wt = laneWithCommit('ql-wt/S1');
    const ref = 'refs/heads/ql-wt/S1';
    // From the repository and from a linked worktree (the common dir's refs), as git names it.
    const r = await spawnsDuring(async () => [await looseRefFromFiles(t.dir, ref), await looseRefFromFiles(wt, ref)]);
    assert.deepEqual(r.value, [git(t.dir, 'rev-parse', ref), git(t.dir, 'rev-parse', ref)]);
    assert.equal(r.spawns, 0, 'no git process for a loose ref');
    assert.equal(await looseRefFromFiles(t.dir, 'refs/heads/none'), undefined);
    for (const odd of ['refs/heads/../HEAD', 'HEAD', 'refs/heads//x', 'refs/heads/a b'])
      assert.equal(await looseRefFromFiles(t.dir, odd), undefined, odd);
    assert.equal(await looseRefFromFiles(t.dir, ref, { GIT_DIR: path.join(t.dir, '.git') }), undefined);
    git(t.dir, 'pack-refs', '--all');
    assert.equal(await looseRefFromFiles(t.dir, ref), undefined, 'packed: git answers');
  });

  it('a HEAD or branch file that is a FIFO or over 4 KiB is left to git: read without blocking, never whole', async () => {
    const ref = path.join(t.dir, '.git', 'refs', 'heads', 'main');
    const sha = revParse(t.dir);
    fs.rmSync(ref);
    execFileSync('mkfifo', [ref]);
    assert.equal(await headFromFiles(t.dir), undefined, 'a FIFO at the branch file: no answer, and no hang');
    fs.rmSync(ref);
    fs.writeFileSync(ref, `${sha}\n${' '.repeat(8192)}`);
    assert.equal(await headFromFiles(t.dir), undefined, 'a branch file over the limit: no answer');
    fs.writeFileSync(ref, `${sha}\n`);
    assert.equal(await headFromFiles(t.dir), sha, 'control');
  });

  it('a detached HEAD is read as it is', async () => {
    git(t.dir, 'checkout', '-q', '--detach');
    assert.equal(await headFromFiles(t.dir), revParse(t.dir));
  });

  it('leaves packed refs, an unborn branch, a subfolder and a redirecting environment to git', async () => {
    git(t.dir, 'pack-refs', '--all');
    assert.equal(
      fs.existsSync(path.join(t.dir, '.git', 'refs', 'heads', 'main')),
      false,
      'control: the branch is packed',
    );
    assert.equal(await headFromFiles(t.dir), undefined);
    assert.equal(await headSha(t.dir), revParse(t.dir), 'git answers for a packed branch');
    fs.mkdirSync(path.join(t.dir, 'sub'));
    assert.equal(await headFromFiles(path.join(t.dir, 'sub')), undefined);
    assert.equal(await headFromFiles(t.dir, { GIT_DIR: path.join(t.dir, '.git') }), undefined);
    const fresh = path.join(t.dir, 'fresh');
    fs.mkdirSync(fresh);
    git(fresh, 'init', '-q', '-b', 'main');
    assert.equal(await headFromFiles(fresh), undefined);
    assert.equal(await headSha(fresh), null, 'an unborn branch has no HEAD commit');
    const plain = makeTempFolder('ralph-head-none-');
    try {
      assert.equal(await headFromFiles(plain.dir), undefined);
    } finally {
      plain.dispose();
    }
  });

  it('follows a new commit and a branch switch at once', async () => {
    const before = await headSha(t.dir);
    t.write('c.txt', 'c\n');
    git(t.dir, 'add', '-A');
    git(t.dir, 'commit', '-q', '-m', 'c');
    const after = await headSha(t.dir);
    assert.notEqual(after, before);
    assert.equal(after, revParse(t.dir));
    git(t.dir, 'checkout', '-q', '-b', 'other', 'HEAD~1');
    assert.equal(await headSha(t.dir), before);
  });

  it("asks git once per commit for the newest commit's subject and line, again after a new commit", async () => {
    const line = () => git(t.dir, 'log', '-1', '--format=%h %s');
    const first = await spawnsDuring(async () => [
      await lastCommitSubject(t.dir),
      await lastCommitLine(t.dir),
      await lastCommitSubject(t.dir),
    ]);
    assert.deepEqual(first.value, ['initial', line(), 'initial']);
    assert.equal(first.spawns, 1);
    t.write('c.txt', 'c\n');
    git(t.dir, 'add', '-A');
    git(t.dir, 'commit', '-q', '-m', 'second one');
    const second = await spawnsDuring(async () => [await lastCommitLine(t.dir), await lastCommitSubject(t.dir)]);
    assert.deepEqual(second.value, [line(), 'second one']);
    assert.equal(second.spawns, 1);
    git(t.dir, 'pack-refs', '--all');
    const packed = await spawnsDuring(async () => [await lastCommitSubject(t.dir), await lastCommitLine(t.dir)]);
    assert.deepEqual(packed.value, ['second one', line()], 'HEAD not in the files: git answers each time');
    assert.equal(packed.spawns, 2);
  });

  it('a folder in no repository answers null without starting git; a subfolder and a bare repository ask git', async () => {
    const plain = makeTempFolder('ralph-head-none-');
    try {
      const nested = path.join(plain.dir, 'a', 'b');
      fs.mkdirSync(nested, { recursive: true });
      assert.throws(() => revParse(nested), 'control: git finds no repository there');
      const r = await spawnsDuring(async () => [
        await headSha(plain.dir),
        await headSha(nested),
        await lastCommitLine(nested),
        await lastCommitSubject(plain.dir),
      ]);
      assert.deepEqual(r.value, [null, null, null, null]);
      assert.equal(r.spawns, 0, 'no git process outside any repository');
    } finally {
      plain.dispose();
    }
    const sub = path.join(t.dir, 'sub', 'deeper');
    fs.mkdirSync(sub, { recursive: true });
    const inSub = await spawnsDuring(async () => await headSha(sub));
    assert.equal(inSub.value, revParse(t.dir));
    assert.equal(inSub.spawns, 1, 'a subfolder: git answers');
    const bare = path.join(t.dir, 'sub', 'bare.git');
    git(t.dir, 'clone', '-q', '--bare', t.dir, bare);
    assert.equal(await headSha(bare), revParse(t.dir), 'a bare repository: git answers');
  });
});
