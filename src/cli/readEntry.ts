import type { FastCommand } from './fastArgs';
import { resolveFolderFrom } from './folder';
import { endQuietlyOnBrokenPipe, reportFailure } from './jsonResult';
import { printNext } from './nextCommand';
import { printStatus, type AnswerToStore } from './statusCommand';

/**
 * dist/cli-read.js: the commands bots poll (`status`, `next`), loaded by the small entry (src/cli/entry.ts) when
 * the snapshot cache cannot answer; a bundle without commander, the loop engine, the agents and the process
 * libraries. `store`: the answer is stored in the answer cache under that key.
 */
export async function runFast(fast: FastCommand, store?: AnswerToStore): Promise<void> {
  endQuietlyOnBrokenPipe();
  try {
    const folder = resolveFolderFrom(fast.cwd, fast.json);
    if (fast.command === 'status') printStatus(folder, fast.json, store);
    else
      await printNext(
        folder,
        { json: fast.json, ...(store?.actor !== undefined ? { actor: store.actor } : {}) },
        store,
      );
  } catch (err) {
    reportFailure(err);
  }
}
