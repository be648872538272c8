/**
 * `npm run bench` (or `node scripts/bench.mjs cli`): the CLI as bots call it. One JSON object per line:
 * {"name","value","unit",…}; medians.
 *  - status_json_vs_flowctl_warm / _cold: `ralph status --json` on flowctl's 5,000-task flow-next tree (100 epics, a
 *    quarter of the tasks with a flow-state overlay; no other source; a git repository, so flowctl reads the overlays
 *    too, and the bench stops if the two count the tasks differently) over flowctl 4.4.0's `status --json` on the same
 *    tree (`python3 <RALPH_SHARED_DIR>/peers/flow-next/flowctl.py`), the two run in alternation in the same minutes.
 *    Warm: ralph's caches filled by an earlier call (a bot's poll). Cold: an empty cache folder for every call (the
 *    first call, or the first after a run: the engine purges the caches after every agent process). flowctl keeps no
 *    cache; both read through the warm OS page cache. Target ≤ 0.25 each. Without flowctl or python3: a line saying why.
 *    status_json_vs_flowctl_cold_without_extra_ca: the cold call with NODE_EXTRA_CA_CERTS unset (Node 20 reads that
 *    CA bundle at every start; flowctl does not), in the same rounds; no target, it shows what the machine adds.
 *  - node_start, and as ratios to it (no targets; they show where the time goes): status_json_warm / _one_changed /
 *    _no_cache on 5,000 flow-next tasks + 5,000 quantum stories (nothing changed; one task file rewritten before each
 *    call, within the racy tick, so the answer is computed again from the files; `RALPH_CACHE=0`);
 *    next_json_warm; reset_cascade (`ralph task reset fn-7.1 --cascade`, 49 dependents); status_json_no_cache_floor (a
 *    script that only reads and `JSON.parse`s the files a cacheless status reads: the cost of the files alone).
 *  - status_json_peak_rss_<n>: peak RSS (MB) of `status --json` at n = 1,000, 5,000, 10,000 and 20,000 (n flow
 *    tasks and n stories: 2n items), warm and without cache; status_json_rss_growth: n = 20,000 over n = 1,000.
 *    Target ≤ 150 MB at 20,000 items (n = 10,000; n = 20,000 is printed too).
 * The caches go to a temporary XDG_CACHE_HOME; generated data lives in os.tmpdir() and is deleted.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { gitIn, makeWorkspace } from './workspace';

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

/** flowctl 4.4.0's script, or why it cannot run here. */
function findFlowctl(): { script: string } | { why: string } {
  const shared = path.resolve(process.env.RALPH_SHARED_DIR ?? path.join(__dirname, '..', '..', '..', 'shared'));
  const script = path.join(shared, 'peers', 'flow-next', 'flowctl.py');
  if (!fs.existsSync(script)) return { why: `flowctl not found at ${script} (set RALPH_SHARED_DIR)` };
  if (spawnSync('python3', ['--version']).status !== 0) return { why: 'python3 not found' };
  return { script };
}

/**
 * `ralph status --json` over flowctl's on the 5,000-task flow-next tree, warm and cold, run in alternation (ralph,
 * flowctl, ralph, …) so the machine's drift hits both alike.
 */
