/**
 * `npm run bench` (or `node scripts/bench.mjs waves`): wave recovery (issue 18). One JSON object per line.
 *  - node_start: `node -e 0`, the floor every CLI call pays (median of 7).
 *  - waves_check_1000: one `ralph waves check --phase p --json` pass, as a whole process, over a wave of 1,000
 *    subagents (a third resumable orphans that get briefs, a third done, a third active; STATE.md, claims.json),
 *    median of 5 with `.planning/` removed before each; `ratio_to_node_start` against the target ≤ 3.
 *  - waves_check_1000_steady: the same pass when every brief is already up to date (nothing but the log written).
 *  - cli_start: `ralph --version`, the bundle's start that every command pays.
 *  - waves_watch_reaction_p95 (and _p50): `ralph waves check --watch --json` on that wave; a new orphan checkpoint
 *    is written 20 times and the time until the watch prints the pass that shows it is measured.
 * Generated data lives in os.tmpdir() and is deleted afterwards.
 */
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const cli = path.resolve(__dirname, '..', 'cli.js');
const emit = (o: Record<string, unknown>) => process.stdout.write(JSON.stringify(o) + '\n');
const round = (x: number) => Math.round(x * 10) / 10;

function makeWave(n: number): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ralph-bench-waves-'));
  const wave = path.join(dir, '.ijfw', 'wave-W1');
  fs.mkdirSync(wave, { recursive: true });
  fs.mkdirSync(path.join(dir, '.ijfw', 'blackboard'), { recursive: true });
  const now = Date.now();
  const ids: string[] = [];
  const claims: unknown[] = [];
  for (let i = 0; i < n; i++) {
    const id = `W1-S${String(i).padStart(4, '0')}`;
    ids.push(id);
    const kind = i % 3;
    const body =
      kind === 0
        ? {
            schema_version: 1,
            wave_id: 'W1',
            sub_id: id,
            ts: new Date(now - 600_000).toISOString(),
            tool_use_count: 14,
            last_action: `step ${i} done; tests pass`,
            files_created: [`src/m${i}.ts`],
            files_modified: ['src/index.ts'],
            commits_made: ['abc1234'],
            next_step: `wire module ${i} into the index`,
          }
        : kind === 1
          ? {
              waveId: 'W1',
              subagentId: id,
              dedupKey: `checkpoint:${id}:x`,
              checkpoint: { status: 'DONE', note: 'ok' },
              updated_at: new Date(now - 900_000).toISOString(),
            }
          : {
              schema_version: 1,
              wave_id: 'W1',
              sub_id: id,
              ts: new Date(now + 3_600_000).toISOString(),
              last_action: 'working',
              next_step: 'keep going',
            };
    fs.writeFileSync(path.join(wave, `subagent-${id}.checkpoint.json`), JSON.stringify(body));
    claims.push({
      id: `W1:m${i}:${id}`,
      artifact_id: `W1:m${i}`,
      agent: id,
      paths: [`src/m${i}.ts`],
      status: 'active',
      claimed_at: new Date(now - 3_600_000).toISOString(),
      ttl_ms: 1_800_000,
      heartbeat_at: null,
      note: `Implement module ${i}`,
    });
  }
  fs.writeFileSync(
    path.join(wave, 'STATE.md'),
    `---\nwave_id: W1\nstatus: in_progress\ncreated_at: ${new Date(now - 3_600_000).toISOString()}\nsubagents:\n${ids.map((id) => `  - ${id}`).join('\n')}\n---\n\n## Recent findings\n`,
  );
  fs.writeFileSync(
    path.join(dir, '.ijfw', 'blackboard', 'claims.json'),
    JSON.stringify({ version: 1, claims, updated_at: new Date(now).toISOString() }),
  );
  return dir;
}

function wallMs(args: string[], before: () => void, runs: number, okCodes = [0]): number {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    before();
    const t0 = process.hrtime.bigint();
    const r = spawnSync(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 256 * 1024 * 1024 });
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    if (!okCodes.includes(r.status ?? -1)) throw new Error(`${args.join(' ')} exited ${r.status}: ${String(r.stderr)}`);
  }
  return times.sort((a, b) => a - b)[Math.floor(times.length / 2)]!;
}

