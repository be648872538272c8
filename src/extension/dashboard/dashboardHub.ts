import type { RunView } from '../../core/control/runView';
import type { DashboardState, RunChoice, UpdateOp } from '../../protocol/dashboard';
import type { StoreChange, StoreRun, StoreSnapshot } from '../runStore';
import { RunTrack } from './runTrack';

/** The runs the hub can list (injectable; the extension passes core's `listRuns`). */
export type ListRuns = (folder: string) => {
  id: string;
  kind: string;
  state: string;
  active: boolean;
  startedAt?: string;
  currentItem?: { id: string } | null;
}[];

/** What the hub needs: the run store (live runs, whoever started them) and one-off reads of past runs. */
export interface DashboardHubDeps {
  /** The extension's `RunStore` (runStore.ts): its snapshot and change event. */
  store: { snapshot(): StoreSnapshot; onDidChange(fn: (c: StoreChange) => void): { dispose(): void } };
  /** The file workspace folders. */
  folders(): string[];
  /** Every run of a folder (core `listRuns`). */
  listRuns: ListRuns;
  /**
   * The view of a run the store does not follow (a past run picked), read once (core `readRunViewNow`); `onView`
   * gets the view after each entry of its log, oldest first.
   */
  readView(folder: string, runId: string, kind: RunView['kind'], onView?: (v: RunView) => void): Promise<RunView>;
  /** Writes the answer to a run's waiting question (core `answerQuestion`, the path of `ralph answer`). */
  answer(
    folder: string,
    text: string,
    opts: { runId: string; itemId?: string },
  ): Promise<{ question: string; file: string }>;
  log: { info(c: string, m: string): void; warn(c: string, m: string): void };
}

/**
 * What the dashboard shows, independent of any panel. The shown run is the one the person picked (`pinned`), else
 * the store's active run (the newest), else its latest run. Runs the store follows (every active run of the
 * workspace, whoever started it: this window, `ralph run` in a terminal, a bot) are live: each store change turns
 * into small updates through a {@link RunTrack}. A past run the store does not follow is read once and shown static.
 * Listeners get the updates of the shown run, or `'snapshot'` when the shown run changed.
 */
export class DashboardHub {
  private pinned: string | null = null;
  private track: RunTrack | undefined;
  private runList: RunChoice[] = [];
  private readonly listeners = new Set<(change: UpdateOp[] | 'snapshot') => void>();
  private readonly sub: { dispose(): void };

  constructor(private readonly deps: DashboardHubDeps) {
    this.sub = deps.store.onDidChange((c) => this.storeChanged(c));
  }

  dispose(): void {
    this.sub.dispose();
    this.listeners.clear();
  }

  /** Subscribes to changes of the shown run; returns the unsubscribe. */
  onChange(fn: (change: UpdateOp[] | 'snapshot') => void): { dispose(): void } {
    this.listeners.add(fn);
    return { dispose: () => this.listeners.delete(fn) };
  }

  /** The run shown now, if any. */
  get shown(): RunTrack | undefined {
    return this.track;
  }

  /** Picks the run to show (null: the active or latest run). Throws for a run that is not in the workspace. */
  async pick(runId: string | null): Promise<void> {
    this.refreshRuns();
    if (runId !== null && !this.runList.some((r) => r.runId === runId))
      throw new Error(`no run ${runId} in this workspace`);
    this.pinned = runId;
    await this.reshow(true);
  }

  /** Re-reads the run list and the shown run. */
  async refresh(): Promise<void> {
    this.refreshRuns();
    await this.reshow(!this.track);
    if (this.track) this.emit([{ op: 'runs', runs: this.runList, pinnedRunId: this.pinned }]);
  }

  /** The dashboard state (snapshot). */
  state(): DashboardState {
    const base = this.track?.state() ?? {
      run: null,
      lanes: [],
      tokens: [],
      tasks: [],
      gates: [],
      log: [],
      logTotal: 0,
    };
    return { ...base, runs: this.runList, pinnedRunId: this.pinned };
  }

  /**
   * Answers the question the shown run waits on (for `itemId`, or its only one) through core `answerQuestion`.
   * Throws when `runId` is not the shown run or the run waits on no such question.
   */
  async answer(runId: string, itemId: string | null, text: string): Promise<void> {
    const t = this.track;
    if (!t || t.runId !== runId) throw new Error(`refused answer: run ${runId} is not the run shown`);
    const open = t.runView.questions.filter((q) => itemId === null || q.item?.id === itemId);
    if (!open.length) throw new Error(`run ${runId} has no waiting question${itemId ? ` for ${itemId}` : ''}`);
    const r = await this.deps.answer(t.folder, text, { runId, ...(itemId ? { itemId } : {}) });
    this.deps.log.info('dashboard', `answered question ${r.question} of run ${runId}: ${r.file}`);
  }

