import { lstat } from 'node:fs/promises';
import * as path from 'node:path';
import { runGit } from './git';
import { headFromFiles, outsideAnyRepository } from './gitHead';
import { RALPH_DIR, RALPH_FILES } from '../model/ralphPaths';
import { commitPlan } from '../store/writePlan';
import { readTextSync } from '../store/readJsonFile';

/**
 * The few git facts the engine needs (progress detection and the attempt's approach line). A folder that is not a
 * git repository answers null everywhere: the loop still works (issue: "a workspace that is not a git repository
 * still works").
 */
export async function headSha(folder: string): Promise<string | null> {
  // The plain layouts from the files (gitHead.ts: no process per question), else git's answer.
  const fromFiles = await headFromFiles(folder);
  if (fromFiles !== undefined) return fromFiles;
  // No repository anywhere above (gitHead.ts): git would only fail, at the cost of a process.
  if (await outsideAnyRepository(folder)) return null;
  const r = await runGit(folder, ['rev-parse', '--verify', '-q', 'HEAD']);
  return r.exitCode === 0 ? r.stdout.trim() : null;
}

/** The newest commit's `%h` and `%s` per folder, kept while HEAD (read from the files) stays the same commit. */
const newestCommit = new Map<string, { head: string; short: string; subject: string }>();

/**
 * `%h` and `%s` of the newest commit, or null. One `git log -1` per commit and folder (the gate's
 * approach line and the handoff's last commit asked git twice for the same commit): the answer is kept while
 * HEAD's files (gitHead.ts) name that same commit (`%H` of the answer).
 */
async function newestCommitOf(folder: string): Promise<{ short: string; subject: string } | null> {
  // From the files only: where they do not tell (packed refs…), git answers each time, with no second process.
  const head = await headFromFiles(folder);
  const kept = newestCommit.get(folder);
  if (head !== undefined && kept?.head === head) return kept;
  if (head === undefined && (await outsideAnyRepository(folder))) return null;
  const r = await runGit(folder, ['log', '-1', '--format=%H%x00%h%x00%s']);
  if (r.exitCode !== 0) return null;
  const [full = '', short = '', subject = ''] = r.stdout.replace(/\n$/, '').split('\0');
  const got = { head: full, short, subject };
  if (head !== undefined && full === head) {
    if (newestCommit.size >= 64) newestCommit.clear();
    newestCommit.set(folder, got);
  }
  return got;
}

/** Subject of the newest commit, or null. */
export async function lastCommitSubject(folder: string): Promise<string | null> {
  const c = await newestCommitOf(folder);
  return c && c.subject.trim() ? c.subject.trim() : null;
}

/** `<short sha> <subject>` of the newest commit, or null. */
export async function lastCommitLine(folder: string): Promise<string | null> {
  const c = await newestCommitOf(folder);
  const line = c ? `${c.short} ${c.subject}`.trim() : '';
  return line || null;
}

/**
 * The working tree's state as one string, to tell whether anything changed between two moments (a lane's
 * final gate is skipped when it would repeat a gate that passed on the same state, decide.ts `finalGateRepeats`).
 * One `git status --porcelain=v2 -z --branch --untracked-files=all` (HEAD, the index's blob of each changed path,
 * untracked files; ignored files such as `.ralph/` are not part of it), plus size, mtime, ctime and inode of every
 * path it lists (a changed file that stays "modified" changes these). Two equal strings: the same HEAD, index and
 * files. null outside a git repository or when git fails (callers then assume a change).
 */
export async function treeState(folder: string): Promise<string | null> {
  const r = await runGit(folder, ['status', '--porcelain=v2', '-z', '--branch', '--untracked-files=all']);
  if (r.exitCode !== 0) return null;
  const paths = statusPaths(String(r.stdout));
  const stats = await Promise.all(
    paths.map(async (p) => {
      const st = await lstat(path.join(folder, p)).catch(() => null);
      return st ? `${st.size}:${st.mtimeMs}:${st.ctimeMs}:${st.ino}` : 'gone';
    }),
  );
  return `${String(r.stdout)}\n${stats.join('\n')}`;
}

/**
 * The paths a {@link treeState} string lists as changed (staged or not), unmerged or untracked, workspace-relative
 * (a rename: its new path). Pure.
 */
export function treeStatePaths(state: string): string[] {
  // The status records end with their last NUL; the stat lines after it hold none.
  return statusPaths(state.slice(0, state.lastIndexOf('\0') + 1));
}

/** The paths of `git status --porcelain=v2 -z` output (see {@link treeStatePaths}). */
function statusPaths(stdout: string): string[] {
  const records = stdout.split('\0');
  const paths: string[] = [];
  // Fields before the path (git-status(1) "Porcelain Format Version 2"): 1 → 8, 2 → 9 (then the original path), u → 10, ? → 1.
  for (let i = 0; i < records.length; i++) {
    const rec = records[i]!;
    const skip = rec.startsWith('1 ')
      ? 8
      : rec.startsWith('2 ')
        ? 9
        : rec.startsWith('u ')
          ? 10
          : rec.startsWith('? ')
            ? 1
            : -1;
    if (skip < 0) continue;
    paths.push(rec.split(' ').slice(skip).join(' '));
    if (rec.startsWith('2 ')) i++;
  }
  return paths;
}

/**
 * Keeps `.ralph/` out of commits, as ralph-wiggum does at each start (seed-systems.md §3.1): when
 * `git check-ignore -q .ralph/activity.log` fails, `.ralph/` is appended to `.gitignore`. No-op outside git.
 */
export async function ensureRalphIgnored(folder: string): Promise<boolean> {
  if ((await headSha(folder)) === null) {
    if (await outsideAnyRepository(folder)) return false;
    const inside = await runGit(folder, ['rev-parse', '--is-inside-work-tree']);
    if (inside.exitCode !== 0) return false;
  }
  const ignored = await runGit(folder, ['check-ignore', '-q', `${RALPH_DIR}/${RALPH_FILES.activityLog}`]);
  if (ignored.exitCode === 0) return false;
  // Replaced atomically, never appended in place (a kill mid-append left half a file), and through the
  // store's careful write: never through a link leaving the workspace, never over a newer file.
  const file = `${folder}/.gitignore`;
  await commitPlan(file, async () => {
    const before = readTextSync(file);
    const text = before ?? '';
    return {
      writes: [{ file, before, after: `${text}${text && !text.endsWith('\n') ? '\n' : ''}${RALPH_DIR}/\n` }],
      result: undefined,
    };
  });
  return true;
}

/**
 * The commit a gate ran on when the tree was clean: `state` is git.ts `treeState` (`git status --porcelain=v2 -z
 * --branch --untracked-files=all`, then the listed paths' stats). Clean = no entry but the `# branch.*` headers (no
 * change to a tracked file, no untracked file; ignored files such as `.ralph/` are never listed); the commit is the
 * `# branch.oid` header. Null when the state is unknown, not clean, or names no commit (`(initial)`). Pure.
 */
export function cleanCommitOf(state: string | null): string | null {
  if (state === null) return null;
  const [status = ''] = state.split('\n', 1);
  let oid: string | null = null;
  for (const rec of status.split('\0')) {
    if (!rec) continue;
    if (!rec.startsWith('# ')) return null;
    const m = /^# branch\.oid ([0-9a-f]{40,64})$/.exec(rec);
    if (m) oid = m[1]!;
  }
  return oid;
}
