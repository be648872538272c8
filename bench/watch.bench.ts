/**
 * Run-log benchmarks (issue 9; `node scripts/bench.mjs watch`):
 *   - `ralph watch --json` latency: from an event appended to events.jsonl to its line on the watcher's stdout,
 *     p50 / p95 over BENCH_WATCH_TRIALS (default 100) trials; baseline: `tail -n0 -F` on the same file in the same
 *     trials (ratio = ours / tail's);
 *   - reducer throughput: `runViewOf` over a 1,000,000-event log (BENCH_REDUCER_EVENTS) in memory, events/s;
 *     baseline: a fold that only counts the types of the same entries (ratio = ours / baseline, in time);
 *   - parse throughput: `parseRunLogLine` (JSON + zod) over the same log's lines, lines/s; baseline `JSON.parse`.
 * Prints one JSON object per line: {"name","value","unit",…}. Temporary folders are deleted at the end.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runViewOf } from '../src/core/control/runView';
import { parseRunLogLine, runLogLine, type EngineEvent, type RunLogEntry } from '../src/core/model/runEvent';
import { findRepoRoot } from '../test/support/repoRoot';

const emit = (o: Record<string, unknown>) => console.log(JSON.stringify(o));
const repo = findRepoRoot(__dirname);
const pctl = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const round = (n: number, d = 2) => Math.round(n * 10 ** d) / 10 ** d;

/** Lines arriving on a child's stdout, with the time each arrived. */
function lineWaiter(child: ChildProcess): (needle: string) => Promise<number> {
  let buf = '';
  const waiting = new Map<string, (t: number) => void>();
  child.stdout!.on('data', (b: Buffer) => {
    const t = performance.now();
    buf += b.toString();
    const lines = buf.split('\n');
    buf = lines.pop()!;
    for (const l of lines)
      for (const [k, r] of waiting)
        if (l.includes(k)) {
          waiting.delete(k);
          r(t);
        }
  });
  return (needle) => new Promise((resolve) => waiting.set(needle, resolve));
}

