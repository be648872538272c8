// Records the streams under test/fixtures/streams/<agent>/recorded/ from the real agent CLIs of .agent-clis/ (installed
// by scripts/setup-test-env.sh) run headless against the scripted model server (test/support/modelServer.ts), with the
// arguments of the agent's adapter (src/core/agents/<agent>.ts): the model's replies are scripted, everything else
// (event shapes, tool execution, retries, usage, the end) is the CLI's own output. Run with
// `node scripts/record-agent-streams.mjs [agent…]` (default: codex opencode qwen); it rewrites the files and a README.md
// per agent. Temp paths in the output read /tmp/ralph-record so that a re-recording changes only what the CLI changed.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { AgentAdapter } from '../src/core/agents/adapter';
import { getAdapter } from '../src/core/agents/registry';
import { AGENT_CLIS, agentCliPath, type InstalledAgent } from '../test/support/agentClis';
import { type AgentModelEnv, codexModelEnv, opencodeModelEnv, qwenModelEnv } from '../test/support/agentEnv';
import { streamFixture } from '../test/support/fixtures';
import { type Turn, hang, httpError, quota429, say, shell, startModelServer } from '../test/support/modelServer';
import { recordingFolders, runRecorder } from './recordSupport';

const MARK = '<promise>COMPLETE</promise>';

interface Scenario {
  file: string;
  what: string;
  script: Turn[];
  prompt?: string;
  /** Kill the CLI once this many agent requests arrived (a turn left hanging). */
  killAfterRequests?: number;
  /** Agents this scenario is not recorded for, with why (listed in their README). */
  skip?: Partial<Record<InstalledAgent, string>>;
}

const usage = { input: 1000, cacheRead: 200, output: 50 };

const scenarios: Scenario[] = [
  {
    file: 'tool-shell-success.jsonl',
    what: `a shell call (\`echo hello-from-shell > hello.txt && cat hello.txt\`, really run) then a final message with ${MARK}; usage 1000 uncached + 200 cached input, 50 output per call`,
    script: [shell('echo hello-from-shell > hello.txt && cat hello.txt', { usage }), say(`Done. ${MARK}`, { usage })],
  },
  {
    file: 'marker-outside-final-message.jsonl',
    what: `${MARK} in the prompt, in a shell output and in reasoning, never in the final message (the completion table test)`,
    prompt: `Work on the task. When it is done say ${MARK}.`,
    script: [
      shell(`echo '${MARK}'`, { usage }),
      { kind: 'text', text: 'Not done yet: the tests still fail.', reasoning: `Should I say ${MARK}? No.`, usage },
    ],
  },
  {
    file: 'http-500.jsonl',
    what: 'the server answers every request with HTTP 500 (the CLI retries as its config allows, then fails)',
    script: [httpError(500, { times: Infinity, message: 'scripted server error' })],
  },
  {
    file: 'http-429.jsonl',
    what: 'every request gets HTTP 429 (a rate limit whose message names the wait; no retry-after header, which Codex would wait out)',
    script: [
      httpError(429, {
        times: Infinity,
        message: 'Rate limit reached. Please try again in 20m0s.',
        headers: { 'x-ratelimit-reset-requests': '20m0s' },
      }),
    ],
    skip: { qwen: 'Qwen Code 0.24 keeps retrying a 429 (still retrying after 8 minutes): not recorded' },
  },
  {
    file: 'http-429-quota.jsonl',
    what: 'every request gets HTTP 429 for a quota an hour from resetting (recorded at the time the reset names, minus an hour): Codex\'s `usage_limit_reached` body with `resets_at`, a message with "will reset at <ISO time>" (Qwen Code fails at once on it), `x-ratelimit-reset-*` headers; no retry-after header',
    script: [quota429()],
  },
  {
    file: 'http-401.jsonl',
    what: 'every request gets HTTP 401 (a bad key)',
    script: [httpError(401, { times: Infinity, message: 'Incorrect API key provided' })],
  },
  {
    file: 'killed-mid-turn.jsonl',
    what: 'a shell call, then the second reply never finishes; the CLI was killed (SIGKILL) while waiting',
    script: [shell('echo before-kill', { usage }), hang()],
    killAfterRequests: 2,
  },
];

