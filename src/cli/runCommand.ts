import { InvalidArgumentError, Option, type Command } from 'commander';
import { markRunInterruptedSync } from '../core/control/runRecords';
import { clockTime } from '../core/control/activityText';
import { EngineRefusal, LoopEngine, StorageRefusal } from '../core/loop/startRun';
import { STORAGE_EXIT } from '../core/store/storageFailure';
import { RunRecorder } from '../core/loop/recorder';
import { loadConfig } from '../core/store/loadConfig';
import { resolveProtection } from '../core/process/containment';
import { environmentSecrets, redactEvent } from '../core/trust/redact';
import { formatTrustRefusal, trustOverride } from '../core/trust/trustDecision';
import { checkWorkspaceTrust } from '../core/trust/workspaceTrust';
import { resolveFolder } from './folder';
import { AGENT_NAMES } from '../core/model/agentNames';
import type { RalphConfig } from '../core/model/config';
import { writeOut, writeErr } from './terminalOut';

interface RunOptions {
  source?: string;
  item?: string;
  agent?: string;
  maxIterations?: number;
  gates: boolean;
  json?: boolean;
  model?: string;
  maxCost?: number;
  maxTime?: number;
  reviewer?: boolean;
  trust?: boolean;
  parallel?: boolean;
  maxParallel?: number;
}

/** Exit code of a usage error of `ralph run` (sysexits EX_USAGE). */
export const USAGE_EXIT = 64;

function positiveInt(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('expected a whole number ≥ 1');
  return n;
}
function nonNegative(v: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new InvalidArgumentError('expected a number ≥ 0');
  return n;
}

/**
 * `ralph run`: the loop engine headless, printing the activity stream (or, with `--json`, one engine event per
 * line). Exit codes: 0 complete, 1 failed / stalled / blocked (or refused to start), 2 a cap reached, 3 stopped by
 * the user (STOP, stop-requested), 74 `.ralph/` cannot be written (read-only, disk full: the cause is recorded in
 * run.json when it can be, and always printed), 130 interrupted (Ctrl-C: the agent's process group is ended first).
 */
