import * as fs from 'node:fs';
import * as path from 'node:path';

/** The repository root: the nearest folder above this bundle whose package.json is `ralph-loop`. */
export function findRepoRoot(from: string = __dirname): string {
  let dir = from;
  for (;;) {
    const pkg = path.join(dir, 'package.json');
    if (fs.existsSync(pkg) && JSON.parse(fs.readFileSync(pkg, 'utf8')).name === 'ralph-loop') return dir;
    const up = path.dirname(dir);
    if (up === dir) throw new Error(`no ralph-loop package.json above ${from}`);
    dir = up;
  }
}

export const repoRoot: string = findRepoRoot();
