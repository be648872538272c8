import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fetchRefArgs, gitArgv, RALPH_GIT_CONFIG } from '../../../src/core/git/git';
import { repoRoot } from '../../support/repoRoot';

function tsFiles(dir: string): string[] {
  return fs
    .readdirSync(dir, { recursive: true })
    .map(String)
    .filter((f) => f.endsWith('.ts'))
    .map((f) => path.join(dir, f));
}

/**
 * Breaker-s5 rows 21, 22: every git command ralph runs goes through git/git.ts, which turns off the programs a
 * repository's config can name (fsmonitor, hooks, signing, pager). The real-git behaviour: test/component/process/git.test.ts.
 */
describe("ralph's own git commands (git/git.ts)", () => {
  it('fetches one ref quietly: no tags, no FETCH_HEAD, no gc or maintenance after it', () => {
    assert.deepEqual(fetchRefArgs('origin', '+refs/heads/a:refs/heads/a'), [
      '-c',
      'gc.auto=0',
      '-c',
      'maintenance.auto=false',
      'fetch',
      '-q',
      '--no-tags',
      '--no-write-fetch-head',
      'origin',
      '+refs/heads/a:refs/heads/a',
    ]);
  });

  it('fetches several refs in one fetch, in the order given', () => {
    const args = fetchRefArgs('origin', ['+refs/heads/a:refs/heads/a', '+refs/heads/b:refs/heads/b']);
    assert.deepEqual(args.slice(-3), ['origin', '+refs/heads/a:refs/heads/a', '+refs/heads/b:refs/heads/b']);
  });

  it("prunes the refs the refspec maps to when asked (a mirror of a remote's branches)", () => {
    const args = fetchRefArgs('origin', '+refs/heads/*:refs/remotes/w/*', true);
    assert.deepEqual(args.slice(-3), ['--prune', 'origin', '+refs/heads/*:refs/remotes/w/*']);
  });

  it('builds the argv with the overrides before the command', () => {
    assert.deepEqual(gitArgv(['status', '--porcelain']), [
      '--no-pager',
      '-c',
      'core.fsmonitor=false',
      '-c',
      'core.hooksPath=/dev/null',
      '-c',
      'commit.gpgSign=false',
      '-c',
      'tag.gpgSign=false',
      'status',
      '--porcelain',
    ]);
    assert.deepEqual(
      RALPH_GIT_CONFIG.map((c) => c.split('=')[0]),
      ['core.fsmonitor', 'core.hooksPath', 'commit.gpgSign', 'tag.gpgSign'],
    );
  });

  it('is the only place in src/ that spawns git (no execa/spawn/execFile of "git" elsewhere)', () => {
    const spawnGit =
      /\b(?:execa|execaSync|spawn|spawnSync|execFile|execFileSync|exec|execSync|fork)\s*\(\s*(['"`])(?:[^'"`]*\/)?git\1/;
    const shellGit = /\b(?:exec|execSync)\s*\(\s*(['"`])git\s/;
    const offenders = tsFiles(path.join(repoRoot, 'src'))
      // gitWorker.ts spawns the argv git.ts's runGit built (gitArgv) from a worker thread; only git.ts calls it (below).
      .filter(
        (f) => !f.endsWith(path.join('core', 'git', 'git.ts')) && !f.endsWith(path.join('core', 'git', 'gitWorker.ts')),
      )
      .filter((f) => {
        const text = fs.readFileSync(f, 'utf8');
        return spawnGit.test(text) || shellGit.test(text);
      })
      .map((f) => path.relative(repoRoot, f));
    assert.deepEqual(offenders, []);
  });

  it('runs the worker thread git only from runGit (so every argv it spawns is gitArgv with the overrides)', () => {
    const callers = tsFiles(path.join(repoRoot, 'src'))
      .filter((f) => !f.endsWith(path.join('core', 'git', 'gitWorker.ts')))
      .filter((f) => /\brunGitInWorker\s*\(/.test(fs.readFileSync(f, 'utf8')))
      .map((f) => path.relative(repoRoot, f));
    assert.deepEqual(callers, [path.join('src', 'core', 'git', 'git.ts')]);
    assert.match(
      fs.readFileSync(path.join(repoRoot, 'src', 'core', 'git', 'git.ts'), 'utf8'),
      /runGitInWorker\(cwd, gitArgv\(args\), GIT_ENV\)/,
    );
  });
});
