/**
 * `npm run bench` (or `node scripts/bench.mjs store`): the extension's run store and status bar gauge (issue 13).
 * Prints one JSON object per line: {"name","value","unit",...}.
 *  - gauge_updates_per_s: status bar renders per second while a run's log delivers a burst of 10,000 `tokens` events
 *    (5 per event-loop turn, ≈ 2–3 s), through the real store, RunView / token reducers and the gauge on the
 *    fake `vscode`; bound 4/s. Baseline: the same burst rendered on every event (no throttle), as a ratio.
 *  - plan_reload_event_loop_p99: the extension host's event-loop delay (p99, ms; perf_hooks monitorEventLoopDelay at
 *    a 1 ms interval's lateness) while a 5,000-item plan (2,500 flow-next tasks in 50 epics + 2,500 quantum stories) is re-read
 *    by the plan worker thread (`PlanLoader`, what the store uses), against the baseline of reading it on the main
 *    thread (`loadPlan`), median of 5 each.
 * Generated data lives in os.tmpdir() and is deleted afterwards.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { loadPlan } from '../src/core/sources/plan';
import { presentGauge } from '../src/extension/gauge/gaugeText';
import { StatusBarGauge } from '../src/extension/gauge/statusBarGauge';
import { PlanLoader } from '../src/extension/planLoader';
import { systemClock } from '../src/extension/throttle';
import { agent, iteration, runInfo, started, storeHarness, tokensAt } from '../test/support/storeHarness';

const emit = (o: Record<string, unknown>) => process.stdout.write(JSON.stringify(o) + '\n');
const round = (x: number) => Math.round(x * 100) / 100;
const json = (v: unknown) => JSON.stringify(v, null, 2) + '\n';
const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Feeds `n` tokens events in batches of `batch`, one batch per event-loop turn; resolves with the elapsed ms. */
async function burst(feed: (i: number) => void, n: number, batch: number): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < n; i += batch) {
    for (let j = i; j < Math.min(n, i + batch); j++) feed(j);
    await new Promise((r) => setTimeout(r, 1));
  }
  return performance.now() - t0;
}

async function gaugeBench(): Promise<void> {
  const n = 10_000;
  const h = storeHarness();
  // The gauge on real time (the harness clock only drives the store's own coalescing; give it real timers too).
  const gauge = new StatusBarGauge(h.store, { clock: systemClock });
  const run = h.addRun(runInfo('bench'));
  run.emit(started('bench'), iteration(1), agent(1));
  // The store's coalescing timer runs on the harness clock: advance it with real time during the burst.
  const t0 = performance.now();
  const pump = setInterval(() => h.clock.advance(performance.now() - t0 - h.clock.t), 5);
  const before = gauge.renders;
  const ms = await burst((i) => run.emit(tokensAt(1, 1000 + i * 10, 0.0001 * i)), n, 5);
  await new Promise((r) => setTimeout(r, 300));
  clearInterval(pump);
  const renders = gauge.renders - before;
  const perSecond = renders / ((ms + 300) / 1000);
  // Baseline: a gauge that renders every event.
  let unthrottled = 0;
  const t1 = performance.now();
  for (let i = 0; i < n; i++) {
    run.emit(tokensAt(1, 1000 + i * 10));
    presentGauge(run.update().gauge('w'));
    unthrottled++;
  }
  const unthrottledPerSecond = unthrottled / ((performance.now() - t1) / 1000);
  emit({
    name: 'gauge_updates_per_s',
    value: round(perSecond),
    unit: 'renders/s',
    bound: 4,
    events: n,
    burst_ms: Math.round(ms),
    renders,
    baseline_unthrottled_per_s: Math.round(unthrottledPerSecond),
    ratio_to_baseline: Number((perSecond / unthrottledPerSecond).toPrecision(2)),
  });
  gauge.dispose();
  h.store.dispose();
}

