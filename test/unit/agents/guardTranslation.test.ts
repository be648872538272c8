import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { copilotAdapter, copilotDenyArgs } from '../../../src/core/agents/copilot';
import { geminiAdapter, geminiGuardPolicy } from '../../../src/core/agents/gemini';
import {
  type SystemSettingsLayer,
  preToolUseCommands,
  withGuardHooks,
  writeGuardSettings,
} from '../../../src/core/agents/guardSettingsFile';
import { opencodeAdapter, opencodeDenyPatterns, opencodeGuardConfig } from '../../../src/core/agents/opencode';
import { QWEN_GUARD_LAYER, qwenAdapter } from '../../../src/core/agents/qwen';
import { parseCommandPolicy } from '../../../src/core/gates/commandPolicy';
import { guardToolName, handleHook, hookAnswer } from '../../../src/core/gates/guardHook';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

const HOOK = { command: "'/usr/bin/node' '/opt/ralph/dist/guard-hook.js' --socket '/ws/.ralph/runs/r1/guard.sock'" };
const SETTINGS = {
  hooks: {
    PreToolUse: [
      { matcher: 'Bash|Write|Edit|MultiEdit|NotebookEdit', hooks: [{ type: 'command', ...HOOK, timeout: 60 }] },
    ],
  },
};
/** A CLI with Gemini CLI's settings layers and hook dialect (its BeforeTool hook, timeouts in ms). */
const GEMINI_LIKE: SystemSettingsLayer = {
  agent: 'gemini',
  settingsVar: 'GEMINI_CLI_SYSTEM_SETTINGS_PATH',
  defaultsVar: 'GEMINI_CLI_SYSTEM_DEFAULTS_PATH',
  defaultPath: () => '/etc/gemini-cli/settings.json',
  event: 'BeforeTool',
  matcher: '^(run_shell_command|write_file|replace)$',
  timeoutUnit: 'ms',
  enableHooks: { hooksConfig: { enabled: true } },
};
const policy = (text: string) => parseCommandPolicy(text, '.ralph/command-policy').policy;
const DENY = policy("[deny]\ngit push | pushing is the operator's job\nrm -rf | no\nnpm run * | no\n");

