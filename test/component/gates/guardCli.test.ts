import * as assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { repoRoot } from '../../support/repoRoot';
import { startGuardServer, type GuardServer } from '../../../src/core/gates/guardServer';
import { ANALYZER_MISSES } from '../../support/guardTable';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

/** `ralph guard install` and the hook program as processes (issue 17). */

const cli = path.join(repoRoot, 'dist', 'cli.js');
const hook = path.join(repoRoot, 'dist', 'guard-hook.js');

describe('guard: the analyzer misses through dist/guard-hook.js ([deny] git push, [protect] npm run format)', function () {
  this.timeout(60_000);
  let ws: TempFolder;
  let server: GuardServer;
  before(async () => {
    ws = makeTempFolder('ralph-guardmiss-', { ralphDir: true });
    ws.write('.ralph/command-policy', '[deny]\ngit push\n\n[protect]\nnpm run format\n');
    // A run's warm server, as `ralph run` starts it; the hook client forwards each call to it.
    server = await startGuardServer({ workspace: ws.dir, runDir: path.join(ws.dir, '.ralph', 'runs', 'r1') });
  });
  after(async () => {
    await server.close();
    ws.dispose();
  });
  const decide = async (command: string, args: string[]) => {
    const input = JSON.stringify({ tool_name: 'Bash', tool_input: { command }, cwd: ws.dir });
    // Async: the server answers from this process.
    const r = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [hook, ...args], {
        env: { ...process.env, XDG_STATE_HOME: path.join(ws.dir, 'state') },
        cwd: ws.dir,
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('close', (code) => resolve({ code, stdout, stderr }));
      child.stdin.end(input);
    });
    assert.equal(r.code, 0, r.stderr);
    return /"permissionDecision":"(\w+)"/.exec(r.stdout)?.[1] ?? 'allow';
  };
  for (const [command, expect] of ANALYZER_MISSES) {
    it(`${expect}: ${JSON.stringify(command)}`, async () => {
      assert.equal(await decide(command, ['--socket', server.socket]), expect);
    });
  }
  it("a policy rewritten, emptied or deleted mid-run changes nothing: the run's start policy decides", async () => {
    const policy = path.join(ws.dir, '.ralph', 'command-policy');
    const before = fs.readFileSync(policy, 'utf8');
    try {
      for (const [what, change] of [
        ['emptied', () => fs.writeFileSync(policy, '')],
        ['rewritten to allow everything', () => fs.writeFileSync(policy, '[deny]\ndocker\n')],
        ['unparseable', () => fs.writeFileSync(policy, '[bogus section]\n')],
        ['deleted', () => fs.rmSync(policy)],
      ] as const) {
        change();
        assert.equal(await decide('git push', ['--socket', server.socket]), 'deny', what);
        assert.equal(await decide('x=$(npm run format)', ['--socket', server.socket]), 'deny', what);
        assert.equal(await decide('docker ps', ['--socket', server.socket]), 'allow', what);
      }
    } finally {
      fs.writeFileSync(policy, before);
    }
  });
  it('a policy that cannot be read at the start refuses to start the guard (never a guard without it)', async () => {
    const bad = makeTempFolder('ralph-guardbad-', { ralphDir: true });
    try {
      bad.write('.ralph/command-policy', '[deny]\ngit push\n[gates]\nnightly | npm test\n');
      await assert.rejects(
        startGuardServer({ workspace: bad.dir, runDir: path.join(bad.dir, '.ralph', 'runs', 'r1') }),
        /command-policy/,
      );
    } finally {
      bad.dispose();
    }
  });
  it('the standalone hook (no run) decides the same for a row of each kind', async () => {
    for (const [command, expect] of ANALYZER_MISSES.filter((_, k) => k % 12 === 0))
      assert.equal(await decide(command, []), expect, command);
  });
});

