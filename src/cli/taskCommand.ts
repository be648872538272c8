import { InvalidArgumentError, Option, type Command } from 'commander';
import { insideIteration, recordPersonDone, runWithChildRunning } from '../core/loop/personMarks';
import { readFile } from 'node:fs/promises';
import { resolveActor } from '../core/sources/actor';
import { blockItem, completeItem, resetItem, startItem } from '../core/sources/operations';
import { FileProblemError, parseJsonText } from '../core/store/parseError';
import { resolveFolder } from './folder';
import { printResult, runReporting } from './jsonResult';
import { writeErr } from './terminalOut';

type Evidence = { commits?: string[]; tests?: string[]; prs?: string[] };

/** `--evidence <json>`: a value that is not JSON is a usage error (exit 2). */
function evidenceOption(v: string): Evidence {
  try {
    return JSON.parse(v) as Evidence;
  } catch {
    throw new InvalidArgumentError('expected JSON such as {"commits":["abc123"],"tests":["npm test"],"prs":[]}');
  }
}

const EXIT_HELP =
  '\nExit codes: 0 done (also a no-op); 1 refused, not found, or a file that does not parse (nothing written); 2 usage.';

/**
 * `ralph task start|done|block|reset <id>`: flow-next task ids (`fn-1-abc.2`) and quantum story ids (`US-003`).
 * Semantics in core/sources/operations.ts (seed-systems.md §2.5, §4.2).
 */
