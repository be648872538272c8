import { createReadStream } from 'node:fs';
import * as readline from 'node:readline';
import type { EngineEvent } from '../../core/loop/events';
import { runFilePaths } from '../../core/loop/runFiles';
import type { DashboardState, RunChoice, UpdateOp } from '../../protocol/dashboard';
import { RunFeed, type TimedEvent } from './runFeed';

/** The runs the hub can list (injectable; the extension passes core's `listRuns`). */
export type ListRuns = (folder: string) => { id: string; kind: string; state: string; active: boolean; startedAt?: string; currentItem?: { id: string } | null }[];

/** Longest `events.jsonl` line read back, bytes; longer lines are skipped (never read an unbounded line). */
const MAX_EVENT_LINE = 1024 * 1024;

/**
 * What the dashboard shows, independent of any panel: a {@link RunFeed} per run this window followed (live runs
 * of this window's engine) or loaded (a past run picked, replayed from its `events.jsonl`), the run picked by the
 * person (`pinned`, null = follow the live or latest run) and the run list. Listeners get the updates of the shown
 * run, or `'snapshot'` when the shown run changed.
 * PROVISIONAL until the run follower (issue 9) and the store (issue 13) land: live runs come from this window's
 * engine events; runs started elsewhere are shown from their log, static.
 */
export class DashboardHub {
  private readonly feeds = new Map<string, RunFeed>();
  /** folder → id of this window's live run there. */
  private readonly liveByFolder = new Map<string, string>();
  private pinned: string | null = null;
  private shownId: string | null = null;
  private runList: RunChoice[] = [];
  private readonly listeners = new Set<(change: UpdateOp[] | 'snapshot') => void>();

  constructor(private readonly folders: () => string[], private readonly listRuns: ListRuns, private readonly log: { warn(c: string, m: string): void }) {}

  /** Subscribes to changes of the shown run; returns the unsubscribe. */
  onChange(fn: (change: UpdateOp[] | 'snapshot') => void): { dispose(): void } {
    this.listeners.add(fn);
    return { dispose: () => this.listeners.delete(fn) };
  }

  /** An event of this window's engine in `folder`. */
  engineEvent(folder: string, event: EngineEvent): void {
    let id = this.liveByFolder.get(folder);
    if (event.type === 'runStarted') {
      id = event.runId;
      this.liveByFolder.set(folder, id);
      this.feeds.set(id, new RunFeed(id, folder, { ownedByThisWindow: true, live: true }));
      this.refreshRuns();
      if (!this.pinned) this.show(id);
    }
    if (!id) return;
    const feed = this.feeds.get(id);
    if (!feed) return;
    const ops = feed.apply({ ...event, at: Date.now() });
    if (event.type === 'runEnded') {
      this.liveByFolder.delete(folder);
      ops.push(...feed.setOwnership(false, false));
      this.refreshRuns();
      ops.push({ op: 'runs', runs: this.runList, pinnedRunId: this.pinned });
    }
    if (id === this.shownId && ops.length) this.emit(ops);
  }

  /** The run shown now, if any. */
  get shown(): RunFeed | undefined {
    return this.shownId ? this.feeds.get(this.shownId) : undefined;
  }

  /** The live run of this window in `folder`, if any (its id). */
  liveRun(folder: string): string | undefined {
    return this.liveByFolder.get(folder);
  }

  /** Picks the run to show (null: this window's live run, else the latest). Loads a past run from its log. */
  async pick(runId: string | null): Promise<void> {
    this.refreshRuns();
    if (runId !== null && !this.runList.some((r) => r.runId === runId)) throw new Error(`no run ${runId} in this workspace`);
    this.pinned = runId;
    const id = runId ?? [...this.liveByFolder.values()][0] ?? this.runList[this.runList.length - 1]?.runId ?? null;
    if (id && !this.feeds.has(id)) await this.load(id);
    this.show(id);
  }

  /** Re-reads the run list; picks the latest run when nothing is shown yet. */
  async refresh(): Promise<void> {
    if (!this.shownId) await this.pick(this.pinned);
    else {
      this.refreshRuns();
      this.emit([{ op: 'runs', runs: this.runList, pinnedRunId: this.pinned }]);
    }
  }

  /** The dashboard state (snapshot). */
  state(): DashboardState {
    const feed = this.shown;
    const base = feed?.state() ?? { run: null, tokens: [], tasks: [], gates: [], log: [], logTotal: 0 };
    return { ...base, runs: this.runList, pinnedRunId: this.pinned };
  }

  private show(id: string | null): void {
    this.shownId = id;
    this.emit('snapshot');
  }

  private emit(change: UpdateOp[] | 'snapshot'): void {
    for (const l of this.listeners) l(change);
  }

  private refreshRuns(): void {
    const list: RunChoice[] = [];
    for (const folder of this.folders()) {
      let runs: ReturnType<ListRuns> = [];
      try {
        runs = this.listRuns(folder);
      } catch (err) {
        this.log.warn('dashboard', `could not list the runs of ${folder}: ${(err as Error).message}`);
      }
      for (const r of runs) {
        if (r.kind !== 'ralph') continue;
        const live = this.liveByFolder.get(folder) === r.id;
        list.push({ runId: r.id, folder, label: `${r.id}${r.currentItem ? ` · ${r.currentItem.id}` : ''}`, state: live ? 'running' : r.state, active: r.active || live });
      }
    }
    for (const [folder, id] of this.liveByFolder) if (!list.some((r) => r.runId === id)) list.push({ runId: id, folder, label: id, state: 'running', active: true });
    this.runList = list.slice(-200);
  }

  /** Replays a past run's `events.jsonl` into a feed (streamed line by line; bad lines skipped). */
  private async load(runId: string): Promise<void> {
    const choice = this.runList.find((r) => r.runId === runId);
    if (!choice) return;
    const feed = new RunFeed(runId, choice.folder, { ownedByThisWindow: false, live: false });
    const file = runFilePaths(choice.folder, runId).events;
    let bad = 0;
    try {
      const rl = readline.createInterface({ input: createReadStream(file, { encoding: 'utf8' }), crlfDelay: Infinity });
      for await (const line of rl) {
        if (!line.trim()) continue;
        if (line.length > MAX_EVENT_LINE) { bad++; continue; }
        try {
          const e = JSON.parse(line) as TimedEvent;
          if (e && typeof e === 'object' && typeof e.type === 'string') feed.apply(e);
          else bad++;
        } catch {
          bad++;
        }
      }
    } catch (err) {
      this.log.warn('dashboard', `could not read ${file}: ${(err as Error).message}`);
    }
    if (bad) this.log.warn('dashboard', `${file}: skipped ${bad} line(s) that are not events`);
    this.feeds.set(runId, feed);
  }
}
