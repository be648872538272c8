import { runGit } from '../process/git';
import { RALPH_DIR, RALPH_FILES } from '../model/ralphPaths';
import { commitPlan } from '../store/writePlan';
import { readTextSync } from '../store/readJsonFile';

/**
 * The few git facts the engine needs (progress detection and the attempt's approach line). A folder that is not a
 * git repository answers null everywhere: the loop still works (issue: "a workspace that is not a git repository
 * still works").
 */
export async function headSha(folder: string): Promise<string | null> {
  const r = await runGit(folder, ['rev-parse', '--verify', '-q', 'HEAD']);
  return r.exitCode === 0 ? r.stdout.trim() : null;
}

/** Subject of the newest commit, or null. */
export async function lastCommitSubject(folder: string): Promise<string | null> {
  const r = await runGit(folder, ['log', '-1', '--format=%s']);
  return r.exitCode === 0 && r.stdout.trim() ? r.stdout.trim() : null;
}

/** `<short sha> <subject>` of the newest commit, or null. */
export async function lastCommitLine(folder: string): Promise<string | null> {
  const r = await runGit(folder, ['log', '-1', '--format=%h %s']);
  return r.exitCode === 0 && r.stdout.trim() ? r.stdout.trim() : null;
}

/**
 * Keeps `.ralph/` out of commits, as ralph-wiggum does at each start (seed-systems.md §3.1): when
 * `git check-ignore -q .ralph/activity.log` fails, `.ralph/` is appended to `.gitignore`. No-op outside git.
 */
export async function ensureRalphIgnored(folder: string): Promise<boolean> {
  if ((await headSha(folder)) === null) {
    const inside = await runGit(folder, ['rev-parse', '--is-inside-work-tree']);
    if (inside.exitCode !== 0) return false;
  }
  const ignored = await runGit(folder, ['check-ignore', '-q', `${RALPH_DIR}/${RALPH_FILES.activityLog}`]);
  if (ignored.exitCode === 0) return false;
  // Replaced atomically, never appended in place (a kill mid-append left half a file, issue 12), and through the
  // store's careful write: never through a link leaving the workspace, never over a newer file.
  const file = `${folder}/.gitignore`;
  await commitPlan(file, async () => {
    const before = readTextSync(file);
    const text = before ?? '';
    return { writes: [{ file, before, after: `${text}${text && !text.endsWith('\n') ? '\n' : ''}${RALPH_DIR}/\n` }], result: undefined };
  });
  return true;
}