function againstFlowctl(): void {
  const found = findFlowctl();
  if ('why' in found) {
    for (const name of [
      'status_json_vs_flowctl_warm',
      'status_json_vs_flowctl_cold',
      'status_json_vs_flowctl_cold_without_extra_ca',
    ])
      emit({ name, value: null, unit: 'x flowctl', note: `not measured: ${found.why}` });
    return;
  }
  const dir = makeWorkspace(5000, { quantum: false });
  // A real repository, as every flow-next tree is: flowctl finds its state folder with `git rev-parse
  // --git-common-dir` and, outside a repository, falls back to .flow/state, skipping the 1,250 overlays ralph reads.
  gitIn(dir, 'init', '-q');
  const colds: string[] = [];
  try {
    const ralph = (env: NodeJS.ProcessEnv = {}) => run(process.execPath, [cli, '-C', dir, 'status', '--json'], { env });
    const flowctl = () => run('python3', [found.script, 'status', '--json'], { cwd: dir });
    sameTaskCounts(dir, found.script);
    const fresh = () => {
      const c = fs.mkdtempSync(path.join(os.tmpdir(), 'ralph-bench-cold-'));
      colds.push(c);
      return { XDG_CACHE_HOME: c };
    };
    ralph();
    sleep(2500); // past the racy tick, so the next call stores its answer
    ralph();
    const pairs = {
      warm: [] as number[],
      cold: [] as number[],
      cold_without_extra_ca: [] as number[],
      flowctl: [] as number[],
    };
    for (let i = 0; i < 7; i++) {
      pairs.flowctl.push(flowctl().ms);
      pairs.warm.push(ralph().ms);
      pairs.cold.push(ralph(fresh()).ms);
      pairs.cold_without_extra_ca.push(ralph({ ...fresh(), NODE_EXTRA_CA_CERTS: undefined }).ms);
    }
    const mid = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const theirs = mid(pairs.flowctl);
    const notes = {
      warm: "ralph's caches filled by an earlier call (a bot's poll)",
      cold: 'an empty cache folder for every ralph call (the first call, or the first after a run)',
      // Node 20 reads the CA bundle NODE_EXTRA_CA_CERTS names at every start (35 ms here), TLS or not; flowctl does not.
      cold_without_extra_ca: `cold, with NODE_EXTRA_CA_CERTS unset for ralph (here: ${process.env.NODE_EXTRA_CA_CERTS ? 'set' : 'not set, the same as cold'}); no target`,
    };
    for (const kind of ['warm', 'cold', 'cold_without_extra_ca'] as const) {
      const ours = mid(pairs[kind]);
      const target = kind === 'cold_without_extra_ca' ? undefined : 0.25;
      emit({
        name: `status_json_vs_flowctl_${kind}`,
        value: Math.round((ours / theirs) * 1000) / 1000,
        unit: 'x flowctl',
        ms: round(ours),
        flowctl_ms: round(theirs),
        target_x: target,
        ok: target === undefined ? undefined : ours / theirs <= target,
        tasks: 5000,
        note: notes[kind],
      });
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
    for (const c of colds) fs.rmSync(c, { recursive: true, force: true });
  }
}

/**
 * Throws unless `ralph status --json` and flowctl's count the tree's tasks alike: a ratio of two tools that read
 * different files (flowctl without its state folder) would not compare like with like.
 */
function sameTaskCounts(dir: string, script: string): void {
  const counts = (cmd: string, args: string[]) => {
    const r = spawnSync(cmd, args, {
      cwd: dir,
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
      env: { ...process.env, XDG_CACHE_HOME: cacheHome },
    });
    const tasks = (JSON.parse(r.stdout) as { tasks?: Record<string, number> }).tasks ?? {};
    return JSON.stringify(
      Object.keys(tasks)
        .sort()
        .map((k) => [k, tasks[k]]),
    );
  };
  const ours = counts(process.execPath, [cli, 'status', '--json']);
  const theirs = counts('python3', [script, 'status', '--json']);
  if (ours !== theirs) throw new Error(`ralph and flowctl count the tasks differently: ${ours} against ${theirs}`);
}

function main(): void {
  const node = () => run(process.execPath, ['-e', '0']);
  const nodeMs = median(9, node).ms;
  emit({ name: 'node_start', value: round(nodeMs), unit: 'ms' });
  const ratio = (name: string, r: Run, extra: Record<string, unknown> = {}) =>
    emit({
      name,
      value: round(r.ms / nodeMs),
      unit: 'x node_start',
      ms: round(r.ms),
      node_start_ms: round(nodeMs),
      ...extra,
    });

  againstFlowctl();

  const dir = makeWorkspace(5000);
  try {
    const status = (env: NodeJS.ProcessEnv = {}) =>
      run(process.execPath, [cli, '-C', dir, 'status', '--json'], { env });
    status();
    sleep(2500); // past the racy tick: an answer whose inputs were written just before is not stored
    status();
    ratio(
      'status_json_warm',
      median(7, () => status()),
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
      { items: 10000 },
    );
    ratio(
      'status_json_no_cache',
      median(5, () => status({ RALPH_CACHE: '0' })),
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
      { items: 10000, dependents: 49 },
    );
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
