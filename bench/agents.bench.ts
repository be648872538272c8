/**
 * Per-agent benchmark (`npm run bench` / `node scripts/bench.mjs agents`), for every agent with recorded streams in
 * test/fixtures/streams/<agent>/recorded (the real CLIs against the scripted model server):
 *   - `agents.<agent>.decode_account`: decode + map + account (AgentStream → SessionInspector: ledger, outcome,
 *     counts) over a stream of BENCH_AGENT_STREAM_MB (default 64) MB made by repeating the agent's recorded lines, MB/s,
 *     beside `agents.<agent>.baseline_split_parse` (split lines + JSON.parse each, the same file, the same run) and the
 *     ratio (target ≥ 1×); best of BENCH_RUNS (default 3) fresh child processes per mode, interleaved;
 *   - `agents.<agent>.cpu_per_iteration`: ralph's own CPU (user + system, ms) to decode, map and account one recorded
 *     iteration (the agent's `shell-success`/`tool-use-bash-success` stream), median of 200 runs;
 *   - `agents.<agent>.engine_cpu_per_iteration`: ralph's own CPU per iteration of a whole run (the LoopEngine: prompt,
 *     spawn, the guard, decoding, ledger, events, the run's records, the gate) over a stub of the agent that ticks one
 *     box and prints that recorded stream, BENCH_AGENT_ITERATIONS (default 6) iterations after one warm-up run; the
 *     stub's and the gate's CPU are other processes' and not counted;
 *   - `agents.<agent>.cli_startup_cpu`: the CPU (user + system of the child, ms) of `<cli> --version` from .agent-clis/
 *     or node_modules/.bin, median of 3, with its wall time: the least a start of the agent costs (a headless turn
 *     costs more), and the ratios of both ralph figures to it (target ≤ 10%). An agent whose CLI is not installed
 *     gets no start-up figure.
 * Prints one JSON object per line: {"name","value","unit",…}. The generated file is deleted at the end.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { AgentStream } from '../src/core/agents/agentStream';
import { LoopEngine } from '../src/core/loop/startRun';
import { ralphConfigSchema } from '../src/core/model/config';
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

/** CPU (user + system of the child, ms, from bash's `times`) and wall ms of `<bin> --version`, medians of 3. */
function startup(bin: string): { cpuMs: number; wallMs: number } {
  const cpu: number[] = [];
  const wall: number[] = [];
  for (let i = 0; i < 3; i++) {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'ralph-bench-home-'));
    const t0 = performance.now();
    const r = spawnSync('bash', ['-c', '"$0" --version >/dev/null 2>&1; times', bin], {
      encoding: 'utf8',
      env: {
        ...process.env,
        HOME: home,
        // Copilot unpacks itself into its cache on a first start: the one the tests share, as a user's would be.
        XDG_CACHE_HOME: path.join(repoRoot, '.agent-clis', 'copilot', '.cache'),
      },
    });
    wall.push(performance.now() - t0);
    fs.rmSync(home, { recursive: true, force: true });
    // `times`: the shell's user and system time, then its children's ("0m0.310s 0m0.052s").
    const children = r.stdout.trim().split('\n').pop() ?? '';
    const secs = [...children.matchAll(/(\d+)m([\d.]+)s/g)].map((m) => Number(m[1]) * 60 + Number(m[2]));
    cpu.push(1000 * secs.reduce((a, b) => a + b, 0));
  }
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  return { cpuMs: median(cpu), wallMs: median(wall) };
}

/**
 * Ralph's own CPU per iteration of a whole engine run over a stub of `agent` that ticks one box of the checklist and
 * prints `stream` (a recorded iteration): one warm-up run of one box, then a run of `iterations` boxes; ms.
 */
async function engineCpuPerIteration(agent: string, stream: string, iterations: number): Promise<number> {
  const adapter = agentAdapters[agent]!;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), `ralph-bench-agent-${agent}-`));
  try {
    const streamFile = path.join(tmp, 'stream.jsonl');
    fs.writeFileSync(streamFile, stream);
    const stub = path.join(tmp, adapter.defaultBinary);
    fs.writeFileSync(stub, `#!/bin/sh\nsed -i '0,/- \\[ \\]/s//- [x]/' RALPH_TASK.md\nexec cat '${streamFile}'\n`, {
      mode: 0o755,
    });
    const run = async (boxes: number): Promise<number> => {
      const ws = fs.mkdtempSync(path.join(tmp, 'ws-'));
      fs.writeFileSync(
        path.join(ws, 'RALPH_TASK.md'),
        Array.from({ length: boxes }, (_, i) => `- [ ] box ${i + 1}\n`).join(''),
      );
      const config = ralphConfigSchema.parse({
        agent,
        [adapter.configKey]: stub,
        gates: { basic: 'true' },
        timing: { betweenIterationsMs: 0 },
        maxIterations: boxes + 2,
      });
      const engine = new LoopEngine({ folder: ws, config });
      const c0 = process.cpuUsage();
      const result = await engine.run();
      const c = process.cpuUsage(c0);
      if (result.state !== 'completed' || result.iterations !== boxes)
        throw new Error(`${agent}: the bench run ended ${result.state} after ${result.iterations}: ${result.reason}`);
      return (c.user + c.system) / 1000 / boxes;
    };
    await run(1);
    return await run(iterations);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
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
    const perIteration = await engineCpuPerIteration(agent, one.text, Number(process.env.BENCH_AGENT_ITERATIONS ?? 6));
    out({
      name: `agents.${agent}.engine_cpu_per_iteration`,
      value: round(perIteration, 1),
      unit: 'ms',
      stream: one.name,
    });
    const bin = cliOf(agent);
    if (bin) {
      const start = startup(bin);
      out({
        name: `agents.${agent}.cli_startup_cpu`,
        value: round(start.cpuMs, 0),
        unit: 'ms',
        what: '--version, user + system CPU',
        wallMs: round(start.wallMs, 0),
      });
      out({
        name: `agents.${agent}.cpu_vs_startup`,
        value: round((100 * cpuMs) / start.cpuMs, 3),
        unit: '%',
        target: '<=10',
        what: 'decode + account of one iteration / CLI start-up CPU',
      });
      out({
        name: `agents.${agent}.engine_cpu_vs_startup`,
        value: round((100 * perIteration) / start.cpuMs, 2),
        unit: '%',
        target: '<=10',
        what: "ralph's whole iteration / CLI start-up CPU",
      });
    }
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
