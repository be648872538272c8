/**
 * The CPU an agent CLI itself spends on one minimal headless turn, as ralph starts it: the adapter's own command line
 * (the prompt, headless JSON output, the approval mode) and the environment and config files a user writes to point
 * the CLI at a model server of their own (test/support/agentEnv.ts, scriptedAgentEnv.ts, more-agents.md), against the
 * scripted model server answering one text reply. This is the baseline of ralph's own CPU per iteration: an iteration
 * cannot cost the agent less. The figure is user + system CPU of the whole process tree (the CLI and every process
 * under it, those it left behind included), read with getrusage(RUSAGE_CHILDREN) in a child-subreaper wrapper.
 */
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Readable } from 'node:stream';
import type { AgentAdapter } from '../src/core/agents/adapter';
import { ralphConfigSchema } from '../src/core/model/config';
import { codexModelEnv, opencodeModelEnv, qwenModelEnv } from '../test/support/agentEnv';
import { scriptedClaudeEnv } from '../test/support/claude';
import { type ModelServer, say, startModelServer } from '../test/support/modelServer';
import { copilotModelEnv, geminiModelEnv } from '../test/support/scriptedAgentEnv';

/** CPU (user + system) and wall time of one process tree, ms. */
export interface TreeCpu {
  cpuMs: number;
  wallMs: number;
  exitCode: number;
}

/**
 * Runs argv[1:] in its own process group under a child subreaper (prctl PR_SET_CHILD_SUBREAPER), so that every
 * descendant, orphaned or not, is reaped here and its CPU lands in RUSAGE_CHILDREN; when the command exits, what is
 * left of its tree is ended (as ralph ends an agent's leftovers) and reaped. Prints {cpuMs, exitCode} as JSON on fd 3.
 * The children reaped before the fork are subtracted: a `python3` that is a shim (pyenv) reaps its own helpers and
 * execs the interpreter, whose RUSAGE_CHILDREN starts with their CPU.
 */
const TREE_CPU_PY = String.raw`
import ctypes, json, os, resource, signal, sys
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)
r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
pid = os.posix_spawnp(sys.argv[1], sys.argv[1:], os.environ, setpgroup=0)
_, status = os.waitpid(pid, 0)
me = str(os.getpid())
while True:
    left = []
    for p in os.listdir('/proc'):
        if p.isdigit():
            try:
                with open('/proc/%s/stat' % p) as f:
                    if f.read().rsplit(')', 1)[1].split()[1] == me: left.append(int(p))
            except OSError:
                pass
    for p in left:
        try: os.kill(p, signal.SIGKILL)
        except OSError: pass
    try: os.killpg(pid, signal.SIGKILL)
    except OSError: pass
    try:
        while True: os.wait()
    except ChildProcessError:
        pass
    if not left: break
r = resource.getrusage(resource.RUSAGE_CHILDREN)
os.write(3, json.dumps({'cpuMs': 1000 * (r.ru_utime + r.ru_stime - r0.ru_utime - r0.ru_stime), 'exitCode': os.waitstatus_to_exitcode(status)}).encode())
`;

/**
 * CPU of the whole tree of `file args` (stdin closed, output discarded), ms. Asynchronous: the scripted model server
 * answering the agent runs in this process.
 */
export async function treeCpu(
  file: string,
  args: string[],
  o: { cwd: string; env: Record<string, string> },
): Promise<TreeCpu> {
  const t0 = performance.now();
  const child = spawn('python3', ['-c', TREE_CPU_PY, file, ...args], {
    cwd: o.cwd,
    env: o.env,
    stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  let report = '';
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  (child.stdio[3] as Readable).on('data', (d: Buffer) => (report += d.toString()));
  const status = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve(code));
  });
  const wallMs = performance.now() - t0;
  if (status !== 0 || !report) throw new Error(`measuring ${file} failed (${status}): ${stderr}`);
  const j = JSON.parse(report) as { cpuMs: number; exitCode: number };
  return { cpuMs: j.cpuMs, wallMs, exitCode: j.exitCode };
}

