import type { Command } from 'commander';
import { resolveWatchedRun } from '../core/control/runControl';
import { RunFollower } from '../core/control/runFollower';
import { emptyRunView, reduceRunView, statusLineOf, withFollowEnd, type FollowEnd } from '../core/control/runView';
import { clockTime } from '../core/control/activityText';
import { ActivityFormatter } from '../core/control/activityText';
import type { RunLogEntry, UnknownRunLogEntry } from '../core/model/runEvent';
import { resolveFolder } from './folder';
import { runReporting } from './jsonResult';
import { writeErr, writeOut } from './terminalOut';
import { visibleText } from '../protocol/visibleText';

/** The compact NDJSON line of an entry: envelope first, then the event; an unknown type exactly as read. */
export function entryJsonLine(e: RunLogEntry | UnknownRunLogEntry): string {
  if ('unknown' in e) return JSON.stringify(e.raw);
  const { seq, at, lane, ...event } = e;
  return JSON.stringify({ seq, at, lane, ...event });
}

/**
 * `ralph watch [--run ID] [--json]`: follows a run (whoever started it) from the start of its log, so it attaches
 * mid-run by replaying first. Text: the activity stream with a live status line at the bottom (on a terminal);
 * `--json`: every event as one compact JSON line. Exits when the run ends, with the run's exit code (a crashed
 * run: 1); on a finished run it replays and exits. Ctrl-C leaves the run alone and exits 130.
 */
export function registerWatchCommand(program: Command): void {
  program
    .command('watch')
    .description(
      'Follow a run live: its activity with a status line (state, item, context gauge, cost), or its events as JSON lines',
    )
    .option('--run <id>', 'the run to follow (default: the active run of ours, or the only active flow-next run)')
    .option('--json', 'print every event as one compact JSON line (NDJSON): {"seq","at","lane","type",…}')
    .addHelpText(
      'after',
      "\nExit codes: the run's own (0 complete, 1 failed/stalled/blocked or crashed, 2 a cap reached, 3 stopped, 130 interrupted); 1 no such run; 130 watch interrupted.",
    )
    .action(async (opts: { run?: string; json?: boolean }, cmd: Command) => {
      const folder = resolveFolder(cmd);
      const json = !!opts.json;
      await runReporting(json, async () => {
        const run = resolveWatchedRun(folder, opts.run);
        process.exitCode = await watchRun(folder, run.id, run.kind, json);
      });
    });
}

async function watchRun(folder: string, runId: string, kind: 'ralph' | 'flow-next', json: boolean): Promise<number> {
  const out = process.stdout;
  const tty = !json && out.isTTY === true;
  let view = emptyRunView(runId, kind);
  let entryMs = Date.now();
  const formatter = new ActivityFormatter(30_000, () => entryMs);
  let statusShown = false;
  const clearStatus = () => {
    if (statusShown) {
      out.write('\r\x1b[2K');
      statusShown = false;
    }
  };
  const drawStatus = () => {
    if (!tty) return;
    const cols = out.columns || 120;
    // Drawn on a terminal between its own control sequences: the line itself is shown as text.
    const line = visibleText(statusLineOf(view), { singleLine: true });
    out.write(`\r\x1b[2K${line.length > cols - 1 ? `${line.slice(0, cols - 2)}…` : line}`);
    statusShown = true;
  };
  const follower = new RunFollower(folder, runId, { kind, pollMs: 100 });
  const onEntries = (entries: (RunLogEntry | UnknownRunLogEntry)[]) => {
    let text = '';
    for (const e of entries) {
      view = reduceRunView(view, e);
      if (json) {
        text += `${entryJsonLine(e)}\n`;
        continue;
      }
      if ('unknown' in e) continue;
      entryMs = Date.parse(e.at) || Date.now();
      const stamp = clockTime(new Date(entryMs));
      // A lane of a parallel run names itself on each of its lines.
      const lane = e.lane ? `[lane ${e.lane}] ` : '';
      for (const line of formatter.format(e)) text += `[${stamp}] ${lane}${line}\n`;
    }
    if (!text) return drawStatus();
    clearStatus();
    out.write(visibleText(text));
    drawStatus();
  };
  follower.on('entries', onEntries);
  follower.on('problem', (p) => {
    clearStatus();
    writeErr(`ralph: ${p.file}${p.line ? `:${p.line}` : ''}: ${p.message}\n`);
    drawStatus();
  });
  const end = await new Promise<FollowEnd | 'interrupted'>((resolve) => {
    const onSignal = () => {
      follower.close();
      resolve('interrupted');
    };
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    follower.once('end', (e) => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      resolve(e);
    });
    follower.start();
  });
  clearStatus();
  if (end === 'interrupted') return 130;
  view = withFollowEnd(view, end);
  if (end.kind === 'crashed') writeErr(`ralph: run ${runId} crashed: ${end.reason}\n`);
  else if (!json) writeOut(`${statusLineOf(view)}\n`);
  return view.end?.exitCode ?? end.exitCode;
}