export function registerTaskCommand(program: Command): void {
  const task = program
    .command('task')
    .description(
      'Change a flow-next task (fn-1-abc.2) or a quantum-loop story (US-003), not a checklist box: start, done, block, reset',
    );

  task
    .command('start <id>')
    .description('Claim and start a task (todo → in_progress) or story (pending/failed → in_progress, startedAt now)')
    .option('--force', 'start even if blocked, claimed by someone else, or dependencies are not done')
    .option('--note <text>', 'flow-next claim_note')
    .option('--actor <name>', 'who claims (default: FLOW_ACTOR, git user.email, user.name, $USER)')
    .option('--json', 'print {"success":true,"id","source","status":"in_progress"}')
    .addHelpText('after', EXIT_HELP)
    .action(
      async (id: string, opts: { force?: boolean; note?: string; actor?: string; json?: boolean }, cmd: Command) => {
        const folder = resolveFolder(cmd);
        await runReporting(!!opts.json, async () => {
          const r = await startItem(id, {
            folder,
            actor: opts.actor ?? resolveActor(folder),
            force: opts.force,
            note: opts.note,
          });
          printResult(!!opts.json, { success: true, id, source: r.source, status: 'in_progress' }, `Started ${id}`);
        });
      },
    );

  task
    .command('done <id>')
    .description('Complete a task (in_progress → done, md Done summary and Evidence) or story (in_progress → passed)')
    .option('--summary <text>', 'flow-next: text of the ## Done summary section')
    .option('--summary-file <file>', 'flow-next: read the summary from a file')
    .option('--evidence <json>', 'flow-next: evidence JSON {"commits":[],"tests":[],"prs":[]}', evidenceOption)
    .option('--evidence-json <file>', 'flow-next: read the evidence JSON from a file')
    .option('--force', 'complete even if not in_progress or claimed by someone else')
    .option('--actor <name>', 'who completes (default: FLOW_ACTOR, git user.email, user.name, $USER)')
    .option('--json', 'print {"success":true,"id","source","status"}')
    .addHelpText('after', EXIT_HELP)
    .action(
      async (
        id: string,
        opts: {
          summary?: string;
          summaryFile?: string;
          evidence?: Evidence;
          evidenceJson?: string;
          force?: boolean;
          actor?: string;
          json?: boolean;
        },
        cmd: Command,
      ) => {
        const folder = resolveFolder(cmd);
        await runReporting(!!opts.json, async () => {
          const summary = opts.summaryFile ? await readFile(opts.summaryFile, 'utf8') : opts.summary;
          let evidence = opts.evidence;
          if (opts.evidenceJson) {
            const parsed = parseJsonText(opts.evidenceJson, await readFile(opts.evidenceJson, 'utf8'));
            if (!parsed.ok) throw new FileProblemError(parsed.problem);
            evidence = parsed.value as Evidence;
          }
          const r = await completeItem(id, {
            folder,
            actor: opts.actor ?? resolveActor(folder),
            force: opts.force,
            summary,
            evidence,
          });
          // A person's mark is theirs; from inside an iteration it is a claim the engine verifies. While any
          // child of a live run runs (agent, gate, notify: each may run agent-written code), the mark is recorded but the
          // run reads it as a claim; recording rather than refusing keeps a person's command working,
          // and a refusal would not hold anyway: that code can write the file itself.
          if (!insideIteration(folder)) {
            await recordPersonDone(folder, { source: r.source, id });
            const busy = runWithChildRunning(folder);
            if (busy)
              writeErr(
                `ralph: note: ${busy.child === 'agent' ? 'an agent' : 'a gate or notify command'} of run ${busy.runId} is running: a mark made now cannot be told from ${busy.child === 'agent' ? "the agent's" : "its code's"}, so the run verifies ${id} with a gate like a claim (pause the run first, or mark it between iterations, to make it yours)\n`,
              );
          }
          printResult(
            !!opts.json,
            { success: true, id, source: r.source, status: r.source === 'quantum' ? 'passed' : 'done' },
            `Completed ${id}`,
          );
        });
      },
    );

  task
    .command('block <id>')
    .description(
      'Block a task (status blocked, reason in blocked_reason and the md) or fail a story (failed, attempts + 1, failure-log entry)',
    )
    .option('--reason <text>', 'why (required, or --reason-file)')
    .option('--reason-file <file>', 'read the reason from a file')
    .option('--phase <phase>', 'quantum failure-log phase', 'agent_failed')
    .addOption(
      new Option('--repeat <n>', 'repeat the update n times, each under its own lock (for the safety tests)')
        .argParser(Number)
        .hideHelp(),
    )
    .option('--json', 'print {"success":true,"id","source","status"[,"attempts"]}')
    .addHelpText('after', EXIT_HELP)
    .action(
      async (
        id: string,
        opts: { reason?: string; reasonFile?: string; phase?: string; repeat?: number; json?: boolean },
        cmd: Command,
      ) => {
        // A missing reason is a usage error: cmd.error prints it and throws a CommanderError (exit 2).
        if (!opts.reasonFile && !opts.reason?.trim())
          cmd.error('error: a reason is required: --reason <text> or --reason-file <file>', {
            code: 'ralph.missingReason',
            exitCode: 2,
          });
        const folder = resolveFolder(cmd);
        await runReporting(!!opts.json, async () => {
          const reason = opts.reasonFile ? (await readFile(opts.reasonFile, 'utf8')).trim() : opts.reason!;
          if (!reason)
            throw new FileProblemError({
              file: opts.reasonFile!,
              line: 0,
              column: 0,
              message: 'the reason file is empty',
            });
          const times = opts.repeat && opts.repeat > 1 ? opts.repeat : 1;
          let r: Awaited<ReturnType<typeof blockItem>> | undefined;
          for (let n = 0; n < times; n++)
            r = await blockItem(id, { folder, reason: times > 1 ? `${reason}#${n}` : reason, phase: opts.phase });
          const status = r!.source === 'quantum' ? 'failed' : 'blocked';
          printResult(
            !!opts.json,
            {
              success: true,
              id,
              source: r!.source,
              status,
              ...(r!.attempts !== undefined ? { attempts: r!.attempts } : {}),
            },
            `Blocked ${id}`,
          );
        });
      },
    );

  task
    .command('reset <id>')
    .description('Reset a done/blocked task to todo, or a passed/failed/blocked story to pending (attempts 0)')
    .option(
      '--cascade',
      'also reset transitive dependents (flow-next: same epic only), skipping in_progress and todo/pending ones',
    )
    .option('--force', 'quantum: also reset an in_progress story')
    .option('--json', 'print flowctl\'s {"success":true,"reset":[ids…]} (and "message" for a no-op)')
    .addHelpText('after', EXIT_HELP)
    .action(async (id: string, opts: { cascade?: boolean; force?: boolean; json?: boolean }, cmd: Command) => {
      const folder = resolveFolder(cmd);
      await runReporting(!!opts.json, async () => {
        const r = await resetItem(id, { folder, cascade: opts.cascade, force: opts.force });
        const text = r.message ?? `Reset: ${r.reset.join(', ')}`;
        printResult(!!opts.json, { success: true, reset: r.reset, ...(r.message ? { message: r.message } : {}) }, text);
      });
    });
}