const percentile = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)]!;

async function watchLatency(dir: string, samples: number): Promise<number[]> {
  const child = spawn(process.execPath, [cli, '-C', dir, 'waves', 'check', '--phase', 'p', '--json', '--watch'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines: { at: number; text: string }[] = [];
  let buf = '';
  let wake: (() => void) | undefined;
  child.stdout.on('data', (d) => {
    buf += String(d);
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      lines.push({ at: performance.now(), text: buf.slice(0, i) });
      buf = buf.slice(i + 1);
      wake?.();
    }
  });
  const waitFor = async (pred: (l: { text: string }) => boolean, ms: number) => {
    const deadline = performance.now() + ms;
    for (;;) {
      const hit = lines.find(pred);
      if (hit) return hit;
      if (performance.now() > deadline) throw new Error('the watch did not react in time');
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, 20);
      });
    }
  };
  try {
    await waitFor(() => true, 30_000);
    await new Promise((r) => setTimeout(r, 500));
    const out: number[] = [];
    const wave = path.join(dir, '.ijfw', 'wave-W1');
    for (let k = 0; k < samples; k++) {
      const id = `W1-NEW${k}`;
      lines.length = 0;
      const t0 = performance.now();
      fs.writeFileSync(
        path.join(wave, `subagent-${id}.checkpoint.json`),
        JSON.stringify({
          schema_version: 1,
          ts: new Date(Date.now() - 600_000).toISOString(),
          next_step: `resume ${id}`,
        }),
      );
      const hit = await waitFor((l) => l.text.includes(`"subId":"${id}"`), 10_000);
      out.push((hit as { at: number }).at - t0);
      await new Promise((r) => setTimeout(r, 100));
    }
    return out;
  } finally {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGINT');
    await exited;
  }
}

async function main(): Promise<void> {
  const nodeStart = wallMs(['-e', '0'], () => undefined, 7);
  emit({ name: 'node_start', value: round(nodeStart), unit: 'ms' });
  const dir = makeWave(1000);
  try {
    const check = wallMs(
      [cli, '-C', dir, 'waves', 'check', '--phase', 'p', '--json'],
      () => fs.rmSync(path.join(dir, '.planning'), { recursive: true, force: true }),
      5,
    );
    emit({
      name: 'waves_check_1000',
      value: round(check),
      unit: 'ms',
      subagents: 1000,
      briefs_written: 334,
      ratio_to_node_start: round(check / nodeStart),
      target_ratio: 3,
    });
    // The same pass when the briefs are already up to date (a later pass of a long-running orchestration).
    const steady = wallMs([cli, '-C', dir, 'waves', 'check', '--phase', 'p', '--json'], () => undefined, 5);
    emit({
      name: 'waves_check_1000_steady',
      value: round(steady),
      unit: 'ms',
      subagents: 1000,
      briefs_written: 0,
      ratio_to_node_start: round(steady / nodeStart),
      target_ratio: 3,
    });
    const bare = wallMs([cli, '--version'], () => undefined, 5);
    emit({
      name: 'cli_start',
      value: round(bare),
      unit: 'ms',
      ratio_to_node_start: round(bare / nodeStart),
      note: "ralph --version: the bundle's own start, paid by every command",
    });
    const lat = await watchLatency(dir, 20);
    emit({
      name: 'waves_watch_reaction_p95',
      value: round(percentile(lat, 95)),
      unit: 'ms',
      samples: lat.length,
      subagents: 1000,
      target_ms: 1000,
    });
    emit({ name: 'waves_watch_reaction_p50', value: round(percentile(lat, 50)), unit: 'ms', samples: lat.length });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

void main().catch((err: Error) => {
  process.stderr.write(`${err.stack ?? err.message}\n`);
  process.exitCode = 1;
});
