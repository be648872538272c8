import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { runGit, runGitSync } from '../../../src/core/git/git';
import {
  gitWorkerActive,
  gitWorkerReady,
  holdGitWorker,
  LOST_ANSWER,
  LOST_CHILD,
  spawnInWorker,
} from '../../../src/core/git/gitWorker';
import { headSha, ensureRalphIgnored } from '../../../src/core/git/gitState';
import { resolveActor, resolveActorAsync } from '../../../src/core/sources/actor';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';
import { spawnsDuring } from '../../support/processes';

/** Breaker-s5 rows 21, 22: ralph's own git (git/git.ts) runs none of the programs a repository's config names. */
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
      assert.deepEqual(
        ['fsmonitor', 'hook', 'gpg'].filter((n) => fs.existsSync(marker(n))),
        [],
      );
    });
  });

  describe('from the helper process a parallel run holds (gitWorker.ts; issue 19 bench)', () => {
    let t: TempFolder;
    let ws: string;
    beforeEach(() => {
      t = makeTempFolder('ralph-gitw-');
      ws = path.join(t.dir, 'ws');
      fs.mkdirSync(ws);
      const g = (...args: string[]) => assert.equal(spawnSync('git', args, { cwd: ws }).status, 0, args.join(' '));
      g('init', '-q', '-b', 'main');
      g('-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '--allow-empty', '-m', 'first line\n\nbody');
    });
    afterEach(() => t.dispose());

    const calls = (dir: string) =>
      Promise.all([
        runGit(dir, ['log', '-1', '--format=%s%n']),
        runGit(dir, ['rev-parse', '--verify', '-q', 'refs/heads/none']),
        runGit(dir, ['no-such-command']),
        runGit(path.join(dir, 'missing'), ['status']),
        runGit(dir, ['status', '--porcelain=v1', '-z', '--untracked-files=all']),
      ]);

    it('answers as git in this thread does (stdout without its final newline, stderr, exit codes), without a spawn in the main thread', async () => {
      fs.writeFileSync(path.join(ws, 'new.txt'), 'x\n');
      const direct = await spawnsDuring(() => calls(ws));
      assert.ok(direct.spawns >= 4, 'control: without the worker, git is spawned by the main thread');
      const release = holdGitWorker();
      let viaWorker: { value: Awaited<ReturnType<typeof calls>>; spawns: number };
      try {
        assert.equal(gitWorkerActive(), true);
        assert.equal(await gitWorkerReady(), true); // starts the helper (one spawn of this thread per run) and waits until it is up
        viaWorker = await spawnsDuring(() => calls(ws));
      } finally {
        await release();
      }
      assert.equal(gitWorkerActive(), false);
      assert.equal(viaWorker.spawns, 0);
      // stderr: git's own for a failed command; for a git that could not start, the worker names the error (execa leaves it empty).
      const strip = (rs: typeof direct.value) =>
        rs.map((r, i) => ({ stdout: r.stdout, exitCode: r.exitCode, stderrEmpty: i === 3 ? null : r.stderr === '' }));
      assert.deepEqual(strip(viaWorker.value), strip(direct.value));
      assert.equal(viaWorker.value[0]!.stdout, 'first line\n');
      assert.equal(viaWorker.value[1]!.exitCode, 1);
      assert.match(viaWorker.value[2]!.stderr, /no-such-command/);
      assert.equal(viaWorker.value[3]!.exitCode, 1);
      assert.match(viaWorker.value[3]!.stderr, /ENOENT/);
      assert.equal(viaWorker.value[4]!.stdout, '?? new.txt\0');
    });

    it('answers a call the helper lost as a failed command and does not run it a second time', async () => {
      const release = holdGitWorker();
      try {
        assert.equal(await gitWorkerReady(), true); // starts the helper and waits until it is up
        const kids = fs
          .readdirSync(`/proc/${process.pid}/task`)
          .flatMap((tid) =>
            fs.readFileSync(`/proc/${process.pid}/task/${tid}/children`, 'utf8').split(' ').filter(Boolean).map(Number),
          );
        const helperPid = kids.find((pid) => {
          try {
            return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[1] === '-e';
          } catch {
            return false;
          }
        });
        assert.ok(helperPid, 'the helper process is a child of this one');
        const marker = path.join(t.dir, 'ran');
        const call = runGit(ws, ['-c', `alias.slow=!echo x >> '${marker}'; sleep 1`, 'slow']);
        for (let i = 0; i < 200 && !fs.existsSync(marker); i++) await new Promise((r) => setTimeout(r, 25));
        process.kill(helperPid, 'SIGKILL');
        const r = await call;
        assert.deepEqual({ exitCode: r.exitCode, stderr: r.stderr }, { exitCode: 1, stderr: LOST_ANSWER });
        assert.equal(
          fs.readFileSync(marker, 'utf8'),
          'x\n',
          'git ran once: the lost call was not run again in this thread',
        );
        assert.equal(gitWorkerActive(), false, 'a failed helper is not used again in this hold');
      } finally {
        await release();
      }
      await new Promise((r) => setTimeout(r, 1200)); // the killed helper's git (sleep 1) ends
    });

    it('starts other programs too (spawnInWorker): pid first, piped or appended output, exit code and signal, spawn errors', async () => {
      const release = holdGitWorker();
      try {
        assert.equal(await gitWorkerReady(), true); // starts the helper and waits until it is up
        const { value: child, spawns } = await spawnsDuring(async () =>
          spawnInWorker('bash', ['-c', 'echo out; echo err >&2; exit 7'], {
            cwd: ws,
            env: process.env,
            stdout: 'pipe',
            stderr: 'pipe',
          }),
        );
        assert.equal(spawns, 0);
        const pid = await child!.pid;
        assert.ok(pid! > 0);
        const out: string[] = [];
        const err: string[] = [];
        child!.stdout!.on('data', (b: Buffer) => out.push(b.toString()));
        child!.stderr!.on('data', (b: Buffer) => err.push(b.toString()));
        assert.deepEqual(await child!.exit, { exitCode: 7, signal: null, spawnError: null });
        assert.deepEqual([out.join(''), err.join('')], ['out\n', 'err\n']);
        // Its own process group (detached), as agents and gates need.
        const log = path.join(t.dir, 'log.txt');
        fs.writeFileSync(log, 'head\n');
        const grouped = spawnInWorker('bash', ['-c', 'echo "$$ $(ps -o pgid= -p $$)"; kill -TERM $$'], {
          cwd: ws,
          env: process.env,
          stdout: { append: log },
          stderr: 'stdout',
        })!;
        const gpid = await grouped.pid;
        assert.deepEqual(await grouped.exit, { exitCode: null, signal: 'SIGTERM', spawnError: null });
        assert.equal(fs.readFileSync(log, 'utf8').replace(/ +/g, ' '), `head\n${gpid} ${gpid}\n`);
        const missing = spawnInWorker(path.join(t.dir, 'no-such-program'), [], {
          cwd: ws,
          env: process.env,
          stdout: 'pipe',
          stderr: 'pipe',
        })!;
        assert.equal(await missing.pid, undefined);
        assert.match((await missing.exit).spawnError!, /ENOENT/);
      } finally {
        await release();
      }
      assert.equal(
        spawnInWorker('true', [], { cwd: ws, env: process.env, stdout: 'ignore', stderr: 'ignore' }),
        null,
        'not held: start it here',
      );
    });

    it('reports a child as ended when the helper is lost, and delivers no output before its pid', async () => {
      const release = holdGitWorker();
      try {
        assert.equal(await gitWorkerReady(), true); // starts the helper and waits until it is up
        const child = spawnInWorker('bash', ['-c', 'echo early; exec sleep 30'], {
          cwd: ws,
          env: process.env,
          stdout: 'pipe',
          stderr: 'pipe',
        })!;
        let pidKnown = false;
        const early = new Promise<boolean>((resolve) => child.stdout!.once('data', () => resolve(pidKnown)));
        const pid = await child.pid;
        pidKnown = true;
        assert.equal(await early, true, 'output came after the pid was known');
        const kids = fs
          .readdirSync(`/proc/${process.pid}/task`)
          .flatMap((tid) =>
            fs.readFileSync(`/proc/${process.pid}/task/${tid}/children`, 'utf8').split(' ').filter(Boolean).map(Number),
          );
        const helperPid = kids.find((p) => {
          try {
            return fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0')[1] === '-e';
          } catch {
            return false;
          }
        });
        process.kill(helperPid!, 'SIGKILL');
        assert.deepEqual(await child.exit, { exitCode: null, signal: null, spawnError: LOST_CHILD });
        process.kill(-pid!, 'SIGKILL'); // not started through setpriv here: the caller ends its group, as the engine does
      } finally {
        await release();
      }
    });

    it("delivers the output that came with a child's pid when the helper dies in that same turn", async () => {
      const release = holdGitWorker();
      let pid: number | undefined;
      try {
        assert.equal(await gitWorkerReady(), true);
        const kids = fs
          .readdirSync(`/proc/${process.pid}/task`)
          .flatMap((tid) =>
            fs.readFileSync(`/proc/${process.pid}/task/${tid}/children`, 'utf8').split(' ').filter(Boolean).map(Number),
          );
        const helperPid = kids.find((p) => {
          try {
            return fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0')[1] === '-e';
          } catch {
            return false;
          }
        })!;
        const child = spawnInWorker('bash', ['-c', 'echo early; exec sleep 30'], {
          cwd: ws,
          env: process.env,
          stdout: 'pipe',
          stderr: 'pipe',
        })!;
        const out: string[] = [];
        child.stdout!.on('data', (b: Buffer) => out.push(b.toString()));
        void child.pid.then((p) => {
          pid = p;
        });
        // This thread is blocked while the helper starts the child and sends its pid and output, then dies: its end
        // and those messages are read in the same turn (the output is held a turn after the pid).
        const sleep = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
        sleep(1500);
        process.kill(helperPid, 'SIGKILL');
        sleep(200);
        const e = await child.exit;
        assert.equal(e.spawnError, LOST_CHILD);
        assert.ok(pid! > 0);
        assert.equal(out.join(''), 'early\n', 'the output received before the helper died');
      } finally {
        if (pid)
          try {
            process.kill(-pid, 'SIGKILL');
          } catch {
            /* gone */
          }
        await release();
      }
    });

    it("resolveActorAsync gives resolveActor's answer (FLOW_ACTOR, user.email, user.name, $USER), with and without the helper", async () => {
      const g = (...args: string[]) => assert.equal(spawnSync('git', args, { cwd: ws }).status, 0, args.join(' '));
      const both = async (env: NodeJS.ProcessEnv) => [resolveActor(ws, env), await resolveActorAsync(ws, env)];
      // This repository's settings only (not the machine's ~/.gitconfig).
      const saved = {
        GIT_CONFIG_GLOBAL: process.env.GIT_CONFIG_GLOBAL,
        GIT_CONFIG_NOSYSTEM: process.env.GIT_CONFIG_NOSYSTEM,
      };
      Object.assign(process.env, { GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' });
      try {
        assert.deepEqual(await both({ USER: 'u' }), ['u', 'u']);
        assert.deepEqual(await both({}), ['unknown', 'unknown']);
        assert.deepEqual(await both({ FLOW_ACTOR: ' bot ' }), ['bot', 'bot']);
        g('config', 'user.name', 'Only Name');
        assert.deepEqual(await both({ USER: 'u' }), ['Only Name', 'Only Name']);
        g('config', 'user.email', 'e@example.org');
        assert.deepEqual(await both({ USER: 'u' }), ['e@example.org', 'e@example.org']);
        const release = holdGitWorker({ start: true });
        try {
          assert.equal(await gitWorkerReady(), true);
          const { value, spawns } = await spawnsDuring(() => resolveActorAsync(ws, {}));
          assert.deepEqual([value, spawns], ['e@example.org', 0]);
        } finally {
          await release();
        }
      } finally {
        for (const [k, v] of Object.entries(saved))
          if (v === undefined) delete process.env[k];
          else process.env[k] = v;
      }
    });

    it('nests holds: git goes through the worker until the last holder lets go', async () => {
      const a = holdGitWorker();
      const b = holdGitWorker();
      await a();
      await a();
      assert.equal(gitWorkerActive(), true);
      // The first call starts the helper and, not waiting for its start-up, runs git here; once it is up, git goes there.
      assert.equal(
        (await spawnsDuring(() => runGit(ws, ['rev-parse', 'HEAD']))).spawns,
        2,
        'the helper starts, git runs here',
      );
      assert.equal(await gitWorkerReady(), true);
      assert.equal((await spawnsDuring(() => runGit(ws, ['rev-parse', 'HEAD']))).spawns, 0);
      await b();
      assert.equal(gitWorkerActive(), false);
      assert.equal((await spawnsDuring(() => runGit(ws, ['rev-parse', 'HEAD']))).spawns, 1);
    });
  });
});