async function watchLatency(): Promise<void> {
  const trials = Number(process.env.BENCH_WATCH_TRIALS ?? 100);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ralph-bench-watch-'));
  const run = '20261201T090000Z-beef';
  const dir = path.join(tmp, '.ralph', 'runs', run);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(
    path.join(dir, 'run.json'),
    JSON.stringify({
      runId: run,
      pid: process.pid,
      host: os.hostname(),
      startedAt: new Date().toISOString(),
      state: 'running',
      iteration: 0,
      currentItem: null,
    }),
  );
  const log = path.join(dir, 'events.jsonl');
  let seq = 0;
  const append = (e: EngineEvent) => fs.appendFileSync(log, runLogLine(++seq, new Date().toISOString(), 0, e));
  append({
    type: 'runStarted',
    runId: run,
    folder: tmp,
    source: 'bench',
    agent: 'claude',
    maxIterations: 1,
    gates: {},
  });
  const watch = spawn(
    process.execPath,
    [path.join(repo, 'dist', 'cli.js'), '-C', tmp, 'watch', '--run', run, '--json'],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const tail = spawn('tail', ['-n0', '-F', log], { stdio: ['ignore', 'pipe', 'ignore'] });
  const waitWatch = lineWaiter(watch);
  const waitTail = lineWaiter(tail);
  try {
    await waitWatch('"runStarted"');
    await new Promise((r) => setTimeout(r, 300));
    const ours: number[] = [];
    const theirs: number[] = [];
    for (let i = 0; i < trials; i++) {
      const mark = `bench-${i}-${Math.random().toString(36).slice(2)}`;
      const w = waitWatch(mark);
      const t = waitTail(mark);
      const t0 = performance.now();
      append({ type: 'warning', message: mark });
      ours.push((await w) - t0);
      theirs.push((await t) - t0);
      await new Promise((r) => setTimeout(r, 20 + Math.random() * 30));
    }
    for (const p of [50, 95]) {
      emit({
        name: `watch latency p${p}`,
        value: round(pctl(ours, p)),
        unit: 'ms',
        baseline: `tail -F p${p}`,
        baselineValue: round(pctl(theirs, p)),
        ratio: round(pctl(ours, p) / Math.max(0.01, pctl(theirs, p))),
        trials,
      });
    }
  } finally {
    append({
      type: 'runEnded',
      state: 'completed',
      reason: 'bench',
      completionReason: 'DONE',
      exitCode: 0,
      iterations: 0,
      costUsd: 0,
      done: 0,
      total: 0,
    });
    await new Promise((r) => {
      watch.once('close', r);
      setTimeout(() => watch.kill(), 5000);
    });
    tail.kill();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

/** A log of `n` entries shaped like a real run: per iteration a start, many tokens events, signals, a gate, an end. */
function syntheticLog(n: number): RunLogEntry[] {
  const out: RunLogEntry[] = [];
  const at = new Date().toISOString();
  const item = { source: 'quantum' as const, id: 'US-001', title: 'Story' };
  let it = 0;
  const push = (e: EngineEvent) => out.push({ ...e, seq: out.length + 1, at, lane: 0 } as RunLogEntry);
  push({
    type: 'runStarted',
    runId: 'r',
    folder: '/ws',
    source: 'quantum.json',
    agent: 'claude',
    maxIterations: 1e9,
    gates: { basic: 'npm test' },
  });
  while (out.length < n - 1) {
    it++;
    push({
      type: 'iterationStarted',
      iteration: it,
      item: { ...item, id: `US-${it % 50}` },
      attempt: 1,
      attemptKind: 'first',
      purpose: 'work',
      maxAttempts: 5,
    });
    push({ type: 'agentStarted', iteration: it, pid: 1000 + it, command: 'claude -p' });
    for (let k = 0; k < 40 && out.length < n - 6; k++)
      push({
        type: 'tokens',
        iteration: it,
        contextTokens: k * 3000,
        contextWindow: 200_000,
        warnAt: 140_000,
        rotateAt: 160_000,
        totals: { input: k, output: k, cacheRead: k, cacheCreation: 0 },
        costUsd: k * 0.001,
      });
    push({ type: 'gateStarted', tier: 'basic', command: 'npm test' });
    push({
      type: 'gateResult',
      tier: 'basic',
      command: 'npm test',
      exitCode: 0,
      durationMs: 1000,
      passed: true,
      logPath: 'l',
      failingLines: [],
    });
    push({
      type: 'iterationEnded',
      iteration: it,
      ending: 'complete',
      detail: 'd',
      totals: { tokens: { input: 1, output: 1, cacheRead: 1, cacheCreation: 0 }, costUsd: 0.04 },
      exitCode: 0,
    });
    push({ type: 'progress', done: it, total: it + 1, text: '' });
  }
  out.length = n - 1;
  push({
    type: 'runEnded',
    state: 'completed',
    reason: 'done',
    completionReason: 'DONE',
    exitCode: 0,
    iterations: it,
    costUsd: 1,
    done: 1,
    total: 1,
  });
  return out;
}

function reducerThroughput(): void {
  const n = Number(process.env.BENCH_REDUCER_EVENTS ?? 1_000_000);
  const entries = syntheticLog(n);
  // Baseline: a fold that looks at every entry and does almost nothing.
  let t0 = performance.now();
  const counts = new Map<string, number>();
  for (const e of entries) counts.set(e.type, (counts.get(e.type) ?? 0) + 1);
  const baseMs = performance.now() - t0;
  t0 = performance.now();
  const v = runViewOf('r', entries);
  const ms = performance.now() - t0;
  if (v.state !== 'completed' || v.lastSeq !== n) throw new Error(`reducer ended in ${v.state} at ${v.lastSeq}`);
  emit({
    name: 'RunView reducer throughput',
    value: Math.round(n / (ms / 1000)),
    unit: 'events/s',
    events: n,
    ms: round(ms),
    baseline: 'count types',
    baselineMs: round(baseMs),
    ratio: round(ms / Math.max(0.01, baseMs)),
  });

  const lines = entries.map((e) => {
    const { seq, at, lane, ...ev } = e;
    return runLogLine(seq, at, lane, ev as EngineEvent).slice(0, -1);
  });
  t0 = performance.now();
  for (const l of lines) JSON.parse(l);
  const jsonMs = performance.now() - t0;
  t0 = performance.now();
  for (let i = 0; i < lines.length; i++) parseRunLogLine(lines[i]!, 'events.jsonl', i + 1, i + 1);
  const parseMs = performance.now() - t0;
  emit({
    name: 'run log parse throughput',
    value: Math.round(n / (parseMs / 1000)),
    unit: 'lines/s',
    events: n,
    ms: round(parseMs),
    baseline: 'JSON.parse',
    baselineMs: round(jsonMs),
    ratio: round(parseMs / Math.max(0.01, jsonMs)),
  });
}

async function main(): Promise<void> {
  reducerThroughput();
  await watchLatency();
}

void main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
