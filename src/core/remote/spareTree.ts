import { mkdir, rm } from 'node:fs/promises';
import * as path from 'node:path';
import { git } from '../loop/parallel/dispatcher';

/** Removes worktree `tree` of `mirror` (its folder and git's record of it). */
export async function removeTree(mirror: string, tree: string): Promise<void> {
  const removed = await git(mirror, ['worktree', 'remove', '--force', tree], { reject: false });
  if (removed.exitCode !== 0) {
    await rm(tree, { recursive: true, force: true });
    await git(mirror, ['worktree', 'prune'], { reject: false });
  }
}

/** A worktree made ahead of the next job (detached, clean, no branch of its own): see {@link SpareTree}. */
interface Spare {
  tree: string;
  mirror: string;
  sha: string;
  /** The run it was made or last moved for: it goes back to idle when that run ends. '' when idle (no run's). */
  runId: string;
}

/** Where an idle spare stands: a commit of a served repository's branches as fetched before the worker served. */
export interface IdleSpot {
  mirror: string;
  sha: string;
}

/**
 * The worker's spare tree: one worktree made ahead of a job, so that the job starts with one `git checkout` (only
 * the files that differ) instead of a `git worktree add` (four git processes and a full checkout). A job takes it and
 * it becomes that lane's tree, removed as any lane's; nothing of a lane is ever in it (made fresh at a commit, never
 * reused after a lane). Between runs it is idle: at a commit of the remote's branches as the worker fetched them
 * before it served (`idle`), made before the worker serves and after a run's end, so the first job of a run, whose
 * workers all start at once on the same cores, does not make a tree either (docs/decisions/0026). While a run goes
 * on it is made while a lane's agent runs (`make`) or moved to the feature branch's newest commit (`move`), and it
 * goes back to idle when that run ends. It is removed when the worker ends. One change at a time (a chain), so a job
 * that takes it while it is being made waits for it.
 */
export class SpareTree {
  private spare: Spare | null = null;
  private chain: Promise<unknown> = Promise.resolve();
  private made = 0;
  /** The worker ends: no spare is made or moved any more (a run's end heard late would make one). */
  private closed = false;
  constructor(
    private readonly dir: string,
    /** Where the idle spare goes (null: no served repository could be fetched, so no idle spare). */
    private readonly idleAt: () => IdleSpot | null,
  ) {}

  private then<T>(step: () => Promise<T>): Promise<T> {
    const p = this.chain.then(step);
    this.chain = p.catch(() => undefined);
    return p;
  }

  /** Adds the spare's worktree at `sha` of `mirror`; false when git could not (nothing of it kept). */
  private async add(mirror: string, sha: string, runId: string): Promise<boolean> {
    if (this.closed) return false;
    const tree = path.join(this.dir, 'lanes', `spare-${process.pid}-${++this.made}`);
    await mkdir(path.dirname(tree), { recursive: true });
    const r = await git(mirror, ['worktree', 'add', '-f', '--detach', tree, sha], { reject: false });
    if (r.exitCode === 0) this.spare = { tree, mirror, sha, runId };
    else await removeTree(mirror, tree);
    return r.exitCode === 0;
  }

  /**
   * Makes the spare at `sha` of `mirror` for run `runId` unless there is one of that mirror or of a run, or unless
   * `wanted()` says no by then. An idle spare of another mirror gives way (the run's repository is the one in use).
   */
  make(mirror: string, sha: string, runId: string, wanted: () => Promise<boolean>): Promise<void> {
    return this.then(async () => {
      const s = this.spare;
      if ((s && (s.mirror === mirror || s.runId !== '')) || !(await wanted())) return;
      if (s) {
        this.spare = null;
        await removeTree(s.mirror, s.tree);
      }
      await this.add(mirror, sha, runId);
    });
  }

  /** Moves the spare of `mirror` to `sha` (already in the mirror), for run `runId`. */
  move(mirror: string, sha: string, runId: string): Promise<void> {
    return this.then(async () => {
      const s = this.spare;
      if (!s || s.mirror !== mirror || s.sha === sha) return;
      await this.checkout(s, sha, runId);
    });
  }

  /** Checks spare `s` out at `sha` for `runId`; a spare git could not move is removed. */
  private async checkout(s: Spare, sha: string, runId: string): Promise<void> {
    const r = this.closed ? null : await git(s.tree, ['checkout', '-q', '-f', '--detach', sha], { reject: false });
    if (r?.exitCode === 0) Object.assign(s, { sha, runId });
    else {
      this.spare = null;
      await removeTree(s.mirror, s.tree);
    }
  }

  /** Takes the spare of `mirror` for a job (null: none); it is the job's from then on. */
  take(mirror: string): Promise<Spare | null> {
    return this.then(async () => {
      const s = this.spare;
      if (!s || s.mirror !== mirror) return null;
      this.spare = null;
      return s;
    });
  }

  /**
   * Readies the idle spare: run `runId`'s spare (when it has one) goes back to the idle commit, and a worker without
   * a spare makes one there. With `runId` undefined (before the worker serves) only the latter.
   */
  idle(runId?: string): Promise<void> {
    return this.then(async () => {
      const at = this.idleAt();
      const s = this.spare;
      if (s && runId !== undefined && s.runId === runId) {
        if (at && s.mirror === at.mirror) await this.checkout(s, at.sha, '');
        else {
          this.spare = null;
          await removeTree(s.mirror, s.tree);
        }
      }
      if (!this.spare && at) await this.add(at.mirror, at.sha, '');
    });
  }

  /** Removes the spare, idle or not, and makes none after (the worker ends). */
  close(): Promise<void> {
    this.closed = true;
    return this.then(async () => {
      const s = this.spare;
      if (!s) return;
      this.spare = null;
      await removeTree(s.mirror, s.tree);
    });
  }
}
