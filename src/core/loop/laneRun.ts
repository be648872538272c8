import { EventEmitter } from 'node:events';
import { rm, stat } from 'node:fs/promises';
import * as path from 'node:path';
import { guardGapWarning } from '../agents/guardSupport';
import { getAdapter } from '../agents/registry';
import { newRunId, updateRunRecord } from '../control/runRecords';
import { ralphRunDir } from '../control/sentinels';
import { startGuardServer, type GuardServer } from '../gates/guardServer';
import { ensureHandoff } from '../gates/handoff';
import { ralphFile } from '../model/ralphPaths';
import type { SpaceReserve } from '../store/storageFailure';
import type { EngineEvent } from './events';
import { ensureRalphIgnored } from '../git/gitState';
import { Lane } from './lane/lane';
import { prepareLane, type LaneSetup } from './lane/laneSetup';
import {
  holdFolderLock,
  makeRunReserve,
  openRun,
  recordRunEnd,
  recoverFolder,
  refuseReadOnly,
  runResult,
  startRunFolder,
  type Warn,
} from './runShell';
import { EngineRefusal, timingFromConfig, type EngineOptions, type EngineTiming, type RunResult } from './runOptions';
import { availableSources } from '../sources/work/workSources';

/**
 * The run shell around one lane in one folder: the sequential run (the folder itself), or one lane of a parallel run
 * (its worktree, `EngineOptions.lane`; its run.json there is what parallel/recovery.ts reads after a crash). In order:
 * the lane's refusals (lane/laneSetup.ts), the shell of runShell.ts (the read-only refusal, the lock, crash recovery,
 * the run folder, the disk reserve), the command guard, run.json, the sentinels and `runStarted`; then the lane's loop
 * (lane/lane.ts); then the put-backs, the end record, notify, the last put-back and `runEnded`. The only writer of the
 * run's run.json: the lane asks for its writes ({@link Lane} `LaneHost.record`).
 */
export class LaneRun extends EventEmitter<{ event: [event: EngineEvent, lane?: number] }> {
  readonly runId: string;
  private readonly folder: string;
  private readonly timing: EngineTiming;
  private readonly lane: Lane;
  /** The run's command guard (claude only), stopped when the run ends. */
  private guard: GuardServer | null = null;

  constructor(private readonly o: EngineOptions) {
    super();
    this.folder = path.resolve(o.folder);
    this.runId = o.runId ?? newRunId();
    this.timing = { ...timingFromConfig(o.config), ...o.timing };
    this.lane = new Lane(
      { ...o, runId: this.runId },
      {
        emit: (e) => this.emit('event', e),
        record: (patch) => updateRunRecord(this.folder, this.runId, patch).then(() => undefined),
      },
    );
  }

  private readonly warn: Warn = (message) => this.emit('event', { type: 'warning', message });

  private warnOf(what: string): (err: Error) => void {
    return (err) => this.warn(`${what}: ${err.message}`);
  }

  /** Runs the lane to its end. Throws {@link EngineRefusal} before starting when it cannot run. */
  async run(): Promise<RunResult> {
    const setup = await prepareLane(this.folder, this.o, this.lane.roster);
    // A .ralph/ we may not write (by its mode bits: root ignores them) is refused up front.
    refuseReadOnly(this.folder);
    const releaseLock = await holdFolderLock(this.folder, this.warn);
    try {
      return await this.runLocked(setup);
    } finally {
      await this.guard?.close().catch(this.warnOf('could not close the command guard'));
      await releaseLock().catch(this.warnOf('could not release the engine lock'));
    }
  }

