/**
 * Command-guard benchmarks (issue 17; `node scripts/bench.mjs guard`):
 *   - the decision in process, p50 / p95 per call over the guard's command table (test/support/guardTable.ts);
 *   - one hook invocation as a whole process (`node dist/guard-hook.js`, PreToolUse JSON on stdin), with the
 *     engine's warm guard server and standalone (deciding in process), beside a bare `node -e 0` measured in the
 *     same run; the ratios to the bare start are the figures (target: p95 ≤ 1.5× with the server).
 * Prints one JSON object per line: {"name","value","unit",…}.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { decideGuard } from '../src/core/gates/guardDecision';
import { startGuardServer } from '../src/core/gates/guardServer';
import { ctx, policyText, TABLE, WS } from '../test/support/guardTable';
import { findRepoRoot } from '../test/support/repoRoot';

const repo = findRepoRoot(__dirname);
const emit = (o: Record<string, unknown>) => console.log(JSON.stringify(o));
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return Number(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!.toFixed(3));
};

function timeProcess(args: string[], stdin: string, env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, args, { stdio: ['pipe', 'ignore', 'ignore'], env });
    child.on('error', reject);
    child.on('close', () => resolve(performance.now() - t0));
    child.stdin.end(stdin);
  });
}

async function main(): Promise<void> {
  // In process: the first call loads the parser; then rounds over the table.
  const c = ctx();
  decideGuard({ tool_name: 'Bash', tool_input: { command: 'ls' }, cwd: WS }, c);
  const times: number[] = [];
  for (let round = 0; round < 20; round++) {
    for (const [command] of TABLE) {
      const t0 = performance.now();
      decideGuard({ tool_name: 'Bash', tool_input: { command, description: 'd' }, cwd: WS }, c);
      times.push(performance.now() - t0);
    }
  }
  emit({ name: 'guard.decision.p50', value: pct(times, 50), unit: 'ms', commands: TABLE.length, calls: times.length });
  emit({ name: 'guard.decision.p95', value: pct(times, 95), unit: 'ms', commands: TABLE.length, calls: times.length });

  // Whole processes.
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ralph-bench-guard-'));
  const ws = path.join(tmp, 'ws');
  fs.mkdirSync(path.join(ws, '.ralph'), { recursive: true });
  fs.writeFileSync(path.join(ws, '.ralph', 'command-policy'), policyText);
  const env = { ...process.env, XDG_STATE_HOME: path.join(tmp, 'state'), RALPH_WORKSPACE: ws };
  const hook = path.join(repo, 'dist', 'guard-hook.js');
  const server = await startGuardServer({
    workspace: ws,
    runDir: path.join(ws, '.ralph', 'runs', 'bench'),
    install: {
      node: process.execPath,
      hook,
      cli: path.join(repo, 'dist', 'cli.js'),
      guard: path.join(repo, 'dist', 'guard.js'),
    },
    onRecord: () => undefined,
  });
  const commands = TABLE.map(([command]) => command).filter((_c, i) => i % 4 === 0);
  const input = (command: string) =>
    JSON.stringify({
      hook_event_name: 'PreToolUse',
      tool_name: 'Bash',
      tool_input: { command, description: 'd' },
      cwd: ws,
    });
  const bare: number[] = [];
  const withServer: number[] = [];
  const standalone: number[] = [];
  const rounds = Number(process.env.BENCH_GUARD_ROUNDS) || 2;
  try {
    for (let round = 0; round < rounds; round++) {
      for (const command of commands) {
        bare.push(await timeProcess(['-e', '0'], '', env));
        withServer.push(await timeProcess([hook, '--socket', server.socket], input(command), env));
        standalone.push(await timeProcess([hook], input(command), env));
      }
    }
  } finally {
    await server.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  const where = `${os.cpus().length} cores, node ${process.version}, ${bare.length} calls each, interleaved`;
  const b50 = pct(bare, 50);
  const b95 = pct(bare, 95);
  emit({ name: 'guard.process.bareNode.p50', value: b50, unit: 'ms', where });
  emit({ name: 'guard.process.bareNode.p95', value: b95, unit: 'ms', where });
  for (const [name, xs] of [
    ['withServer', withServer],
    ['standalone', standalone],
  ] as const) {
    const p50 = pct(xs, 50);
    const p95 = pct(xs, 95);
    emit({
      name: `guard.process.${name}.p50`,
      value: p50,
      unit: 'ms',
      ratioToBareNode: Number((p50 / b50).toFixed(2)),
      where,
    });
    emit({
      name: `guard.process.${name}.p95`,
      value: p95,
      unit: 'ms',
      ratioToBareNode: Number((p95 / b95).toFixed(2)),
      ...(name === 'withServer' ? { targetRatio: 1.5 } : {}),
      where,
    });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
