import { gateCommandFor, type ResolvedGates } from '../../gates/gateConfig';
import type { RalphConfig } from '../../model/config';
import { removeFolderCaches } from '../../store/snapshotCache';
import type { EngineEvent, GateTier } from '../events';
import { cleanCommitOf } from '../../git/gitState';
import type { EngineTiming } from '../runOptions';
import { laneBranch, type LaneDispatcher, type MergeOutcome } from './dispatcher';
import { headAndCommitTrees } from '../../git/gitObjects';
import { runEngineGate } from '../lane/laneIO';
import type { RunningLane } from './runningLane';
import { laneEnded, type StoryEnd } from './quantumRuntime';
import { decideBatchGate, type decideLaneEnd, decideMerge, decideMergeBatch, featureGateRepeats } from './rules';
import { trace } from './trace';

/*
 * The merge slot of a parallel run: lanes whose engines returned wait here, one merge at a time, each followed by the
 * feature branch's gate; lanes that wait at the same moment are merged as a batch under one gate, joined by the lanes
 * queued while its merges run (rules.ts `decideBatchGate`, `decideMergeBatch`). Each story's end is recorded in the main quantum.json by the coordinator's writes,
 * one record after another in the order the merges were decided, while the next batch merges (docs/decisions/0028).
 */

/** One merge of a batch that went in: its lane, what git did, how long (ms), and whether its gate would repeat. */
interface BatchMerge {
  lane: RunningLane;
  outcome: Extract<MergeOutcome, { kind: 'merged' }>;
  ms: number;
  repeats: Promise<boolean>;
}

/** A lane waiting for the merge slot: its end, and its waiter in {@link MergeSlot.enqueue}. */
interface Waiter {
  lane: RunningLane;
  d: ReturnType<typeof decideLaneEnd>;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** What the merge slot needs of its coordinator. */
export interface MergeHost {
  readonly folder: string;
  readonly config: RalphConfig;
  readonly timing: EngineTiming;
  readonly gates: ResolvedGates | null;
  readonly feature: string;
  readonly dispatcher: LaneDispatcher;
  emit(e: EngineEvent, lane?: number): void;
  /** The main quantum.json's statuses as the coordinator wrote them (its guard puts back any other). */
  guardMain(): Promise<void>;
  writeStatus(id: string, status: string, write: () => Promise<void>): Promise<void>;
  /** The worktrees of the lanes whose ends are not being recorded (quantum.json `activeWorktrees`). */
  activeTrees(): string[];
  reportProgress(): Promise<void>;
}

/** The merge slot: {@link enqueue} a lane's end; {@link mergeChain} settles once every queued lane is recorded. */
export class MergeSlot {
  /** The merges, gates and records, one after another. */
  mergeChain: Promise<void> = Promise.resolve();

  constructor(private readonly h: MergeHost) {}

