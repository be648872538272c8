import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  excludeRunnerFiles,
  GitWorktreeDispatcher,
  hasLeftovers,
  laneTree,
} from '../../../src/core/loop/parallel/dispatcher';
import { lanesStarted } from '../../../src/core/loop/parallel/quantumRuntime';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';
import { git, gitInit } from '../../support/workspace';

/**
 * Issue 19: the git worktree dispatcher with real git, in the fewer-calls form of the lanes profile (docs/NOTES.md
 * "Issue 19, lanes profile"): `worktree add -b` first and a kept branch taken up, leftovers seen by one status,
 * removal without a prune, and one quantum.json write for a round's lanes.
 */
describe('parallel lanes: the git worktree dispatcher (issue 19, real git)', () => {
  let t: TempFolder;
  const quantum = {
    project: 'p',
    stories: ['A', 'B'].map((id, i) => ({
      id,
      title: `Story ${id}`,
      priority: i + 1,
      status: 'pending',
      dependsOn: [],
    })),
  };
  beforeEach(async () => {
    t = makeTempFolder('ralph-dispatch-', {
      files: { 'a.txt': 'a\n', 'quantum.json': JSON.stringify(quantum, null, 2) + '\n' },
    });
    gitInit(t, { commit: true });
    await excludeRunnerFiles(t.dir);
  });
  afterEach(() => t.dispose());

  it('creates a tree on a new branch, takes a kept branch up again with its commit, and removes the tree leaving the branch', async () => {
    const d = new GitWorktreeDispatcher(t.dir, 'main');
    const first = await d.create('A');
    assert.equal(first.reused, false);
    assert.equal(first.tree, laneTree(t.dir, 'A'));
    fs.writeFileSync(path.join(first.tree, 'x.txt'), 'x\n');
    git(first.tree, 'add', 'x.txt');
    git(first.tree, 'commit', '-qm', 'A: x');
    await d.remove('A');
    assert.ok(!fs.existsSync(first.tree));
    assert.equal(git(t.dir, 'worktree', 'list').split('\n').length, 1);
    assert.equal(git(t.dir, 'log', '-1', '--format=%s', 'ql-wt/A'), 'A: x');
    const again = await d.create('A');
    assert.equal(again.reused, true);
    assert.equal(fs.readFileSync(path.join(again.tree, 'x.txt'), 'utf8'), 'x\n');
    await d.remove('A');
  });

  it("a tree deleted behind git's back is pruned by remove; a tree path already taken is an error naming git's reason", async () => {
    const d = new GitWorktreeDispatcher(t.dir, 'main');
    const a = await d.create('A');
    fs.rmSync(a.tree, { recursive: true, force: true });
    await d.remove('A');
    assert.equal(
      fs.existsSync(path.join(t.dir, '.git', 'worktrees'))
        ? fs.readdirSync(path.join(t.dir, '.git', 'worktrees')).length
        : 0,
      0,
    );
    fs.mkdirSync(laneTree(t.dir, 'B'), { recursive: true });
    fs.writeFileSync(path.join(laneTree(t.dir, 'B'), 'in-the-way.txt'), 'x\n');
    await assert.rejects(d.create('B'), /already exists/);
  });

  it("sees leftovers other than the runner's files, and saves them in one commit without quantum.json", async () => {
    const d = new GitWorktreeDispatcher(t.dir, 'main');
    const { tree } = await d.create('A');
    assert.equal(await hasLeftovers(tree), false);
    assert.equal(await d.saveLeftovers('A', 'left'), null);
    // The runner's file and ignored runner folders are not a lane's work.
    fs.writeFileSync(path.join(tree, 'quantum.json'), '{}\n');
    fs.mkdirSync(path.join(tree, '.ralph'), { recursive: true });
    fs.writeFileSync(path.join(tree, '.ralph', 'handoff.md'), 'notes\n');
    assert.equal(await hasLeftovers(tree), false);
    assert.equal(await d.saveLeftovers('A', 'left'), null);
    // A new file, in a new folder, and an edit are.
    fs.mkdirSync(path.join(tree, 'src'));
    fs.writeFileSync(path.join(tree, 'src', 'new file.txt'), 'n\n');
    assert.equal(await hasLeftovers(tree), true);
    fs.writeFileSync(path.join(tree, 'a.txt'), 'a2\n');
    const sha = await d.saveLeftovers('A', 'ralph: A: left');
    assert.match(sha ?? '', /^[0-9a-f]{40}$/);
    assert.deepEqual(git(tree, 'show', '--name-only', '--format=', 'HEAD').split('\n').sort(), [
      'a.txt',
      'src/new file.txt',
    ]);
    // quantum.json stays modified in the tree, never committed.
    assert.equal(git(tree, 'status', '--porcelain'), 'M quantum.json');
    await d.remove('A');
  });

  it("marks a round's stories started in one write: status, startedAt, worktree, the round and the active trees", async () => {
    await lanesStarted(
      t.dir,
      [
        { id: 'A', worktree: '.ql-wt/A' },
        { id: 'B', worktree: '.ql-wt/B' },
      ],
      3,
      ['.ql-wt/A', '.ql-wt/B'],
    );
    const q = JSON.parse(fs.readFileSync(t.file('quantum.json'), 'utf8')) as {
      stories: { status: string; worktree: string; startedAt: string }[];
      execution: { currentWave: number; activeWorktrees: string[] };
    };
    assert.deepEqual(
      q.stories.map((s) => [s.status, s.worktree]),
      [
        ['in_progress', '.ql-wt/A'],
        ['in_progress', '.ql-wt/B'],
      ],
    );
    assert.ok(q.stories.every((s) => typeof s.startedAt === 'string' && s.startedAt === q.stories[0]!.startedAt));
    assert.deepEqual(q.execution, { currentWave: 3, activeWorktrees: ['.ql-wt/A', '.ql-wt/B'] });
  });
});
