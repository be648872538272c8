import type { Command } from 'commander';
import { resolveActor } from '../core/sources/actor';
import { nextWork } from '../core/sources/operations';
import { resolveFolder } from './folder';
import { printResult, runReporting } from './jsonResult';
import { writeSnapshot } from '../core/store/snapshotCache';
import type { AnswerToStore } from './statusCommand';
import { answerInputs } from '../core/control/answerInputs';

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
 * The body of `ralph next`: each source's next item, as JSON or text. With `store` (src/cli/entry.ts), a successful
 * answer is stored in the answer cache (core/store/snapshotCache.ts) with the inputs it names
 * (control/answerInputs.ts): it is a function of those files and the actor, which is in the key.
 */
export async function printNext(
  folder: string,
  opts: { json?: boolean; epic?: string[]; requirePlanReview?: boolean; actor?: string },
  store?: AnswerToStore,
): Promise<void> {
  const sinceMs = Date.now();
  let printed = '';
  const write = process.stdout.write.bind(process.stdout);
  if (store) {
    process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      printed += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
      return (write as (...a: unknown[]) => boolean)(chunk, ...rest);
    }) as typeof process.stdout.write;
  }
  try {
    await nextBody(folder, opts);
  } finally {
    if (store) process.stdout.write = write;
  }
  if (store && process.exitCode === 0 && folder === store.key.folder)
    writeSnapshot(store.key, answerInputs(folder), { outputs: { out: printed }, exitCode: 0 }, sinceMs);
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
