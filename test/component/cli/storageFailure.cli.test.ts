import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { cliPath } from '../../support/cli';
import { shellStub } from '../../support/stubs/installStubs';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';
import { git, gitInit } from '../../support/workspace';

/** `ralph run` as a process; returns exit code and both streams. */
function ralphRun(
  dir: string,
  extra: string[] = [],
  maxIterations = 1,
): { code: number | null; out: string; err: string } {
  const r = spawnSync(
    process.execPath,
    [cliPath, '-C', dir, 'run', '--no-gates', '--trust', '--max-iterations', String(maxIterations), ...extra],
    { encoding: 'utf8', timeout: 60_000 },
  );
  return { code: r.status, out: r.stdout, err: r.stderr };
}

/**
 * Shell lines for a stub agent: wait until the engine has recorded the agent in run.json (`agentStartedAt`, its last
 * write before it waits on the agent). That write replaces run.json (a temp file, then a rename that frees the old
 * file's page): made while the agent fills the disk, it leaves a page free, the end's writes fit in it and the run ends
 * at its cap (exit 2) without ever seeing ENOSPC. Filling after it leaves nothing free until the engine writes again.
 */
const afterAgentRecorded =
  'until grep -qs agentStartedAt "$RALPH_WORKSPACE/.ralph/runs/$RALPH_RUN_ID/run.json"; do sleep 0.02; done';

const quantum = {
  project: 'p',
  stories: [
    {
      id: 'US-001',
      title: 'Parser',
      status: 'pending',
      priority: 1,
      dependsOn: [],
      retries: { attempts: 0, maxAttempts: 3 },
    },
  ],
};