/** The variables of this process's environment that would point an agent at a real provider or account. */
const PROVIDER_VAR = /^(ANTHROPIC_|CLAUDE_|OPENAI_|CODEX_|GEMINI_|GOOGLE_|COPILOT_|GH_|GITHUB_|OPENCODE_|QWEN_)/;

/** This process's environment without provider variables: the outer machine's accounts never answer. */
function baseEnv(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined && !PROVIDER_VAR.test(e[0])),
  );
}

/** The agent's own environment and config files in `home`, pointing it at `server`; null for an agent without one. */
function modelEnv(
  agent: string,
  home: string,
  server: ModelServer,
): { env: Record<string, string>; model: string } | null {
  switch (agent) {
    case 'claude':
      return { env: { ...scriptedClaudeEnv(server.url, home), GIT_CONFIG_GLOBAL: '/dev/null' }, model: '' };
    case 'codex':
      return codexModelEnv(home, server.openaiUrl);
    case 'gemini':
      return geminiModelEnv(home, server.url);
    case 'opencode':
      return opencodeModelEnv(home, server.openaiUrl);
    case 'qwen':
      return qwenModelEnv(home, server.openaiUrl);
    case 'copilot':
      return copilotModelEnv(home, server.openaiUrl);
    default:
      return null;
  }
}

/** One agent's headless-turn and `--version` CPU, medians of `runs`, ms. */
export interface AgentStartCost {
  turn: TreeCpu;
  version: TreeCpu;
  /** Agent requests the model server received per turn (1 for a turn that went as scripted). */
  requestsPerTurn: number;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const medianOf = (rs: TreeCpu[]): TreeCpu => ({
  cpuMs: median(rs.map((r) => r.cpuMs)),
  wallMs: median(rs.map((r) => r.wallMs)),
  exitCode: Math.max(...rs.map((r) => r.exitCode)),
});

/**
 * The CPU of `bin` (the agent CLI of `adapter`) running one headless turn ("Say done." answered by one text reply,
 * no tools) and running `--version`, each in a fresh HOME with the agent's config pointing at a fresh scripted model
 * server, in a git repository holding one file; medians of `runs`, alternating. Null for an agent with no model env.
 * The HOME and the repository live under `base` (default the OS temporary folder).
 */
export async function agentStartCost(
  adapter: AgentAdapter,
  bin: string,
  runs: number,
  base: string = os.tmpdir(),
): Promise<AgentStartCost | null> {
  const tmp = fs.mkdtempSync(path.join(base, `ralph-bench-turn-${adapter.name}-`));
  const server = await startModelServer([say('Done.', { times: Infinity })]);
  try {
    if (!modelEnv(adapter.name, path.join(tmp, 'probe'), server)) return null;
    const config = ralphConfigSchema.parse({});
    const turns: TreeCpu[] = [];
    const versions: TreeCpu[] = [];
    for (let i = 0; i < runs; i++) {
      const home = path.join(tmp, `home-${i}`);
      const ws = path.join(tmp, `ws-${i}`);
      fs.mkdirSync(home, { recursive: true });
      fs.mkdirSync(ws, { recursive: true });
      fs.writeFileSync(path.join(ws, 'RALPH_TASK.md'), '# Task\n\n- [ ] say done\n');
      spawnSync('git', ['init', '-q'], { cwd: ws });
      const m = modelEnv(adapter.name, home, server)!;
      const inv = adapter.invocation({
        prompt: 'Say done.',
        cwd: ws,
        binary: bin,
        model: m.model,
        permissionMode: config.permissionMode,
        baseEnv: baseEnv(),
        env: m.env,
      });
      const before = server.agentRequests().length;
      const turn = await treeCpu(inv.file, inv.args, { cwd: ws, env: inv.env });
      if (turn.exitCode !== 0 || server.agentRequests().length === before)
        throw new Error(
          `${adapter.name}: the headless turn exited ${turn.exitCode} after ${server.agentRequests().length - before} model requests`,
        );
      turns.push(turn);
      versions.push(await treeCpu(inv.file, ['--version'], { cwd: ws, env: inv.env }));
    }
    return {
      turn: medianOf(turns),
      version: medianOf(versions),
      requestsPerTurn: server.agentRequests().length / runs,
    };
  } finally {
    await server.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}
