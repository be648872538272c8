import type { Command } from 'commander';
import { resolveActor } from '../core/sources/actor';
import { nextWork } from '../core/sources/operations';
import { resolveFolder } from './folder';
import { printResult, runReporting } from './jsonResult';
import { writeSnapshot } from '../core/store/snapshotCache';
import type { SnapshotRecording } from './statusCommand';

/** `ralph next [--json] [--epic ID…] [--require-plan-review]`: what each source would work on next. Read-only. */
export function registerNextCommand(program: Command): void {
  program
    .command('next')
    .description(
      "Show the next item of each source: flowctl's selector, quantum-loop's eligible stories, the first unchecked box",
    )
    .option(
      '--json',
      '{"success":true,"item":{source,id,title}|null,"flow":{status,epic,spec,task,reason},"quantum":{status,stories},"checklists":[…]}',
    )
    .option('--epic <id...>', 'flow-next: only these epics (like flowctl --epics-file)')
    .option('--require-plan-review', "flow-next: answer 'plan' for an epic whose plan review is not 'ship'")
    .option('--actor <name>', 'who asks (default: FLOW_ACTOR, git user.email, user.name, $USER)')
    .addHelpText(
      'after',
      '\nExit codes: 0 answered (also when there is nothing to do); 1 a file problem or a dependency cycle; 2 usage.',
    )
    .action(
      async (opts: { json?: boolean; epic?: string[]; requirePlanReview?: boolean; actor?: string }, cmd: Command) => {
        await printNext(resolveFolder(cmd), opts);
      },
    );
}

/**
 * The body of `ralph next`: each source's next item (read through the parse cache), as JSON or text. With
 * `recorded` (the small entry recorded the reads, src/cli/entry.ts), a successful answer is stored in the snapshot
 * cache (core/store/snapshotCache.ts): it is a function of the files read and the actor, which is in the key.
 */
export async function printNext(
  folder: string,
  opts: { json?: boolean; epic?: string[]; requirePlanReview?: boolean; actor?: string },
  recorded?: SnapshotRecording,
): Promise<void> {
  let printed = '';
  const write = process.stdout.write.bind(process.stdout);
  if (recorded) {
    process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      printed += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
      return (write as (...a: unknown[]) => boolean)(chunk, ...rest);
    }) as typeof process.stdout.write;
  }
  try {
    await nextBody(folder, opts);
  } finally {
    if (recorded) process.stdout.write = write;
  }
  if (!recorded) return;
  recorded.recording.stop();
  if (process.exitCode === 0 && folder === recorded.key.folder && !recorded.recording.tainted) {
    writeSnapshot(
      recorded.key,
      recorded.recording.paths,
      { outputs: { out: printed }, exitCode: 0 },
      recorded.changed !== undefined ? { checkFirst: recorded.changed } : {},
    );
  }
}

async function nextBody(
  folder: string,
  opts: { json?: boolean; epic?: string[]; requirePlanReview?: boolean; actor?: string },
): Promise<void> {
  await runReporting(!!opts.json, () => {
    const answer = nextWork({
      folder,
      actor: opts.actor ?? resolveActor(folder),
      epics: opts.epic,
      requirePlanReview: opts.requirePlanReview,
      cached: true,
    });
    const lines: string[] = [];
    if (answer.flow)
      lines.push(
        `flow-next: ${answer.flow.status === 'none' ? `none (${answer.flow.reason})` : `${answer.flow.status} ${answer.flow.task ?? answer.flow.epic} (${answer.flow.reason})`}`,
      );
    if (answer.quantum)
      lines.push(
        `quantum: ${answer.quantum.status === 'work' ? answer.quantum.stories.join(', ') : answer.quantum.status.toUpperCase()}`,
      );
    for (const c of answer.checklists)
      lines.push(
        `${c.path}: ${c.line === null ? 'all done' : `line ${c.line}: ${c.text}${c.risky ? ' [risky]' : ''}`}`,
      );
    if (!lines.length) lines.push('No task sources');
    printResult(!!opts.json, { success: true, ...answer }, lines.join('\n'));
  });
}
