import * as fs from 'node:fs';
import * as path from 'node:path';
import { repoRoot } from './repoRoot';

/**
 * The shared corpus of real files from the seed systems: `../shared/corpus` beside the repository
 * (or `RALPH_CORPUS_DIR`). Tests read it in place; it is never copied into the project.
 */
export const corpusDir: string = process.env.RALPH_CORPUS_DIR ?? path.resolve(repoRoot, '..', 'shared', 'corpus');

/**
 * Declares a corpus suite. When the folder is absent the suite still runs one test that fails and says so
 * clearly: a missing corpus is never a silent pass.
 */
export function describeCorpus(title: string, fn: (dir: string) => void): void {
  describe(title, () => {
    if (!fs.existsSync(corpusDir)) {
      it('needs the shared corpus folder', () => {
        throw new Error(`corpus folder not found at ${corpusDir}: clone the project beside shared/ or set RALPH_CORPUS_DIR`);
      });
      return;
    }
    fn(corpusDir);
  });
}

/** Every file under `dir` (recursive), excluding SOURCE.txt, sorted. */
export function corpusFiles(dir: string): string[] {
  return fs.readdirSync(dir, { recursive: true }).map(String).filter((f) => !f.endsWith('SOURCE.txt')).map((f) => path.join(dir, f)).filter((f) => fs.statSync(f).isFile()).sort();
}