  /** Queues a lane's end (`d`); resolves once its merge (or not), gate and record are done. */
  enqueue(lane: RunningLane, d: ReturnType<typeof decideLaneEnd>): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.mergeQueue.push({ lane, d, resolve, reject });
      trace(lane.index, lane.story.id, 'mergeQueued');
      this.scheduleMerges();
    });
  }

  /** Lanes waiting for the merge slot, in the order they came. */
  private readonly mergeQueue: Waiter[] = [];
  private merging = false;

  /** Starts the merge drainer on the merge chain unless it runs (it takes every lane queued meanwhile). */
  private scheduleMerges(): void {
    if (this.merging) return;
    this.merging = true;
    this.mergeChain = this.mergeChain.then(
      () => this.drainMerges(),
      () => this.drainMerges(),
    );
  }

  /**
   * The records of the lanes whose merge and gate are decided, one after another in the order decided. A record
   * touches quantum.json, the run's events and nothing of git, so the next batch's merge does not wait for it; a
   * crash between the two leaves a merged story `in_progress`, which recovery.ts `planRecovery` passes (its branch
   * is merged), as it does for a crash between a merge and its record.
   */
  private recording: Promise<void> = Promise.resolve();
  /** Each lane's queued record (its waiter in {@link enqueue} settles with it). */
  private readonly records = new Map<RunningLane, Promise<void>>();

  /**
   * Ends the queued lanes until none waits: lanes that do not merge are recorded one by one; the lanes to merge
   * waiting at the same moment are one batch ({@link mergeBatch}, which the lanes queued while it merges join). Each
   * lane's waiter settles once its record is written (or fails with the error that stopped its merge). Never throws;
   * `merging` goes false in the same step as the last look at the queue, after the last record.
   */
  private async drainMerges(): Promise<void> {
    for (;;) {
      while (this.mergeQueue.length) {
        const waiting = this.mergeQueue.splice(0);
        for (const b of waiting)
          if (b.d.kind !== 'merge')
            await this.endLane(b.lane, b.d).then(
              () => this.settleWithRecord(b),
              (err) => this.settleWithRecord(b, err),
            );
        const merges = waiting.filter((b) => b.d.kind === 'merge');
        if (merges.length) await this.mergeBatch(merges);
      }
      await this.recording;
      if (!this.mergeQueue.length) break;
    }
    this.merging = false;
  }

  /** Settles a lane's waiter with its queued record; without one, with `err` (its merge failed before a record). */
  private settleWithRecord(b: Waiter, err?: unknown): void {
    const r = this.records.get(b.lane);
    this.records.delete(b.lane);
    if (r) void r.then(b.resolve, b.reject);
    else if (err !== undefined) b.reject(err);
    else b.resolve();
  }

  /** Takes the lanes queued for a merge out of the queue (the others stay, in their order). */
  private takeQueuedMerges(): Waiter[] {
    const out = this.mergeQueue.filter((b) => b.d.kind === 'merge');
    if (out.length)
      this.mergeQueue.splice(0, this.mergeQueue.length, ...this.mergeQueue.filter((b) => b.d.kind !== 'merge'));
    return out;
  }

  /**
   * Merges verified lanes' branches one after another, the lanes queued for a merge meanwhile joining the batch,
   * then runs the feature branch's gate once over the merges (rules.ts `decideBatchGate`, `decideMergeBatch`): a
   * conflict fails its story at once (as in {@link endLane}); the leading merges whose gate would repeat their lane's
   * green gate on the tree they made pass without one (asked while the next lane merges); one merge left: the usual
   * gate of {@link gateAndRecord}; green: each merged story passed; red: those merges are undone and each story goes
   * through {@link endLane} again (merged and gated alone), so that the right story fails `merge_regression`. Each
   * story's `durationMs`: its merge plus its share of the one gate. Settles every waiter it took, but those of lanes
   * not tried when a merge threw (they go back to the queue); never throws.
   */
  private async mergeBatch(waiters: Waiter[]): Promise<void> {
    const all = [...waiters];
    let i = 0;
    try {
      const merged: BatchMerge[] = [];
      for (; i < all.length; i++) {
        const lane = all[i]!.lane;
        trace(lane.index, lane.story.id, 'mergeSlot');
        const t0 = Date.now();
        const m = await this.h.dispatcher.merge(lane.story.id);
        trace(lane.index, lane.story.id, 'merged');
        if (m.kind === 'merged')
          merged.push({
            lane,
            outcome: m,
            ms: Date.now() - t0,
            // Read from the commit the merge made, not HEAD: the next lane's merge may already have moved it.
            repeats: this.featureGateRepeated(lane, m.after).catch(() => false),
          });
        else {
          const f = decideMerge({ merge: m, gate: null });
          if (f.kind === 'fail')
            this.recordEnd(
              lane,
              { kind: 'merge' },
              { kind: 'failed', phase: f.phase, reason: f.reason, ...(f.files ? { files: f.files } : {}) },
              'conflict',
              f.files,
              Date.now() - t0,
              false,
            );
        }
        // Lanes queued for a merge while this one merged join the batch, before its gate.
        all.push(...this.takeQueuedMerges());
      }
      await this.gateMerged(merged);
    } catch (err) {
      // The lanes not tried yet (a merge failed before theirs) wait for the slot again, as if they had not joined.
      this.mergeQueue.unshift(...all.splice(i + 1));
      for (const b of all) this.settleWithRecord(b, err);
      return;
    }
    for (const b of all) this.settleWithRecord(b);
  }

  /** The gate over a batch's merges (`merged`, in order), then their records (see {@link mergeBatch}). */
  private async gateMerged(merged: readonly BatchMerge[]): Promise<void> {
    const g = decideBatchGate({ repeats: await Promise.all(merged.map((m) => m.repeats)) });
    for (const m of merged.slice(0, g.passAlone)) {
      trace(m.lane.index, m.lane.story.id, 'featureGateSkipped');
      this.recordEnd(m.lane, { kind: 'merge' }, { kind: 'passed' }, 'merged', undefined, m.ms, true);
    }
    const gated = merged.slice(g.passAlone);
    if (!gated.length) return;
    if (gated.length === 1) {
      const only = gated[0]!;
      return this.gateAndRecord(only.lane, only.outcome, Date.now() - only.ms, false);
    }
    const t0 = Date.now();
    for (const m of gated) trace(m.lane.index, m.lane.story.id, 'featureGateRuns');
    const gate = await this.featureGate(gated[gated.length - 1]!.lane);
    const share = Math.round((Date.now() - t0) / gated.length);
    const b = decideMergeBatch({ merged: gated.length, gate });
    if (b.kind === 'oneByOne') {
      await this.h.dispatcher.undoMerge(gated[0]!.outcome.before);
      this.h.emit({
        type: 'warning',
        message: `the feature branch's gate is red after merging ${gated.map((m) => m.lane.story.id).join(', ')} together: merged again one at a time to find the story that broke it`,
      });
      for (const m of gated) await this.endLane(m.lane, { kind: 'merge' });
      return;
    }
    for (const m of gated)
      this.recordEnd(
        m.lane,
        { kind: 'merge' },
        { kind: 'passed' },
        'merged',
        undefined,
        m.ms + share,
        false,
        gated.length,
      );
  }

  /** Merges (or not), runs the feature branch's gate after a merge, and queues the story's record (its end reported with it). */
  private async endLane(lane: RunningLane, d: ReturnType<typeof decideLaneEnd>): Promise<void> {
    const id = lane.story.id;
    trace(lane.index, id, 'mergeSlot');
    if (d.kind === 'merge') {
      const t0 = Date.now();
      const merged = await this.h.dispatcher.merge(id);
      trace(lane.index, id, 'merged');
      if (merged.kind === 'merged') return this.gateAndRecord(lane, merged, t0);
      const m = decideMerge({ merge: merged, gate: null });
      if (m.kind === 'fail')
        return this.recordEnd(
          lane,
          d,
          { kind: 'failed', phase: m.phase, reason: m.reason, ...(m.files ? { files: m.files } : {}) },
          'conflict',
          m.files,
          Date.now() - t0,
          false,
        );
      return this.recordEnd(lane, d, { kind: 'passed' }, 'merged', undefined, Date.now() - t0, false);
    }
    if (d.kind === 'release') return this.recordEnd(lane, d, { kind: 'released' }, 'released', undefined, 0, false);
    return this.recordEnd(lane, d, { kind: 'failed', phase: d.phase, reason: d.reason }, 'failed', undefined, 0, false);
  }

  /**
   * After one story's merge went in (`merged`, begun at `t0`): the feature branch's gate, unless the lane's green gate
   * already ran that command on the tree the merge made (`repeats`, when the caller asked already); a red gate undoes the merge (`merge_regression`); then the record.
   */
  private async gateAndRecord(
    lane: RunningLane,
    merged: Extract<MergeOutcome, { kind: 'merged' }>,
    t0: number,
    repeats?: boolean,
  ): Promise<void> {
    const repeated = repeats ?? (await this.featureGateRepeated(lane));
    trace(lane.index, lane.story.id, repeated ? 'featureGateSkipped' : 'featureGateRuns');
    const gate = !repeated ? await this.featureGate(lane) : null;
    const m = decideMerge({ merge: merged, gate });
    if (m.kind === 'fail' && m.undo) await this.h.dispatcher.undoMerge(merged.before);
    const durationMs = Date.now() - t0;
    if (m.kind === 'passed')
      return this.recordEnd(lane, { kind: 'merge' }, { kind: 'passed' }, 'merged', undefined, durationMs, repeated);
    return this.recordEnd(
      lane,
      { kind: 'merge' },
      { kind: 'failed', phase: m.phase, reason: m.reason, ...(m.files ? { files: m.files } : {}) },
      m.phase === 'merge_conflict' ? 'conflict' : 'regression',
      m.files,
      durationMs,
      repeated,
    );
  }

  /**
   * Queues the record of a lane's story end ({@link writeRecord}) after the records queued before it, and returns at
   * once: the slot goes on to the next merge while it is written. Its waiter in {@link enqueue} settles with it.
   */
  private recordEnd(...args: Parameters<MergeSlot['writeRecord']>): void {
    const step = this.recording.then(() => this.writeRecord(...args));
    this.recording = step.catch(() => undefined);
    this.records.set(args[0], step);
  }

  /**
   * Records a lane's story end in the main quantum.json and reports it (`laneMerge`, then `verified` or
   * `itemBlocked`). `batch`: the number of stories merged under one feature gate (endBatch), for the reason text.
   */
  private async writeRecord(
    lane: RunningLane,
    d: ReturnType<typeof decideLaneEnd>,
    end: StoryEnd,
    outcome: 'merged' | 'conflict' | 'regression' | 'failed' | 'released',
    files: string[] | undefined,
    durationMs: number,
    repeated: boolean,
    batch = 1,
  ): Promise<void> {
    const id = lane.story.id;
    lane.settled = true;
    const others = this.h.activeTrees();
    removeFolderCaches(this.h.folder);
    trace(lane.index, id, 'featureGateDone');
    await this.h.guardMain();
    await this.h.writeStatus(id, end.kind === 'passed' ? 'passed' : end.kind === 'failed' ? 'failed' : 'pending', () =>
      laneEnded(this.h.folder, id, end, others),
    );
    trace(lane.index, id, 'recorded');
    const how = repeated
      ? ' (the same gate passed on this same tree in the lane: not run again)'
      : batch > 1
        ? ` (with ${batch - 1} other stor${batch === 2 ? 'y' : 'ies'} under one run of the feature branch's gate)`
        : '';
    const reason =
      end.kind === 'passed'
        ? `merged into ${this.h.feature}${how}`
        : end.kind === 'released'
          ? d.kind === 'release'
            ? d.reason
            : ''
          : end.reason;
    this.h.emit(
      {
        type: 'laneMerge',
        item: lane.story,
        branch: laneBranch(id),
        outcome,
        reason,
        ...(files ? { files } : {}),
        durationMs,
      },
      lane.index,
    );
    if (end.kind === 'passed')
      this.h.emit(
        {
          type: 'verified',
          item: lane.story,
          tier: this.h.gates ? (gateCommandFor(this.h.gates, 'final')?.tier ?? null) : null,
        },
        lane.index,
      );
    else if (end.kind === 'failed')
      this.h.emit({ type: 'itemBlocked', item: lane.story, reason: `${end.phase}: ${end.reason}` }, lane.index);
    await this.h.reportProgress();
  }

  /**
   * Would the feature branch's gate repeat the lane's last green gate (decide.ts `featureGateRepeats`)? The merged tree
   * (of HEAD, or of the merge's commit `at`) and the green commit's tree, read from the loose objects (git/gitObjects.ts: no git process in the usual case) or
   * asked of git, only when the commands match and the lane's tree was clean.
   */
  private async featureGateRepeated(lane: RunningLane, at?: string): Promise<boolean> {
    const featureCommand = this.h.gates ? (gateCommandFor(this.h.gates, 'final')?.command ?? null) : null;
    const commit = cleanCommitOf(lane.green?.state ?? null);
    if (!lane.green || !commit || featureCommand !== lane.green.command) return false;
    const trees = await headAndCommitTrees(this.h.folder, commit, at);
    return featureGateRepeats({
      featureCommand,
      laneGreen: lane.green,
      mergedTree: trees.head,
      greenTree: trees.commit,
    });
  }

  /** The feature branch's gate after a merge (the final tier, else the next one there is), in the folder itself. */
  private async featureGate(lane: RunningLane): Promise<{ passed: boolean; reason: string } | null> {
    if (!this.h.gates) return null;
    const g = gateCommandFor(this.h.gates, 'final');
    if (!g) return null;
    const r = await runEngineGate(
      {
        folder: this.h.folder,
        tier: g.tier as GateTier,
        command: g.command,
        timing: this.h.timing,
        config: this.h.config,
      },
      (e) => this.h.emit(e, lane.index),
    );
    return {
      passed: r.exitCode === 0,
      reason: `${g.tier} gate exit ${r.exitCode}: ${r.failingLines.slice(0, 3).join(' | ') || r.tail.slice(-3).join(' | ') || 'no output'}`,
    };
  }
}
