import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { gitArgv, RALPH_GIT_CONFIG, runGit, runGitSync } from '../../../src/core/process/git';
import { headSha, ensureRalphIgnored } from '../../../src/core/loop/git';
import { resolveActor } from '../../../src/core/sources/actor';
import { repoRoot } from '../../support/repoRoot';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

function tsFiles(dir: string): string[] {
  return fs.readdirSync(dir, { recursive: true }).map(String).filter((f) => f.endsWith('.ts')).map((f) => path.join(dir, f));
}

/**
 * Breaker-s5 rows 21, 22: every git command ralph runs goes through process/git.ts, which turns off the programs a
 * repository's config can name (fsmonitor, hooks, signing, pager).
 */
describe("ralph's own git commands (process/git.ts)", () => {
  it('builds the argv with the overrides before the command', () => {
    assert.deepEqual(gitArgv(['status', '--porcelain']), [
      '--no-pager', '-c', 'core.fsmonitor=false', '-c', 'core.hooksPath=/dev/null', '-c', 'commit.gpgSign=false', '-c', 'tag.gpgSign=false', 'status', '--porcelain',
    ]);
    assert.deepEqual(RALPH_GIT_CONFIG.map((c) => c.split('=')[0]), ['core.fsmonitor', 'core.hooksPath', 'commit.gpgSign', 'tag.gpgSign']);
  });

  it('is the only place in src/ that spawns git (no execa/spawn/execFile of "git" elsewhere)', () => {
    const spawnGit = /\b(?:execa|execaSync|spawn|spawnSync|execFile|execFileSync|exec|execSync|fork)\s*\(\s*(['"`])(?:[^'"`]*\/)?git\1/;
    const shellGit = /\b(?:exec|execSync)\s*\(\s*(['"`])git\s/;
    const offenders = tsFiles(path.join(repoRoot, 'src'))
      .filter((f) => !f.endsWith(path.join('core', 'process', 'git.ts')))
      .filter((f) => { const text = fs.readFileSync(f, 'utf8'); return spawnGit.test(text) || shellGit.test(text); })
      .map((f) => path.relative(repoRoot, f));
    assert.deepEqual(offenders, []);
  });

  describe('in a repository whose config names programs', () => {
    let t: TempFolder;
    let ws: string;
    const marker = (name: string) => path.join(t.dir, `ran-${name}`);
    beforeEach(() => {
      t = makeTempFolder('ralph-git-');
      ws = path.join(t.dir, 'ws');
      fs.mkdirSync(ws);
      const g = (...args: string[]) => assert.equal(spawnSync('git', args, { cwd: ws }).status, 0, args.join(' '));
      g('init', '-q');
      g('-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '--allow-empty', '-m', 'init');
      for (const name of ['fsmonitor', 'hook', 'gpg']) {
        t.write(`bin/${name}`, `#!/bin/sh\ntouch "${marker(name)}"\nexit 1\n`);
        fs.chmodSync(path.join(t.dir, 'bin', name), 0o755);
      }
      g('config', 'core.fsmonitor', path.join(t.dir, 'bin', 'fsmonitor'));
      g('config', 'core.hooksPath', path.join(t.dir, 'hooks'));
      g('config', 'commit.gpgSign', 'true');
      g('config', 'gpg.program', path.join(t.dir, 'bin', 'gpg'));
      g('config', 'user.email', 'me@example.org');
      for (const hook of ['post-checkout', 'pre-commit', 'commit-msg', 'post-commit', 'reference-transaction']) {
        t.write(`hooks/${hook}`, `#!/bin/sh\ntouch "${marker('hook')}"\n`);
        fs.chmodSync(path.join(t.dir, 'hooks', hook), 0o755);
      }
      t.write('ws/a.txt', 'a\n');
    });
    afterEach(() => t.dispose());

    it('runs none of them (fsmonitor, hooks, gpg.program) for status, check-ignore, add, commit, checkout', async () => {
      // Control: plain git runs the repository's fsmonitor.
      spawnSync('git', ['status', '--porcelain'], { cwd: ws });
      assert.equal(fs.existsSync(marker('fsmonitor')), true, 'control: git itself runs core.fsmonitor');
      fs.rmSync(marker('fsmonitor'));
      assert.notEqual(await headSha(ws), null);
      await ensureRalphIgnored(ws);
      assert.equal((await runGit(ws, ['status', '--porcelain'])).exitCode, 0);
      assert.equal((await runGit(ws, ['add', '-A'])).exitCode, 0);
      const c = await runGit(ws, ['-c', 'user.name=r', 'commit', '-q', '-m', 'ralph']);
      assert.equal(c.exitCode, 0, c.stderr);
      assert.equal((await runGit(ws, ['checkout', '-q', '-b', 'lane'])).exitCode, 0);
      assert.equal(resolveActor(ws, {}), 'me@example.org');
      assert.equal(runGitSync(ws, ['status']).exitCode, 0);
      assert.deepEqual(['fsmonitor', 'hook', 'gpg'].filter((n) => fs.existsSync(marker(n))), []);
    });
  });
});
