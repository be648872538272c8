import { statSync } from 'node:fs';
import * as path from 'node:path';
import { baselineCopyPath, baselineMirrorDir } from '../loop/baselineMirror';
import { ralphFile } from '../model/ralphPaths';
import { resolveFlowStateDir } from '../sources/flowNext/stateDir';
import { readTextSync } from '../store/readJsonFile';
import type { AnswerInput } from '../store/snapshotCache';

/**
 * The files and folders the answers of `ralph status` and `ralph next` for `folder` depend on, for the answer cache
 * (store/snapshotCache.ts): every task source (flow-next's `.flow/` and its state overlay, quantum.json, the checklist
 * files), the run folders (ours and flow-next's), the waves, the configuration (its read limits), the person marks,
 * and the claim mirrors in the user's state folder. Folders stand for their entries to the depth given, so a task
 * file added, removed or rewritten in place is a change. What else an answer depends on is in the cache's key (the
 * folder, the build, the environment, `next`'s actor). test/unit/store/answerInputs.test.ts checks this list against
 * every path the readers ask the file system about.
 */
export function answerInputs(folder: string, env: NodeJS.ProcessEnv = process.env): AnswerInput[] {
  const at = (...p: string[]) => path.join(folder, ...p);
  return [
    { path: at('.flow') },
    { path: at('.flow', 'meta.json') },
    { path: at('.flow', 'epics'), depth: 1 },
    { path: at('.flow', 'specs'), depth: 1 },
    { path: at('.flow', 'tasks'), depth: 1 },
    ...gitDirProbes(folder),
    { path: path.join(resolveFlowStateDir(folder, env).dir, 'tasks'), depth: 1 },
    { path: at('quantum.json') },
    { path: at('RALPH_TASK.md') },
    { path: at('PROMPT.md') },
    { path: at('specs'), depth: 2 },
    { path: at('.ijfw'), depth: 2 },
    { path: ralphFile(folder, 'config') },
    { path: ralphFile(folder, 'personDone') },
    { path: ralphFile(folder, 'runs'), depth: 2 },
    { path: at('scripts', 'ralph', 'runs'), depth: 2 },
    { path: baselineMirrorDir(folder, env), depth: 1 },
    { path: path.dirname(baselineCopyPath(folder, 'run', env)), depth: 1 },
  ];
}

/**
 * The `.git` entries flow-next's state folder is found through (sources/flowNext/stateDir.ts `gitCommonDir`): the
 * `.git` of `folder` and of each folder above it up to the first that exists, and for a worktree's `.git` file the
 * `commondir` file it leads to.
 */
function gitDirProbes(folder: string): AnswerInput[] {
  const out: AnswerInput[] = [];
  for (let dir = path.resolve(folder); ;) {
    const dotGit = path.join(dir, '.git');
    out.push({ path: dotGit });
    const st = statSync(dotGit, { throwIfNoEntry: false });
    if (st?.isFile()) {
      let text = '';
      try {
        text = readTextSync(dotGit) ?? '';
      } catch {
        // refused (too large, a NUL byte): the reader finds no state folder through it either
      }
      const m = /^gitdir:\s*(.+)$/m.exec(text);
      if (m) out.push({ path: path.join(path.resolve(dir, m[1]!.trim()), 'commondir') });
    }
    const up = path.dirname(dir);
    if (st || up === dir) return out;
    dir = up;
  }
}
