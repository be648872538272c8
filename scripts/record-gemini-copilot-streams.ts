// Re-records the streams under test/fixtures/streams/<agent>/recorded/ for the Gemini CLI and the Copilot CLI, from
// the real CLIs installed by scripts/setup-test-env.sh (.agent-clis/<agent>/) run headless with the arguments of their
// adapters (src/core/agents/gemini.ts, copilot.ts) against the scripted model server of the tests: the model's replies
// are scripted, everything else (event shapes, tool execution, retries, errors, the result) is the CLI's own output.
// Run with `node scripts/record-streams.mjs gemini copilot` (or one of them); it rewrites the files and their README.md.
// Temp paths, session ids and timestamps stay as the CLI wrote them, except that temp folders read /tmp/ralph-record.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { copilotAdapter } from '../src/core/agents/copilot';
import { geminiAdapter } from '../src/core/agents/gemini';
import type { AgentAdapter } from '../src/core/agents/adapter';
import { agentCliPath } from '../test/support/agentClis';
import { streamFixture } from '../test/support/fixtures';
import { geminiQuota, geminiWrite } from '../test/support/modelDialects/gemini';
import {
  type Turn,
  disconnect,
  hang,
  httpError,
  quota429,
  say,
  shell,
  startModelServer,
  toolUse,
} from '../test/support/modelServer';
import { copilotModelEnv, geminiModelEnv, withoutProviderVars } from '../test/support/scriptedAgentEnv';
import { recordingFolders, runRecorder } from './recordSupport';

type ScriptedAgent = 'gemini' | 'copilot';

interface Scenario {
  file: string;
  what: string;
  script: Turn[];
  /** Extra settings merged into the agent's own settings file (Gemini: `.gemini/settings.json`). */
  settings?: Record<string, unknown>;
  /** No model argument (Gemini: its model router picks the model first). */
  noModel?: boolean;
  /** SIGTERM the CLI's process group once this many agent requests have arrived (a hang in flight). */
  killAfterRequests?: number;
}

const complete = 'Done: hi.txt holds hi. <promise>COMPLETE</promise>';

const scenarios: Record<ScriptedAgent, Scenario[]> = {
  gemini: [
    {
      file: 'shell-success.jsonl',
      what: 'run_shell_command `echo hi > hi.txt && echo hi`, then a final message with the completion tag split over two chunks; usage 1000 then 2000 (+500 cached) input tokens',
      script: [
        shell('echo hi > hi.txt && echo hi', { usage: { input: 1000 } }),
        say(complete, { usage: { input: 2000, cacheRead: 500 } }),
      ],
    },
    {
      file: 'router-write-and-failing-shell.jsonl',
      what: 'no -m: the model router call first (gemini-*-lite, generateContent), then write_file, a shell command exiting 3, and a final text',
      noModel: true,
      script: [
        geminiWrite('notes.txt', 'one\ntwo\n', { usage: { input: 1200 } }),
        shell('echo failing >&2; exit 3', { usage: { input: 1500 } }),
        say('The command failed with exit code 3.', { usage: { input: 1800 } }),
      ],
    },
    {
      file: 'quota-429-terminal.jsonl',
      what: "HTTP 429 RESOURCE_EXHAUSTED whose RetryInfo says 3600s (over the CLI's 300 s retry ceiling): a terminal quota error, result status error, exit 173 (429 & 255)",
      script: [geminiQuota(3600, { times: Infinity })],
    },
    {
      file: 'quota-429-daily.jsonl',
      what: 'HTTP 429 with a QuotaFailure on a per-day quota id: "You have exhausted your daily quota", result status error',
      script: [geminiQuota(60, { times: Infinity, daily: true })],
    },
    {
      file: 'http-500-max-attempts.jsonl',
      what: 'HTTP 500 on every request with general.maxAttempts 2 in settings.json: retried once, then result status error, exit 244 (500 & 255)',
      settings: { general: { maxAttempts: 2 } },
      script: [httpError(500, { times: Infinity, message: 'scripted internal error' })],
    },
    {
      file: 'killed-mid-turn.jsonl',
      what: 'a shell call, then the next reply hangs and the CLI is sent SIGTERM: no result line',
      script: [shell('echo hi', { usage: { input: 1000 } }), hang()],
      killAfterRequests: 2,
    },
    {
      file: 'disconnect-mid-stream.jsonl',
      what: 'the reply stream is cut after its first chunk (the connection destroyed), every time, with general.maxAttempts 1',
      settings: { general: { maxAttempts: 1 } },
      script: [disconnect({ text: 'Partial ans', times: Infinity })],
    },
  ],
  copilot: [
    {
      file: 'shell-success.jsonl',
      what: 'bash `echo hi > hi.txt && echo hi`, then a final message with the completion tag',
      script: [
        shell('echo hi > hi.txt && echo hi', { usage: { input: 1000 } }),
        say(complete, { usage: { input: 2000, cacheRead: 500 } }),
      ],
    },
    {
      file: 'write-and-failing-shell.jsonl',
      what: 'create notes.txt, a shell command exiting 3, then a final text',
      script: [
        toolUse('create', { path: 'notes.txt', file_text: 'one\ntwo\n' }, { usage: { input: 1200 } }),
        shell('echo failing >&2; exit 3', { usage: { input: 1500 } }),
        say('The command failed with exit code 3.', { usage: { input: 1800 } }),
      ],
    },
    {
      file: 'http-429.jsonl',
      what: 'HTTP 429 with retry-after 3600 on every request',
      script: [httpError(429, { times: Infinity, message: 'rate limited', headers: { 'retry-after': '3600' } })],
    },
    {
      file: 'http-429-quota.jsonl',
      what: 'HTTP 429 on every request for a quota an hour from resetting (the message names the reset time: "will reset at <ISO time>"; no retry-after)',
      script: [quota429()],
    },
    {
      file: 'http-500.jsonl',
      what: 'HTTP 500 on every request',
      script: [httpError(500, { times: Infinity, message: 'scripted internal error' })],
    },
    {
      file: 'killed-mid-turn.jsonl',
      what: 'a shell call, then the next reply hangs and the CLI is sent SIGTERM: no result line',
      script: [shell('echo hi', { usage: { input: 1000 } }), hang()],
      killAfterRequests: 2,
    },
  ],
};