describe('guard: ralph guard install and dist/guard-hook.js as processes', function () {
  this.timeout(30_000);
  let ws: TempFolder;
  beforeEach(() => {
    ws = makeTempFolder('ralph-guardcli-', { ralphDir: true });
  });
  afterEach(() => ws.dispose());
  const env = () => ({ ...process.env, XDG_STATE_HOME: path.join(ws.dir, 'state') });
  const run = (args: string[], input = '') =>
    spawnSync(process.execPath, args, { input, encoding: 'utf8', env: env(), cwd: ws.dir });

  it("install is idempotent, keeps the user's settings, and --uninstall removes only ours", () => {
    const user = '{\n  "permissions": { "allow": ["Bash(ls)"] },\n  "hooks": { "Stop": [] }\n}\n';
    ws.write('.claude/settings.json', user);
    assert.equal(run([cli, '-C', ws.dir, 'guard', 'install']).status, 0);
    const once = ws.read('.claude/settings.json');
    const doc = JSON.parse(once) as {
      permissions: unknown;
      hooks: { PreToolUse: { hooks: { command: string }[] }[]; Stop: unknown };
    };
    assert.deepEqual(doc.permissions, { allow: ['Bash(ls)'] });
    assert.equal(doc.hooks.PreToolUse.length, 1);
    assert.match(
      doc.hooks.PreToolUse[0]!.hooks[0]!.command,
      new RegExp(`^${process.execPath.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} \\S*dist/guard-hook\\.js$`),
    );
    const again = run([cli, '-C', ws.dir, 'guard', 'install']);
    assert.match(again.stdout, /already installed/);
    assert.equal(ws.read('.claude/settings.json'), once);
    assert.equal(run([cli, '-C', ws.dir, 'guard', 'install', '--uninstall']).status, 0);
    assert.deepEqual(JSON.parse(ws.read('.claude/settings.json')), JSON.parse(user));
  });

  it('refuses a settings file it cannot parse and leaves it alone', () => {
    ws.write('.claude/settings.json', '{ "a": ');
    const r = run([cli, '-C', ws.dir, 'guard', 'install']);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /settings\.json:1:\d+: not valid JSON/);
    assert.equal(ws.read('.claude/settings.json'), '{ "a": ');
  });

  it('the standalone hook decides in process; bad input and a silent server exit 2', () => {
    ws.write('.ralph/command-policy', '[deny]\ngit push | no\n');
    const input = JSON.stringify({ tool_name: 'Bash', tool_input: { command: 'git push' }, cwd: ws.dir });
    const d = run([hook], input);
    assert.equal(d.status, 0);
    assert.match(d.stdout, /"permissionDecision":"deny"/);
    assert.match(ws.read('.ralph/activity.log'), /GUARD DENY git push → no/);
    assert.equal(run([hook], 'garbage').status, 2);
    const silent = run([hook, '--socket', path.join(ws.dir, 'none.sock')], input);
    assert.equal(silent.status, 2);
    assert.match(silent.stderr, /not answering/);
    const viaCli = run([cli, '-C', ws.dir, 'guard'], input);
    assert.equal(viaCli.status, 0);
    assert.match(viaCli.stdout, /"permissionDecision":"deny"/);
  });

  // breaker-s6 row 28: a cloned repository's untrusted [rewrite] row handed the person's claude its program.
  it("an untrusted policy's [rewrite] is ignored by `ralph guard` and dist/guard-hook.js (note on stderr); after `ralph trust` it applies", () => {
    ws.write('.ralph/command-policy', '[rewrite]\n^npm test$ | echo evil | faster tests\n');
    const input = JSON.stringify({ tool_name: 'Bash', tool_input: { command: 'npm test' }, cwd: ws.dir });
    for (const args of [[hook], [cli, '-C', ws.dir, 'guard']]) {
      const r = run(args, input);
      assert.deepEqual([r.status, r.stdout], [0, ''], args.join(' '));
      assert.match(r.stderr, /command-policy is not trusted here, so these rows are ignored: \[rewrite\] 1 row /);
    }
    assert.equal(run([cli, '-C', ws.dir, 'trust']).status, 0);
    const trusted = run([hook], input);
    assert.match(trusted.stdout, /"updatedInput":\{"command":"echo evil"\}/);
    assert.equal(trusted.stderr, '');
  });

  it('the hook denies (exit 2) when the server hangs, hangs up, or answers anything but a hook answer', async () => {
    const input = JSON.stringify({ tool_name: 'Bash', tool_input: { command: 'touch x' }, cwd: ws.dir });
    // Each server behaviour → the hook's exit code and stderr. Async spawn: the servers live in this process.
    const behaviours: [string, (c: net.Socket) => void, RegExp][] = [
      ['accepts and never answers', () => undefined, /did not answer within 300 ms/],
      ['hangs up without an answer', (c) => c.end(), /sent no answer/],
      ['answers null', (c) => c.end('null\n'), /malformed answer/],
      [
        'answers exit 1 (a non-blocking error for Claude Code)',
        (c) => c.end(`${JSON.stringify({ stdout: '', stderr: '', exitCode: 1 })}\n`),
        /malformed answer/,
      ],
      [
        'answers a non-string stdout',
        (c) => c.end(`${JSON.stringify({ stdout: 5, stderr: '', exitCode: 0 })}\n`),
        /malformed answer/,
      ],
    ];
    for (const [name, behave, reason] of behaviours) {
      const socket = path.join(ws.dir, 'fake.sock');
      const conns: net.Socket[] = [];
      const server = net.createServer((c) => {
        conns.push(c);
        c.once('data', () => behave(c));
      });
      await new Promise<void>((resolve) => server.listen(socket, resolve));
      try {
        const r = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
          const child = spawn(process.execPath, [hook, '--socket', socket], {
            env: { ...env(), RALPH_GUARD_TIMEOUT_MS: '300' },
            cwd: ws.dir,
          });
          let stdout = '';
          let stderr = '';
          child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
          child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
          child.on('close', (code) => resolve({ code, stdout, stderr }));
          child.stdin.end(input);
        });
        assert.equal(r.code, 2, `${name}: ${r.stderr}`);
        assert.equal(r.stdout, '', name);
        assert.match(r.stderr, reason, name);
      } finally {
        for (const c of conns) c.destroy();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    }
  });
});
