/**
 * Per-agent benchmark (`npm run bench` / `node scripts/bench.mjs agents`), for every agent with recorded streams in
 * test/fixtures/streams/<agent>/recorded (the real CLIs against the scripted model server):
 *   - `agents.<agent>.decode_account`: decode + map + account (AgentStream → SessionInspector: ledger, outcome,
 *     counts) over a stream of BENCH_AGENT_STREAM_MB (default 64) MB made by repeating the agent's recorded lines, MB/s,
 *     beside `agents.<agent>.baseline_split_parse` (split lines + JSON.parse each, the same file, the same run) and the
 *     ratio (target ≥ 1×); best of BENCH_RUNS (default 3) fresh child processes per mode, interleaved;
 *   - `agents.<agent>.cpu_per_iteration`: ralph's own CPU (user + system, ms) to decode, map and account one recorded
 *     iteration (the agent's `shell-success`/`tool-use-bash-success` stream), median of 200 runs, beside
 *     `agents.<agent>.cli_startup` (wall ms of `<cli> --version` from .agent-clis/ or node_modules/.bin, best of 3) and
 *     the ratio (target ≤ 10%). An agent whose CLI is not installed gets no start-up figure.
 * Prints one JSON object per line: {"name","value","unit",…}. The generated file is deleted at the end.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { AgentStream } from '../src/core/agents/agentStream';
import { SessionInspector } from '../src/core/agents/inspect';
import { agentAdapters } from '../src/core/agents/registry';
import { streamFixture } from '../test/support/fixtures';
import { repoRoot } from '../test/support/repoRoot';

const MB = 1024 * 1024;
const round = (n: number, d = 2): number => Math.round(n * 10 ** d) / 10 ** d;
const out = (o: Record<string, unknown>): void => console.log(JSON.stringify(o));

interface ChildResult {
  ms: number;
  lines: number;
}

/** Decodes, maps and accounts one stream text, as an iteration does, and summarises it. */
function inspectText(agent: string, text: string): void {
  const adapter = agentAdapters[agent]!;
  const inspector = new SessionInspector({}, adapter);
  const stream = new AgentStream((e) => inspector.apply(e), { adapter });
  stream.push(text);
  stream.end();
  inspector.finish(adapter, stream.stats);
}

async function runOurs(agent: string, file: string): Promise<ChildResult> {
  const adapter = agentAdapters[agent]!;
  const t0 = performance.now();
  const inspector = new SessionInspector({}, adapter);
  const stream = new AgentStream((e) => inspector.apply(e), { adapter });
  for await (const chunk of fs.createReadStream(file, { highWaterMark: 256 * 1024 })) stream.push(chunk as Buffer);
  stream.end();
  inspector.finish(adapter, stream.stats);
  return { ms: performance.now() - t0, lines: stream.stats.jsonLines };
}

async function runBaseline(file: string): Promise<ChildResult> {
  const t0 = performance.now();
  let carry = '';
  let lines = 0;
  for await (const chunk of fs.createReadStream(file, { highWaterMark: 256 * 1024, encoding: 'utf8' })) {
    const parts = (carry + (chunk as string)).split('\n');
    carry = parts.pop() ?? '';
    for (const p of parts)
      if (p) {
        JSON.parse(p);
        lines++;
      }
  }
  if (carry) JSON.parse(carry);
  return { ms: performance.now() - t0, lines };
}

