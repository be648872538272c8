import { InvalidArgumentError, type Command } from 'commander';
import { listRuns } from '../core/control/runs';
import { staleStories } from '../core/sources/operations';
import { resolveFolder } from './folder';
import { printResult, runReporting } from './jsonResult';

/**
 * `ralph stale [--apply] [--stale-timeout N] [--json]`: quantum stories in_progress too long (seed-systems.md
 * §4.7), and runs whose known process died on this host (crashed).
 */
export function registerStaleCommand(program: Command): void {
  program
    .command('stale')
    .description(
      'Find quantum-loop stories in_progress longer than the stale threshold (and crashed runs); --apply fails or blocks them',
    )
    .option(
      '--apply',
      'write the changes: failed (or blocked when attempts+1 ≥ maxAttempts), attempts + 1, startedAt null, a stale_detection failure entry',
    )
    .option(
      '--stale-timeout <minutes>',
      'threshold in minutes (default: staleThresholdMinutes of quantum.json, else 20)',
      (v) => {
        const n = Number(v);
        // InvalidArgumentError makes commander report a usage error (exit 2), not a failure.
        if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('expected a positive number of minutes');
        return n;
      },
    )
    .option(
      '--json',
      'print {"success":true,"applied","threshold_minutes","stale":[{id,started_at,minutes,becomes,attempts}],"warnings":[],"crashed_runs":[]}',
    )
    .addHelpText(
      'after',
      '\nExit codes: 0 checked (stale stories or not); 1 quantum.json does not parse (nothing written); 2 usage.',
    )
    .action(async (opts: { apply?: boolean; staleTimeout?: number; json?: boolean }, cmd: Command) => {
      const folder = resolveFolder(cmd);
      await runReporting(!!opts.json, async () => {
        const report = await staleStories({ folder, thresholdMinutes: opts.staleTimeout, apply: opts.apply });
        const crashed = listRuns(folder)
          .runs.filter((r) => r.state === 'crashed')
          .map((r) => r.id);
        const lines: string[] = [];
        if (!report) lines.push('No quantum.json');
        for (const s of report?.stale ?? [])
          lines.push(
            `[STALE] ${s.id} - ${opts.apply ? 'reset' : 'would reset'} to ${s.becomes} (started ${s.startedAt}, ${s.minutes} min > ${report!.thresholdMinutes} min, attempt ${s.attempts})`,
          );
        if (report && !report.stale.length) lines.push(`No stale stories (threshold ${report.thresholdMinutes} min)`);
        for (const w of report?.warnings ?? []) lines.push(`Warning: ${w}`);
        for (const id of crashed) lines.push(`Crashed run: ${id}`);
        printResult(
          !!opts.json,
          {
            success: true,
            applied: !!opts.apply && !!report?.stale.length,
            threshold_minutes: report?.thresholdMinutes ?? null,
            stale: (report?.stale ?? []).map((s) => ({
              id: s.id,
              started_at: s.startedAt,
              minutes: s.minutes,
              becomes: s.becomes,
              attempts: s.attempts,
            })),
            warnings: report?.warnings ?? [],
            crashed_runs: crashed,
          },
          lines.join('\n'),
        );
      });
    });
}
