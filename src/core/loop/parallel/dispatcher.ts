import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { runGit } from '../../git/git';
import { headFromFilesSync } from '../../git/gitHead';
import type { EngineEvent, WorkItemRef } from '../events';
import type { EngineLane, EngineOptions, RunResult } from '../runOptions';

/**
 * How a lane of a parallel run gets a working tree and comes back ("Lanes"): create it from the feature
 * branch, save what the agent left, merge it back, remove it. The coordinator (coordinator.ts) only talks to this
 * interface, so another way of running lanes (a container, another machine: docs/distributed-lanes.md) can be added
 * without touching the engine. {@link GitWorktreeDispatcher} is the one implementation: git worktrees under
 * `.ql-wt/<id>` on branches `ql-wt/<id>` (quantum-loop's names, seed-systems.md §4.6).
 */
export interface LaneDispatcher {
  /** The working tree of story `id` (absolute) and its branch, created from the feature branch's head, or reused. */
  create(id: string): Promise<{ tree: string; branch: string; reused: boolean }>;
  /**
   * Commits what the agent left uncommitted in the tree (runner files excluded: `.ralph/`, quantum.json), so
   * nothing done in a lane is lost. Returns the new commit's sha, or null when there was nothing to commit.
   * `changed`: the tree's changed and untracked paths as seen after its last agent ended (git.ts `treeStatePaths`),
   * when the caller has them: nothing but runner files there means nothing to save, without asking git again.
   */
  saveLeftovers(id: string, message: string, changed?: readonly string[]): Promise<string | null>;
  /** Merges the story's branch into the feature branch (`--no-ff --no-edit`); one merge at a time is the caller's rule. */
  merge(id: string): Promise<MergeOutcome>;
  /** Undoes the merge `outcome` made (a regression): the feature branch goes back to `before`; the story's branch is kept. */
  undoMerge(before: string): Promise<void>;
  /** Removes the story's working tree (its branch is kept). */
  remove(id: string): Promise<void>;
  /**
   * The engine of one lane, when this dispatcher runs lanes elsewhere (remote/bullmqDispatcher.ts: a job for a
   * `ralph worker`); absent: the coordinator runs lane.ts `Lane` itself with `options`. It emits the lane's events and
   * resolves with its end as the local engine does, and records the story's verdict on `options.lane.source`.
   */
  lane?(options: EngineOptions & { lane: EngineLane }, story: WorkItemRef): LaneEngine;
  /** Ends what the dispatcher holds for the run (connections, the run's keys); called once when the run ends. */
  close?(): Promise<void>;
}

/** What the coordinator needs of a lane's engine: its events and its end (lane.ts `Lane` is one). */
export interface LaneEngine {
  on(name: 'event', listener: (e: EngineEvent, lane?: number) => void): unknown;
  run(): Promise<Pick<RunResult, 'state' | 'reason' | 'storageFailure'>>;
}

/** What a merge did: merged (with the sha before it), or a conflict (aborted) naming the conflicting paths. */
export type MergeOutcome =
  { kind: 'merged'; before: string; after: string } | { kind: 'conflict'; files: string[]; detail: string };

/** The branch of story `id` (quantum-loop's naming). */
export const laneBranch = (id: string): string => `ql-wt/${id}`;
/** The folder holding the lanes' working trees, relative to the repository folder. */
export const LANE_DIR = '.ql-wt';
/** The working tree of story `id` under `folder`. */
export const laneTree = (folder: string, id: string): string => path.join(folder, LANE_DIR, id);

/** Files of the runner a lane never commits: the engine's copy of quantum.json and its temp file (`.ralph/` is excluded by info/exclude). */
export const RUNNER_FILES = ['quantum.json', 'quantum.json.tmp'];

/** Runs git in `cwd` through git/git.ts (repository config names no program it runs); throws with git's own message on a non-zero exit. */
export async function git(
  cwd: string,
  args: string[],
  opts: { reject?: boolean; direct?: boolean } = {},
): Promise<{ stdout: string; stderr: string; exitCode: number }> {
  const out = await runGit(cwd, args, { direct: opts.direct });
  if (out.exitCode !== 0 && opts.reject !== false) throw gitFailure(args, out);
  return out;
}

