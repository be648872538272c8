import * as os from 'node:os';
import * as path from 'node:path';
import { InvalidArgumentError, type Command } from 'commander';
import { loadConfig } from '../core/store/loadConfig';
import { formatTrustRefusal, trustOverride } from '../core/trust/trustDecision';
import { checkWorkspaceTrust } from '../core/trust/workspaceTrust';
import { writeErr } from './terminalOut';

interface WorkerCommandOptions {
  redis?: string;
  concurrency: number;
  dir?: string;
  repo: string[];
  trust?: boolean;
}

function positiveInt(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('expected a whole number ≥ 1');
  return n;
}

/**
 * `ralph worker --redis <url> [--concurrency N] [--dir <folder>] --repo <remote>...`: runs lanes of parallel runs
 * started elsewhere with `laneDispatcher: "bullmq"` (docs/distributed-lanes.md). The work folder holds the
 * repositories' mirrors, the lanes' worktrees and this worker's own `.ralph/config.json` (agent, gates), which must be
 * trusted here (`ralph trust -C <dir>`, or `--trust`). Runs until SIGTERM or Ctrl-C: running lanes are then
 * cancelled, their branches pushed and their ends reported. Exit 0 after a clean end, 1 when refused (an address
 * without a password, a Redis that answers without one, no `--repo`, configuration not trusted).
 */
export function registerWorkerCommand(program: Command): void {
  program
    .command('worker')
    .description('Run lanes of parallel runs from Redis (laneDispatcher "bullmq") on this machine')
    .option('--redis <url>', 'redis://[user]:password@host:port or rediss://… (default: $RALPH_REDIS_URL)')
    .option('--concurrency <n>', 'lanes at once on this worker', positiveInt, 1)
    .option(
      '--dir <folder>',
      'work folder: mirrors, lanes, and this worker’s .ralph/config.json (default: ~/.ralph-worker)',
    )
    .option(
      '--repo <remote>',
      'a repository this worker serves (its remote address, as the runs name it); repeat for more',
      (v: string, all: string[]) => [...all, v],
      [] as string[],
    )
    .option('--trust', 'use the work folder’s configuration that names programs even if it is not trusted')
    .action(async (opts: WorkerCommandOptions) => {
      const url = opts.redis ?? process.env.RALPH_REDIS_URL;
      if (!url) {
        writeErr('ralph worker: --redis <url> or RALPH_REDIS_URL is needed\n');
        process.exitCode = 2;
        return;
      }
      const dir = path.resolve(opts.dir ?? path.join(os.homedir(), '.ralph-worker'));
      const trust = await checkWorkspaceTrust(dir, trustOverride(opts.trust));
      if (!trust.allowed) {
        writeErr(`ralph worker: ${formatTrustRefusal(trust, '`ralph worker`')}\n`);
        process.exitCode = 1;
        return;
      }
      const config = await loadConfig(dir);
      // Loaded here, not with the CLI: only a worker needs BullMQ and ioredis.
      const { runWorker, WorkerRefusal } = await import('../core/remote/worker');
      const stop = new AbortController();
      const end = () => stop.abort();
      // `on`, not `once`: signal-exit (loaded by a lane's execa) raises the signal again when its own listener is the
      // only one left by the time it runs, which a `once` listener, removed as it fires, would be: the worker then
      // died at once, its lanes and spare tree left behind.
      process.on('SIGTERM', end);
      process.on('SIGINT', end);
      try {
        await runWorker({
          redisUrl: url,
          concurrency: opts.concurrency,
          dir,
          repos: opts.repo,
          config,
          log: (line) => writeErr(`ralph worker: ${line}\n`),
          signal: stop.signal,
        });
      } catch (err) {
        writeErr(`ralph worker: ${(err as Error).message}\n`);
        process.exitCode = 1;
        if (!(err instanceof WorkerRefusal)) throw err;
      } finally {
        process.off('SIGTERM', end);
        process.off('SIGINT', end);
      }
    });
}
