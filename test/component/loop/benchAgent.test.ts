import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { LoopEngine } from '../../../src/core/loop/startRun';
import { ralphConfigSchema } from '../../../src/core/model/config';
import { repoRoot } from '../../support/repoRoot';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';
import { git, gitInit, quantumJson } from '../../support/workspace';

/**
 * The lanes bench's stub agent (test/support/stubs/benchAgent.sh, bench/lanes.bench.ts): a parallel run of two
 * stories with it passes both and merges each story's file, as the bench needs; a prompt without a story fails.
 */
const STUB = path.join(repoRoot, 'test', 'support', 'stubs', 'benchAgent.sh');

describe('the lanes bench stub agent (benchAgent.sh)', function () {
  this.timeout(60_000);
  let t: TempFolder | undefined;
  afterEach(() => t?.dispose());

  it('lets a parallel run pass and merge two stories, each committing its own file', async () => {
    t = makeTempFolder('ralph-bench-stub-');
    t.write(
      'quantum.json',
      quantumJson([
        { id: 'S1', priority: 1 },
        { id: 'S2', priority: 2 },
      ]),
    );
    t.write('.gitignore', '.ralph/\n');
    gitInit(t, { commit: true });
    const config = ralphConfigSchema.parse({
      claudePath: STUB,
      gates: { basic: 'true' },
      timing: { betweenIterationsMs: 0 },
    });
    const engine = new LoopEngine({
      folder: t.dir,
      config,
      source: 'quantum',
      parallel: true,
      maxParallel: 2,
      agentEnv: { BENCH_STUB_SLEEP_S: '0' },
    });
    const r = await engine.run();
    assert.equal(r.state, 'completed', r.reason);
    assert.equal(r.done, 2);
    assert.equal(t.read('s1.txt'), 'S1\n');
    assert.equal(t.read('s2.txt'), 'S2\n');
    const subjects = git(t.dir, 'log', '--format=%s').split('\n');
    assert.ok(subjects.includes('S1: work') && subjects.includes('S2: work'), subjects.join('\n'));
  });

  it('exits 2 and says why when the prompt names no story', () => {
    t = makeTempFolder('ralph-bench-stub-');
    const r = spawnSync(STUB, ['-p', 'no story here'], { cwd: t.dir, encoding: 'utf8' });
    assert.equal(r.status, 2);
    assert.match(r.stderr, /no 'Story <id>:' in the prompt/);
  });
});