  private storeChanged(c: StoreChange): void {
    // A run's own change (running → completed) moves its entry in the run picker too, not only the shown run.
    const listChanged = c.kind !== 'run' ? (this.refreshRuns(), true) : this.syncRunStates();
    const before = this.track;
    void this.reshow(false).then(
      () => {
        if (listChanged && this.track === before && this.track)
          this.emit([{ op: 'runs', runs: this.runList, pinnedRunId: this.pinned }]);
      },
      (err: unknown) => this.deps.log.warn('dashboard', String(err)),
    );
  }

  /** The store's run to show: the pinned one, else the newest active, else the newest. */
  private storeRun(s: StoreSnapshot): StoreRun | undefined {
    const runs = s.runs.filter((r) => r.kind === 'ralph');
    if (this.pinned) return runs.find((r) => r.runId === this.pinned);
    return runs.find((r) => r.facts.active) ?? runs[0];
  }

  /** Updates the shown run from the store; a different run (or `force`) makes a new track and a snapshot. */
  private async reshow(force: boolean): Promise<void> {
    const sr = this.storeRun(this.deps.store.snapshot());
    if (sr) {
      const opts = { startedHere: sr.startedHere, live: true };
      if (!force && this.track && this.track.runId === sr.runId && this.track.folder === sr.folder) {
        const ops = this.track.update(sr.view, opts);
        if (ops.length) this.emit(ops);
        return;
      }
      // A run that has ended when first shown (after a reload, or picked) is shown from its whole log. (The store may
      // list it before reading its log: `facts.active` is the listing's word, the view may still be empty.)
      const track = sr.view.final || !sr.facts.active ? await this.replay(sr.folder, sr.runId) : undefined;
      this.track = track ?? new RunTrack(sr.folder, sr.view, opts);
      this.emit('snapshot');
      return;
    }
    const id = this.pinned ?? this.runList[this.runList.length - 1]?.runId ?? null;
    const choice = id ? this.runList.find((r) => r.runId === id) : undefined;
    if (!choice) {
      if (this.track || force) {
        this.track = undefined;
        this.emit('snapshot');
      }
      return;
    }
    if (!force && this.track?.runId === choice.runId && this.track.folder === choice.folder && !this.track.run.live)
      return;
    const track = await this.replay(choice.folder, choice.runId);
    if (!track) return;
    this.track = track;
    this.emit('snapshot');
  }

  /**
   * A run shown from its log: the track takes the view after each entry, so the chart, the gate rows and the log
   * hold the run's whole history (bounded as a live track's), not only its last view. Undefined (logged) when the
   * log cannot be read.
   */
  private async replay(folder: string, runId: string): Promise<RunTrack | undefined> {
    const opts = { startedHere: false, live: false };
    let track: RunTrack | undefined;
    let view: RunView;
    try {
      view = await this.deps.readView(folder, runId, 'ralph', (v) => {
        if (track) track.update(v, opts);
        else track = new RunTrack(folder, v, opts);
      });
    } catch (err) {
      this.deps.log.warn('dashboard', `could not read run ${runId}: ${(err as Error).message}`);
      return undefined;
    }
    if (!track) return new RunTrack(folder, view, opts);
    track.update(view, opts);
    return track;
  }

  private emit(change: UpdateOp[] | 'snapshot'): void {
    for (const l of this.listeners) l(change);
  }

  /**
   * The run list's states and `active` from the store's followed runs (no listing): true when an entry changed, so
   * the picker shows each run's state as the store knows it now, not as it was at the last listing.
   */
  private syncRunStates(): boolean {
    const followed = new Map(this.deps.store.snapshot().runs.map((r) => [`${r.folder}#${r.runId}`, r]));
    let changed = false;
    this.runList = this.runList.map((r) => {
      const f = followed.get(`${r.folder}#${r.runId}`);
      if (!f || (f.view.state === r.state && f.facts.active === r.active)) return r;
      changed = true;
      return { ...r, state: f.view.state, active: f.facts.active };
    });
    return changed;
  }

  private refreshRuns(): void {
    const followed = new Map(this.deps.store.snapshot().runs.map((r) => [`${r.folder}#${r.runId}`, r]));
    const list: RunChoice[] = [];
    for (const folder of this.deps.folders()) {
      let runs: ReturnType<ListRuns> = [];
      try {
        runs = this.deps.listRuns(folder);
      } catch (err) {
        this.deps.log.warn('dashboard', `could not list the runs of ${folder}: ${(err as Error).message}`);
      }
      for (const r of runs) {
        if (r.kind !== 'ralph') continue;
        const f = followed.get(`${folder}#${r.id}`);
        list.push({
          runId: r.id,
          folder,
          label: `${r.id}${r.currentItem ? ` · ${r.currentItem.id}` : ''}`,
          state: f ? f.view.state : r.state,
          active: f ? f.facts.active : r.active,
        });
      }
    }
    this.runList = list.slice(-200);
  }
}
