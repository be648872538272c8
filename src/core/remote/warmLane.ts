import { rm } from 'node:fs/promises';
import * as path from 'node:path';
import { createRunRecord, newRunId, updateRunRecord } from '../control/runRecords';
import { parseFeatureNote, parseLaneJob } from './laneJob';

/**
 * What a worker's first lane would pay for code it runs for the first time, paid once before the worker serves
 * (decision 0024): a run record made and updated in a scratch folder `<scratch>/warm-<pid>` (removed again), which
 * builds the run record's schema and compiles zod's parser for it; and one
 * lane job and one feature note checked, whose parsers zod compiles at their first use. In the remote lanes bench
 * these were about 40 ms of a worker's CPU in its first lane, on the first wave's path while every worker starts its
 * first lane at once. `remote`: a repository the worker serves (the sample job's). Never throws: a warm-up that fails
 * leaves that cost to the first lane.
 */
export async function warmLaneStart(scratch: string, remote: string): Promise<void> {
  const folder = path.join(scratch, `warm-${process.pid}`);
  try {
    const record = await createRunRecord(folder, { state: 'running' });
    await updateRunRecord(folder, record.runId, { iteration: 1 });
  } catch {
    // The first lane pays instead.
  } finally {
    await rm(folder, { recursive: true, force: true }).catch(() => undefined);
  }
  const runId = newRunId();
  parseLaneJob({
    v: 1,
    runId,
    remote,
    sha: '0'.repeat(40),
    featureBranch: 'main',
    storyId: 'S1',
    title: '',
    attempt: 1,
    token: 1,
    storyTimeoutMs: 60_000,
    heartbeatMs: 500,
  });
  parseFeatureNote(JSON.stringify({ v: 1, kind: 'moved', runId, remote, featureBranch: 'main', sha: '0'.repeat(40) }));
}