describe("the guard in each agent CLI's own terms", () => {
  describe("the hook: Gemini CLI and Qwen Code calls read as Claude's, answered in the caller's dialect", () => {
    let ws: TempFolder;
    beforeEach(() => {
      ws = makeTempFolder('ralph-guard-', { ralphDir: true });
      ws.write('.ralph/command-policy', '[deny]\ngit push | ask the operator\n');
    });
    afterEach(() => ws.dispose());
    const runner = { node: '/usr/bin/node', cliPath: '/opt/ralph/dist/cli.js' };
    const hook = (input: Record<string, unknown>) =>
      handleHook(JSON.stringify({ cwd: ws.dir, ...input }), {
        workspace: ws.dir,
        env: { HOME: ws.dir, XDG_STATE_HOME: path.join(ws.dir, 'state') },
        gateRunner: runner,
        writeActivity: false,
      });

    it("maps the shell and file tools of Gemini CLI and Qwen Code to the analyzer's names", () => {
      assert.deepEqual(['run_shell_command', 'write_file', 'replace', 'edit', 'Bash', 'read_file'].map(guardToolName), [
        'Bash',
        'Write',
        'Edit',
        'Edit',
        'Bash',
        'read_file',
      ]);
    });

    it('Gemini BeforeTool: a denied command is `decision: deny` with the reason; an allowed one is `decision: allow`', async () => {
      const denied = await hook({
        hook_event_name: 'BeforeTool',
        tool_name: 'run_shell_command',
        tool_input: { command: 'cd sub && git push origin main' },
      });
      assert.equal(denied.exitCode, 0);
      const out = JSON.parse(denied.stdout) as { decision: string; reason: string };
      assert.equal(out.decision, 'deny');
      assert.match(out.reason, /^Ralph guard: ask the operator/);
      const allowed = await hook({
        hook_event_name: 'BeforeTool',
        tool_name: 'run_shell_command',
        tool_input: { command: 'git status' },
      });
      assert.deepEqual(JSON.parse(allowed.stdout), { decision: 'allow' });
    });

    it("Qwen PreToolUse with its own tool name: Claude's deny JSON", async () => {
      const a = await hook({
        hook_event_name: 'PreToolUse',
        tool_name: 'run_shell_command',
        tool_input: { command: 'git push', is_background: false },
      });
      const out = JSON.parse(a.stdout) as { hookSpecificOutput: Record<string, string> };
      assert.equal(out.hookSpecificOutput.permissionDecision, 'deny');
    });

    it('a rewrite for Gemini is its tool_input override, every other field kept', () => {
      const a = hookAnswer(
        {
          kind: 'rewrite',
          reason: 'r',
          subject: 'npm i',
          updatedInput: { command: 'npm ci', description: 'd' },
          effects: [],
        },
        'BeforeTool',
      );
      assert.deepEqual(JSON.parse(a.stdout), {
        decision: 'allow',
        reason: 'Ralph guard: r',
        hookSpecificOutput: { hookEventName: 'BeforeTool', tool_input: { command: 'npm ci', description: 'd' } },
      });
    });
  });

  describe('Qwen Code: the hook in a system settings file ralph points its variable at', () => {
    let dir: TempFolder;
    beforeEach(() => {
      dir = makeTempFolder('ralph-guard-settings-');
    });
    afterEach(() => dir.dispose());

    it('reads the hook commands of Claude-shaped settings', () => {
      assert.deepEqual(preToolUseCommands(SETTINGS), [{ ...HOOK, timeout: 60 }]);
      assert.deepEqual(preToolUseCommands(undefined), []);
      assert.deepEqual(preToolUseCommands({ hooks: { PreToolUse: [{ hooks: [{ type: 'command' }] }] } }), []);
    });

    it("adds the hook after the user's own, in each CLI's event, matcher and timeout unit, hooks turned on", () => {
      const user = {
        hooksConfig: { enabled: false, notifications: false },
        hooks: { BeforeTool: [{ matcher: 'x', hooks: [{ type: 'command', command: 'mine' }] }] },
        ui: { theme: 'x' },
      };
      const g = withGuardHooks(user, [HOOK], GEMINI_LIKE);
      assert.deepEqual(g.hooksConfig, { enabled: true, notifications: false });
      assert.deepEqual(g.ui, { theme: 'x' });
      const before = (g.hooks as { BeforeTool: { matcher: string; hooks: { timeout: number; command: string }[] }[] })
        .BeforeTool;
      assert.equal(before.length, 2);
      assert.equal(before[0]!.matcher, 'x');
      assert.equal(before[1]!.matcher, '^(run_shell_command|write_file|replace)$');
      assert.deepEqual([before[1]!.hooks[0]!.command, before[1]!.hooks[0]!.timeout], [HOOK.command, 60_000]);
      const q = withGuardHooks(null, [HOOK], QWEN_GUARD_LAYER);
      assert.equal(q.disableAllHooks, false);
      const pre = (q.hooks as { PreToolUse: { hooks: { timeout: number }[] }[] }).PreToolUse;
      assert.equal(pre[0]!.hooks[0]!.timeout, 60);
    });

    it("writes the user's system settings (JSON with comments) with the hook, and keeps the system-defaults file in place", async () => {
      dir.write('etc/settings.json', '{\n  // the admin\'s\n  "general": { "maxAttempts": 2, },\n}\n');
      const userFile = dir.file('etc/settings.json');
      const env = await writeGuardSettings(
        QWEN_GUARD_LAYER,
        SETTINGS,
        { QWEN_CODE_SYSTEM_SETTINGS_PATH: userFile },
        dir.file('run'),
      );
      const file = dir.file('run/qwen-system-settings.json');
      assert.deepEqual(env, {
        QWEN_CODE_SYSTEM_SETTINGS_PATH: file,
        QWEN_CODE_SYSTEM_DEFAULTS_PATH: dir.file('etc/system-defaults.json'),
      });
      const written = JSON.parse(dir.read('run/qwen-system-settings.json')) as Record<string, unknown>;
      assert.deepEqual(written.general, { maxAttempts: 2 });
      assert.equal((written.hooks as { PreToolUse: unknown[] }).PreToolUse.length, 1);
      // Written again for the next start: the file ralph wrote is not read as the user's.
      const again = await writeGuardSettings(
        QWEN_GUARD_LAYER,
        SETTINGS,
        { QWEN_CODE_SYSTEM_SETTINGS_PATH: file, QWEN_CODE_SYSTEM_DEFAULTS_PATH: '/d.json' },
        dir.file('run'),
      );
      assert.equal(again.QWEN_CODE_SYSTEM_DEFAULTS_PATH, '/d.json');
      assert.equal(
        (JSON.parse(dir.read('run/qwen-system-settings.json')) as { hooks: { PreToolUse: unknown[] } }).hooks.PreToolUse
          .length,
        1,
      );
    });

    it('no hook, no file and no variable; a user file that does not parse is refused naming it and its line', async () => {
      assert.deepEqual(await writeGuardSettings(GEMINI_LIKE, undefined, {}, dir.file('run')), {});
      dir.write('bad.json', '{\n  "a": 1,\n  "b": \n}\n');
      await assert.rejects(
        writeGuardSettings(
          GEMINI_LIKE,
          SETTINGS,
          { GEMINI_CLI_SYSTEM_SETTINGS_PATH: dir.file('bad.json') },
          dir.file('run'),
        ),
        new RegExp(`${dir.file('bad.json').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: line 4: ValueExpected`),
      );
    });

    it('the platform default when the variable is unset', () => {
      assert.equal(QWEN_GUARD_LAYER.defaultPath('linux'), '/etc/qwen-code/settings.json');
      assert.equal(QWEN_GUARD_LAYER.defaultPath('darwin'), '/Library/Application Support/QwenCode/settings.json');
      assert.ok(qwenAdapter.guardHook);
    });
  });

  describe('Gemini CLI: [deny] rows as policy-engine rules in a --policy file', () => {
    let dir: TempFolder;
    beforeEach(() => {
      dir = makeTempFolder('ralph-guard-policy-');
    });
    afterEach(() => dir.dispose());

    it('one deny rule per row on run_shell_command, the row as commandPrefix, its reason as the message', () => {
      const text = geminiGuardPolicy(policy('[deny]\ngit push | the "operator"\n'));
      assert.equal(
        text,
        [
          '[[rule]]',
          'toolName = "run_shell_command"',
          'commandPrefix = "git push"',
          'decision = "deny"',
          'priority = 999',
          'denyMessage = "Ralph guard: the \\"operator\\" (.ralph/command-policy line 2: git push)"',
          '',
        ].join('\n'),
      );
      assert.equal(geminiGuardPolicy(null), '');
    });

    it('prepareGuard writes the file into the run folder and passes it with --policy before the extra arguments', async () => {
      const g = await geminiAdapter.prepareGuard!({ settings: undefined, policy: DENY, env: {}, dir: dir.file('run') });
      assert.deepEqual(g.args, [`--policy=${dir.file('run/gemini-policy.toml')}`]);
      assert.equal((dir.read('run/gemini-policy.toml').match(/\[\[rule\]\]/g) ?? []).length, 3);
      const inv = geminiAdapter.invocation({
        prompt: 'p',
        cwd: '/ws',
        baseEnv: {},
        guardArgs: g.args,
        extraArgs: ['--x'],
      });
      assert.deepEqual(inv.args.slice(-3), [g.args![0], '--x', '--prompt=p']);
      assert.deepEqual(
        await geminiAdapter.prepareGuard!({ settings: undefined, policy: null, env: {}, dir: '/x' }),
        {},
      );
    });
  });

  describe('opencode: [deny] rows as permission.bash deny patterns in OPENCODE_CONFIG_CONTENT', () => {
    it('the command alone and with arguments, a prefix with a wildcard character left out', () => {
      assert.deepEqual(opencodeDenyPatterns(DENY), ['git push', 'git push *', 'rm -rf', 'rm -rf *']);
      assert.deepEqual(opencodeDenyPatterns(null), []);
    });

    it("after the user's own rules in the variable (the last match wins), a one-word rule becoming the * rule", () => {
      const user = JSON.stringify({ model: 'm/x', permission: { edit: 'ask', bash: 'ask' } });
      assert.deepEqual(JSON.parse(opencodeGuardConfig(user, ['git push', 'git push *'])), {
        model: 'm/x',
        permission: { edit: 'ask', bash: { '*': 'ask', 'git push': 'deny', 'git push *': 'deny' } },
      });
      const reordered = JSON.parse(
        opencodeGuardConfig(JSON.stringify({ permission: { bash: { 'git push': 'allow', '*': 'allow' } } }), [
          'git push',
        ]),
      ) as { permission: { bash: Record<string, string> } };
      assert.deepEqual(Object.entries(reordered.permission.bash), [
        ['*', 'allow'],
        ['git push', 'deny'],
      ]);
      assert.deepEqual(JSON.parse(opencodeGuardConfig(undefined, ['x'])), { permission: { bash: { x: 'deny' } } });
      assert.throws(() => opencodeGuardConfig('{model:', ['x']), /OPENCODE_CONFIG_CONTENT is not JSON/);
    });

    it('prepareGuard sets the variable only when the policy has rows it can express', async () => {
      const none = await opencodeAdapter.prepareGuard!({ settings: undefined, policy: null, env: {}, dir: '/x' });
      assert.deepEqual(none, {});
      const g = await opencodeAdapter.prepareGuard!({ settings: undefined, policy: DENY, env: {}, dir: '/x' });
      assert.deepEqual(JSON.parse(g.env!.OPENCODE_CONFIG_CONTENT!), {
        permission: { bash: { 'git push': 'deny', 'git push *': 'deny', 'rm -rf': 'deny', 'rm -rf *': 'deny' } },
      });
    });
  });

  describe('Copilot CLI: [deny] rows as --deny-tool shell rules', () => {
    it('a command and at most one subcommand, placed before the extra arguments', async () => {
      assert.deepEqual(copilotDenyArgs(DENY), ['--deny-tool=shell(git push)']);
      const g = await copilotAdapter.prepareGuard!({ settings: undefined, policy: DENY, env: {}, dir: '/x' });
      const inv = copilotAdapter.invocation({
        prompt: 'p',
        cwd: '/ws',
        baseEnv: {},
        guardArgs: g.args,
        extraArgs: ['--x'],
      });
      assert.deepEqual(inv.args, [
        '--output-format',
        'json',
        '--allow-all-tools',
        '--deny-tool=shell(git push)',
        '--x',
        '--prompt=p',
      ]);
    });
  });
});