function child(mode: string, agent: string, file: string): ChildResult {
  const r = spawnSync(process.execPath, [__filename, `--child=${mode}`, agent, file], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`child ${mode} ${agent} failed: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as ChildResult;
}

/** The recorded streams of an agent, each file's text. */
function recorded(agent: string): { name: string; text: string }[] {
  const dir = streamFixture(agent, 'recorded');
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.jsonl'))
    .sort()
    .map((f) => ({ name: f, text: fs.readFileSync(path.join(dir, f), 'utf8').trimEnd() + '\n' }));
}

/** The CLI binary of an agent as the tests install it, or null. */
function cliOf(agent: string): string | null {
  const candidates = [
    path.join(repoRoot, '.agent-clis', agent, 'node_modules', '.bin', agent),
    path.join(repoRoot, 'node_modules', '.bin', agent),
  ];
  return candidates.find((c) => fs.existsSync(c)) ?? null;
}

function startupMs(bin: string): number {
  let best = Infinity;
  for (let i = 0; i < 3; i++) {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'ralph-bench-home-'));
    const t0 = performance.now();
    spawnSync(bin, ['--version'], {
      stdio: 'ignore',
      env: {
        ...process.env,
        HOME: home,
        // Copilot unpacks itself into its cache on a first start: the one the tests share, as a user's would be.
        XDG_CACHE_HOME: path.join(repoRoot, '.agent-clis', 'copilot', '.cache'),
      },
    });
    best = Math.min(best, performance.now() - t0);
    fs.rmSync(home, { recursive: true, force: true });
  }
  return best;
}

async function main(): Promise<void> {
  const childArg = process.argv.find((a) => a.startsWith('--child='));
  if (childArg) {
    const [agent, file] = process.argv.slice(-2) as [string, string];
    const r = childArg === '--child=ours' ? await runOurs(agent, file) : await runBaseline(file);
    console.log(JSON.stringify(r));
    return;
  }
  const targetMb = Number(process.env.BENCH_AGENT_STREAM_MB ?? 64);
  const runs = Number(process.env.BENCH_RUNS ?? 3);
  for (const agent of Object.keys(agentAdapters)) {
    const files = recorded(agent);
    if (!files.length) continue;
    const file = path.join(os.tmpdir(), `ralph-agents-bench-${agent}-${process.pid}.jsonl`);
    try {
      const block = files.map((f) => f.text).join('');
      const buf = Buffer.from(block.repeat(Math.max(1, Math.floor((4 * MB) / block.length))));
      const fd = fs.openSync(file, 'w');
      let bytes = 0;
      while (bytes < targetMb * MB) bytes += fs.writeSync(fd, buf);
      fs.closeSync(fd);
      const best: Record<string, ChildResult> = {};
      for (let i = 0; i < runs; i++)
        for (const mode of ['baseline', 'ours']) {
          const r = child(mode, agent, file);
          if (!best[mode] || r.ms < best[mode].ms) best[mode] = r;
        }
      const mb = bytes / MB;
      const ours = mb / (best.ours!.ms / 1000);
      const base = mb / (best.baseline!.ms / 1000);
      out({ name: `agents.${agent}.decode_account`, value: round(ours), unit: 'MB/s', streamMB: round(mb, 1) });
      out({ name: `agents.${agent}.baseline_split_parse`, value: round(base), unit: 'MB/s' });
      out({ name: `agents.${agent}.ratio_vs_baseline`, value: round(ours / base, 3), unit: 'x', target: '>=1' });
    } finally {
      fs.rmSync(file, { force: true });
    }
    // One iteration's stream handling, ralph's own CPU.
    const one = files.find((f) => /success/.test(f.name)) ?? files[0]!;
    const cpu: number[] = [];
    for (let i = 0; i < 200; i++) {
      const c0 = process.cpuUsage();
      inspectText(agent, one.text);
      const c = process.cpuUsage(c0);
      cpu.push((c.user + c.system) / 1000);
    }
    cpu.sort((a, b) => a - b);
    const cpuMs = cpu[Math.floor(cpu.length / 2)]!;
    out({ name: `agents.${agent}.cpu_per_iteration`, value: round(cpuMs, 3), unit: 'ms', stream: one.name });
    const bin = cliOf(agent);
    if (bin) {
      const start = startupMs(bin);
      out({ name: `agents.${agent}.cli_startup`, value: round(start, 0), unit: 'ms', what: '--version, wall' });
      out({
        name: `agents.${agent}.cpu_vs_startup`,
        value: round((100 * cpuMs) / start, 3),
        unit: '%',
        target: '<=10',
      });
    }
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
