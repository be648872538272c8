import { watch, type FSWatcher } from 'chokidar';
import { EventEmitter } from 'node:events';
import * as path from 'node:path';
import {
  classifyWave,
  DEFAULT_WINDOWS,
  dispositionKey,
  nextTransitionAt,
  type OrphanWindows,
  type WaveView,
} from './classify';
import { locateWave, readWave } from './readWave';
import { loadWaveViews } from './summary';

/** Why the monitor re-evaluated. */
export type WaveMonitorReason = 'initial' | 'file' | 'timer' | 'refresh';

/** One evaluation of the monitored waves. */
export interface WaveMonitorUpdate {
  reason: WaveMonitorReason;
  /** The waves, newest first (one when the monitor follows a single wave). */
  views: WaveView[];
  /** Some subagent's disposition (or next step) differs from the previous evaluation's. */
  changed: boolean;
  /** Workspace-relative paths whose events led to this evaluation (reason `file`), at most 100. */
  paths: string[];
}

export interface WaveMonitorOptions {
  /** The workspace folder. */
  folder: string;
  /** Extra worktree roots, read and watched as well. */
  roots?: readonly string[];
  /** Follow this wave only; default every wave of `.ijfw/` (the newest first). */
  waveId?: string;
  windows?: OrphanWindows;
  /** The clock (ms since epoch); default `Date.now`. */
  clock?: () => number;
  /** Own a chokidar watcher over `<root>/.ijfw/` (default true). False: the owner calls {@link WaveMonitor.refresh} on file events. */
  watch?: boolean;
  /** Quiet period after a file event before re-evaluating, ms (default 50). */
  debounceMs?: number;
  usePolling?: boolean;
}

/** Longest timer Node accepts (ms). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The live part of wave recovery: watches `.ijfw/` and re-classifies the waves on every checkpoint,
 * events-log or STATE.md change, and — with no file event at all — when the next ACTIVE subagent crosses its orphan
 * window (a timer set to {@link nextTransitionAt}). Emits `update` after every evaluation and `change` when a
 * disposition changed. Reads only: it never writes a brief or a log, and never dispatches. `close()` ends the watcher
 * and the timers.
 */
export class WaveMonitor extends EventEmitter<{
  update: [WaveMonitorUpdate];
  change: [WaveMonitorUpdate];
  error: [Error];
}> {
  private watchers: FSWatcher[] = [];
  private debounce: NodeJS.Timeout | undefined;
  private ageTimer: NodeJS.Timeout | undefined;
  private pendingPaths = new Set<string>();
  private lastKey: string | undefined;
  private latest: WaveView[] = [];
  private closed = false;
  private readonly roots: string[];
  private readonly clock: () => number;

  constructor(private readonly o: WaveMonitorOptions) {
    super();
    this.roots = [o.folder, ...(o.roots ?? []).map((r) => path.resolve(o.folder, r)).filter((r) => r !== o.folder)];
    this.clock = o.clock ?? Date.now;
  }

  /** Evaluates once and starts watching; resolves when the watchers are ready. */
  async start(): Promise<void> {
    if (this.o.watch !== false) {
      for (const root of this.roots) {
        const w = watch(root, {
          ignoreInitial: true,
          usePolling: this.o.usePolling ?? false,
          // Watch the root pruned to `.ijfw/`: chokidar 4 reports entries of a watched folder created later.
          ignored: (p: string) => {
            const rel = path.relative(root, p).split(path.sep).join('/');
            return !(rel === '' || rel === '.ijfw' || rel.startsWith('.ijfw/'));
          },
        });
        w.on('all', (_e, file) => this.noteFile(root, file));
        w.on('error', (err) => this.emit('error', err instanceof Error ? err : new Error(String(err))));
        this.watchers.push(w);
      }
      await Promise.all(this.watchers.map((w) => new Promise<void>((resolve) => w.once('ready', () => resolve()))));
    }
    this.evaluate('initial', []);
  }

  /** The views of the last evaluation. */
  views(): WaveView[] {
    return this.latest;
  }

  /** Re-evaluates after the debounce period (an owner that watches files itself calls this on a `.ijfw/` change). */
  refresh(paths: readonly string[] = []): void {
    for (const p of paths) if (this.pendingPaths.size < 100) this.pendingPaths.add(p);
    this.schedule(paths.length ? 'file' : 'refresh');
  }

  private noteFile(root: string, file: string): void {
    const rel = path.relative(this.o.folder, file).split(path.sep).join('/') || path.relative(root, file);
    if (this.pendingPaths.size < 100) this.pendingPaths.add(rel);
    this.schedule('file');
  }

  private schedule(reason: WaveMonitorReason): void {
    if (this.closed) return;
    clearTimeout(this.debounce);
    this.debounce = setTimeout(() => {
      const paths = [...this.pendingPaths];
      this.pendingPaths.clear();
      this.evaluate(reason, paths);
    }, this.o.debounceMs ?? 50);
  }

  private evaluate(reason: WaveMonitorReason, paths: string[]): void {
    if (this.closed) return;
    clearTimeout(this.ageTimer);
    try {
      const now = this.clock();
      const windows = this.o.windows ?? DEFAULT_WINDOWS;
      let views: WaveView[];
      if (this.o.waveId !== undefined) {
        const id = locateWave(this.roots, this.o.waveId);
        views = id ? [classifyWave(readWave(this.roots, id), now, windows)] : [];
      } else {
        views = loadWaveViews(this.o.folder, { roots: this.roots.slice(1), now, windows });
      }
      this.latest = views;
      const key = views.map((v) => `${v.waveId}\n${dispositionKey(v)}`).join('\n\n');
      const changed = this.lastKey !== undefined && key !== this.lastKey;
      this.lastKey = key;
      const update: WaveMonitorUpdate = { reason, views, changed, paths };
      this.emit('update', update);
      if (changed) this.emit('change', update);
      let next: number | undefined;
      for (const v of views) {
        const t = nextTransitionAt(v);
        if (t !== undefined && (next === undefined || t < next)) next = t;
      }
      if (next !== undefined && !this.closed) {
        this.ageTimer = setTimeout(
          () => this.evaluate('timer', []),
          Math.min(MAX_TIMER_MS, Math.max(0, next - this.clock())),
        );
      }
    } catch (err) {
      this.emit('error', err instanceof Error ? err : new Error(String(err)));
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.debounce);
    clearTimeout(this.ageTimer);
    await Promise.all(this.watchers.map((w) => w.close()));
    this.watchers = [];
  }
}
