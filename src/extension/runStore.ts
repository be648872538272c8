import * as vscode from 'vscode';
import type { RunInfo } from '../core/control/runs';
import type { PlanSnapshot } from '../core/model/plan';
import type { WorkspaceChange } from '../core/watch/workspaceWatcher';
import { ContextKeys, ManagedContextKeys, type ContextKey, type ContextValues } from './contextKeys';
import type { GaugeRun } from './gauge/gaugeText';
import { Disposable } from './lifecycle';
import type { RunFacts, RunUpdate, RunView } from './runFollowing';
import { Throttle, systemClock, type ThrottleClock } from './throttle';

/**
 * # RunStore: the one picture of Ralph that every VS Code view reads
 *
 * Holds, per workspace folder, the latest **plan snapshot** (the core's plan graph) and, per followed run, the
 * core's **`RunView`** (a pure reduction of the run's log). It follows every run of the workspace whoever started it:
 * this window (**Ralph: Start**), `ralph run` in a terminal, a bot, flow-next's own driver; runs are found through the
 * files (the workspace watcher's changes under `.ralph/` and `scripts/ralph/`), never through the process that started
 * them. It sets the context keys that enable the commands ({@link contextValuesOf}).
 *
 * ## API for views (the tree, the status bar gauge, the dashboard)
 *
 * - {@link RunStore.snapshot}: the current {@link StoreSnapshot} (plain data; do not mutate). `version` grows with
 *   every change.
 * - {@link RunStore.onDidChange}: fires a {@link StoreChange} after the snapshot changed. Run updates (tokens, state)
 *   are coalesced to at most 4 events a second; structural changes (a run found or ended, a plan loaded, Start
 *   pressed) fire at once. Read `snapshot()` in the listener; the change tells what to refresh.
 * - {@link RunStore.gaugeRun}: the run the status bar shows (the active one, else the latest).
 * - {@link RunStore.onQuestion}: a run began waiting for an answer to a question (fires once per question).
 *
 * The store owns its timers, followers and emitters; `dispose` releases them all.
 */
export interface StoreSnapshot {
  /** Grows by one with every change. */
  version: number;
  /** One entry per file workspace folder, in workspace order. */
  folders: FolderState[];
  /** Every followed run of every folder: active runs, and each folder's latest finished run. Newest first. */
  runs: StoreRun[];
}

/** What the store knows of one workspace folder. */
export interface FolderState {
  /** Absolute path. */
  folder: string;
  name: string;
  /** The plan graph as last read; undefined until the first read finished. */
  plan: PlanSnapshot | undefined;
  /** A Start was given in this window and its run has not shown up in the files yet (the gauge spins at once). */
  starting: boolean;
}

/** One followed run. */
export interface StoreRun {
  /** `<folder>#<runId>`: unique across folders. */
  key: string;
  folder: string;
  folderName: string;
  runId: string;
  kind: RunInfo['kind'];
  /** Started by this window's engine (Ralph: Cancel can end it at once). */
  startedHere: boolean;
  /** The core's reduction of the run's log. */
  view: RunView;
  /** Facts the commands and the notifications depend on (from the view). */
  facts: RunFacts;
  /** What the status bar gauge shows of it. */
  gauge: GaugeRun;
  /** When the store first saw it (ms since the epoch): orders runs that report no start time. */
  seenAt: number;
}

/** What changed; read `snapshot()` for the new state. */
export type StoreChange =
  | { kind: 'plan'; folder: string }
  | { kind: 'runs'; folder: string }
  | { kind: 'run'; keys: string[] }
  | { kind: 'folders' };

/** A question a run waits on, with where it came from. */
export interface StoreQuestion {
  run: StoreRun;
  id: string;
  text: string;
  itemId: string | null;
}

/** The parts of core and VS Code the store uses; injected so unit tests drive it with fakes. */
export interface RunStoreDeps {
  /** The file workspace folders now. */
  folders(): { folder: string; name: string }[];
  /** Every run of a folder as its files say (core `listRuns`). */
  listRuns(folder: string): RunInfo[];
  /** Follows one run (core `RunFollower` + `RunView` reducer); calls `onUpdate` with every new view. */
  follow(folder: string, run: RunInfo, onUpdate: (u: RunUpdate) => void): { dispose(): void };
  /** Reads a folder's plan graph without blocking the extension host (the plan worker). */
  loadPlan(folder: string): Promise<PlanSnapshot>;
  /** The view of a run before its log was read (from its run record or progress.txt). */
  initial(folder: string, run: RunInfo): RunUpdate;
  /** Sets a context key (`setContext`). */
  setContext(key: ContextKey, value: boolean): unknown;
  /** Where the store reports what happens (the "Ralph" log). */
  log: { info(component: string, msg: string): void; warn(component: string, msg: string): void };
  clock?: ThrottleClock;
  /** ms since the epoch (tests pin it). */
  now?: () => number;
}

