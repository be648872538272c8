/**
 * `npm run bench` (or `node scripts/bench.mjs cli`): the CLI as bots call it (issue 10), as ratios to a bare
 * `node -e 0` measured in the same run (medians). One JSON object per line: {"name","value","unit",…}.
 *  - node_start: `node -e 0`.
 *  - status_json_warm / _one_changed / _no_cache: `ralph status --json` on 5,000 flow-next tasks + 5,000 quantum
 *    stories: nothing changed since the last call (the answer cache serves it: a `stat` per input); one task file
 *    rewritten before each call (within the racy tick, so the answer is computed again over the warm parse cache);
 *    `RALPH_CACHE=0`. Targets ≤ 2×, ≤ 2×, ≤ 3× node_start.
 *  - next_json_warm: `ralph next --json` on the same plan, nothing changed (answer cache); reset_cascade: `ralph task reset fn-7.1 --cascade` (49
 *    dependents in its epic) on the same plan. Target ≤ 2.5×.
 *  - status_json_peak_rss_<n>: peak RSS (MB) of `status --json` at n = 1,000, 5,000, 10,000 and 20,000 (n flow
 *    tasks and n stories: 2n items), warm and without cache; status_json_rss_growth: n = 20,000 over n = 1,000.
 *    Target ≤ 150 MB at 20,000 items (n = 10,000; n = 20,000 is printed too).
 *  - status_json_no_cache_floor: a script that only reads and `JSON.parse`s the files a cacheless status must read
 *    (.flow/meta.json, tasks, epics, the flow-state overlay, quantum.json) with `readFileSync`, nothing else: the cost
 *    of the plan's files alone, to read the ≤ 3× no-cache target against.
 *  - flowctl_status_json: flowctl 4.4.0's `status --json` on the flow-next part, when `RALPH_SHARED_DIR` (default
 *    ../shared) has it, else a line saying why not.
 * The parse cache goes to a temporary XDG_CACHE_HOME; generated data lives in os.tmpdir() and is deleted.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { makeWorkspace } from './workspace';

const cli = path.resolve(__dirname, '..', 'cli.js');
const emit = (o: Record<string, unknown>) => process.stdout.write(JSON.stringify(o) + '\n');
const round = (x: number) => Math.round(x * 100) / 100;
const cacheHome = fs.mkdtempSync(path.join(os.tmpdir(), 'ralph-bench-cache-'));
const rssProbe = path.join(cacheHome, 'rss.js');
fs.writeFileSync(
  rssProbe,
  "process.on('exit', () => require('fs').writeSync(2, '\\nRALPH_MAXRSS_KB ' + process.resourceUsage().maxRSS + '\\n'));\n",
);
const floorScript = path.join(cacheHome, 'floor.js');
fs.writeFileSync(
  floorScript,
  [
    "const fs = require('fs'), path = require('path'); const dir = process.argv[2]; let n = 0;",
    "const parse = (f) => { JSON.parse(fs.readFileSync(f, 'utf8')); n++; };",
    "for (const d of ['.flow/tasks', '.flow/epics', '.git/flow-state/tasks']) for (const e of fs.readdirSync(path.join(dir, d), { withFileTypes: true })) if (e.isFile() && e.name.endsWith('.json')) parse(path.join(dir, d, e.name));",
    "parse(path.join(dir, '.flow', 'meta.json')); parse(path.join(dir, 'quantum.json')); process.stdout.write(n + '\\n');",
  ].join('\n'),
);

interface Run {
  ms: number;
  rssKb: number;
}

function run(
  cmd: string,
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; cwd?: string; before?: () => void } = {},
): Run {
  opts.before?.();
  const t0 = process.hrtime.bigint();
  const r = spawnSync(cmd, args, {
    cwd: opts.cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
    maxBuffer: 512 * 1024 * 1024,
    env: { ...process.env, XDG_CACHE_HOME: cacheHome, ...opts.env },
  });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0)
    throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}: ${String(r.stderr).slice(0, 2000)}`);
  const m = /RALPH_MAXRSS_KB (\d+)/.exec(String(r.stderr));
  return { ms, rssKb: m ? Number(m[1]) : NaN };
}

function median(n: number, f: () => Run): Run {
  const runs = Array.from({ length: n }, f);
  const mid = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  return { ms: mid(runs.map((r) => r.ms)), rssKb: mid(runs.map((r) => r.rssKb)) };
}

const sleep = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

function main(): void {
  const node = () => run(process.execPath, ['-e', '0']);
  const nodeMs = median(9, node).ms;
  emit({ name: 'node_start', value: round(nodeMs), unit: 'ms' });
  const ratio = (name: string, r: Run, target: number, extra: Record<string, unknown> = {}) =>
    emit({
      name,
      value: round(r.ms / nodeMs),
      unit: 'x node_start',
      ms: round(r.ms),
      node_start_ms: round(nodeMs),
      target_x: target,
      ok: r.ms / nodeMs <= target,
      ...extra,
    });

  const dir = makeWorkspace(5000);
  try {
    const status = (env: NodeJS.ProcessEnv = {}) =>
      run(process.execPath, [cli, '-C', dir, 'status', '--json'], { env });
    status();
    sleep(2500); // past the racy tick: files written just before the cache are read again (store/parseCache.ts)
    status();
    ratio(
      'status_json_warm',
      median(7, () => status()),
      2,
      { items: 10000 },
    );
    let k = 0;
    const task = path.join(dir, '.flow', 'tasks', 'fn-3.7.json');
    const original = fs.readFileSync(task, 'utf8');
    ratio(
      'status_json_one_changed',
      median(7, () =>
        run(process.execPath, [cli, '-C', dir, 'status', '--json'], {
          before: () => fs.writeFileSync(task, original.replace('"Task fn-3.7"', `"Task fn-3.7 v${++k}"`)),
        }),
      ),
      2,
      { items: 10000 },
    );
    ratio(
      'status_json_no_cache',
      median(5, () => status({ RALPH_CACHE: '0' })),
      3,
      { items: 10000 },
    );
    const floor = median(5, () => run(process.execPath, [floorScript, dir]));
    emit({
      name: 'status_json_no_cache_floor',
      value: round(floor.ms / nodeMs),
      unit: 'x node_start',
      ms: round(floor.ms),
      node_start_ms: round(nodeMs),
      note: 'readFileSync + JSON.parse of the files a cacheless status reads, nothing else',
    });
    ratio(
      'next_json_warm',
      median(7, () => run(process.execPath, [cli, '-C', dir, 'next', '--json'])),
      2.5,
      { items: 10000 },
    );
    const epic = path.join(dir, '.flow', 'tasks');
    const doneAll = () => {
      for (let t = 1; t <= 50; t++) {
        const f = path.join(epic, `fn-7.${t}.json`);
        fs.writeFileSync(f, fs.readFileSync(f, 'utf8').replace(/"status": "\w+"/, '"status": "done"'));
      }
    };
    ratio(
      'reset_cascade',
      median(5, () =>
        run(process.execPath, [cli, '-C', dir, 'task', 'reset', 'fn-7.1', '--cascade', '--json'], { before: doneAll }),
      ),
      2.5,
      { items: 10000, dependents: 49 },
    );

    const flowctl = path.join(
      path.resolve(process.env.RALPH_SHARED_DIR ?? path.join(__dirname, '..', '..', '..', 'shared')),
      'peers',
      'flow-next',
      'flowctl.py',
    );
    const py = spawnSync('python3', ['--version']);
    if (fs.existsSync(flowctl) && py.status === 0) {
      const theirs = median(3, () => run('python3', [flowctl, 'status', '--json'], { cwd: dir }));
      const ours = median(5, () => status());
      emit({
        name: 'flowctl_status_json',
        value: round(theirs.ms / nodeMs),
        unit: 'x node_start',
        ms: round(theirs.ms),
        ralph_ms: round(ours.ms),
        flowctl_over_ralph: round(theirs.ms / ours.ms),
        items: 5000,
        note: 'flowctl 4.4.0 on the 5,000 flow-next tasks (it does not read quantum.json); ralph on all 10,000 items, cache warm',
      });
    } else {
      emit({
        name: 'flowctl_status_json',
        value: null,
        unit: 'x node_start',
        note: `not measured: ${fs.existsSync(flowctl) ? 'python3 not found' : `flowctl not found at ${flowctl} (set RALPH_SHARED_DIR)`}`,
      });
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }

  const rss: Record<string, number> = {};
  for (const n of [1000, 5000, 10000, 20000]) {
    const w = makeWorkspace(n);
    try {
      const st = (env: NodeJS.ProcessEnv = {}) =>
        run(process.execPath, ['--require', rssProbe, cli, '-C', w, 'status', '--json'], { env });
      st();
      sleep(2500);
      st();
      rss[`warm_${n}`] = median(3, () => st()).rssKb / 1024;
      rss[`cold_${n}`] = median(3, () => st({ RALPH_CACHE: '0' })).rssKb / 1024;
      emit({
        name: `status_json_peak_rss_${n}`,
        value: round(rss[`warm_${n}`]!),
        unit: 'MB',
        no_cache_mb: round(rss[`cold_${n}`]!),
        items: 2 * n,
        target_mb: n === 10000 ? 150 : undefined,
        ok: n === 10000 ? rss[`warm_${n}`]! <= 150 && rss[`cold_${n}`]! <= 150 : undefined,
      });
    } finally {
      fs.rmSync(w, { recursive: true, force: true });
    }
  }
  emit({
    name: 'status_json_rss_growth',
    value: round(rss.warm_20000! / rss.warm_1000!),
    unit: 'x (20k/1k items, cache warm)',
    no_cache: round(rss.cold_20000! / rss.cold_1000!),
    mb_1k: round(rss.warm_1000!),
    mb_20k: round(rss.warm_20000!),
  });
}

try {
  main();
} catch (err) {
  process.stderr.write(String((err as Error).stack ?? err) + '\n');
  process.exitCode = 1;
} finally {
  fs.rmSync(cacheHome, { recursive: true, force: true });
}