function makePlan(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ralph-bench-store-'));
  fs.mkdirSync(path.join(dir, '.flow', 'epics'), { recursive: true });
  fs.mkdirSync(path.join(dir, '.flow', 'tasks'), { recursive: true });
  fs.writeFileSync(path.join(dir, '.flow', 'meta.json'), json({ next_epic: 51, schema_version: 2 }));
  for (let e = 1; e <= 50; e++) {
    fs.writeFileSync(
      path.join(dir, '.flow', 'epics', `fn-${e}.json`),
      json({ depends_on_epics: [], id: `fn-${e}`, plan_review_status: 'unknown', status: 'open', title: `Epic ${e}` }),
    );
    for (let t = 1; t <= 50; t++) {
      const id = `fn-${e}.${t}`;
      fs.writeFileSync(
        path.join(dir, '.flow', 'tasks', `${id}.json`),
        json({
          assignee: null,
          created_at: '2026-01-10T07:32:10Z',
          depends_on: t > 1 ? [`fn-${e}.${t - 1}`] : [],
          epic: `fn-${e}`,
          id,
          priority: null,
          status: t % 3 ? 'todo' : 'done',
          title: `Task ${id}`,
          updated_at: '2026-01-10T07:32:10Z',
        }),
      );
    }
  }
  const stories = Array.from({ length: 2500 }, (_, i) => ({
    id: `US-${String(i + 1).padStart(5, '0')}`,
    title: `Story ${i + 1}`,
    description: 'd',
    acceptanceCriteria: ['a'],
    priority: i + 1,
    status: i % 2 ? 'pending' : 'passed',
    dependsOn: i ? [`US-${String(i).padStart(5, '0')}`] : [],
    tasks: [],
    retries: { attempts: 0, maxAttempts: 3, failureLog: [] },
    notes: '',
  }));
  fs.writeFileSync(
    path.join(dir, 'quantum.json'),
    json({ project: 'bench', stories, progress: [], codebasePatterns: [] }),
  );
  return dir;
}

/**
 * Event-loop delay (ms) while `load` runs: a 1 ms interval stands for the host's other work; each tick's lateness is a
 * sample (a main-thread read shows as one long gap). p99 and max over the load and 20 ms after it (so a block at its
 * end is counted; perf_hooks' histogram misses a block that ends the measured window).
 */
async function delayDuring(load: () => Promise<unknown>): Promise<{ p99: number; max: number; ms: number }> {
  const lags: number[] = [];
  let last = performance.now();
  const tick = setInterval(() => {
    const now = performance.now();
    lags.push(Math.max(0, now - last - 1));
    last = now;
  }, 1);
  await new Promise((r) => setTimeout(r, 20));
  const t0 = performance.now();
  await load();
  const ms = performance.now() - t0;
  await new Promise((r) => setTimeout(r, 20));
  clearInterval(tick);
  lags.sort((x, y) => x - y);
  return { p99: lags[Math.min(lags.length - 1, Math.floor(lags.length * 0.99))] ?? 0, max: lags.at(-1) ?? 0, ms };
}

async function planBench(): Promise<void> {
  const dir = makePlan();
  const loader = new PlanLoader(path.resolve(__dirname, '..', 'planWorker.js'), loadPlan);
  try {
    const items = (await loadPlan(dir)).items.length;
    if (!fs.existsSync(path.resolve(__dirname, '..', 'planWorker.js')))
      throw new Error('dist/planWorker.js is missing: run node esbuild.mjs');
    await loader.load(dir); // start the worker once (the extension keeps it)
    const worker: { p99: number; max: number; ms: number }[] = [];
    const main: { p99: number; max: number; ms: number }[] = [];
    for (let i = 0; i < 5; i++) {
      worker.push(await delayDuring(() => loader.load(dir)));
      main.push(await delayDuring(() => loadPlan(dir)));
    }
    const w = median(worker.map((x) => x.p99));
    const m = median(main.map((x) => x.p99));
    emit({
      name: 'plan_reload_event_loop_p99',
      value: round(w),
      unit: 'ms',
      items,
      reload_ms: Math.round(median(worker.map((x) => x.ms))),
      baseline_main_thread_p99_ms: round(m),
      baseline_reload_ms: Math.round(median(main.map((x) => x.ms))),
      ratio_to_baseline: round(w / m),
      max_ms: round(median(worker.map((x) => x.max))),
    });
  } finally {
    loader.dispose();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  await gaugeBench();
  await planBench();
}

void main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
