import type { Command } from 'commander';
import { spawn } from 'node:child_process';
import { EXIT_USAGE, gateCall, runLockedGate } from '../core/gates/gateCall';
import { resolveGates } from '../core/gates/gateConfig';
import { GATE_KILL_GRACE_MS, GATE_TIMEOUT_MS } from '../core/gates/gateRunner';
import { shellQuote } from '../core/gates/shellQuote';
import type { GateLabel } from '../core/gates/commandPolicy';
import { resolveFolder } from './folder';
import { writeOut, writeErr } from './terminalOut';

/** Seconds from an environment variable (the seed's `RALPH_GATE_*` names), as ms; undefined when unset or bad. */
function envSeconds(name: string): number | undefined {
  const v = Number(process.env[name]);
  return Number.isFinite(v) && v > 0 ? v * 1000 : undefined;
}

/**
 * `ralph gate <label> [--wait-ms N] [--lock-wait-ms N] [--timeout-ms N] -- <command…>` (seed-systems.md §3.10):
 * runs a verification command under the gate lock of `label` in this working tree and prints its verdict. One
 * argument after `--` is the shell text as is; several are quoted and joined. Exit codes: the command's own;
 * 64 usage or STALE TIER PIN; 75 busy or STILL RUNNING; 124 timed out; 70 the runner died.
 */
export function registerGateCommand(program: Command): void {
  program
    .command('gate')
    .description(
      'Run a verification command through the gate runner (lock per label and tree, watchdog, .ralph/gates/ artifacts)',
    )
    .argument('<label>', 'basic, full, final, unit, integration, e2e, lint or format')
    .argument('[command...]', 'the command, after --')
    .option(
      '--wait-ms <ms>',
      'how long to wait for the verdict before printing STILL RUNNING and exiting 75 (default RALPH_GATE_WAIT, 570 s)',
    )
    .option(
      '--lock-wait-ms <ms>',
      'how long to wait while another command holds the label (default RALPH_GATE_LOCK_WAIT, 60 s)',
    )
    .option(
      '--timeout-ms <ms>',
      "the gate's own timeout: TERM, grace, KILL, exit 124 (default RALPH_GATE_TIMEOUT, 1200 s)",
    )
    .option('--runner <runId>', 'internal: run as the detached runner of a locked gate')
    .action(
      async (
        label: string,
        words: string[],
        opts: { waitMs?: string; lockWaitMs?: string; timeoutMs?: string; runner?: string },
        cmd: Command,
      ) => {
        const folder = resolveFolder(cmd);
        const command = words.length === 1 ? words[0]! : words.map(shellQuote).join(' ');
        const num = (s: string | undefined) => (s !== undefined && Number(s) > 0 ? Number(s) : undefined);
        const timeoutMs =
          num(opts.timeoutMs) ??
          envSeconds(`RALPH_${label.toUpperCase()}_GATE_TIMEOUT`) ??
          envSeconds('RALPH_GATE_TIMEOUT') ??
          GATE_TIMEOUT_MS;
        const killGraceMs = envSeconds('RALPH_GATE_KILL_GRACE') ?? GATE_KILL_GRACE_MS;
        if (opts.runner) {
          const ac = new AbortController();
          process.once('SIGTERM', () => ac.abort());
          const r = await runLockedGate({
            folder,
            label: label as GateLabel,
            command,
            timeoutMs,
            killGraceMs,
            signal: ac.signal,
            runId: opts.runner,
          });
          process.exitCode = r.exitCode;
          return;
        }
        let pins = {};
        let pinFile: string | undefined;
        try {
          const resolved = await resolveGates(folder);
          pins = resolved?.commands ?? {};
          if (resolved)
            pinFile = resolved.source === 'config' ? '"gates" of .ralph/config.json' : '.ralph/command-policy';
        } catch (err) {
          writeErr(`ralph gate: ${(err as Error).message}\n`);
          process.exitCode = EXIT_USAGE;
          return;
        }
        process.exitCode = await gateCall({
          folder,
          label,
          command,
          pins,
          pinFile,
          waitMs: num(opts.waitMs) ?? envSeconds('RALPH_GATE_WAIT'),
          lockWaitMs: num(opts.lockWaitMs) ?? envSeconds('RALPH_GATE_LOCK_WAIT'),
          print: (t) => writeOut(t),
          startRunner: (runId) => {
            const child = spawn(
              process.execPath,
              [
                process.argv[1]!,
                '-C',
                folder,
                'gate',
                '--runner',
                runId,
                '--timeout-ms',
                String(timeoutMs),
                label,
                '--',
                command,
              ],
              { cwd: folder, detached: true, stdio: 'ignore' },
            );
            child.unref();
            if (child.pid === undefined) throw new Error('could not start the gate runner');
            return child.pid;
          },
        });
      },
    );
}
