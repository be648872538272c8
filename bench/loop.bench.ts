/**
 * Loop engine benchmarks (`npm run bench` / `node scripts/bench.mjs loop`):
 *   - engine CPU time per MB of agent stream: a whole run of the engine (prompt, spawn, decoding, ledger, events,
 *     raw stream record, gate, records) over a stub agent that prints BENCH_LOOP_MB (default 64) MB of real
 *     recorded claude lines; the engine process's own CPU time (the stub's is not counted), ms per MB;
 *   - sentinel reaction latency: from a STOP / PAUSE file appearing to the engine's watcher reporting it, p50 / p95
 *     over 100 trials (target p95 ≤ 250 ms; flow-next polls every 5 s).
 * Prints one JSON object per line: {"name","value","unit",…}. Temporary folders are deleted at the end.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { LoopEngine } from '../src/core/loop/startRun';
import { RunRecorder } from '../src/core/loop/recorder';
import { SentinelWatcher } from '../src/core/loop/sentinelWatcher';
import { ralphConfigSchema } from '../src/core/model/config';
import { streamFixture } from '../test/support/fixtures';

const MB = 1024 * 1024;
const emit = (o: Record<string, unknown>) => console.log(JSON.stringify(o));

async function engineCpuPerMb(): Promise<void> {
  const mb = Number(process.env.BENCH_LOOP_MB ?? 64);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ralph-bench-loop-'));
  try {
    const recorded = streamFixture('claude', 'recorded', 'tool-use-bash-success.jsonl');
    const lines = fs
      .readFileSync(recorded, 'utf8')
      .split('\n')
      .filter((l) => l.trim() && !l.includes('"type":"result"'));
    const block = Buffer.from(lines.join('\n') + '\n');
    const streamFile = path.join(tmp, 'stream.jsonl');
    const fd = fs.openSync(streamFile, 'w');
    let size = 0;
    while (size < mb * MB) {
      fs.writeSync(fd, block);
      size += block.length;
    }
    fs.writeSync(
      fd,
      JSON.stringify({
        type: 'result',
        subtype: 'success',
        is_error: false,
        result: 'done',
        num_turns: 1,
        total_cost_usd: 0.01,
      }) + '\n',
    );
    fs.closeSync(fd);
    const ws = path.join(tmp, 'ws');
    fs.mkdirSync(ws);
    fs.writeFileSync(path.join(ws, 'RALPH_TASK.md'), '- [ ] one\n');
    const stub = path.join(tmp, 'claude');
    // The stub ticks the box and streams the file: its own CPU is in another process.
    fs.writeFileSync(stub, `#!/bin/sh\nsed -i 's/\\[ \\]/[x]/' RALPH_TASK.md\nexec cat '${streamFile}'\n`);
    fs.chmodSync(stub, 0o755);
    const config = ralphConfigSchema.parse({
      claudePath: stub,
      gates: { basic: 'true' },
      timing: { betweenIterationsMs: 0 },
      rotateThresholdTokens: 1e12,
      warnThresholdTokens: 1e12,
    });
    const engine = new LoopEngine({ folder: ws, config });
    const recorder = new RunRecorder(ws, engine.runId);
    engine.on('event', (e) => recorder.record(e));
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const result = await engine.run();
    await recorder.flush();
    const cpu = process.cpuUsage(cpu0);
    const wall = performance.now() - t0;
    if (result.state !== 'completed') throw new Error(`bench run ended ${result.state}: ${result.reason}`);
    const cpuMs = (cpu.user + cpu.system) / 1000;
    const streamMb = size / MB;
    emit({
      name: 'loop.engineCpuPerMb',
      value: Number((cpuMs / streamMb).toFixed(2)),
      unit: 'ms/MB',
      streamMb: Number(streamMb.toFixed(1)),
      cpuMs: Math.round(cpuMs),
      wallMs: Math.round(wall),
      throughputMBps: Number((streamMb / (wall / 1000)).toFixed(1)),
    });
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

async function sentinelLatency(): Promise<void> {
  const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'ralph-bench-sentinel-'));
  try {
    const runId = 'bench-run';
    const runDir = path.join(ws, '.ralph', 'runs', runId);
    fs.mkdirSync(runDir, { recursive: true });
    const watcher = new SentinelWatcher(ws, { runId, startedAt: new Date(Date.now() - 1000).toISOString() });
    const samples: number[] = [];
    const wait = (pred: () => boolean) =>
      new Promise<void>((resolve) => {
        if (pred()) return resolve();
        const on = () => {
          if (pred()) {
            watcher.off('change', on);
            resolve();
          }
        };
        watcher.on('change', on);
      });
    for (let i = 0; i < 100; i++) {
      const file = path.join(runDir, i % 2 ? 'PAUSE' : 'STOP');
      const t0 = performance.now();
      fs.writeFileSync(file, '');
      await wait(() => watcher.state.stop.length + watcher.state.pause.length > 0);
      samples.push(performance.now() - t0);
      fs.rmSync(file);
      await wait(() => watcher.state.stop.length + watcher.state.pause.length === 0);
      await new Promise((r) => setTimeout(r, 5));
    }
    watcher.close();
    samples.sort((a, b) => a - b);
    const pct = (p: number) =>
      Number(samples[Math.min(samples.length - 1, Math.floor((p / 100) * samples.length))]!.toFixed(2));
    emit({ name: 'loop.sentinelLatencyP50', value: pct(50), unit: 'ms', trials: samples.length });
    emit({
      name: 'loop.sentinelLatencyP95',
      value: pct(95),
      unit: 'ms',
      target: 250,
      ratioToTarget: Number((pct(95) / 250).toFixed(3)),
      trials: samples.length,
      max: pct(100),
    });
  } finally {
    fs.rmSync(ws, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  // The watcher's own handles do not keep a process alive (it lives inside the engine); this bench must.
  const keepAlive = setInterval(() => undefined, 1000);
  try {
    await sentinelLatency();
    await engineCpuPerMb();
  } finally {
    clearInterval(keepAlive);
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
