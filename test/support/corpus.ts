import * as fs from 'node:fs';
import * as path from 'node:path';
import { repoRoot } from './repoRoot';

/**
 * Material from outside the repository (the corpus of real files of the seed systems, flowctl): the folder named by
 * `RALPH_SHARED_DIR`, default `../shared` beside the repository. Only the corpus tier (`npm run test:corpus`) reads it,
 * in place; it is never copied into the project.
 */
export const sharedDir: string = path.resolve(process.env.RALPH_SHARED_DIR ?? path.join(repoRoot, '..', 'shared'));

/** The corpus of real files of the seed systems: `<RALPH_SHARED_DIR>/corpus`. */
export const corpusDir: string = path.join(sharedDir, 'corpus');

/**
 * Declares a corpus suite. When the folder is absent the suite still runs one test that fails and says so
 * clearly: a missing corpus is never a silent pass.
 */
export function describeCorpus(title: string, fn: (dir: string) => void): void {
  describe(title, () => {
    if (!fs.existsSync(corpusDir)) {
      it('needs the shared corpus folder', () => {
        throw new Error(
          `corpus folder not found at ${corpusDir}: set RALPH_SHARED_DIR to the shared material's folder (default ../shared)`,
        );
      });
      return;
    }
    fn(corpusDir);
  });
}

/** Every file under `dir` (recursive), excluding SOURCE.txt, sorted. */
export function corpusFiles(dir: string): string[] {
  return fs
    .readdirSync(dir, { recursive: true })
    .map(String)
    .filter((f) => !f.endsWith('SOURCE.txt'))
    .map((f) => path.join(dir, f))
    .filter((f) => fs.statSync(f).isFile())
    .sort();
}
