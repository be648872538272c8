import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { runGit, runGitSync } from '../../../src/core/process/git';
import { headSha, ensureRalphIgnored } from '../../../src/core/loop/git';
import { resolveActor } from '../../../src/core/sources/actor';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

/** Breaker-s5 rows 21, 22: ralph's own git (process/git.ts) runs none of the programs a repository's config names. */
describe("ralph's own git commands with the real git", function () {
  this.timeout(60_000);
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
