import { runGit, runGitSync, type GitResult } from '../git/git';

/** The git settings asked for the actor, in order. */
const ACTOR_KEYS = ['user.email', 'user.name'] as const;

/** The first non-empty answer of `git config` for {@link ACTOR_KEYS} (in order), or undefined. Pure. */
function actorFrom(answers: readonly (GitResult | undefined)[]): string | undefined {
  for (const r of answers) {
    const v = r && r.exitCode === 0 ? r.stdout.trim() : '';
    if (v) return v;
  }
  return undefined;
}

/**
 * Who is acting, as flowctl decides it (seed-systems.md §2.4 "Actor"): env `FLOW_ACTOR`, else
 * `git config user.email`, else `git config user.name`, else `$USER`, else `unknown`.
 * Spawns git at most twice; call it only for operations that claim (start, done, next).
 */
export function resolveActor(folder: string, env: NodeJS.ProcessEnv = process.env): string {
  if (env.FLOW_ACTOR?.trim()) return env.FLOW_ACTOR.trim();
  for (const key of ACTOR_KEYS) {
    const found = actorFrom([runGitSync(folder, ['config', key])]);
    if (found) return found;
  }
  return env.USER?.trim() || 'unknown';
}

/**
 * {@link resolveActor} without blocking this thread: git through git/git.ts `runGit` (in a parallel run, from
 * its helper process; `direct`: from this thread all the same, for a call that should not wait for the helper's
 * start-up), both settings asked at once. Same answer.
 */
export async function resolveActorAsync(
  folder: string,
  env: NodeJS.ProcessEnv = process.env,
  o: { direct?: boolean } = {},
): Promise<string> {
  if (env.FLOW_ACTOR?.trim()) return env.FLOW_ACTOR.trim();
  const answers = await Promise.all(ACTOR_KEYS.map((key) => runGit(folder, ['config', key], o)));
  return actorFrom(answers) ?? (env.USER?.trim() || 'unknown');
}
