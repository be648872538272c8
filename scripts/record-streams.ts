// Re-records the agent streams under test/fixtures/streams/claude/recorded/ from the real Claude Code CLI of this
// repository (node_modules/.bin/claude) run headless against the scripted model server (test/support/modelServer.ts):
// the model's replies are scripted, everything else (event shapes, tool execution, hooks, retries, the result) is the
// CLI's own output. Run with `node scripts/record-streams.mjs`; it rewrites the files and their README.md.
// Temp paths in the output are replaced by /tmp/ralph-record so that a re-recording changes only what the CLI changed.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { claudeAdapter } from '../src/core/agents/claude';
import { claudeBinary, scriptedClaudeEnv, withoutClaudeVars } from '../test/support/claude';
import { streamFixture } from '../test/support/fixtures';
import { type Turn, bash, httpError, say, startModelServer } from '../test/support/modelServer';
import { recordingFolders, runRecorder } from './recordSupport';

const claude = claudeBinary;
const outDir = streamFixture('claude', 'recorded');

interface Scenario {
  file: string;
  what: string;
  script: Turn[];
  env?: Record<string, string>;
  /** A PreToolUse hook denying Bash, which also copies its stdin to `hookStdinFile`. */
  denyHook?: boolean;
  /** Kill the CLI after this many `api_retry` lines (a series that would go on). */
  killAfterRetries?: number;
}

const usage = { input: 1000 };
const scenarios: Scenario[] = [
  {
    file: 'tool-use-bash-success.jsonl',
    what: 'scripted tool_use(Bash `echo hello-from-bash`) then a text reply; Bash really ran; usage 1000 then 2000 input tokens',
    script: [bash('echo hello-from-bash', { usage }), say('Done.', { usage: { input: 2000 } })],
  },
  {
    file: 'pretooluse-hook-deny.jsonl',
    what: 'the same script with a PreToolUse hook (passed with --settings) that denies Bash: tool_result is_error, result.permission_denials',
    script: [bash('echo hello-from-bash', { usage }), say('Done.', { usage: { input: 2000 } })],
    denyHook: true,
  },
  {
    file: 'http-429-max-retries-1.jsonl',
    what: 'the server answers every request with HTTP 429; CLAUDE_CODE_MAX_RETRIES=1: an api_retry line, the "<synthetic>" error text, result api_error, exit 1',
    script: [httpError(429, { times: Infinity, message: 'rate limited' })],
    env: { CLAUDE_CODE_MAX_RETRIES: '1' },
  },
  {
    file: 'http-429-retry-series-killed.jsonl',
    what: 'the same server with CLAUDE_CODE_MAX_RETRIES=4; the CLI was killed after its third api_retry line, so there is no result',
    script: [httpError(429, { times: Infinity, message: 'rate limited' })],
    env: { CLAUDE_CODE_MAX_RETRIES: '4' },
    killAfterRetries: 3,
  },
];

const hookStdinFile = 'pretooluse-hook-stdin.json';

async function record(s: Scenario): Promise<void> {
  const folders = recordingFolders();
  const { tmp, cwd, home } = folders;
  const server = await startModelServer(s.script);
  try {
    let settings: Record<string, unknown> | undefined;
    if (s.denyHook) {
      const hook = path.join(tmp, 'deny-hook.sh');
      const deny = JSON.stringify({
        hookSpecificOutput: {
          hookEventName: 'PreToolUse',
          permissionDecision: 'deny',
          permissionDecisionReason: 'Bash is not allowed here',
        },
      });
      fs.writeFileSync(hook, `#!/bin/sh\ncat > '${path.join(tmp, 'hook-stdin.json')}'\necho '${deny}'\n`, {
        mode: 0o755,
      });
      settings = { hooks: { PreToolUse: [{ matcher: 'Bash', hooks: [{ type: 'command', command: hook }] }] } };
    }
    const inv = claudeAdapter.invocation({
      prompt: 'Say hello with bash.',
      cwd,
      binary: claude,
      permissionMode: 'bypassPermissions',
      ...(settings ? { settings } : {}),
    });
    const env = { ...withoutClaudeVars(), ...scriptedClaudeEnv(server.url, home), ...s.env };
    const child = spawn(inv.file, inv.args, { cwd, env, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    let retries = 0;
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString('utf8');
      retries = (out.match(/"subtype":"api_retry"/g) ?? []).length;
      if (s.killAfterRetries !== undefined && retries >= s.killAfterRetries && out.endsWith('\n'))
        child.kill('SIGKILL');
    });
    const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
    // The CLI also names the folder with its slashes turned into dashes (its projects folder under HOME).
    const clean = (t: string): string => folders.clean(t, { dashed: true });
    fs.writeFileSync(path.join(outDir, s.file), clean(out));
    if (s.denyHook)
      fs.writeFileSync(
        path.join(outDir, hookStdinFile),
        clean(fs.readFileSync(path.join(tmp, 'hook-stdin.json'), 'utf8')),
      );
    console.log(`${s.file}: ${out.split('\n').filter(Boolean).length} lines, exit ${code}`);
  } finally {
    await server.close();
    folders.dispose();
  }
}

async function main(): Promise<void> {
  if (!fs.existsSync(claude)) throw new Error(`the claude CLI is missing at ${claude}: run npm ci`);
  fs.mkdirSync(outDir, { recursive: true });
  const version = await new Promise<string>((resolve) => {
    const c = spawn(claude, ['--version'], { stdio: ['ignore', 'pipe', 'ignore'] });
    let v = '';
    c.stdout.on('data', (d: Buffer) => {
      v += String(d);
    });
    c.on('close', () => resolve(v.trim()));
  });
  for (const s of scenarios) await record(s);
  const readme = [
    '# Recorded Claude Code streams',
    '',
    `Recorded by \`node scripts/record-streams.mjs\` from the real Claude Code CLI (${version}) run headless`,
    '(`claude -p --output-format stream-json --verbose --permission-mode bypassPermissions -- <prompt>`, the arguments',
    'of src/core/agents/claude.ts) against the scripted model server of test/support/modelServer.ts on 127.0.0.1.',
    "The model's replies are scripted; everything else is the CLI's own output. Temp paths read /tmp/ralph-record.",
    '',
    ...scenarios.map((s) => `- \`${s.file}\`: ${s.what}`),
    `- \`${hookStdinFile}\`: the JSON the CLI wrote to the hook's stdin in the pretooluse-hook-deny run (a hook input, not a stream)`,
    '',
  ].join('\n');
  fs.writeFileSync(path.join(outDir, 'README.md'), readme);
}

runRecorder(main);
