/**
 * Parallel lanes benchmark (issue 19; `npm run bench` / `node scripts/bench.mjs lanes`): eight independent quantum
 * stories, a stub agent of fixed duration (test/support/stubs/benchAgent.sh: commits one file, sleeps BENCH_LANES_STORY_MS,
 * default 1500 ms; not the real CLI: four real CLIs on two cores would measure the CPU, not the scheduling; a bash
 * script, not the tests' Node stub laneAgent.cjs, whose start-up alone cost ~0.3 s of CPU per story on two busy cores),
 * real git.
 *   - lanes.wallRatio: wall time with --max-parallel 4 over --max-parallel 1 (target ≤ 0.35);
 *   - lanes.mergeMsPerStory: the merge and the feature branch's gate per story, mean ms (laneMerge durationMs).
 * Prints one JSON object per line. Temporary folders are deleted at the end. The runs keep their per-user state
 * (claim baselines and their copies, agent files: src/core/store/userStateDir.ts) in a private XDG_STATE_HOME and
 * their cache (store/cacheDir.ts: the engine sweeps it for this folder's entries after each agent and lane, reading
 * the head of every entry it cannot place by name) in a private XDG_CACHE_HOME, both removed at the end: never the
 * user's ~/.local/state/ralph or ~/.cache/ralph (as scripts/test.mjs does for tests), whose size would be measured.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { LoopEngine } from '../src/core/loop/startRun';
import { ralphConfigSchema } from '../src/core/model/config';
import { makeLanesRepository } from './workspace';

const emit = (o: Record<string, unknown>) => console.log(JSON.stringify(o));
const STORIES = 8;
const storyMs = Number(process.env.BENCH_LANES_STORY_MS ?? 1500);
const stub = path.resolve(__dirname, '..', '..', 'test', 'support', 'stubs', 'benchAgent.sh');
// Set before any run starts; inherited by the stub agents and gates.
const stateHome = fs.mkdtempSync(path.join(os.tmpdir(), 'ralph-bench-state-'));
const cacheHome = fs.mkdtempSync(path.join(os.tmpdir(), 'ralph-bench-cache-'));
process.env.XDG_STATE_HOME = stateHome;
process.env.XDG_CACHE_HOME = cacheHome;
process.on('exit', () => {
  for (const d of [stateHome, cacheHome]) fs.rmSync(d, { recursive: true, force: true });
});

async function once(maxParallel: number): Promise<{ wallMs: number; mergeMs: number[] }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ralph-bench-lanes-'));
  try {
    makeLanesRepository(dir, STORIES);
    const config = ralphConfigSchema.parse({
      claudePath: stub,
      gates: { basic: 'true' },
      timing: { betweenIterationsMs: 0 },
    });
    const engine = new LoopEngine({
      folder: dir,
      config,
      source: 'quantum',
      parallel: true,
      maxParallel,
      agentEnv: { BENCH_STUB_SLEEP_S: String(storyMs / 1000) },
    });
    const mergeMs: number[] = [];
    engine.on('event', (e) => {
      if (e.type === 'laneMerge' && e.outcome === 'merged') mergeMs.push(e.durationMs);
    });
    const t0 = performance.now();
    const r = await engine.run();
    const wallMs = performance.now() - t0;
    if (r.state !== 'completed' || r.done !== STORIES)
      throw new Error(`bench run ended ${r.state} (${r.done}/${r.total}): ${r.reason}`);
    return { wallMs, mergeMs };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  // BENCH_LANES_ONLY=N: one run with N lanes (for profiling: RALPH_TRACE_LANES=1, --cpu-prof, strace), no ratio.
  const only = Number(process.env.BENCH_LANES_ONLY ?? 0);
  if (only > 0) {
    const r = await once(only);
    emit({ name: 'lanes.wallMs', value: Math.round(r.wallMs), unit: 'ms', lanes: only, stories: STORIES, storyMs });
    return;
  }
  const one = await once(1);
  const four = await once(4);
  const ratio = four.wallMs / one.wallMs;
  emit({
    name: 'lanes.wallRatio',
    value: Number(ratio.toFixed(3)),
    unit: 'ratio',
    target: 0.35,
    stories: STORIES,
    storyMs,
    wallMs1: Math.round(one.wallMs),
    wallMs4: Math.round(four.wallMs),
  });
  const all = [...one.mergeMs, ...four.mergeMs];
  emit({
    name: 'lanes.mergeMsPerStory',
    value: Math.round(all.reduce((a, b) => a + b, 0) / Math.max(1, all.length)),
    unit: 'ms',
    merges: all.length,
  });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
