import { readQuantum } from '../../sources/quantum/readQuantum';
import type { EngineEvent } from '../events';
import { WriteQueue } from '../writeQueue';
import { putBackStatuses, statusDrift } from './quantumRuntime';
import type { RunningLane } from './runningLane';

/*
 * The story statuses of the main folder's quantum.json in a parallel run: the coordinator is their only writer, so a
 * status there it did not write (a lane's agent set `US-002=passed` in the main folder) is a claim no gate verified,
 * and goes back. Writes and checks go one at a time.
 */

/** What the statuses' keeper needs of its coordinator. */
export interface MainStatusesHost {
  folder(): string;
  lanes(): RunningLane[];
  emit(e: EngineEvent, lane?: number): void;
  warn(what: string): (err: unknown) => void;
  reportProgress(): Promise<void>;
}

/** The statuses the coordinator wrote or found, and their guard. */
export class MainStatuses {
  /** The status of every story as the coordinator last wrote or found it. */
  private readonly expected = new Map<string, string>();
  /** The coordinator's status writes and the guard's checks, one at a time. */
  private readonly queue = new WriteQueue();

  constructor(private readonly h: MainStatusesHost) {}

  /** A status as the run found it at its start. */
  found(id: string, status: string): void {
    this.expected.set(id, status);
  }

  /** One coordinator write of story `id`'s status (`status`, as `write` records it), in turn with the guard's checks. */
  write(id: string, status: string, write: () => Promise<void>): Promise<void> {
    return this.inTurn(async () => {
      await write();
      this.expected.set(id, status);
    });
  }

  /** The coordinator's one write marking a round's stories `in_progress` (`write`), in turn with the guard's checks. */
  writeStarted(ids: readonly string[], write: () => Promise<void>): Promise<void> {
    return this.inTurn(async () => {
      await write();
      for (const id of ids) this.expected.set(id, 'in_progress');
    });
  }

  /**
   * Puts back every story status of the main folder's quantum.json that the coordinator did not write, with a
   * `claimPutBack` event naming the stories, what they were set to and the lanes at work. Run before each round, by
   * each lane before it reads its story (LaneStorySource), before each merge and record, and at the end. A
   * quantum.json that cannot be read is left to the run's readers (they refuse it; nothing in it counts).
   */
  guard(): Promise<void> {
    return this.inTurn(async () => {
      const folder = this.h.folder();
      const stories = readQuantum(folder)?.doc?.data.stories;
      if (!stories) return;
      const drift = statusDrift(this.expected, stories);
      if (!drift.length) return;
      await putBackStatuses(folder, drift);
      const running = this.h.lanes();
      const lanes = running.map((l) => `lane ${l.index} (${l.story.id})`);
      for (const d of drift) {
        const item = { source: 'quantum' as const, id: d.id, title: stories.find((s) => s.id === d.id)?.title ?? '' };
        const lane = running.find((l) => l.story.id === d.id);
        this.h.emit(
          {
            type: 'claimPutBack',
            items: [item],
            reason: `status set to ${d.found} in the main folder's quantum.json by no write of the coordinator${lanes.length ? ` while ${lanes.join(', ')} worked` : ''}; only the coordinator records statuses in a parallel run: back to ${d.expected}`,
          },
          lane?.index ?? 0,
        );
      }
      await this.h.reportProgress();
    }).catch(this.h.warn('could not check the main quantum.json for status changes'));
  }

  private inTurn(step: () => Promise<void>): Promise<void> {
    return this.queue.push(step);
  }
}