/** The error of a failed git command: `git <args>: <its last lines of stderr, else stdout>`. Pure. */
export function gitFailure(args: readonly string[], out: { stdout: string; stderr: string }): Error {
  return new Error(`git ${args.join(' ')}: ${(out.stderr || out.stdout).trim().split('\n').slice(-3).join(' | ')}`);
}

/**
 * HEAD's commit in `cwd`: from the files when they tell plainly (gitHead.ts, read at once: a few bytes, no thread
 * pool round trips on a busy coordinator), else `git rev-parse HEAD` (throws as {@link git}).
 */
export async function headOf(cwd: string): Promise<string> {
  return headFromFilesSync(cwd) ?? (await git(cwd, ['rev-parse', 'HEAD'])).stdout.trim();
}

/**
 * Keeps `.ralph/` and `.ql-wt/` out of every worktree's status through the repository's `info/exclude` (shared by
 * all worktrees of the repository, never committed), so a lane's tree is clean and a parallel run never edits a
 * tracked `.gitignore`.
 */
export async function excludeRunnerFiles(folder: string, commonDir?: string): Promise<void> {
  const common =
    commonDir ?? (await git(folder, ['rev-parse', '--path-format=absolute', '--git-common-dir'])).stdout.trim();
  const file = path.join(common, 'info', 'exclude');
  const text = existsSync(file) ? await readFile(file, 'utf8') : '';
  const lines = text.split('\n').map((l) => l.trim());
  const missing = ['/.ralph/', `/${LANE_DIR}/`].filter((l) => !lines.includes(l));
  if (!missing.length) return;
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, `${text}${text && !text.endsWith('\n') ? '\n' : ''}${missing.join('\n')}\n`);
}

/**
 * Does the tree at `tree` hold changes other than the runner's files ({@link RUNNER_FILES}; ignored files never
 * count): one `git status --porcelain=v1 -z --untracked-files=all`. A status git cannot give counts as changes (the
 * caller then runs the full save, whose errors name the problem).
 */
export async function hasLeftovers(tree: string): Promise<boolean> {
  const r = await git(tree, ['status', '--porcelain=v1', '-z', '--untracked-files=all'], { reject: false });
  if (r.exitCode !== 0) return true;
  const entries = r.stdout.split('\0');
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    if (e.length < 4) continue;
    // "XY path"; a rename or copy (X or Y is R or C) is followed by its original path as the next entry.
    if (e[0] === 'R' || e[0] === 'C' || e[1] === 'R' || e[1] === 'C') i++;
    if (!RUNNER_FILES.includes(e.slice(3))) return true;
  }
  return false;
}

/** `-c user.name/user.email` for the runner's own commits when git has no identity configured (else none: the person's). */
async function identity(cwd: string): Promise<string[]> {
  const name = (await git(cwd, ['config', 'user.name'], { reject: false })).stdout.trim();
  const email = (await git(cwd, ['config', 'user.email'], { reject: false })).stdout.trim();
  return [...(name ? [] : ['-c', 'user.name=Ralph']), ...(email ? [] : ['-c', 'user.email=ralph@localhost'])];
}

/** The lanes as git worktrees of the repository at `folder`, branched from and merged into `featureBranch`. */
export class GitWorktreeDispatcher implements LaneDispatcher {
  private mergeIdentity: Promise<string[]> | undefined;
  constructor(
    private readonly folder: string,
    private readonly featureBranch: string,
  ) {}

