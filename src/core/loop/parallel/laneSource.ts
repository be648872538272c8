import type { AgentSignal } from '../../stream/signals';
import type { WorkItemRef } from '../events';
import {
  QuantumSource,
  type Claim,
  type ClaimBaseline,
  type DoneClaim,
  type NextOptions,
  type NextResult,
  type WorkItem,
  type WorkSource,
} from '../../sources/work/workSources';
import { laneAttemptFailed, storyAttempts } from './quantumRuntime';

/**
 * The work source of one lane of a parallel run: the lane's one quantum story, read from the state root's
 * quantum.json (never the lane tree's checked-out copy). The engine's usual rules run over it (attempts, gates,
 * stalls), but the story's status is the coordinator's: a verified story is only noted here (`verified`), and merged
 * and recorded passed by the coordinator; a blocked one is noted (`blocked`) and recorded failed by it. A failed
 * attempt is recorded at once (attempts + 1, a failure entry) while the story stays `in_progress`, so no round takes
 * it while its lane retries.
 */
export class LaneStorySource implements WorkSource {
  readonly kind = 'quantum' as const;
  readonly label = 'quantum.json';
  /** The story's gate was green in the lane. */
  verified = false;
  /** Why the lane blocked the story, or null. */
  blocked: string | null = null;
  private readonly quantum: QuantumSource;

  /**
   * `guard`: the coordinator's check of the main quantum.json (statuses it did not write are put back), run before the story is read, so a status the lane's own agent forged there is never what the lane sees.
   */
  constructor(
    private readonly stateRoot: string,
    readonly storyId: string,
    actor: string,
    private readonly guard: () => Promise<void> = async () => {},
  ) {
    this.quantum = new QuantumSource({ folder: stateRoot, actor });
  }

  async next(opts: NextOptions = {}): Promise<NextResult> {
    await this.guard();
    if (this.verified) return { kind: 'complete' };
    if (this.blocked !== null) return { kind: 'blocked', reason: `${this.storyId}: ${this.blocked}` };
    // The story waits for the answer to its question (set aside, `continueOnBlocked`): the lane waits, never re-runs it.
    if (opts.skip?.includes(this.storyId)) return { kind: 'blocked', reason: `${this.storyId} waits for an answer` };
    const n = await this.quantum.next({ take: this.storyId });
    if (n.kind === 'work' && n.item.id === this.storyId) return n;
    return { kind: 'blocked', reason: `${this.storyId} is no longer open in quantum.json` };
  }
  async start(): Promise<void> {
    /* the coordinator marked it in_progress when the lane began */
  }
  async snapshot(): Promise<ClaimBaseline> {
    return {
      at: new Date().toISOString(),
      source: this.kind,
      label: this.label,
      done: this.verified ? [this.storyId] : [],
    };
  }
  async claimsSince(): Promise<Claim[]> {
    return [];
  }
  async putBack(): Promise<void> {
    /* nothing is marked done in a lane */
  }
  async claim(_item: WorkItem, signals: readonly AgentSignal[]): Promise<DoneClaim> {
    const passed = signals.some((s) => s.kind === 'storyPassed');
    const failed = signals.some((s) => s.kind === 'storyFailed');
    return { done: passed && !failed, alsoDone: [] };
  }
  async accept(): Promise<void> {
    this.verified = true;
  }
  async reject(_item: WorkItem, _also: readonly WorkItemRef[], reason: string): Promise<void> {
    await laneAttemptFailed(this.stateRoot, this.storyId, 'verification', reason);
  }
  async block(_item: WorkItem, reason: string): Promise<void> {
    this.blocked = reason;
  }
  async failedAttempts(): Promise<number | null> {
    return storyAttempts(this.stateRoot, this.storyId)?.attempts ?? null;
  }
  async attemptLimit(): Promise<number | null> {
    return storyAttempts(this.stateRoot, this.storyId)?.maxAttempts ?? null;
  }
  async progress(): Promise<{ done: number; total: number }> {
    return { done: this.verified ? 1 : 0, total: 1 };
  }
  async fingerprint(): Promise<string> {
    return `${this.verified}:${this.blocked ?? ''}:${storyAttempts(this.stateRoot, this.storyId)?.attempts ?? 0}`;
  }
  async inProgress(): Promise<WorkItemRef[]> {
    return [];
  }
  async recoverCrashed(): Promise<void> {
    /* recovery of lanes is the coordinator's (recovery.ts) */
  }
  async release(): Promise<void> {
    /* the coordinator gives the story back when the lane ends */
  }
}
