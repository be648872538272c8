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
 *     box and prints that recorded stream, BENCH_AGENT_ITERATIONS (default 6) iterations after a warm-up run of three; the
 *     stub's and the gate's CPU are other processes' and not counted; `engine_cpu_per_iteration_tmpfs` the same with
 *     every file of the run on /dev/shm (a tmpfs) where there is one, beside `headless_turn_cpu_tmpfs` (the turn's HOME
 *     and repository there too) as `engine_cpu_vs_turn_tmpfs` (see `memoryFolder`);
 *   - `agents.<agent>.headless_turn_cpu`: the CPU (user + system of the whole process tree, ms) of the agent CLI from
 *     .agent-clis/ or node_modules/.bin running one headless turn as ralph starts it, against the scripted model server
 *     (agentTurn.ts), median of BENCH_RUNS, with its wall time: the agent's own start-up for an iteration, the
 *     baseline of both ralph figures (`cpu_vs_startup`, `engine_cpu_vs_turn`: target ≤ 10%);
 *   - `agents.<agent>.cli_startup_cpu`: the same for `<cli> --version` in the same environment, the least any start
 *     of the CLI costs, and `engine_cpu_vs_version`. An agent whose CLI is not installed gets no start-up figures.
 * BENCH_AGENTS=codex,qwen runs only those agents.
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
import { LineDecoder } from '../src/core/stream/lineDecoder';
import { streamFixture } from '../test/support/fixtures';
import { repoRoot } from '../test/support/repoRoot';
import { agentStartCost } from './agentTurn';

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