/** Milliseconds between two coalesced run-update events: at most 4 a second (vscode-conventions.md §2.3). */
export const RUN_UPDATE_INTERVAL_MS = 250;

/**
 * The context keys from a snapshot: any active run (whoever started it), paused, waiting for an answer, deferred,
 * one of this window's, any run known. Pure: the table test in runStore.test.ts is the specification.
 */
export function contextValuesOf(s: StoreSnapshot): ContextValues {
  const active = s.runs.filter((r) => r.facts.active);
  const starting = s.folders.some((f) => f.starting);
  return {
    [ContextKeys.running]: starting || active.length > 0,
    [ContextKeys.paused]: active.some((r) => r.facts.paused),
    [ContextKeys.waiting]: active.some((r) => r.facts.questions.length > 0),
    [ContextKeys.deferred]: active.some((r) => r.facts.deferred),
    [ContextKeys.runningHere]: starting || active.some((r) => r.startedHere),
    [ContextKeys.hasRuns]: s.runs.length > 0,
  };
}

/** The run the gauge shows: a starting or active run (the most recently started), else the latest finished one. */
export function pickGaugeRun(s: StoreSnapshot): StoreRun | undefined {
  const active = s.runs.filter((r) => r.facts.active);
  return active[0] ?? s.runs[0];
}

/** One line for the log when a folder's plan changed: roots, items and done items. */
export function planSummary(p: PlanSnapshot): string {
  const done = p.items.filter((i) => i.status === 'done').length;
  return `${p.roots.length} root(s), ${p.items.length} item(s), ${done} done${p.problems.length ? `, ${p.problems.length} problem(s)` : ''}`;
}

interface FollowEntry {
  /** The run as last listed (sentinels included). */
  info: RunInfo;
  update: RunUpdate;
  run: StoreRun;
  follower: { dispose(): void };
}

interface FolderEntry {
  state: FolderState;
  planSummary?: string;
  planDirty: boolean;
  /** The read under way (it goes on while `planDirty`). */
  planLoading: Promise<void> | undefined;
  /** runId → follower and current entry. */
  runs: Map<string, FollowEntry>;
  startingSince?: number;
}

/** Workspace-relative paths whose change can change the run listing (`listRuns`). */
export const RUN_LISTING_PATH =
  /^(?:(?:\.ralph|scripts\/ralph)\/runs(?:\/[^/]+(?:\/(?:run\.json|progress\.txt|PAUSE|STOP))?)?|scripts\/ralph\/(?:PAUSE|STOP)|\.ralph\/stop-requested)$/;

/** How long a "starting" mark stays without its run showing up in the files (ms); Start failing clears it earlier. */
export const STARTING_TIMEOUT_MS = 60_000;

export class RunStore extends Disposable {
  private readonly changed = this._register(new vscode.EventEmitter<StoreChange>());
  /** Fires after the snapshot changed; see the module doc. */
  readonly onDidChange = this.changed.event;
  private readonly questions = this._register(new vscode.EventEmitter<StoreQuestion>());
  /** Fires once per question a run begins waiting on. */
  readonly onQuestion = this.questions.event;

  private readonly folders = new Map<string, FolderEntry>();
  private readonly startedHere = new Set<string>();
  private readonly askedQuestions = new Set<string>();
  private readonly dirtyRuns = new Set<string>();
  private readonly runThrottle: Throttle;
  private version = 0;
  private cached: StoreSnapshot | undefined;
  private readonly now: () => number;
  private readonly keys: ManagedContextKeys;

  constructor(private readonly deps: RunStoreDeps) {
    super();
    this.now = deps.now ?? Date.now;
    this.keys = new ManagedContextKeys(deps.setContext);
    this.runThrottle = this._register(
      new Throttle(() => this.fireRunUpdates(), RUN_UPDATE_INTERVAL_MS, deps.clock ?? systemClock),
    );
    this._register({
      dispose: () => {
        for (const f of this.folders.values()) for (const r of f.runs.values()) r.follower.dispose();
        this.folders.clear();
      },
    });
  }

  /** Starts following: reads the folders, their runs and plans. Called once the core modules are loaded. */
  start(): void {
    this.syncFolders();
  }

  /** The current picture (cached until the next change). */
  snapshot(): StoreSnapshot {
    if (this.cached) return this.cached;
    const folders = [...this.folders.values()].map((f) => ({ ...f.state }));
    const runs = [...this.folders.values()].flatMap((f) => [...f.runs.values()].map((r) => r.run)).sort(newestFirst);
    this.cached = { version: this.version, folders, runs };
    return this.cached;
  }

  /** The value last set for a context key (integration tests read it: VS Code has no API to read a context key). */
  contextKey(key: ContextKey): boolean | undefined {
    return this.keys.get(key);
  }

