import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { Redis } from 'ioredis';
import type { EngineEvent } from '../../../src/core/model/runEvent';
import { KEY_PREFIX } from '../../../src/core/remote/laneJob';
import { claudeBinary, requireClaude, scriptedClaudeEnv } from '../../support/claude';
import { bash, say, startModelServer } from '../../support/modelServer';
import { listProcesses } from '../../support/processes';
import { startRedis } from '../../support/redisServer';
import {
  idleSpareOnly,
  lanesCleaned,
  makeRemoteRepo,
  redisClientsOfThisProcess,
  runCoordinator,
  startWorker,
  statuses,
  stopWorker,
  workerOf,
} from '../../support/remoteLanes';
import { git } from '../../support/workspace';

/**
 * One remote lane with the real Claude Code CLI: a `ralph worker` process runs the real claude (its own HOME, and
 * the scripted model server as its model: the worker's environment, never the job's), the coordinator in this
 * process, a real redis-server and a bare repository as the shared remote. One story, to keep the tier's cost small;
 * the scheduling and failure cases run the lane stub (remoteLanes.test.ts).
 */
describe('a remote lane with the real claude CLI (BullMQ on a real Redis)', function () {
  this.timeout(300_000);

  it('a worker runs the real claude on one story: passed, merged, and nothing left behind', async () => {
    requireClaude();
    const redis = await startRedis();
    const client = new Redis(redis.url, { maxRetriesPerRequest: null });
    client.on('error', () => undefined);
    const r = makeRemoteRepo([{ id: 'S1', priority: 1 }], redis.url);
    const server = await startModelServer([
      bash(`printf 'real\\n' > s1.txt && git add s1.txt && git commit -qm 'S1: work'`),
      say('Committed. <quantum>STORY_PASSED</quantum>'),
    ]);
    const { HOME: _home, ...claudeEnv } = scriptedClaudeEnv(server.url, '');
    const w = await startWorker(redis.url, [r.remote], r, { claudePath: claudeBinary, env: claudeEnv });
    try {
      const { result, events } = await runCoordinator(r, { maxParallel: 1 });
      assert.equal(result.state, 'completed', `${result.reason}\n${w.output()}`);
      assert.deepEqual(statuses(r.dir), { S1: 'passed' });
      assert.equal(r.t.read('s1.txt'), 'real\n');
      const merged = events.filter(
        (x) => x.e.type === 'laneMerge' && (x.e as { outcome: string }).outcome === 'merged',
      );
      assert.equal(merged.length, 1);
      // The agent ran on the worker (its events name it) and talked to the scripted server through its tools.
      const started = events.filter((x) => x.e.type === 'agentStarted');
      assert.equal(started.length, 1);
      assert.match(workerOf(started[0]!.e) ?? '', new RegExp(`:${w.pid}$`));
      assert.ok(
        events.some((x) => x.e.type === 'iterationEnded' && workerOf(x.e as EngineEvent) !== undefined),
        'the iteration ended on the worker',
      );
      assert.equal(server.exhausted, 0);
      assert.ok(server.agentRequests().length >= 2, 'claude asked the scripted server for each turn');
      // Nothing left: no lane branch on the remote or here, no tree on the worker, no claude, no Redis key.
      await lanesCleaned(w, result.runId);
      assert.equal(git(r.remote, 'for-each-ref', '--format=%(refname)', 'refs/heads/ql-wt/'), '');
      assert.equal(git(r.dir, 'for-each-ref', '--format=%(refname)', 'refs/heads/ql-wt/'), '');
      assert.equal(git(r.dir, 'worktree', 'list').split('\n').length, 1);
      idleSpareOnly(w);
      // The worker itself has the server in its environment (it gives it to its agents); nothing else may.
      const claudes = listProcesses().filter((p) => {
        if (p.pid === w.pid) return false;
        try {
          return fs
            .readFileSync(`/proc/${p.pid}/environ`, 'utf8')
            .split('\0')
            .includes(`ANTHROPIC_BASE_URL=${server.url}`);
        } catch {
          return false;
        }
      });
      assert.deepEqual(
        claudes.map((p) => p.cmdline),
        [],
      );
      assert.deepEqual(
        (await client.keys('*')).filter((k) => k.includes(result.runId)),
        [],
      );
      assert.deepEqual(await client.keys(`${KEY_PREFIX}:run:${result.runId}:*`), []);
      assert.deepEqual(await redisClientsOfThisProcess(client), []);
    } finally {
      await stopWorker(w);
      await server.close();
      client.disconnect();
      await redis.stop();
      r.t.dispose();
      r.side.dispose();
    }
  });
});