/** Issue 12: a read-only `.ralph/` and a full disk end `ralph run` with the cause recorded, the item given back, exit 74. */
describe('cli: ralph run when .ralph/ cannot be written (issue 12)', function () {
  this.timeout(90_000);
  let t: TempFolder | undefined;
  let bin: string | undefined;
  let mounted: string | undefined;
  /** A temporary folder on its own tmpfs of `size` (mounted as root; unmounted after the test). */
  const smallDisk = (prefix: string, size: string): TempFolder => {
    const root = makeTempFolder(prefix);
    const m = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', root.dir], { encoding: 'utf8' });
    assert.equal(m.status, 0, `this test mounts a small tmpfs (as root): ${m.stderr}`);
    mounted = root.dir;
    return root;
  };
  afterEach(() => {
    if (mounted) spawnSync('umount', ['-l', mounted]);
    if (t && fs.existsSync(t.file('.ralph'))) fs.chmodSync(t.file('.ralph'), 0o755);
    t?.dispose();
    if (bin) fs.rmSync(bin, { recursive: true, force: true });
    t = bin = mounted = undefined;
  });

  it('a read-only .ralph/ (mode 0555, checked from the mode bits: this test runs as root) is refused with exit 74 and no stack trace', () => {
    t = makeTempFolder('ralph-ro-', { ralphDir: true });
    bin = shellStub('claude', `touch '${t.file('agent-ran')}'`);
    t.write('.ralph/config.json', JSON.stringify({ claudePath: path.join(bin, 'claude') }));
    t.write('quantum.json', JSON.stringify(quantum, null, 2));
    fs.chmodSync(t.file('.ralph'), 0o555);
    const r = ralphRun(t.dir);
    assert.equal(r.code, 74, r.out + r.err);
    assert.match(
      r.err,
      /ralph: \.ralph\/ is read-only \(mode 0555\): a run records its state there\. Make it writable \(chmod u\+w \.ralph\/\)/,
    );
    assert.doesNotMatch(r.out + r.err, /\n\s+at /, 'no stack trace');
    assert.equal(t.exists('agent-ran'), false, 'no agent was started');
    assert.equal(t.exists('.ralph/runs'), false, 'nothing was written into the read-only folder');
    assert.equal(JSON.parse(t.read('quantum.json')).stories[0].status, 'pending');
  });

  it('a disk that fills up during the iteration: run.json says failed with the cause, the story is pending again, exit 74', () => {
    t = smallDisk('ralph-full-', '3m');
    fs.mkdirSync(t.file('.ralph'));
    // The agent fills the disk, as a runaway build or log would, once the engine has recorded its start.
    bin = shellStub(
      'claude',
      `${afterAgentRecorded}\ndd if=/dev/zero of='${t.file('fill')}' bs=64k 2>/dev/null; exit 0`,
    );
    t.write('.ralph/config.json', JSON.stringify({ claudePath: path.join(bin, 'claude') }));
    t.write('quantum.json', JSON.stringify(quantum, null, 2));
    const r = ralphRun(t.dir);
    assert.equal(r.code, 74, r.out + r.err);
    assert.match(r.err, /ralph: the run stopped because \.ralph\/ cannot be written: could not write \(ENOSPC\)/);
    assert.doesNotMatch(r.out + r.err, /\n\s+at /, 'no stack trace');
    const runs = fs.readdirSync(t.file('.ralph/runs'));
    assert.equal(runs.length, 1);
    const record = JSON.parse(t.read(`.ralph/runs/${runs[0]}/run.json`));
    assert.equal(record.state, 'failed', JSON.stringify(record));
    assert.match(record.endReason, /storage error: ENOSPC/);
    assert.equal(record.agentPgid, null);
    assert.equal(JSON.parse(t.read('quantum.json')).stories[0].status, 'pending', 'the story was given back');
    assert.equal(t.exists(`.ralph/runs/${runs[0]}/.space-reserve`), false, 'the reserve is gone');
  });

  it("a parallel run whose lane's agent fills the disk: the run's one reserve is freed, the run ends failed with the cause (exit 74), the story is given back, nothing is left", () => {
    t = smallDisk('ralph-full-lanes-', '4m');
    // The agent (in its lane's worktree) fills the disk, as a runaway build or log would, once its start is recorded.
    bin = shellStub('claude', `${afterAgentRecorded}\ndd if=/dev/zero of=fill bs=64k 2>/dev/null; exit 0`);
    t.write('.ralph/config.json', JSON.stringify({ claudePath: path.join(bin, 'claude') }));
    t.write('.gitignore', '.ralph/\n');
    t.write('quantum.json', JSON.stringify(quantum, null, 2));
    gitInit(t, { commit: true });
    // Two iterations allowed: with one, the cap is reached as the lane's iteration starts and the run ends capReached
    // whatever the lane meets afterwards.
    const r = ralphRun(t.dir, ['--parallel'], 2);
    assert.doesNotMatch(r.out + r.err, /\n\s+at /, 'no stack trace');
    const runs = fs.readdirSync(t.file('.ralph/runs'));
    assert.equal(runs.length, 1, runs.join(' '));
    assert.equal(r.code, 74, r.out + r.err);
    assert.match(r.err, /ralph: the run stopped because \.ralph\/ cannot be written: could not write \(ENOSPC\)/);
    const record = JSON.parse(t.read(`.ralph/runs/${runs[0]}/run.json`));
    assert.equal(record.state, 'failed', JSON.stringify(record));
    assert.match(record.endReason, /storage error: .*ENOSPC/);
    assert.deepEqual(record.lanes, []);
    // Not the story's fault: given back, no attempt spent, its branch kept.
    const story = JSON.parse(t.read('quantum.json')).stories[0];
    assert.equal(story.status, 'pending', JSON.stringify(story));
    assert.equal(git(t.dir, 'branch', '--list', 'ql-wt/US-001').trim(), 'ql-wt/US-001');
    assert.equal(t.exists(`.ralph/runs/${runs[0]}/.space-reserve`), false, 'the reserve is gone');
    assert.equal(
      git(t.dir, 'worktree', 'list', '--porcelain')
        .split('\n')
        .filter((l) => l.startsWith('worktree ')).length,
      1,
      'no worktree left',
    );
  });
});