function modelEnv(agent: InstalledAgent, home: string, openaiUrl: string): AgentModelEnv {
  if (agent === 'codex') return codexModelEnv(home, openaiUrl);
  if (agent === 'opencode') return opencodeModelEnv(home, openaiUrl);
  if (agent === 'qwen') return qwenModelEnv(home, openaiUrl);
  throw new Error(`no recorder set-up for ${agent}`);
}

async function record(agent: InstalledAgent, adapter: AgentAdapter, s: Scenario, outDir: string): Promise<void> {
  const folders = recordingFolders();
  const { cwd, home } = folders;
  const server = await startModelServer(s.script);
  try {
    const m = modelEnv(agent, home, server.openaiUrl);
    const inv = adapter.invocation({
      prompt: s.prompt ?? 'Say hello with the shell.',
      cwd,
      binary: agentCliPath(agent),
      ...(m.model ? { model: m.model } : {}),
      baseEnv: { PATH: process.env.PATH, LANG: 'C.UTF-8' },
      env: m.env,
    });
    const child = spawn(inv.file, inv.args, { cwd, env: inv.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (err += d.toString('utf8')));
    if (s.killAfterRequests !== undefined)
      void server.waitForAgentRequests(s.killAfterRequests).then(() => {
        setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), 1500);
      });
    const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
    const clean = (t: string): string => folders.clean(t);
    fs.writeFileSync(path.join(outDir, s.file), clean(out));
    fs.writeFileSync(path.join(outDir, s.file.replace(/\.jsonl$/, '.stderr.txt')), clean(err).slice(-8000));
    fs.writeFileSync(path.join(outDir, s.file.replace(/\.jsonl$/, '.exit')), `${code}\n`);
    console.log(`${agent}/${s.file}: ${out.split('\n').filter(Boolean).length} lines, exit ${code}`);
  } finally {
    await server.close();
    folders.dispose();
  }
}

async function main(): Promise<void> {
  const agents = (
    process.argv.slice(2).length ? process.argv.slice(2) : ['codex', 'opencode', 'qwen']
  ) as InstalledAgent[];
  for (const agent of agents) {
    const adapter = getAdapter(agent);
    const outDir = streamFixture(agent, 'recorded');
    fs.mkdirSync(outDir, { recursive: true });
    const only = process.env.RECORD_ONLY;
    await Promise.all(
      scenarios
        .filter((s) => (!only || s.file.startsWith(only)) && !s.skip?.[agent])
        .map((s) => record(agent, adapter, s, outDir)),
    );
    const probe = adapter.invocation({ prompt: '<prompt>', cwd: '.', binary: AGENT_CLIS[agent].bin });
    fs.writeFileSync(
      path.join(outDir, 'README.md'),
      [
        `# Recorded ${agent} streams`,
        '',
        `Recorded by \`node scripts/record-agent-streams.mjs ${agent}\` from the real CLI (npm ${AGENT_CLIS[agent].version},`,
        `installed by scripts/setup-test-env.sh) run headless as its adapter starts it (\`${[probe.file, ...probe.args].join(' ')}\`)`,
        'against the scripted model server of test/support/modelServer.ts on 127.0.0.1, configured through the',
        "agent's own config files (test/support/agentEnv.ts). The model's replies are scripted; everything else is the",
        "CLI's own output. Each `.jsonl` has its `.stderr.txt` (tail) and `.exit` (exit code; `null`: killed).",
        'Temp paths read /tmp/ralph-record.',
        '',
        ...scenarios.map((s) => `- \`${s.file}\`: ${s.skip?.[agent] ?? s.what}`),
        '',
      ].join('\n'),
    );
  }
}

runRecorder(main);
