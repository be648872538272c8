import type * as ChildProcess from 'node:child_process';
import { execa } from 'execa';
import { gitWorkerActive, runGitInWorker } from './gitWorker';

/**
 * `node:child_process`, loaded at the first git call: `ralph status` without a cache never spawns git, and loading
 * the module (and `net`, `stream` behind it) costs it ~5 ms. Read from the module object at each
 * call, as before, so snapshotCache's recorder still sees the start.
 */
function childProcess(): typeof ChildProcess {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('node:child_process') as typeof ChildProcess;
}

/**
 * Every git command ralph itself runs goes through here (the attack: a `core.fsmonitor` that ticks a box after the
 * run): a cloned repository's `.git/config` (or an agent's `git config`) can name programs git runs on its own —
 * `core.fsmonitor` on almost any command that looks at the work tree (status, add, check-ignore …), hooks on checkout,
 * commit, merge and any ref update (`reference-transaction`), `gpg.program` when `commit.gpgSign` is set, `core.pager`.
 * Ralph runs git outside any iteration's containment (at a run's start, between iterations, in the parallel
 * dispatcher), so such a program would run as the user, unseen by trust. Command-line `-c` wins over every config file
 * (git-config(1) "FILES"), includes and `includeIf` too, so these settings turn all of that off:
 *
 * - `core.fsmonitor=false`: no fsmonitor hook or daemon (git-config(1) core.fsmonitor: a boolean since git 2.36,
 *   a hook path before; `false` then runs /bin/false, which only makes git scan);
 * - `core.hooksPath=/dev/null`: no hook at all (githooks(5)); the parallel dispatcher's lane commits and merges
 *   already pass `--no-verify`, which skips only pre-commit and commit-msg;
 * - `commit.gpgSign=false`, `tag.gpgSign=false`: ralph's own lane commits and merge commits are never signed, so
 *   `gpg.program` / `gpg.ssh.program` are never run (sign them yourself when you merge the feature branch);
 * - `--no-pager`: no `core.pager` (git starts none without a terminal anyway).
 *
 * Not closed by `-c` (no switch turns them off): clean/smudge/process filters and merge drivers named
 * by `.gitattributes`, which the parallel dispatcher's `git add -A`, `worktree add` and `merge` can run.
 */
export const RALPH_GIT_CONFIG: readonly string[] = [
  'core.fsmonitor=false',
  'core.hooksPath=/dev/null',
  'commit.gpgSign=false',
  'tag.gpgSign=false',
];

/** The argv (after `git`) of one of ralph's git commands: `--no-pager`, the {@link RALPH_GIT_CONFIG} overrides, then `args`. Pure. */
export function gitArgv(args: readonly string[]): string[] {
  return ['--no-pager', ...RALPH_GIT_CONFIG.flatMap((c) => ['-c', c]), ...args];
}

/**
 * The arguments (after `git`) of a quiet fetch of `refspec` (one, or several in one fetch) from `remote`: no tags, no
 * FETCH_HEAD, and no automatic gc or maintenance afterwards (a lane's fetch runs once per story, in a repository that
 * a run or a worker keeps busy; gc there is seconds of CPU at an arbitrary moment). `prune`: refs the refspecs map to
 * that the remote no longer has are removed. Pure.
 */
export function fetchRefArgs(remote: string, refspec: string | readonly string[], prune = false): string[] {
  return [
    '-c',
    'gc.auto=0',
    '-c',
    'maintenance.auto=false',
    'fetch',
    '-q',
    '--no-tags',
    '--no-write-fetch-head',
    ...(prune ? ['--prune'] : []),
    remote,
    ...(typeof refspec === 'string' ? [refspec] : refspec),
  ];
}

/** What a git command printed and its exit code (1 when it could not be started or was killed). */
export interface GitResult {
  stdout: string;
  stderr: string;
  exitCode: number;
}

/** The environment added to every git command ralph runs: never prompt (no terminal to answer on). */
const GIT_ENV = { GIT_TERMINAL_PROMPT: '0' };

/**
 * Runs `git <gitArgv(args)>` in `cwd` (stdin closed); never throws for a non-zero exit. While a parallel run holds
 * the git worker (gitWorker.ts), git is started from its thread, so that the main thread does not wait for the fork;
 * `direct`: from this thread all the same (a call that should not wait for the helper's start-up).
 */
export async function runGit(cwd: string, args: readonly string[], o: { direct?: boolean } = {}): Promise<GitResult> {
  if (!o.direct && gitWorkerActive()) {
    const w = await runGitInWorker(cwd, gitArgv(args), GIT_ENV);
    if (w) return { stdout: w.stdout, stderr: w.stderr, exitCode: w.exitCode };
  }
  const r = await execa('git', gitArgv(args), { cwd, reject: false, stdin: 'ignore', env: GIT_ENV });
  return { stdout: String(r.stdout ?? ''), stderr: String(r.stderr ?? ''), exitCode: r.exitCode ?? 1 };
}

/** {@link runGit}, synchronously, ended after `timeoutMs` (then exit code 1). */
export function runGitSync(cwd: string, args: readonly string[], timeoutMs = 5_000): GitResult {
  const r = childProcess().spawnSync('git', gitArgv(args), {
    cwd,
    encoding: 'utf8',
    timeout: timeoutMs,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...GIT_ENV },
  });
  return { stdout: r.stdout ?? '', stderr: r.stderr ?? '', exitCode: r.status ?? 1 };
}
