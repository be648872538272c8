import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { checkGateCall, verdictText } from '../../../src/core/gates/gateCall';
import { handleHook, hookAnswer } from '../../../src/core/gates/guardHook';
import { editGuardSettings } from '../../../src/core/gates/guardInstall';
import { guardSettings, guardSocketPath } from '../../../src/core/gates/guardServer';
import { guardStateDir } from '../../../src/core/gates/guardState';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

const runner = { node: '/usr/bin/node', cliPath: '/opt/ralph/dist/cli.js' };
const call = (command: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    hook_event_name: 'PreToolUse',
    tool_name: 'Bash',
    tool_input: { command, description: 'd', timeout: 60000, ...extra },
    cwd: '/x',
  });

describe('guard hook: input, output and fail-closed errors (agent-streams.md §3)', () => {
  let ws: TempFolder;
  beforeEach(() => {
    ws = makeTempFolder('ralph-guard-', { ralphDir: true });
  });
  afterEach(() => ws.dispose());
  const env = () => ({ HOME: ws.dir, XDG_STATE_HOME: path.join(ws.dir, 'state') });

  it("a deny is Claude Code's deny JSON, exit 0, and a GUARD DENY line in activity.log", async () => {
    ws.write('.ralph/command-policy', '[deny]\ngit push | ask the operator\n');
    const a = await handleHook(call('git push'), {
      workspace: ws.dir,
      env: env(),
      gateRunner: runner,
      writeActivity: true,
    });
    assert.equal(a.exitCode, 0);
    const out = JSON.parse(a.stdout) as { hookSpecificOutput: Record<string, string> };
    assert.deepEqual(
      [out.hookSpecificOutput.hookEventName, out.hookSpecificOutput.permissionDecision],
      ['PreToolUse', 'deny'],
    );
    assert.match(
      out.hookSpecificOutput.permissionDecisionReason!,
      /ask the operator \(\.ralph\/command-policy line 2: git push\)/,
    );
    assert.match(ws.read('.ralph/activity.log'), /^\[\d\d:\d\d:\d\d\] GUARD DENY git push → ask the operator/);
  });

  it('a wrap keeps every field of the input and changes only the command; GUARD REWRITE is logged', async () => {
    ws.write('.ralph/command-policy', '[gates]\nbasic | npm test\n');
    const a = await handleHook(call('npm test', { run_in_background: false }), {
      workspace: ws.dir,
      env: { ...env(), RALPH_TRUST: '1' },
      gateRunner: runner,
      writeActivity: true,
    });
    const out = JSON.parse(a.stdout) as {
      hookSpecificOutput: { permissionDecision: string; updatedInput: Record<string, unknown> };
    };
    assert.equal(out.hookSpecificOutput.permissionDecision, 'allow');
    assert.deepEqual(out.hookSpecificOutput.updatedInput, {
      command: `/usr/bin/node /opt/ralph/dist/cli.js -C ${ws.dir} gate basic --wait-ms 50000 -- 'npm test'`,
      description: 'd',
      timeout: 60000,
      run_in_background: false,
    });
    assert.match(ws.read('.ralph/activity.log'), /GUARD REWRITE npm test → \/usr\/bin\/node/);
  });

  // breaker-s6 row 28: the standalone guard (`ralph guard`, dist/guard-hook.js) used an untrusted policy's [rewrite].
  it("an untrusted policy's [rewrite]/[gates] rows are ignored, [deny] still denies; the note goes to stderr each call and to activity.log once", async () => {
    ws.write(
      '.ralph/command-policy',
      '[rewrite]\n^npm test$ | echo evil | faster\n[gates]\nbasic | make check\n[deny]\ngit push | ask\n',
    );
    const o = { workspace: ws.dir, env: env(), gateRunner: runner, writeActivity: true };
    const a = await handleHook(call('npm test'), o);
    assert.deepEqual([a.exitCode, a.stdout], [0, '']);
    assert.match(
      a.stderr,
      /not trusted here, so these rows are ignored: \[gates\] 1 row, \[rewrite\] 1 row \(\[deny\] and \[protect\] still apply\)/,
    );
    const pinned = await handleHook(call('make check'), o);
    assert.equal(pinned.stdout, '');
    const denied = await handleHook(call('git push'), o);
    assert.match(denied.stdout, /"permissionDecision":"deny"/);
    assert.match(denied.stderr, /not trusted here/);
    assert.equal(
      ws
        .read('.ralph/activity.log')
        .split('\n')
        .filter((l) => l.includes('not trusted here')).length,
      1,
    );
    // Trusted (here for one command by RALPH_TRUST=1; `ralph trust` records the same): the rewrite applies, no note.
    const t = await handleHook(call('npm test'), { ...o, env: { ...env(), RALPH_TRUST: '1' } });
    assert.match(t.stdout, /"updatedInput":\{"command":"echo evil"/);
    assert.equal(t.stderr, '');
    // The engine's server (the run checked trust before it started) passes policyTrusted.
    assert.match((await handleHook(call('npm test'), { ...o, policyTrusted: true })).stdout, /echo evil/);
  });

  it('an allow prints nothing', async () => {
    assert.deepEqual(
      await handleHook(call('ls'), { workspace: ws.dir, env: env(), gateRunner: runner, writeActivity: true }),
      { stdout: '', stderr: '', exitCode: 0 },
    );
  });

  it('a policy error blocks every call (exit 2) and names the file and line', async () => {
    ws.write('.ralph/command-policy', '# policy\n[gates]\nbasic npm test\n');
    const a = await handleHook(call('ls'), { workspace: ws.dir, env: env(), gateRunner: runner, writeActivity: true });
    assert.equal(a.exitCode, 2);
    assert.match(a.stderr, /command-policy:3:1: a \[gates\] row is/);
  });

  it('input that is not a PreToolUse call blocks (exit 2)', async () => {
    for (const raw of ['', 'nope', '{}', '{"tool_name":"Bash"}']) {
      const a = await handleHook(raw, { workspace: ws.dir, env: env(), gateRunner: runner, writeActivity: false });
      assert.equal(a.exitCode, 2, raw);
      assert.match(a.stderr, /Ralph guard: .*blocked/);
    }
  });

  it('records ms timestamps in the external state folder only for allowed calls', async () => {
    const now = 1_700_000_000_123;
    await handleHook(JSON.stringify({ tool_name: 'Write', tool_input: { file_path: path.join(ws.dir, 'src/a.ts') } }), {
      workspace: ws.dir,
      env: env(),
      gateRunner: runner,
      writeActivity: false,
      now: () => now,
    });
    const dir = guardStateDir(ws.dir, env());
    assert.match(dir, new RegExp(`^${path.join(ws.dir, 'state', 'ralph')}/[0-9a-f]{64}$`));
    assert.equal(fs.readFileSync(path.join(dir, 'last-write-ts'), 'utf8'), String(now));
  });

  it('hookAnswer for allow is empty', () => {
    assert.deepEqual(hookAnswer({ kind: 'allow', effects: [] }), { stdout: '', stderr: '', exitCode: 0 });
  });
});

describe("guard install: .claude/settings.json (idempotent, keeps the user's settings)", () => {
  const group = (
    guardSettings({ node: '/n', hook: '/r/dist/guard-hook.js', cli: '/r/dist/cli.js', guard: '/r/dist/guard.js' })
      .hooks as { PreToolUse: object[] }
  ).PreToolUse[0]!;
  const user =
    '{\n  "model": "opus",\n  "hooks": {\n    "PreToolUse": [\n      { "matcher": "Bash", "hooks": [{ "type": "command", "command": "my-hook" }] }\n    ],\n    "Stop": []\n  }\n}\n';

  it('adds our group once, keeping other keys and hooks', () => {
    const once = editGuardSettings('s.json', user, group, false)!;
    const doc = JSON.parse(once) as {
      model: string;
      hooks: { PreToolUse: { hooks: { command: string }[] }[]; Stop: unknown[] };
    };
    assert.equal(doc.model, 'opus');
    assert.deepEqual(doc.hooks.Stop, []);
    assert.deepEqual(
      doc.hooks.PreToolUse.map((g) => g.hooks[0]!.command),
      ['my-hook', '/n /r/dist/guard-hook.js'],
    );
    assert.equal(editGuardSettings('s.json', once, group, false), undefined, 'a second install changes nothing');
  });

  it('uninstall removes only ours', () => {
    const once = editGuardSettings('s.json', user, group, false)!;
    const back = JSON.parse(editGuardSettings('s.json', once, group, true)!) as unknown;
    assert.deepEqual(back, JSON.parse(user));
    assert.equal(editGuardSettings('s.json', user, group, true), undefined);
  });

  it("a hook of the user's that shares our matcher group survives install and --uninstall", () => {
    const mixed = `{ "hooks": { "PreToolUse": [ { "matcher": "Bash", "hooks": [ { "type": "command", "command": "/old/node /old/dist/guard-hook.js" }, { "type": "command", "command": "my-audit" } ] } ] } }\n`;
    type Doc = { hooks?: { PreToolUse: { matcher: string; hooks: { command: string }[] }[] } };
    const installed = JSON.parse(editGuardSettings('s.json', mixed, group, false)!) as Doc;
    assert.deepEqual(
      installed.hooks!.PreToolUse.map((g) => [g.matcher, g.hooks.map((h) => h.command)]),
      [
        ['Bash', ['my-audit']],
        ['Bash|Write|Edit|MultiEdit|NotebookEdit', ['/n /r/dist/guard-hook.js']],
      ],
      "the stale guard entry is replaced, the user's hook kept",
    );
    const removed = JSON.parse(editGuardSettings('s.json', mixed, group, true)!) as Doc;
    assert.deepEqual(removed.hooks!.PreToolUse, [
      { matcher: 'Bash', hooks: [{ type: 'command', command: 'my-audit' }] },
    ]);
  });

  it('creates the file when absent, refuses a file it cannot parse (naming line and column)', () => {
    assert.ok(JSON.parse(editGuardSettings('s.json', undefined, group, false)!));
    assert.throws(() => editGuardSettings('s.json', '{\n  "a": ,\n}', group, false), /s\.json:2:\d+: not valid JSON/);
  });

  it('the installed command names the install\'s node and hook by absolute path (shell-quoted when needed), not "$CLAUDE_PROJECT_DIR" (the hook is not in the project; a missing hook fails open)', () => {
    const hooks = (
      JSON.parse(editGuardSettings('s.json', undefined, group, false)!) as {
        hooks: { PreToolUse: { hooks: { command: string }[] }[] };
      }
    ).hooks.PreToolUse[0]!.hooks;
    assert.equal(hooks[0]!.command, '/n /r/dist/guard-hook.js');
    assert.doesNotMatch(hooks[0]!.command, /CLAUDE_PROJECT_DIR/);
  });
});

describe('gate call: checks and verdict text (§3.10)', () => {
  it('refuses an unknown label and a stale tier pin (64 before anything runs)', () => {
    assert.match(checkGateCall('smoke', 'x')!, /unknown gate label/);
    assert.match(
      checkGateCall('basic', 'npm  test -- --x', { basic: 'npm test' })!,
      /^STALE TIER PIN: .* in \.ralph\/command-policy, not/,
    );
    // New-user try (session 3): a pin from config.json names config.json.
    assert.match(
      checkGateCall('basic', 'npm run x', { basic: 'npm test' }, '"gates" of .ralph/config.json')!,
      /pinned to `npm test` in "gates" of \.ralph\/config\.json, not `npm run x`/,
    );
    assert.equal(checkGateCall('basic', ' npm   test ', { basic: 'npm test' }), undefined);
    assert.equal(checkGateCall('unit', 'anything', { basic: 'npm test' }), undefined);
  });

  it('prints the verdict block', () => {
    const t = verdictText({
      label: 'unit',
      exitCode: 1,
      durationMs: 2400,
      logRelPath: '.ralph/gates/unit-x.log',
      tail: ['a', 'FAIL b'],
      failingLines: ['FAIL b'],
    });
    assert.equal(
      t,
      '=== GATE unit exit=1 duration=2s log=.ralph/gates/unit-x.log latest=.ralph/gates/unit-latest.log ===\n--- tail (last 60 lines) ---\na\nFAIL b\n--- failing-tests (first 80 matches) ---\nFAIL b\n=== END GATE ===\n',
    );
  });

  it('runs node through an Electron binary with ELECTRON_RUN_AS_NODE=1 (VS Code desktop)', () => {
    const s = guardSettings(
      {
        node: '/Applications/Code Helper',
        electron: true,
        hook: '/r/dist/guard-hook.js',
        cli: '/r/dist/cli.js',
        guard: '/r/dist/guard.js',
      },
      '/w/g.sock',
    );
    assert.equal(
      (s.hooks as { PreToolUse: { hooks: { command: string }[] }[] }).PreToolUse[0]!.hooks[0]!.command,
      "ELECTRON_RUN_AS_NODE=1 '/Applications/Code Helper' /r/dist/guard-hook.js --socket /w/g.sock",
    );
  });

  it('keeps socket paths short enough for sun_path', () => {
    assert.equal(guardSocketPath('/w/.ralph/runs/r1'), '/w/.ralph/runs/r1/guard.sock');
    assert.ok(Buffer.byteLength(guardSocketPath(`/${'x'.repeat(150)}`)) <= 100);
  });
});