  /** The run the status bar gauge shows, if any. */
  gaugeRun(): StoreRun | undefined {
    return pickGaugeRun(this.snapshot());
  }

  /** The folders changed (workspace folders added or removed): follow the new ones, drop the old ones. */
  syncFolders(): void {
    const wanted = new Map(this.deps.folders().map((f) => [f.folder, f.name]));
    let changed = false;
    for (const [folder, entry] of this.folders) {
      if (wanted.has(folder)) continue;
      for (const r of entry.runs.values()) r.follower.dispose();
      this.folders.delete(folder);
      changed = true;
    }
    for (const [folder, name] of wanted) {
      if (this.folders.has(folder)) continue;
      this.folders.set(folder, {
        state: { folder, name, plan: undefined, starting: false },
        planDirty: true,
        planLoading: undefined,
        runs: new Map(),
      });
      changed = true;
      this.refreshRuns(folder);
      void this.reloadPlan(folder);
    }
    if (changed) this.emit({ kind: 'folders' });
  }

  /** A batch of file changes from the workspace watcher: re-list runs and/or re-read the plan, as the kinds say. */
  noteChange(c: WorkspaceChange): void {
    if (!this.folders.has(c.folder)) return;
    // Re-list on what changes a listing (a run folder, run.json, progress.txt, a sentinel), not on every log line
    // (followers read the logs). A truncated path list (100) may hide one: re-list then too.
    if (c.paths.length >= 100 || c.paths.some((p) => RUN_LISTING_PATH.test(p))) this.refreshRuns(c.folder);
    if (c.kinds.some((k) => k === 'flow-next' || k === 'quantum' || k === 'checklist')) void this.reloadPlan(c.folder);
  }

  /**
   * **Ralph: Start** was given for `folder`: the gauge spins and the keys say "running" at once, before the engine has
   * written anything. Cleared when the run shows up in the files, by {@link startFailed}, or after
   * {@link STARTING_TIMEOUT_MS}.
   */
  markStarting(folder: string): void {
    const f = this.folders.get(folder);
    if (!f || f.state.starting) return;
    f.state.starting = true;
    f.startingSince = this.now();
    this.emit({ kind: 'runs', folder });
  }

  /** Start did not start a run (the user backed out, or it was refused). */
  startFailed(folder: string): void {
    const f = this.folders.get(folder);
    if (!f?.state.starting) return;
    f.state.starting = false;
    this.emit({ kind: 'runs', folder });
  }

  /** This window's engine started `runId` in `folder`: follow it now (no need to wait for the watcher). */
  noteStartedHere(folder: string, runId: string): void {
    this.startedHere.add(`${folder}#${runId}`);
    const f = this.folders.get(folder);
    const cur = f?.runs.get(runId);
    if (f && cur) this.updated(f, cur);
    this.refreshRuns(folder);
  }

  /** Re-lists the runs of `folder`: follows new active runs and the latest finished one, drops the rest. */
  refreshRuns(folder: string): void {
    const f = this.folders.get(folder);
    if (!f || this.isDisposed) return;
    let infos: RunInfo[];
    try {
      infos = this.deps.listRuns(folder);
    } catch (err) {
      this.deps.log.warn('runs', `${folder}: ${(err as Error).message}`);
      return;
    }
    // Active runs, plus the newest finished one (the gauge keeps the latest figures while any record exists).
    const byStart = [...infos].sort((a, b) => (b.startedAt ?? b.id).localeCompare(a.startedAt ?? a.id));
    const keep = new Map<string, RunInfo>();
    for (const r of byStart) if (r.active) keep.set(r.id, r);
    const latestFinished = byStart.find((r) => !r.active);
    if (latestFinished && (keep.size === 0 || byStart[0] === latestFinished))
      keep.set(latestFinished.id, latestFinished);
    // A run followed while active stays followed until it is superseded, so its end is seen.
    for (const [id, entry] of f.runs)
      if (!keep.has(id) && entry.run.facts.active && infos.some((i) => i.id === id))
        keep.set(
          id,
          infos.find((i) => i.id === id)!,
        );
    let changed = false;
    for (const [id, entry] of f.runs) {
      if (keep.has(id)) continue;
      entry.follower.dispose();
      f.runs.delete(id);
      changed = true;
    }
    for (const [id, info] of keep) {
      const cur = f.runs.get(id);
      if (!cur) {
        this.follow(f, info);
        changed = true;
      } else if (cur.info.paused !== info.paused || cur.info.stopped !== info.stopped) {
        cur.info = info;
        this.updated(f, cur);
      } else {
        cur.info = info;
      }
    }
    if (
      f.state.starting &&
      (infos.some((i) => i.active && this.startedHere.has(`${folder}#${i.id}`)) ||
        this.now() - (f.startingSince ?? 0) > STARTING_TIMEOUT_MS)
    ) {
      f.state.starting = false;
      changed = true;
    }
    if (changed) this.emit({ kind: 'runs', folder });
  }

