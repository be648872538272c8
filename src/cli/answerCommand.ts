import type { Command } from 'commander';
import { answerQuestion } from '../core/control/runControl';
import { resolveFolder } from './folder';
import { printResult, runReporting } from './jsonResult';

/**
 * `ralph answer [--run ID] [--item ID] <text…>`: answers the open question of a run (the agent asked with
 * `<question>…</question>`, or a plain question), by writing the answer file `ralph status` prints. The item goes
 * on at the run's next decision, with the question and the answer in its prompt.
 */
export function registerAnswerCommand(program: Command): void {
  program
    .command('answer')
    .description('Answer the question an agent asked; the waiting item goes on with the answer in its next prompt')
    .argument('<text...>', 'the answer (several words are joined with spaces)')
    .option('--run <id>', 'the run (default: the single active run)')
    .option('--item <id>', 'the item whose question to answer (needed when several items wait)')
    .option('--json', 'print {"success":true,"run","question","item","file"}')
    .addHelpText(
      'after',
      '\nExit codes: 0 answered; 1 no active run, no open question (for that item), several waiting items without --item, already answered; 2 usage.',
    )
    .action(async (words: string[], opts: { run?: string; item?: string; json?: boolean }, cmd: Command) => {
      const folder = resolveFolder(cmd);
      await runReporting(!!opts.json, async () => {
        const a = await answerQuestion(folder, words.join(' '), {
          ...(opts.run ? { runId: opts.run } : {}),
          ...(opts.item ? { itemId: opts.item } : {}),
        });
        printResult(
          !!opts.json,
          { ...a },
          `Answered ${a.question}${a.item ? ` (${a.item})` : ''} of run ${a.run}: ${a.file}`,
        );
      });
    });
}
