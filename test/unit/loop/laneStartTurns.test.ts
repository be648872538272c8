import * as assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { EngineEvent } from '../../../src/core/loop/events';
import type { LaneDispatcher, LaneEngine } from '../../../src/core/loop/parallel/dispatcher';
import {
  runLaneEngine,
  StartTurns,
  type LaneEngineHost,
  type LaneEngineResult,
} from '../../../src/core/loop/parallel/laneEngine';
import type { RunningLane } from '../../../src/core/loop/parallel/runningLane';
import { defaultConfig } from '../../../src/core/model/config';
import { laneFixture } from '../../support/runningLane';

/** A lane's engine run elsewhere, held until the test starts its agent and ends it. */
class HeldEngine extends EventEmitter<{ event: [event: EngineEvent, lane?: number] }> implements LaneEngine {
  running = false;
  private finish: ((r: LaneEngineResult) => void) | null = null;
  run(): Promise<LaneEngineResult> {
    this.running = true;
    return new Promise((resolve) => (this.finish = resolve));
  }
  agentStarts(): void {
    this.emit('event', { type: 'agentStarted', agent: 'claude', pid: 1 } as unknown as EngineEvent);
  }
  end(): void {
    this.finish?.({ state: 'completed', reason: 'done' });
  }
}

const lane = (index: number, id: string): RunningLane => laneFixture(index, id);

function host(dispatcher: LaneDispatcher, turns: StartTurns, asked: string[]): LaneEngineHost {
  return {
    options: { folder: '/nowhere', config: defaultConfig() } as LaneEngineHost['options'],
    dispatcher,
    runId: 'run-1',
    stateRoot: '/nowhere',
    actor: 'test',
    storyTimeoutMs: 60_000,
    reserve: null,
    nextIteration: () => 1,
    lanesChanged: () => undefined,
    startTurn: () => {
      asked.push('turn');
      return turns.take();
    },
    onEvent: () => undefined,
    runEnding: () => false,
  };
}

describe('lane start turns (laneEngine.ts)', () => {
  it('lanes a dispatcher runs elsewhere start together: each engine runs before any agent started, no turn asked', async () => {
    const engines = new Map<string, HeldEngine>();
    const dispatcher = {
      lane: (_o: unknown, story: { id: string }) => {
        const e = new HeldEngine();
        engines.set(story.id, e);
        return e;
      },
    } as unknown as LaneDispatcher;
    const turns = new StartTurns();
    const asked: string[] = [];
    const runs = ['S1', 'S2', 'S3', 'S4'].map((id, i) =>
      runLaneEngine(host(dispatcher, turns, asked), lane(i + 1, id)),
    );
    // Every engine's run is called in the same turn of the event loop as its lane's start (no await before it).
    await Promise.resolve();
    await Promise.resolve();
    assert.deepEqual(
      [...engines].map(([id, e]) => [id, e.running]),
      [
        ['S1', true],
        ['S2', true],
        ['S3', true],
        ['S4', true],
      ],
    );
    assert.deepEqual(asked, [], 'no start turn taken');
    for (const e of engines.values()) {
      e.agentStarts();
      e.end();
    }
    assert.deepEqual(
      (await Promise.all(runs)).map((r) => r.state),
      ['completed', 'completed', 'completed', 'completed'],
    );
  });

  it('StartTurns gives the next turn only once the previous one ended (a local lane waits for the agent before it)', async () => {
    const turns = new StartTurns();
    const order: string[] = [];
    const first = await turns.take();
    const second = turns.take().then((end) => {
      order.push('second');
      return end;
    });
    const third = turns.take().then((end) => {
      order.push('third');
      return end;
    });
    await Promise.resolve();
    assert.deepEqual(order, []);
    first();
    first(); // idempotent: the third waits for the second's end
    (await second)();
    (await third)();
    assert.deepEqual(order, ['second', 'third']);
    // Free again: a new take resolves at once.
    (await turns.take())();
  });
});