const adapters: Record<ScriptedAgent, AgentAdapter> = { gemini: geminiAdapter, copilot: copilotAdapter };

async function record(agent: ScriptedAgent, s: Scenario, outDir: string): Promise<void> {
  const folders = recordingFolders();
  const { cwd, home } = folders;
  const server = await startModelServer(s.script);
  try {
    const m =
      agent === 'gemini' ? geminiModelEnv(home, server.url, s.settings) : copilotModelEnv(home, server.openaiUrl);
    const inv = adapters[agent].invocation({
      prompt: 'Say hi with the shell.',
      cwd,
      binary: agentCliPath(agent),
      ...(s.noModel || !m.model ? {} : { model: m.model }),
      env: { ...withoutProviderVars(), ...m.env },
    });
    const child = spawn(inv.file, inv.args, { cwd, env: inv.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString('utf8');
    });
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString('utf8');
    });
    if (s.killAfterRequests !== undefined)
      void server.waitForAgentRequests(s.killAfterRequests).then(() => {
        // Wait for the CLI to print what it printed for the previous request, then end its whole group.
        setTimeout(() => process.kill(-child.pid!, 'SIGTERM'), 1500);
      });
    const code = await new Promise<string>((resolve) =>
      child.on('close', (c, sig) => resolve(sig ? `signal ${sig}` : `exit ${c}`)),
    );
    const clean = (t: string): string => folders.clean(t);
    fs.writeFileSync(path.join(outDir, s.file), clean(out));
    const lines = out.split('\n').filter(Boolean).length;
    console.log(`${agent}/${s.file}: ${lines} lines, ${code}; stderr ${err.length} bytes`);
    if (process.env.RECORD_VERBOSE) console.log(err.slice(-2000));
    s.what += ` (${code})`;
  } finally {
    await server.close();
    folders.dispose();
  }
}

async function main(): Promise<void> {
  const agents = (process.argv.slice(2).length ? process.argv.slice(2) : ['gemini', 'copilot']) as ScriptedAgent[];
  for (const agent of agents) {
    if (!adapters[agent]) throw new Error(`no recorder for "${agent}" (gemini, copilot)`);
    const bin = agentCliPath(agent);
    if (!fs.existsSync(bin))
      throw new Error(`the ${agent} CLI is missing at ${bin}: run scripts/setup-test-env.sh --agents-only`);
    const outDir = streamFixture(agent, 'recorded');
    fs.mkdirSync(outDir, { recursive: true });
    const only = process.env.RECORD_ONLY;
    for (const s of scenarios[agent]) if (!only || s.file.includes(only)) await record(agent, s, outDir);
    if (only) continue;
    const version = await new Promise<string>((resolve) => {
      const c = spawn(bin, ['--version'], { stdio: ['ignore', 'pipe', 'ignore'] });
      let v = '';
      c.stdout.on('data', (d: Buffer) => {
        v += String(d);
      });
      c.on('close', () => resolve(v.trim().split('\n')[0] ?? ''));
    });
    const readme = [
      `# Recorded ${agent} streams`,
      '',
      `Recorded by \`node scripts/record-streams.mjs ${agent}\` from the real CLI (${version}) run headless with the`,
      `arguments of src/core/agents/${agent}.ts against the scripted model server of the tests on 127.0.0.1`,
      `(${agent === 'gemini' ? 'the Gemini API dialect, test/support/modelDialects/gemini.ts' : 'bring-your-own-key over Chat Completions, test/support/modelDialects/chatCompletions.ts'}).`,
      "The model's replies are scripted; everything else is the CLI's own output. Temp paths read /tmp/ralph-record.",
      '',
      ...scenarios[agent].map((s) => `- \`${s.file}\`: ${s.what}`),
      '',
    ].join('\n');
    fs.writeFileSync(path.join(outDir, 'README.md'), readme);
  }
}

runRecorder(main);