  async create(id: string) {
    const tree = laneTree(this.folder, id);
    const branch = laneBranch(id);
    await mkdir(path.dirname(tree), { recursive: true });
    // One git call in the usual case: a new branch from the feature branch. `-b` refuses an existing branch: a
    // branch kept from an earlier lane (a crash, a stop) is then taken up again, so what it committed is not lost.
    const fresh = await git(this.folder, ['worktree', 'add', '-b', branch, tree, this.featureBranch], {
      reject: false,
    });
    if (fresh.exitCode === 0) return { tree, branch, reused: false };
    const exists =
      (await git(this.folder, ['rev-parse', '--verify', '-q', `refs/heads/${branch}`], { reject: false })).exitCode ===
      0;
    if (!exists)
      throw new Error(
        `git worktree add -b ${branch} ${tree} ${this.featureBranch}: ${(fresh.stderr || fresh.stdout).trim().split('\n').slice(-3).join(' | ')}`,
      );
    await git(this.folder, ['worktree', 'add', tree, branch]);
    return { tree, branch, reused: true };
  }

  async saveLeftovers(id: string, message: string, changed?: readonly string[]) {
    const tree = laneTree(this.folder, id);
    if (!existsSync(tree)) return null;
    // At most one git call when the agent committed everything (the usual case): nothing but runner files is left.
    if (changed ? !changed.some((p) => !RUNNER_FILES.includes(p)) : !(await hasLeftovers(tree))) return null;
    await git(tree, ['add', '-A']);
    // The runner's files are never a lane's work (ignored ones, .ralph/ and .ql-wt/, are never added at all).
    for (const f of RUNNER_FILES)
      if (existsSync(path.join(tree, f))) await git(tree, ['reset', '-q', '--', f], { reject: false });
    const staged = await git(tree, ['diff', '--cached', '--quiet'], { reject: false });
    if (staged.exitCode === 0) return null;
    await git(tree, [...(await identity(tree)), 'commit', '-q', '--no-verify', '-m', message]);
    return headOf(tree);
  }

  /** No automatic `git maintenance` after the runner's merge (one process less per story; the person's own git still runs it). */
  async merge(id: string): Promise<MergeOutcome> {
    return this.mergeOnto(id, await headOf(this.folder));
  }

  /**
   * {@link merge} with the feature branch's head read already (`before`: read while the merge slot holds the branch,
   * which nothing else moves, so a subclass may read it while it waits for something else).
   */
  protected async mergeOnto(id: string, before: string): Promise<MergeOutcome> {
    const r = await git(
      this.folder,
      [
        ...(await this.readyMergeIdentity()),
        '-c',
        'maintenance.auto=false',
        '-c',
        'gc.auto=0',
        'merge',
        '--no-ff',
        '--no-edit',
        laneBranch(id),
      ],
      { reject: false },
    );
    if (r.exitCode === 0) return { kind: 'merged', before, after: await headOf(this.folder) };
    const files = (await git(this.folder, ['diff', '--name-only', '--diff-filter=U'], { reject: false })).stdout
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean);
    await git(this.folder, ['merge', '--abort'], { reject: false });
    const detail = (r.stdout + '\n' + r.stderr).trim().split('\n').filter(Boolean).slice(-3).join(' | ');
    return { kind: 'conflict', files, detail };
  }

  /**
   * The identity flags of the runner's merges (`-c user.name=…` where the repository has none): two `git config`
   * reads, once a run. A dispatcher whose lanes run elsewhere asks ahead, so its first merge does not pay them.
   */
  protected readyMergeIdentity(): Promise<string[]> {
    return (this.mergeIdentity ??= identity(this.folder));
  }

  async undoMerge(before: string) {
    // --keep: the runner's own uncommitted quantum.json edits stay; refuses rather than lose a person's work.
    await git(this.folder, ['reset', '--keep', before]);
  }

  async remove(id: string) {
    const tree = laneTree(this.folder, id);
    // `worktree remove` also removes git's record of the tree; `prune` is for a tree deleted behind git's back.
    const removed =
      existsSync(tree) &&
      (await git(this.folder, ['worktree', 'remove', '--force', tree], { reject: false })).exitCode === 0;
    if (!removed) await git(this.folder, ['worktree', 'prune'], { reject: false });
  }
}
