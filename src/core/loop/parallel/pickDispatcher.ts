import type { RalphConfig } from '../../model/config';
import type { EngineEvent } from '../events';
import { EngineRefusal } from '../runOptions';
import { GitWorktreeDispatcher, type LaneDispatcher } from './dispatcher';

/**
 * The lane dispatcher a parallel run's configuration asks for (`laneDispatcher`): git worktrees in `folder`, or
 * jobs for `ralph worker` processes through BullMQ on Redis (`redisUrl`, RALPH_REDIS_URL first; remote/). The remote
 * one is loaded only when asked for; `emit` takes its run-wide events (the workers alive). Throws {@link EngineRefusal} when `bullmq` has no Redis address, or one without a
 * password, or Redis cannot be reached.
 */
export async function pickDispatcher(
  config: RalphConfig,
  folder: string,
  featureBranch: string,
  runId: string,
  warn: (message: string) => void,
  emit?: (event: EngineEvent) => void,
): Promise<LaneDispatcher> {
  if (config.laneDispatcher !== 'bullmq') return new GitWorktreeDispatcher(folder, featureBranch);
  const redisUrl = process.env.RALPH_REDIS_URL || config.redisUrl;
  if (!redisUrl)
    throw new EngineRefusal(
      'laneDispatcher "bullmq" needs a Redis: set RALPH_REDIS_URL (or "redisUrl") to redis://[user]:password@host:port',
    );
  const { BullmqDispatcher } = await import('../../remote/bullmqDispatcher');
  return BullmqDispatcher.open({
    folder,
    featureBranch,
    runId,
    redisUrl,
    laneRemote: config.laneRemote,
    laneStallMs: config.laneStallMs,
    storyTimeoutMs: config.storyTimeoutMs,
    warn,
    emit,
  });
}
