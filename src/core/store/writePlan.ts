import { withFileLock } from './fileLock';
import { writeTextAtomic } from './atomicWrite';

/** One file a planner decided to write, with the text it read (for the no-op check) and the text to write. */
export interface FileWrite {
  file: string;
  /** Text read inside the lock; `undefined` for a new file. */
  before: string | undefined;
  after: string;
}

/** The result of a committed plan: which files were actually rewritten (unchanged ones are skipped). */
export interface CommitResult<T> {
  result: T;
  written: string[];
}

/**
 * The one careful write of the store: takes the lock of `lockTarget`, lets `plan` read the current files and
 * decide (pure, returning the writes and a result value), then writes every changed file atomically. Files whose
 * new text equals the old one are not touched (a no-op leaves them byte-identical, mtime included). A planner
 * that finds a file it cannot parse throws before anything is written.
 */
export async function commitPlan<T>(lockTarget: string, plan: () => Promise<{ writes: FileWrite[]; result: T }>): Promise<CommitResult<T>> {
  return withFileLock(lockTarget, async () => {
    const { writes, result } = await plan();
    const written: string[] = [];
    for (const w of writes) {
      if (w.before === w.after) continue;
      await writeTextAtomic(w.file, w.after);
      written.push(w.file);
    }
    return { result, written };
  });
}
