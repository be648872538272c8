import { readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { userStateDir } from '../store/userStateDir';
import { RALPH_DIR } from '../model/ralphPaths';

/**
 * What "protected" means: the paths an agent iteration may read but not change, ONE list for every face that keeps
 * them. The kernel keeps them where it can (process/containment.ts mounts each read-only in the iteration's mount
 * namespace); the command guard (gates/guardDecision.ts) denies the commands and Write/Edit calls that would change
 * them; a CLI with its own sandbox or permission rules (cursor-agent, others) maps the same list onto those.
 *
 * Why each is protected: `.ralph/` holds the command policy, `config.json`, the run folders (`run.json`, the event
 * log, the guard's socket), attempts, person marks, prompts and the activity log: what the loop decides with;
 * `.git/hooks` and `.git/config` name programs a person's next `git` runs (hooks, `core.fsmonitor`, aliases,
 * filters); ralph's user state (`$XDG_STATE_HOME/ralph/`) holds the trust records, the claim mirrors and the guard's
 * gate state. The exceptions are the files the agent is asked to write (the handoff, its notes, the acceptance report,
 * a policy proposal) and the folders its own tools write (`ralph gate`'s artifacts, cursor-agent's config folder):
 * nothing there is trusted by the engine. (The mounts realise `.ralph/` as read-only entries in a folder that stays
 * writable, so the agent's files need not exist beforehand: agents/spawn.ts `prepareProtected`.)
 */
export const PROTECTED_PATHS: readonly ProtectedPathRule[] = [
  { root: 'workspace', rel: RALPH_DIR, what: "ralph's folder: the command policy, config, run folders, gate verdicts" },
  { root: 'gitCommonDir', rel: 'hooks', what: 'git hooks (run by the next git commit, as you)' },
  { root: 'gitCommonDir', rel: 'config', what: 'git config (core.fsmonitor, aliases, filters run by git)' },
  { root: 'userState', rel: '', what: "ralph's user state: trust records, claim mirrors, the guard's gate state" },
];

/** Files under `.ralph/` the agent may write (with Write / Edit / MultiEdit, or a shell). */
export const AGENT_WRITABLE_RALPH_FILES = [
  'handoff.md',
  'errors.log',
  'guardrails.md',
  'diagnosis.md',
  'progress.md',
  'acceptance-report.md',
  'policy-proposal',
] as const;

/** Folders under `.ralph/` the agent's own tools write: `ralph gate`'s artifacts and locks, cursor-agent's config. */
export const AGENT_WRITABLE_RALPH_DIRS = ['gates', 'cursor-config'] as const;

/** One entry of {@link PROTECTED_PATHS}: a path relative to one of three roots. */
export interface ProtectedPathRule {
  /** `workspace`: the folder; `gitCommonDir`: its git directory (a linked worktree's common one); `userState`: `$XDG_STATE_HOME/ralph`. */
  root: 'workspace' | 'gitCommonDir' | 'userState';
  /** Relative to the root (`''`: the root itself). */
  rel: string;
  what: string;
}

/** The protected paths of one workspace, absolute: read-only ones and the writable exceptions inside them. */
export interface ProtectedLayout {
  readOnly: { path: string; what: string }[];
  /** Inside a read-only path; files and folders, whether they exist yet or not. */
  writable: { path: string; kind: 'file' | 'dir' }[];
}

/**
 * {@link PROTECTED_PATHS} for `workspace` (absolute). Reads `<workspace>/.git` when it is a file (a linked worktree:
 * `gitdir:` and its `commondir`); without a git directory the git entries are left out.
 */
export function protectedPaths(workspace: string, env: NodeJS.ProcessEnv = process.env): ProtectedLayout {
  const git = gitCommonDir(workspace);
  const roots = { workspace, gitCommonDir: git, userState: userStateDir(env) };
  const readOnly: ProtectedLayout['readOnly'] = [];
  for (const r of PROTECTED_PATHS) {
    const root = roots[r.root];
    if (root) readOnly.push({ path: r.rel ? path.join(root, r.rel) : root, what: r.what });
  }
  const ralph = path.join(workspace, RALPH_DIR);
  return {
    readOnly,
    writable: [
      ...AGENT_WRITABLE_RALPH_FILES.map((f) => ({ path: path.join(ralph, f), kind: 'file' as const })),
      ...AGENT_WRITABLE_RALPH_DIRS.map((d) => ({ path: path.join(ralph, d), kind: 'dir' as const })),
    ],
  };
}

/** The git directory holding hooks and config: `<ws>/.git`, or a linked worktree's common directory; null without. */
function gitCommonDir(workspace: string): string | null {
  const dotGit = path.join(workspace, '.git');
  try {
    if (statSync(dotGit).isDirectory()) return dotGit;
    const m = /^gitdir:\s*(.+?)\s*$/m.exec(readFileSync(dotGit, 'utf8').slice(0, 4096));
    if (!m) return null;
    const gitDir = path.resolve(workspace, m[1]!);
    try {
      return path.resolve(gitDir, readFileSync(path.join(gitDir, 'commondir'), 'utf8').trim());
    } catch {
      return gitDir;
    }
  } catch {
    return null;
  }
}
