/**
 * `npm run bench` (or `node scripts/bench.mjs sources`): the cost of reading task sources and of writing them.
 * Prints one JSON object per line: {"name","value","unit",...}.
 *  - status_json_<n>: wall time of `ralph status --json` including Node start, on a generated workspace holding
 *    n flow-next tasks (in n/50 epics, every fourth with a flow-state overlay) and n quantum stories; median of 5.
 *  - node_start: `node -e 0`, the floor every CLI call pays on this machine.
 *  - status_json_growth: time(20k)/time(1k) (linear growth would be 20) and the same above the Node floor.
 *  - reset_cascade_10: `ralph task reset <id> --cascade` of a task with 10 dependents (11 tasks, 22 files).
 *  - write_per_file: one atomic write (temp file, fsync, rename) of a flowctl-sized task JSON, mean of 200.
 * Generated data lives in os.tmpdir() and is deleted afterwards.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { writeTextAtomic } from '../src/core/store/atomicWrite';
import { makeWorkspace } from './workspace';

const cli = path.resolve(__dirname, '..', 'cli.js');
const emit = (o: Record<string, unknown>) => process.stdout.write(JSON.stringify(o) + '\n');

const json = (v: unknown) => JSON.stringify(v, null, 2) + '\n';

function wallMs(args: string[], runs = 5): number {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = process.hrtime.bigint();
    const r = spawnSync(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 256 * 1024 * 1024 });
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    if (r.status !== 0) throw new Error(`${args.join(' ')} exited ${r.status}: ${String(r.stderr)}`);
  }
  return times.sort((a, b) => a - b)[Math.floor(times.length / 2)]!;
}

const round = (x: number) => Math.round(x * 10) / 10;

async function main(): Promise<void> {
  const nodeStart = wallMs(['-e', '0'], 7);
  emit({ name: 'node_start', value: round(nodeStart), unit: 'ms' });
  const status: Record<number, number> = {};
  for (const n of [1000, 5000, 20000]) {
    const dir = makeWorkspace(n);
    try {
      status[n] = wallMs([cli, '-C', dir, 'status', '--json']);
      emit({
        name: `status_json_${n}`,
        value: round(status[n]!),
        unit: 'ms',
        flow_tasks: n,
        quantum_stories: n,
        above_node_start_ms: round(status[n]! - nodeStart),
        target_ms: n === 5000 ? 150 : undefined,
      });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
  emit({
    name: 'status_json_growth',
    value: round(status[20000]! / status[1000]!),
    unit: 'x (20k/1k; linear = 20)',
    above_node_start: round((status[20000]! - nodeStart) / (status[1000]! - nodeStart)),
  });

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ralph-bench-reset-'));
  try {
    fs.mkdirSync(path.join(dir, '.flow', 'epics'), { recursive: true });
    fs.mkdirSync(path.join(dir, '.flow', 'tasks'), { recursive: true });
    fs.writeFileSync(
      path.join(dir, '.flow', 'epics', 'fn-1.json'),
      json({ depends_on_epics: [], id: 'fn-1', status: 'open', title: 'E' }),
    );
    const writeTasks = () => {
      for (let t = 1; t <= 11; t++) {
        const id = `fn-1.${t}`;
        fs.writeFileSync(
          path.join(dir, '.flow', 'tasks', `${id}.json`),
          json({
            assignee: 'bench',
            claim_note: '',
            claimed_at: '2026-01-10T07:32:10.987913Z',
            depends_on: t > 1 ? ['fn-1.1'] : [],
            epic: 'fn-1',
            evidence: { commits: ['abc'], prs: [], tests: ['t'] },
            id,
            priority: null,
            status: 'done',
            title: `T${t}`,
            updated_at: '2026-01-10T07:32:10.987913Z',
          }),
        );
        fs.writeFileSync(
          path.join(dir, '.flow', 'tasks', `${id}.md`),
          `# ${id} T\n\n## Done summary\nok\n\n## Evidence\n- Commits: abc\n- Tests: t\n- PRs:\n`,
        );
      }
    };
    const times: number[] = [];
    for (let i = 0; i < 5; i++) {
      writeTasks();
      const t0 = process.hrtime.bigint();
      const out = execFileSync(process.execPath, [cli, '-C', dir, 'task', 'reset', 'fn-1.1', '--cascade', '--json'], {
        encoding: 'utf8',
      });
      times.push(Number(process.hrtime.bigint() - t0) / 1e6);
      if ((JSON.parse(out) as { reset: string[] }).reset.length !== 11) throw new Error(`unexpected reset: ${out}`);
    }
    const resetMs = times.sort((a, b) => a - b)[2]!;
    emit({
      name: 'reset_cascade_10',
      value: round(resetMs),
      unit: 'ms',
      dependents: 10,
      files_written: 22,
      above_node_start_ms: round(resetMs - nodeStart),
    });

    const file = path.join(dir, '.flow', 'tasks', 'fn-1.2.json');
    const text = fs.readFileSync(file, 'utf8');
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < 200; i++) await writeTextAtomic(file, text + ' '.repeat(i % 2));
    emit({
      name: 'write_per_file',
      value: round(Number(process.hrtime.bigint() - t0) / 1e6 / 200),
      unit: 'ms',
      bytes: text.length,
      note: 'temp file + fsync + rename',
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

void main().catch((err) => {
  process.stderr.write(String((err as Error).stack ?? err) + '\n');
  process.exitCode = 1;
});