  private follow(f: FolderEntry, info: RunInfo): void {
    const folder = f.state.folder;
    const entry: FollowEntry = {
      info,
      update: this.deps.initial(folder, info),
      run: undefined as unknown as StoreRun,
      follower: { dispose: (): void => undefined },
    };
    entry.run = this.make(f, entry, this.now());
    f.runs.set(info.id, entry);
    this.noteQuestions(entry.run);
    entry.follower = this.deps.follow(folder, info, (u) => {
      if (this.isDisposed || f.runs.get(info.id) !== entry) return;
      entry.update = u;
      this.updated(f, entry);
    });
  }

  /** The store's entry of a run from its latest update and listing (a PAUSE or STOP sentinel the log has not shown yet counts). */
  private make(f: FolderEntry, e: FollowEntry, seenAt: number): StoreRun {
    const key = `${f.state.folder}#${e.info.id}`;
    const facts = e.update.facts.active
      ? { ...e.update.facts, paused: e.update.facts.paused || e.info.paused }
      : e.update.facts;
    return {
      key,
      folder: f.state.folder,
      folderName: f.state.name,
      runId: e.info.id,
      kind: e.info.kind,
      startedHere: this.startedHere.has(key),
      view: e.update.view,
      facts,
      gauge: e.update.gauge(f.state.name),
      seenAt,
    };
  }

  private updated(f: FolderEntry, entry: FollowEntry): void {
    const prev = entry.run;
    entry.run = this.make(f, entry, prev.seenAt);
    this.noteQuestions(entry.run);
    // Structural facts (active, paused, waiting…) show at once; figures are coalesced (at most 4 events a second).
    if (sameFacts(prev.facts, entry.run.facts) && prev.startedHere === entry.run.startedHere)
      this.queueRunUpdate(entry.run.key);
    else {
      this.dirtyRuns.delete(entry.run.key);
      this.emit({ kind: 'run', keys: [entry.run.key] });
    }
  }

  private noteQuestions(run: StoreRun): void {
    for (const q of run.facts.questions) {
      const id = `${run.key}#${q.id}`;
      if (this.askedQuestions.has(id)) continue;
      this.askedQuestions.add(id);
      this.questions.fire({ run, id: q.id, text: q.text, itemId: q.itemId });
    }
  }

  /**
   * Re-reads the plan of `folder` (off the main thread); logs the plan only when its summary changed. One read at a
   * time per folder: a request during a read makes exactly one more read after it. Resolves when a read that began
   * after this request has finished.
   */
  reloadPlan(folder: string): Promise<void> {
    const f = this.folders.get(folder);
    if (!f) return Promise.resolve();
    f.planDirty = true;
    f.planLoading ??= this.readPlans(f).finally(() => {
      f.planLoading = undefined;
    });
    return f.planLoading;
  }

  private async readPlans(f: FolderEntry): Promise<void> {
    const folder = f.state.folder;
    try {
      while (f.planDirty && !this.isDisposed) {
        f.planDirty = false;
        const plan = await this.deps.loadPlan(folder);
        if (this.isDisposed || this.folders.get(folder) !== f) return;
        f.state.plan = plan;
        const summary = planSummary(plan);
        if (summary !== f.planSummary) this.deps.log.info('plan', `${f.state.name}: ${summary}`);
        f.planSummary = summary;
        this.emit({ kind: 'plan', folder });
      }
    } catch (err) {
      if (!this.isDisposed) this.deps.log.warn('plan', `${folder}: ${(err as Error).message}`);
    }
  }

  private queueRunUpdate(key: string): void {
    this.cached = undefined;
    this.dirtyRuns.add(key);
    this.runThrottle.request();
  }

  private fireRunUpdates(): void {
    if (!this.dirtyRuns.size) return;
    const keys = [...this.dirtyRuns];
    this.dirtyRuns.clear();
    this.emit({ kind: 'run', keys });
  }

  private emit(change: StoreChange): void {
    if (this.isDisposed) return;
    this.version++;
    this.cached = undefined;
    this.keys.update(contextValuesOf(this.snapshot()));
    this.changed.fire(change);
  }
}

function sameFacts(a: RunFacts, b: RunFacts): boolean {
  return (
    a.active === b.active &&
    a.paused === b.paused &&
    a.deferred === b.deferred &&
    a.state === b.state &&
    a.questions.length === b.questions.length
  );
}

function newestFirst(a: StoreRun, b: StoreRun): number {
  const sa = a.facts.startedAt ?? '';
  const sb = b.facts.startedAt ?? '';
  if (sa !== sb) return sb.localeCompare(sa);
  return b.seenAt - a.seenAt;
}