export function registerRunCommand(program: Command): void {
  program
    .command('run')
    .description('Run the loop: drive the agent through the tasks until they are verified done')
    .option(
      '--source <source>',
      'task source: flow | quantum | checklist | a checklist path (default: the first found)',
    )
    .option(
      '--item <id>',
      'begin with this task, story or box (`<file>:<line>`) when it is ready; otherwise say why and name the next ready one',
    )
    .addOption(new Option('--agent <agent>', 'agent CLI (default: config "agent")').choices([...AGENT_NAMES]))
    .option('--max-iterations <n>', 'stop after N iterations (default: config maxIterations, 25)', positiveInt)
    .option('--no-gates', 'run without verification gates (otherwise a run without gates is refused)')
    .option('--model <model>', 'model passed to the agent with --model')
    .option('--max-cost <usd>', 'stop once the agents cost this much, USD (0 = no cap)', nonNegative)
    .option('--max-time <minutes>', 'stop after this many minutes (0 = no cap)', nonNegative)
    .option(
      '--reviewer',
      'after the final gate, run a reviewer iteration whose <verdict>SHIP|NEEDS_WORK</verdict> decides',
    )
    .option(
      '--parallel',
      'quantum.json: run independent stories at once, each in its own git worktree .ql-wt/<id> on branch ql-wt/<id>, merged back into the feature branch (needs a clean git folder)',
    )
    .option('--max-parallel <n>', 'most stories at once with --parallel (default: config maxParallel, 4)', positiveInt)
    .option('--json', 'print engine events as JSON lines instead of the activity stream')
    .option(
      '--trust',
      'use the workspace configuration that names programs (agent paths and arguments, gates) for this run even if it is not trusted (RALPH_TRUST=1 does the same)',
    )
    .addHelpText(
      'after',
      '\nExit codes: 0 complete, 1 failed/stalled/blocked or refused, 2 a cap reached, 3 stopped by the user, 74 .ralph/ cannot be written (read-only, disk full), 130 interrupted, 64 a usage error.',
    )
    // 2 means "a cap reached" for this command, so its usage errors exit 64 (EX_USAGE) instead of the CLI's usual 2.
    .exitOverride((err) => {
      throw Object.assign(err, { exitCode: err.exitCode === 0 ? 0 : USAGE_EXIT });
    })
    .action(async (opts: RunOptions, cmd: Command) => {
      const folder = resolveFolder(cmd);
      // Workspace configuration that names programs runs only once trusted (core/trust/).
      const trust = await checkWorkspaceTrust(folder, trustOverride(opts.trust));
      if (!trust.allowed) {
        const message = formatTrustRefusal(trust, '`ralph run`');
        if (opts.json)
          writeOut(
            JSON.stringify({
              success: false,
              error: message,
              trust: { state: trust.state, hash: trust.hash, diff: trust.diff },
            }) + '\n',
          );
        else writeErr(`ralph: ${message}\n`);
        process.exitCode = 1;
        return;
      }
      if (opts.parallel && opts.source && opts.source !== 'quantum') {
        writeErr(`ralph: --parallel runs quantum stories only (--source quantum), not ${opts.source}\n`);
        process.exitCode = USAGE_EXIT;
        return;
      }
      if (opts.maxParallel !== undefined && !opts.parallel) {
        writeErr('ralph: --max-parallel needs --parallel\n');
        process.exitCode = USAGE_EXIT;
        return;
      }
      const config = await loadConfig(folder, {
        flags: {
          ...(opts.agent ? { agent: opts.agent as RalphConfig['agent'] } : {}),
          ...(opts.maxIterations ? { maxIterations: opts.maxIterations } : {}),
          ...(opts.model ? { model: opts.model } : {}),
          ...(opts.maxCost !== undefined ? { maxCostUsd: opts.maxCost } : {}),
          ...(opts.maxTime !== undefined ? { maxWallTimeMinutes: opts.maxTime } : {}),
          ...(opts.reviewer ? { reviewer: true } : {}),
        },
      });
      // Said before anything runs: where the kernel refuses, the protected paths are kept by the guard's analyzer only.
      const protection = resolveProtection(config.containment);
      if (protection.kind === 'not-enforced')
        writeErr(
          `ralph: protected paths ${protection.detail}: .ralph/ (the command policy, the run folders), .git/hooks, .git/config and ralph's state folder are kept by the command guard's analyzer only\n`,
        );
      const cancel = new AbortController();
      const engine = new LoopEngine({
        folder,
        config,
        source: opts.source,
        ...(opts.item ? { item: opts.item } : {}),
        ...(opts.parallel ? { parallel: true } : {}),
        ...(opts.maxParallel ? { maxParallel: opts.maxParallel } : {}),
        noGates: !opts.gates,
        signal: cancel.signal,
      });
      // The agents' keys in the environment the agent inherits are never written either.
      const secrets = environmentSecrets(process.env);
      const recorder = new RunRecorder(folder, engine.runId, {
        onLine: opts.json ? undefined : (line) => writeOut(`[${clockTime(new Date())}] ${line}\n`),
        onError: (err) => writeErr(`ralph: could not write a run record: ${err.message}\n`),
        agentArgs: config.agentArgs,
        secrets,
      });
      engine.on('event', (e, lane) => {
        recorder.record(e, lane);
        if (opts.json)
          writeOut(JSON.stringify({ ...redactEvent(e, config.agentArgs, secrets), ...(lane ? { lane } : {}) }) + '\n');
      });
      if (trust.via && !opts.json)
        writeErr(
          `ralph: the workspace configuration is ${trust.state === 'changed' ? 'changed since you trusted it' : 'not trusted'}; used for this run because of ${trust.via}\n`,
        );
      let interrupts = 0;
      const onSignal = (sig: NodeJS.Signals) => {
        interrupts++;
        if (interrupts === 1) {
          // After SIGHUP the terminal may be gone: a failed write must not stop the stop.
          try {
            writeErr(`\nralph: ${sig}: ending the agent and stopping (again to quit at once)\n`);
          } catch {
            /* no terminal */
          }
          cancel.abort();
        } else {
          // The engine cannot write its end any more: the recorder and run.json's writer mark it, synchronously.
          recorder.endInterruptedSync('interrupted (Ctrl-C twice)');
          markRunInterruptedSync(folder, engine.runId);
          process.exit(130);
        }
      };
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
      // A closed terminal (SIGHUP) ends the run as Ctrl-C does: the agent is ended and unverified claims are put back;
      // Node's default would end this process at once and leave the agent running.
      process.on('SIGHUP', onSignal);
      // The completion marker is written on every exit path (flow-next §2.11-5), even one the engine never reached.
      // Never a stack trace from here: a .ralph/ that became unwritable is reported in one line.
      const onExit = () => {
        try {
          recorder.completeIfOpen('INTERRUPTED');
        } catch (err) {
          try {
            writeErr(`ralph: could not mark the run log complete: ${(err as Error).message}\n`);
          } catch {
            /* no terminal */
          }
        }
      };
      process.on('exit', onExit);
      try {
        const result = await engine.run();
        await recorder.flush().catch((err: Error) => writeErr(`ralph: could not write the run log: ${err.message}\n`));
        if (result.storageFailure) {
          // The cause is in run.json and the run log when they could be written; the terminal always gets it.
          writeErr(`ralph: the run stopped because .ralph/ cannot be written: ${result.storageFailure}\n`);
          if (result.endNotRecorded)
            writeErr(
              `ralph: its end is not in .ralph/runs/${engine.runId}/run.json (${result.endNotRecorded}); the next \`ralph run\` marks it crashed and puts its claims back.\n`,
            );
        }
        process.exitCode = result.exitCode;
      } catch (err) {
        if (err instanceof EngineRefusal) {
          if (opts.json) writeOut(JSON.stringify({ success: false, error: err.message }) + '\n');
          else writeErr(`ralph: ${err.message}\n`);
          process.exitCode = err instanceof StorageRefusal ? STORAGE_EXIT : 1;
          process.off('exit', onExit);
          return;
        }
        throw err;
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
        process.off('SIGHUP', onSignal);
      }
    });
}
