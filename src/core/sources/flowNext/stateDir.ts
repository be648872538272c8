import { existsSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';

/** Where flow-next keeps runtime task state, and why (seed-systems.md §2.4). */
export interface FlowStateLocation {
  /** Folder holding `tasks/<id>.state.json`. */
  dir: string;
  /** `env`: `FLOW_STATE_DIR`; `git`: `<git-common-dir>/flow-state`; `local`: `.flow/state` outside git. */
  origin: 'env' | 'git' | 'local';
}

/**
 * Resolves flow-next's state folder like flowctl: `FLOW_STATE_DIR` (relative to the folder) if set, else
 * `<git rev-parse --git-common-dir>/flow-state`, else `.flow/state`. The git common dir is found without
 * spawning git: the nearest `.git` above `folder`; a `.git` file (`gitdir: X`, a worktree) leads to X, whose
 * `commondir` file names the shared dir. Pure file reads, so `ralph status` stays fast.
 */
export function resolveFlowStateDir(folder: string, env: NodeJS.ProcessEnv = process.env): FlowStateLocation {
  if (env.FLOW_STATE_DIR) return { dir: path.resolve(folder, env.FLOW_STATE_DIR), origin: 'env' };
  const common = gitCommonDir(folder);
  if (common) return { dir: path.join(common, 'flow-state'), origin: 'git' };
  return { dir: path.join(folder, '.flow', 'state'), origin: 'local' };
}

/** The git common dir of the repository holding `folder`, or `undefined` outside git. */
export function gitCommonDir(folder: string): string | undefined {
  let dir = path.resolve(folder);
  for (;;) {
    const dotGit = path.join(dir, '.git');
    const st = statSafe(dotGit);
    if (st?.isDirectory()) return dotGit;
    if (st?.isFile()) {
      const m = /^gitdir:\s*(.+)$/m.exec(readFileSync(dotGit, 'utf8'));
      if (!m) return undefined;
      const gitDir = path.resolve(dir, m[1]!.trim());
      const commondirFile = path.join(gitDir, 'commondir');
      return existsSync(commondirFile) ? path.resolve(gitDir, readFileSync(commondirFile, 'utf8').trim()) : gitDir;
    }
    const up = path.dirname(dir);
    if (up === dir) return undefined;
    dir = up;
  }
}

function statSafe(p: string) {
  try {
    return statSync(p);
  } catch {
    return undefined;
  }
}

/** Path of the state file of a task. */
export function taskStateFile(stateDir: string, taskId: string): string {
  return path.join(stateDir, 'tasks', `${taskId}.state.json`);
}
