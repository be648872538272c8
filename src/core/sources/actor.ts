import { runGitSync } from '../process/git';

/**
 * Who is acting, as flowctl decides it (seed-systems.md §2.4 "Actor"): env `FLOW_ACTOR`, else
 * `git config user.email`, else `git config user.name`, else `$USER`, else `unknown`.
 * Spawns git at most twice; call it only for operations that claim (start, done, next).
 */
export function resolveActor(folder: string, env: NodeJS.ProcessEnv = process.env): string {
  if (env.FLOW_ACTOR?.trim()) return env.FLOW_ACTOR.trim();
  for (const key of ['user.email', 'user.name']) {
    const r = runGitSync(folder, ['config', key]);
    const v = r.exitCode === 0 ? r.stdout.trim() : '';
    if (v) return v;
  }
  return env.USER?.trim() || 'unknown';
}
