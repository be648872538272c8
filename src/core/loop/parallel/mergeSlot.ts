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
import { type decideLaneEnd, decideMerge, decideMergeBatch, featureGateRepeats } from './rules';
import { trace } from './trace';

/*
 * The merge slot of a parallel run: lanes whose engines returned wait here, one merge at a time, each followed by the
 * feature branch's gate; lanes that wait at the same moment are merged as a batch under one gate
 * (rules.ts `decideMergeBatch`). Each story's end is recorded in the main quantum.json by the coordinator's writes.
 */

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
  private readonly mergeQueue: {
    lane: RunningLane;
    d: ReturnType<typeof decideLaneEnd>;
    resolve: () => void;
    reject: (err: unknown) => void;
  }[] = [];
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
   * Ends the queued lanes until none waits: what waits at the same moment is one batch; its lanes to merge go
   * through {@link endBatch} when there are several, the others through {@link endLane} one by one. Never throws (each
   * lane's error goes to its own waiter); `merging` goes false in the same step as the last look at the queue.
   */
  private async drainMerges(): Promise<void> {
    while (this.mergeQueue.length) {
      const batch = this.mergeQueue.splice(0);
      const merges = batch.filter((b) => b.d.kind === 'merge');
      for (const b of batch) {
        if (b.d.kind === 'merge' && merges.length > 1) continue;
        await this.endLane(b.lane, b.d).then(b.resolve, b.reject);
      }
      if (merges.length > 1)
        await this.endBatch(merges.map((b) => b.lane)).then(
          () => {
            for (const b of merges) b.resolve();
          },
          (err) => {
            for (const b of merges) b.reject(err);
          },
        );
    }
    this.merging = false;
  }

  /**
   * Merges several verified lanes' branches one after another, then runs the feature branch's gate once
   * (decide.ts `decideMergeBatch`): a conflict fails its story at once (as in {@link endLane}); one merge in: the
   * usual gate of {@link endLane}; green: each merged story passed; red: the batch's merges are undone and each story
   * goes through {@link endLane} again (merged and gated alone), so that the right story fails `merge_regression`.
   * Each story's `durationMs`: its merge plus its share of the one gate.
   */
  private async endBatch(lanes: readonly RunningLane[]): Promise<void> {
    const merged: { lane: RunningLane; outcome: Extract<MergeOutcome, { kind: 'merged' }>; ms: number }[] = [];
    for (const lane of lanes) {
      trace(lane.index, lane.story.id, 'mergeSlot');
      const t0 = Date.now();
      const m = await this.h.dispatcher.merge(lane.story.id);
      trace(lane.index, lane.story.id, 'merged');
      if (m.kind === 'merged') {
        merged.push({ lane, outcome: m, ms: Date.now() - t0 });
        continue;
      }
      const f = decideMerge({ merge: m, gate: null });
      if (f.kind !== 'fail') continue;
      await this.recordEnd(
        lane,
        { kind: 'merge' },
        { kind: 'failed', phase: f.phase, reason: f.reason, ...(f.files ? { files: f.files } : {}) },
        'conflict',
        f.files,
        Date.now() - t0,
        false,
      );
    }
    if (merged.length === 1) {
      const only = merged[0]!;
      await this.gateAndRecord(only.lane, only.outcome, Date.now() - only.ms);
      return;
    }
    if (!merged.length) return;
    const t0 = Date.now();
    for (const m of merged) trace(m.lane.index, m.lane.story.id, 'featureGateRuns');
    const gate = await this.featureGate(merged[merged.length - 1]!.lane);
    const share = Math.round((Date.now() - t0) / merged.length);
    const b = decideMergeBatch({ merged: merged.length, gate });
    if (b.kind === 'oneByOne') {
      await this.h.dispatcher.undoMerge(merged[0]!.outcome.before);
      this.h.emit({
        type: 'warning',
        message: `the feature branch's gate is red after merging ${merged.map((m) => m.lane.story.id).join(', ')} together: merged again one at a time to find the story that broke it`,
      });
      for (const m of merged) await this.endLane(m.lane, { kind: 'merge' });
      return;
    }
    for (const m of merged)
      await this.recordEnd(
        m.lane,
        { kind: 'merge' },
        { kind: 'passed' },
        'merged',
        undefined,
        m.ms + share,
        false,
        merged.length,
      );
  }

  /** Merges (or not), runs the feature branch's gate after a merge, records the story and reports the lane's end. */
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
   * already ran that command on the tree the merge made; a red gate undoes the merge (`merge_regression`); then the record.
   */
  private async gateAndRecord(
    lane: RunningLane,
    merged: Extract<MergeOutcome, { kind: 'merged' }>,
    t0: number,
  ): Promise<void> {
    const repeated = await this.featureGateRepeated(lane);
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
   * Records a lane's story end in the main quantum.json and reports it (`laneMerge`, then `verified` or
   * `itemBlocked`). `batch`: the number of stories merged under one feature gate (endBatch), for the reason text.
   */
  private async recordEnd(
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
   * and the green commit's tree, read from the loose objects (git/gitObjects.ts: no git process in the usual case) or
   * asked of git, only when the commands match and the lane's tree was clean.
   */
  private async featureGateRepeated(lane: RunningLane): Promise<boolean> {
    const featureCommand = this.h.gates ? (gateCommandFor(this.h.gates, 'final')?.command ?? null) : null;
    const commit = cleanCommitOf(lane.green?.state ?? null);
    if (!lane.green || !commit || featureCommand !== lane.green.command) return false;
    const trees = await headAndCommitTrees(this.h.folder, commit);
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