/** The line decoder alone (bytes → JSON objects and text lines), the same work as the baseline's. */
async function runDecode(file: string): Promise<ChildResult> {
  const t0 = performance.now();
  let objects = 0;
  const decoder = new LineDecoder({ json: () => void objects++, text: () => undefined });
  for await (const chunk of fs.createReadStream(file, { highWaterMark: 256 * 1024 })) decoder.push(chunk as Buffer);
  decoder.end();
  return { ms: performance.now() - t0, lines: objects };
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

/**
 * A memory file system for the second engine figure (`/dev/shm` where it is a writable tmpfs), or null. On the bench
 * machine the disk is ext4 without a journal, where creating a file scans the inodes deleted in the last minutes
 * (the kernel's `recently_deleted`: 9% of an engine run's CPU in a `perf` profile after a test run had deleted
 * thousands of files): an engine run there measures what ran before it as much as ralph.
 */
function memoryFolder(): string | null {
  try {
    if (
      !fs
        .readFileSync('/proc/mounts', 'utf8')
        .split('\n')
        .some((l) => l.split(' ')[1] === '/dev/shm' && l.split(' ')[2] === 'tmpfs')
    )
      return null;
    fs.accessSync('/dev/shm', fs.constants.W_OK);
    return '/dev/shm';
  } catch {
    return null;
  }
}

/**
 * Ralph's own CPU per iteration of a whole engine run over a stub of `agent` that ticks one box of the checklist and
 * prints `stream` (a recorded iteration): one warm-up run of three boxes, then a run of `iterations` boxes; ms. The
 * workspace, the stub and the engine's user state live under `base` (default the OS temporary folder).
 */
async function engineCpuPerIteration(
  agent: string,
  stream: string,
  iterations: number,
  base: string = os.tmpdir(),
): Promise<number> {
  const adapter = agentAdapters[agent]!;
  const tmp = fs.mkdtempSync(path.join(base, `ralph-bench-agent-${agent}-`));
  // The runs keep their per-user state and answer cache in folders of their own, as a new user's (the engine purges
  // the cache for its folder after each child, reading every entry's head): never the bench machine's
  // ~/.cache/ralph or ~/.local/state/ralph, whose size would be measured. Restored after (the CLIs' turns use theirs).
  const saved = { XDG_CACHE_HOME: process.env.XDG_CACHE_HOME, XDG_STATE_HOME: process.env.XDG_STATE_HOME };
  process.env.XDG_CACHE_HOME = fs.mkdtempSync(path.join(tmp, 'cache-'));
  process.env.XDG_STATE_HOME = fs.mkdtempSync(path.join(tmp, 'state-'));
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
    // Warm-up: three boxes, so that the first agent measured in a process (claude) runs warm code as the later
    // ones do (after one box it measured ~40 ms an iteration above them: V8 had not yet optimised the lane's code).
    await run(3);
    return await run(iterations);
  } finally {
    for (const [k, v] of Object.entries(saved))
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const childArg = process.argv.find((a) => a.startsWith('--child='));
  if (childArg) {
    const [agent, file] = process.argv.slice(-2) as [string, string];
    const r =
      childArg === '--child=ours'
        ? await runOurs(agent, file)
        : childArg === '--child=decode'
          ? await runDecode(file)
          : await runBaseline(file);
    console.log(JSON.stringify(r));
    return;
  }
  const targetMb = Number(process.env.BENCH_AGENT_STREAM_MB ?? 64);
  const runs = Number(process.env.BENCH_RUNS ?? 3);
  const only = (process.env.BENCH_AGENTS ?? '').split(',').filter(Boolean);
  for (const agent of Object.keys(agentAdapters)) {
    if (only.length && !only.includes(agent)) continue;
    const adapter = agentAdapters[agent]!;
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
        for (const mode of ['baseline', 'decode', 'ours']) {
          const r = child(mode, agent, file);
          if (!best[mode] || r.ms < best[mode].ms) best[mode] = r;
        }
      const mb = bytes / MB;
      const rate = (mode: string): number => mb / (best[mode]!.ms / 1000);
      const base = rate('baseline');
      out({ name: `agents.${agent}.baseline_split_parse`, value: round(base), unit: 'MB/s', streamMB: round(mb, 1) });
      out({ name: `agents.${agent}.decode`, value: round(rate('decode')), unit: 'MB/s' });
      out({
        name: `agents.${agent}.ratio_vs_baseline`,
        value: round(rate('decode') / base, 3),
        unit: 'x',
        target: '>=1',
      });
      out({ name: `agents.${agent}.decode_account`, value: round(rate('ours')), unit: 'MB/s' });
      out({
        name: `agents.${agent}.decode_account_vs_baseline`,
        value: round(rate('ours') / base, 3),
        unit: 'x',
        what: 'decode + map + account over the baseline, which does only the decoding',
      });
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
    const iterations = Number(process.env.BENCH_AGENT_ITERATIONS ?? 6);
    const perIteration = await engineCpuPerIteration(agent, one.text, iterations);
    out({
      name: `agents.${agent}.engine_cpu_per_iteration`,
      value: round(perIteration, 1),
      unit: 'ms',
      stream: one.name,
      folder: os.tmpdir(),
    });
    const shm = memoryFolder();
    const inMemory = shm ? await engineCpuPerIteration(agent, one.text, iterations, shm) : null;
    if (inMemory !== null)
      out({
        name: `agents.${agent}.engine_cpu_per_iteration_tmpfs`,
        value: round(inMemory, 1),
        unit: 'ms',
        stream: one.name,
        folder: shm,
      });
    const bin = cliOf(agent);
    const start = bin ? await agentStartCost(adapter, bin, runs) : null;
    if (start) {
      out({
        name: `agents.${agent}.headless_turn_cpu`,
        value: round(start.turn.cpuMs, 0),
        unit: 'ms',
        what: 'one headless turn (one text reply) against the scripted model server, user + system CPU of the process tree',
        wallMs: round(start.turn.wallMs, 0),
        modelRequests: start.requestsPerTurn,
      });
      out({
        name: `agents.${agent}.cli_startup_cpu`,
        value: round(start.version.cpuMs, 0),
        unit: 'ms',
        what: '--version, user + system CPU of the process tree',
        wallMs: round(start.version.wallMs, 0),
      });
      out({
        name: `agents.${agent}.cpu_vs_startup`,
        value: round((100 * cpuMs) / start.turn.cpuMs, 3),
        unit: '%',
        target: '<=10',
        what: 'decode + account of one iteration / the CLI headless turn CPU',
      });
      out({
        name: `agents.${agent}.engine_cpu_vs_turn`,
        value: round((100 * perIteration) / start.turn.cpuMs, 2),
        unit: '%',
        target: '<=10',
        what: "ralph's whole iteration / the CLI headless turn CPU",
      });
      // The same two on the memory file system: the turn's HOME and repository there too.
      const startInMemory = inMemory !== null && shm && bin ? await agentStartCost(adapter, bin, runs, shm) : null;
      if (inMemory !== null && startInMemory) {
        out({
          name: `agents.${agent}.headless_turn_cpu_tmpfs`,
          value: round(startInMemory.turn.cpuMs, 0),
          unit: 'ms',
          folder: shm,
          wallMs: round(startInMemory.turn.wallMs, 0),
        });
        out({
          name: `agents.${agent}.engine_cpu_vs_turn_tmpfs`,
          value: round((100 * inMemory) / startInMemory.turn.cpuMs, 2),
          unit: '%',
          target: '<=10',
          what: "ralph's whole iteration / the CLI headless turn CPU, both with their files on a tmpfs",
        });
      }
      out({
        name: `agents.${agent}.engine_cpu_vs_version`,
        value: round((100 * perIteration) / start.version.cpuMs, 2),
        unit: '%',
        what: "ralph's whole iteration / the CLI --version CPU (the least any start costs)",
      });
    }
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
