import * as assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createRunRecord, listRunRecords, runRecordPath } from '../../../src/core/control/runRecords';
import { recoverCrashedRuns, skippedRunRecords } from '../../../src/core/loop/crashRecovery';
import { processGroupAlive } from '../../../src/core/process/processGroup';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

/** Issue 12: crash recovery validates `.ralph/runs/*\/run.json` before it acts on one. */
describe('crash recovery: records that cannot be turned against us (issue 12)', function () {
  this.timeout(30_000);
  let t: TempFolder;
  let outside: string;
  const children: ChildProcess[] = [];
  beforeEach(() => {
    t = makeTempFolder('ralph-trust-', { ralphDir: true });
    outside = path.join(path.dirname(t.dir), `${path.basename(t.dir)}-outside`);
  });
  afterEach(() => {
    for (const c of children.splice(0))
      if (c.pid)
        try {
          process.kill(-c.pid, 'SIGKILL');
        } catch {
          /* gone */
        }
    fs.rmSync(outside, { recursive: true, force: true });
    t.dispose();
  });

  /** A record of a run whose engine (pid 2^22 - 1, never alive here) is gone. */
  async function deadRun(runId: string, extra: Record<string, unknown> = {}, idInFile = runId): Promise<string> {
    await createRunRecord(t.dir, { runId, pid: 4_194_303, state: 'running', ...extra });
    const file = runRecordPath(t.dir, runId);
    fs.writeFileSync(
      file,
      fs.readFileSync(file, 'utf8').replace(`"runId": "${runId}"`, `"runId": ${JSON.stringify(idInFile)}`),
    );
    return file;
  }

  const sleeper = (env: NodeJS.ProcessEnv = {}): number => {
    const c = spawn('sleep', ['30'], { detached: true, stdio: 'ignore', env: { PATH: process.env.PATH, ...env } });
    children.push(c);
    return c.pid!;
  };

  it('a runId that is not its folder name (../../outside) is skipped with a warning, nothing written outside', async () => {
    await deadRun('evil', {}, `../../${path.basename(outside)}`);
    const listed = listRunRecords(t.dir);
    assert.deepEqual(listed.records, []);
    assert.match(
      skippedRunRecords(t.dir)[0] ?? '',
      /^\.ralph\/runs\/evil\/run\.json:\d+:\d+: runId "\.\.\/\.\.\/.*-outside" is not its folder's name \("evil"\): record skipped$/,
    );
    assert.deepEqual(await recoverCrashedRuns(t.dir, [], 100), []);
    assert.equal(fs.existsSync(outside), false, 'nothing was written outside the workspace');
  });

  it('a run folder whose record names another run no longer blocks recovery of the others', async () => {
    await deadRun('a-run', {}, 'other-run');
    await deadRun('b-run');
    const r = await recoverCrashedRuns(t.dir, [], 100);
    assert.deepEqual(
      r.map((x) => x.runId),
      ['b-run'],
    );
  });

  it("an agentPgid naming a group without the run's token is left alone, with a warning", async () => {
    const pgid = sleeper();
    await deadRun('r1', { agentPgid: pgid, agentToken: 'tok-r1' });
    const [r] = await recoverCrashedRuns(t.dir, [], 100);
    assert.equal(r?.killedGroup, false);
    assert.match(
      r?.warnings?.[0] ?? '',
      new RegExp(`process group ${pgid} named by run r1 does not carry that run's token: left alone`),
    );
    assert.equal(processGroupAlive(pgid), true, 'the unrelated group still runs');
  });

  it("the run's own agent group (carrying its token) is ended", async () => {
    const pgid = sleeper({ RALPH_ITERATION_TOKEN: 'tok-r2' });
    await deadRun('r2', { agentPgid: pgid, agentToken: 'tok-r2' });
    const [r] = await recoverCrashedRuns(t.dir, [], 100);
    assert.equal(r?.killedGroup, true);
    for (let i = 0; i < 50 && processGroupAlive(pgid); i++) await new Promise((res) => setTimeout(res, 50));
    assert.equal(processGroupAlive(pgid), false);
  });
});
