import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { answerInputs } from '../../../src/core/control/answerInputs';
import { loadStatusBasis } from '../../../src/core/control/status';
import { nextWork } from '../../../src/core/sources/operations';
import { expandInputs } from '../../../src/core/store/snapshotCache';
import { recordFsReads } from '../../support/fsRecorder';
import { repoRoot } from '../../support/repoRoot';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';
import { flowJson, quantumJson, writeFlow, writeFlowState } from '../../support/workspace';

/**
 * The inputs `status` and `next` name for the answer cache (control/answerInputs.ts) against what their readers
 * actually ask the file system about: every path read, listed or probed must be a named input (or an entry of a named
 * folder, or absent below one), or a stored answer could outlive a change to it.
 */
describe('answer cache: the inputs status and next name cover every path they read', () => {
  let ws: TempFolder;
  beforeEach(() => {
    ws = makeTempFolder('ralph-inputs-');
  });
  afterEach(() => ws.dispose());

  const probe = { isAlive: () => true, hostNames: [] };
  /** Paths the readers asked about that the named inputs do not cover. */
  const uncovered = (): string[] => {
    const named = new Set(expandInputs(answerInputs(ws.dir)));
    const { paths } = recordFsReads(() => {
      loadStatusBasis(ws.dir, { probe });
      try {
        nextWork({ folder: ws.dir, actor: 'a' });
      } catch {
        // a file that does not parse, a cycle: `next` fails, and what it read still counts
      }
    });
    // A path that does not exist is covered by its nearest existing folder: creating it changes that folder's mtime.
    const nearest = (p: string): string => (fs.existsSync(p) || path.dirname(p) === p ? p : nearest(path.dirname(p)));
    const covered = (p: string) => named.has(p) || named.has(nearest(p));
    return [...paths].filter((p) => !covered(p) && p !== ws.dir && !p.startsWith(repoRoot + path.sep));
  };

  it('every fixture folder', () => {
    const fixtures = path.join(repoRoot, 'test', 'fixtures');
    for (const name of fs.readdirSync(fixtures)) {
      fs.cpSync(path.join(fixtures, name), ws.dir, { recursive: true });
      assert.deepEqual(uncovered(), [], name);
    }
  });

  it('a generated plan with every source, blocked tasks without a reason, runs that are not runs, person marks', () => {
    writeFlow(
      ws,
      Array.from({ length: 12 }, (_, i) => ({
        id: `fn-${1 + Math.floor(i / 4)}.${1 + (i % 4)}`,
        status: ['todo', 'done', 'blocked', 'in_progress'][i % 4]!,
      })),
    );
    ws.write('.git/HEAD', 'ref: refs/heads/main\n');
    writeFlowState(ws, { 'fn-1.1': { status: 'done', updated_at: '2026-01-11T00:00:00Z' } });
    ws.write(
      'quantum.json',
      quantumJson([
        { id: 'US-1', status: 'passed' },
        { id: 'US-2', deps: ['US-1'] },
      ]),
    );
    ws.write('RALPH_TASK.md', '- [x] a\n- [ ] b\n');
    ws.write('PROMPT.md', '- [ ] c\n');
    ws.write('specs/one/tasks.md', '- [ ] d\n');
    ws.write('specs/one/plan.md', 'not a checklist\n');
    fs.mkdirSync(path.join(ws.dir, 'specs', 'two'));
    fs.mkdirSync(path.join(ws.dir, '.ijfw'));
    ws.write('.ralph/config.json', JSON.stringify({ readLimits: { jsonMb: 8 } }));
    ws.write('.ralph/person-done.json', '{}');
    ws.write('.ralph/runs/broken/run.json', '{ not json');
    fs.mkdirSync(path.join(ws.dir, 'scripts', 'ralph', 'runs', 'no-progress'), { recursive: true });
    ws.write('.flow/tasks/fn-9.1.json', '{ "id": "fn-9.1",, }');
    assert.deepEqual(uncovered(), []);
  });

  it('a worktree: `.git` is a file naming the repository, whose flow-state is shared', () => {
    const main = makeTempFolder('ralph-inputs-main-');
    try {
      main.write('.git/worktrees/wt/commondir', '../..\n');
      main.write('.git/flow-state/tasks/fn-1.1.state.json', flowJson({ status: 'done' }));
      ws.write('.git', `gitdir: ${path.join(main.dir, '.git', 'worktrees', 'wt')}\n`);
      writeFlow(ws, [{ id: 'fn-1.1' }]);
      assert.deepEqual(uncovered(), []);
    } finally {
      main.dispose();
    }
  });
});