  private async runLocked(s: LaneSetup): Promise<RunResult> {
    await this.removeStaleStopRequest();
    // A crashed run may have worked on another source of this folder: recovery looks at all of them.
    const candidates = availableSources({ folder: this.folder, actor: s.actor });
    // A run of a task file outside the usual names (a resume brief) recovers its own file too.
    if (!candidates.some((c) => c.kind === s.source.kind && c.label === s.source.label)) candidates.push(s.source);
    const lane = this.o.lane;
    await recoverFolder(
      this.folder,
      { runId: this.runId, sources: candidates, killGraceMs: this.timing.killGraceMs, lane: !!lane },
      this.warn,
    );
    await startRunFolder(this.folder, this.runId, this.o.config, this.warn);
    // A parallel run's lane uses its run's one reserve (the coordinator's), not a 1 MiB file of its own per story.
    const reserve = lane ? (lane.reserve ?? null) : await makeRunReserve(this.folder, this.runId, this.warn);
    try {
      return await this.runStarted(s, reserve);
    } finally {
      if (!lane) await reserve?.release();
    }
  }

  private async runStarted(s: LaneSetup, reserve: SpaceReserve | null): Promise<RunResult> {
    const o = this.o;
    // The command guard of this run: the agents that run ralph's hook get it (claude through --settings, the others
    // through their own settings: AgentAdapter.prepareGuard); cursor-agent, opencode and copilot run no hook.
    if (this.lane.roster.agents.some((a) => getAdapter(a).guardHook))
      this.guard = await startGuardServer({
        workspace: this.folder,
        runDir: ralphRunDir(this.folder, this.runId),
        onRecord: (r) => this.emit('event', { type: 'guard', ...r }),
      }).catch((err: Error) => {
        throw new EngineRefusal(`The command guard could not start: ${err.message}`);
      });
    // A lane's `.ralph/` is kept out of git by the repository's info/exclude (parallel/dispatcher.ts excludeRunnerFiles).
    if (!o.lane) await ensureRalphIgnored(this.folder).catch(this.warnOf('could not add .ralph/ to .gitignore'));
    await ensureHandoff(this.folder);
    const limits = {
      maxIterations: o.maxIterations ?? o.config.maxIterations,
      maxCostUsd: o.maxCostUsd ?? o.config.maxCostUsd,
      maxWallMs: o.maxWallTimeMs ?? o.config.maxWallTimeMinutes * 60_000,
    };
    const run = { agent: s.adapter.name, sourceText: s.source.label, limits, gates: s.gates };
    const source = { kind: s.source.kind, label: s.source.label };
    const sentinels = await openRun(this.folder, this.runId, o, { ...run, source }, this.timing.sentinelPollMs, (e) =>
      this.emit('event', e),
    );
    for (const g of s.guardGaps) this.warn(guardGapWarning(g.agent, g.gap));
    let ran: Awaited<ReturnType<Lane['run']>>;
    try {
      ran = await this.lane.run(s, sentinels, this.guard?.settings);
    } finally {
      sentinels.close();
    }
    const { end, storageFailure } = ran;
    // Free the reserve so the cause and the give-back can be written.
    if (storageFailure) await reserve?.release();
    const settled = await this.lane.settle(end);
    const facts = { end, storageFailure, ...settled };
    const recorded = await recordRunEnd(this.folder, this.runId, facts, async () => reserve?.release(), this.warn);
    // Notified before the event is logged, so a follower that stops at runEnded sees how the notification went.
    await this.lane.notifyAndClose(
      recorded.ended,
      `Ralph run ${this.runId} ${end.state}: ${end.reason} (${facts.done}/${facts.total} done, $${facts.costUsd.toFixed(4)})`,
      settled.settled,
    );
    this.emit('event', recorded.ended);
    return runResult(this.runId, facts, recorded);
  }

  /**
   * A `.ralph/stop-requested` older than this run was meant for an earlier one: it never stops this run (the
   * sentinel rules), and left in place it would tell the agent to yield after every commit. It is removed, with a
   * warning (seed-systems.md §3.15-9 is the opposite failure: a fresh request lost).
   */
  private async removeStaleStopRequest(): Promise<void> {
    const file = ralphFile(this.folder, 'stopRequested');
    const st = await stat(file).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') this.warnOf('could not look at .ralph/stop-requested')(err);
      return null;
    });
    if (!st) return;
    await rm(file, { force: true });
    this.warn(`removed .ralph/stop-requested from ${st.mtime.toISOString()}: it predates this run`);
  }
}
