import { existsSync } from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { WorkspaceChange } from '../core/watch/workspaceWatcher';
import type { OrphanWindows } from '../core/waves/classify';
import type { WaveMonitor } from '../core/waves/monitor';
import type { WaveJson } from '../core/waves/summary';
import { Disposable } from './lifecycle';
import type { Logger } from './logger';
import { readSettingsLayer } from './settings';

/** What the Plan tree shows on a folder's waves row: one line per wave (newest first) and the orphan count. */
export interface WaveRowSummary {
  /** `W12-A0 [in_progress]: 1 orphan (1 resumable), 2 active, 3 done` for the newest wave. */
  newest: string;
  /** Every wave's line. */
  lines: string[];
  orphans: number;
}

/**
 * One core {@link WaveMonitor} per file workspace folder that has `.ijfw/`: it re-classifies the waves on
 * `.ijfw/` changes (fed by the folder's one {@link WorkspaceWatcher}, ARCHITECTURE.md "one chokidar watcher per
 * workspace folder") and, with no file event, when a subagent crosses its orphan window. Fires `onDidChange` when a
 * disposition changed, so the Plan tree refreshes live. The core modules are loaded on first use (activation cost).
 * Reads only: it writes no brief or log and never dispatches.
 */
export class WaveMonitors extends Disposable {
  private readonly monitors = new Map<string, Promise<WaveMonitor | undefined>>();
  private readonly summaries = new Map<string, WaveRowSummary>();
  private readonly json = new Map<string, WaveJson[]>();
  private readonly tokens = new Map<string, symbol>();
  /** When each folder's waves were last evaluated (ms since epoch, the monitors' clock): ages grow from there. */
  private readonly evaluatedAt = new Map<string, number>();
  /** The aged copy {@link waves} last gave, per folder, and for which moment (one copy per moment, not per call). */
  private readonly aged = new Map<string, { at: number; waves: WaveJson[] }>();
  private agingTimer: ReturnType<typeof setInterval> | undefined;
  private readonly changed = this._register(new vscode.EventEmitter<string>());
  /** Fires with the folder whose waves changed disposition (and once after a folder's first evaluation). */
  readonly onDidChange = this.changed.event;

  constructor(
    private readonly log: Logger,
    /**
     * `windows`: the orphan windows instead of the configured ones; `clock`: ms since epoch (default `Date.now`);
     * `agingMs`: how often the rows that show an age ("2m ago") are redrawn while any does (default 30 s).
     */
    private readonly o: { windows?: OrphanWindows; clock?: () => number; agingMs?: number } = {},
  ) {
    super();
    this.sync();
    this._register(vscode.workspace.onDidChangeWorkspaceFolders(() => this.sync()));
    this._register({ dispose: () => this.closeAll() });
  }

  /**
   * The folder's waves as JSON (newest first; subagents with disposition, ages, next step, checkpoint path, worktree),
   * from the last evaluation with the ages grown to now (a subagent's "2m ago" keeps ageing between evaluations): what
   * the tree's wave → subagent children show. Empty before the first evaluation.
   */
  waves(folder: string): WaveJson[] {
    const waves = this.json.get(folder) ?? [];
    const at = this.evaluatedAt.get(folder);
    const now = (this.o.clock ?? Date.now)();
    if (at === undefined || now <= at) return waves;
    const memo = this.aged.get(folder);
    if (memo?.at === now) return memo.waves;
    const out = agedWaves(waves, now - at);
    this.aged.set(folder, { at: now, waves: out });
    return out;
  }

  /** The summary of a folder's waves, or `undefined` before its monitor's first evaluation. */
  summary(folder: string): WaveRowSummary | undefined {
    return this.summaries.get(folder);
  }

  /** Feeds a workspace watcher's change: a `.ijfw/` path re-evaluates (and may start) the folder's monitor. */
  onWorkspaceChange(c: WorkspaceChange): void {
    if (!c.kinds.includes('waves')) return;
    const m = this.monitors.get(c.folder) ?? this.start(c.folder);
    void m.then((mon) => mon?.refresh(c.paths.filter((p) => p.startsWith('.ijfw/'))));
  }

  /** Resolves once every folder's monitor has evaluated once (tests, and the first tree render). */
  async ready(): Promise<void> {
    await Promise.all(this.monitors.values());
  }

  private sync(): void {
    const wanted = new Set(
      (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file').map((f) => f.uri.fsPath),
    );
    for (const [folder, m] of this.monitors) {
      if (wanted.has(folder)) continue;
      void m.then((mon) => mon?.close());
      this.monitors.delete(folder);
      this.tokens.delete(folder);
      this.summaries.delete(folder);
      this.json.delete(folder);
      this.evaluatedAt.delete(folder);
      this.aged.delete(folder);
    }
    for (const folder of wanted)
      if (!this.monitors.has(folder) && existsSync(path.join(folder, '.ijfw'))) this.start(folder);
  }

  private start(folder: string): Promise<WaveMonitor | undefined> {
    const token = Symbol(folder);
    this.tokens.set(folder, token);
    const p = (async () => {
      const [{ WaveMonitor }, { waveJson, formatWaveLine }, { DEFAULT_WINDOWS }] = await Promise.all([
        import('../core/waves/monitor'),
        import('../core/waves/summary'),
        import('../core/waves/classify'),
      ]);
      const windows = this.o.windows ?? (await this.configuredWindows(folder, DEFAULT_WINDOWS));
      // The folder was removed (or re-added) while the modules loaded: this start is void.
      if (this.isDisposed || this.tokens.get(folder) !== token) return undefined;
      const mon = new WaveMonitor({ folder, watch: false, windows, ...(this.o.clock ? { clock: this.o.clock } : {}) });
      mon.on('update', (u) => {
        const waves = u.views.map((v) => waveJson(v, folder));
        this.json.set(folder, waves);
        this.evaluatedAt.set(folder, u.views[0]?.now ?? (this.o.clock ?? Date.now)());
        this.aged.delete(folder);
        this.ageRows();
        const lines = waves.map((w) => formatWaveLine(w));
        this.summaries.set(folder, {
          newest: lines[0] ?? 'no waves',
          lines,
          orphans: waves.reduce((n, w) => n + w.counts.orphans, 0),
        });
      });
      mon.on('change', (u) => {
        this.log.info(
          'waves',
          `${folder}: ${u.reason === 'timer' ? 'a subagent crossed its orphan window' : 'checkpoints changed'}: ${this.summaries.get(folder)?.newest ?? ''}`,
        );
        this.changed.fire(folder);
      });
      mon.on('error', (err) => this.log.warn('waves', `${folder}: ${err.message}`));
      await mon.start();
      // The tree may have drawn the row before this first evaluation: let it redraw with the summary.
      if (this.tokens.get(folder) === token) this.changed.fire(folder);
      return mon;
    })().catch((err: Error) => {
      this.log.warn('waves', `${folder}: ${err.message}`);
      return undefined;
    });
    this.monitors.set(folder, p);
    return p;
  }

  /** `ralph.waves` / `waves` of `.ralph/config.json` over IJFW's windows; a config that does not parse gives the defaults. */
  private async configuredWindows(folder: string, dflt: OrphanWindows): Promise<OrphanWindows> {
    try {
      const [{ loadConfig }, { configKeys }] = await Promise.all([
        import('../core/store/loadConfig'),
        import('../core/model/config'),
      ]);
      const w = (
        await loadConfig(folder, {
          settings: readSettingsLayer(configKeys, vscode.Uri.file(folder)),
          trusted: vscode.workspace.isTrusted,
        })
      ).waves;
      return {
        orphanAfterMs: w.orphanAfterMs ?? dflt.orphanAfterMs,
        inactiveAfterMs: w.inactiveAfterMs ?? dflt.inactiveAfterMs,
      };
    } catch (err) {
      this.log.warn('waves', `${folder}: ${(err as Error).message}; using the default orphan windows`);
      return dflt;
    }
  }

  /**
   * Keeps a timer while any folder has a subagent with an age to show, and on each tick redraws those folders' rows
   * (`onDidChange`): the ages are grown by {@link waves}, not re-read. No timer while no age is shown.
   */
  private ageRows(): void {
    const showing = () =>
      [...this.json].filter(([, ws]) => ws.some((w) => w.subagents.some((s) => s.last_activity_age_ms !== null)));
    if (!showing().length) {
      if (this.agingTimer) clearInterval(this.agingTimer);
      this.agingTimer = undefined;
      return;
    }
    if (this.agingTimer) return;
    this.agingTimer = setInterval(() => {
      const folders = showing();
      if (!folders.length) return this.ageRows();
      for (const [folder] of folders) this.changed.fire(folder);
    }, this.o.agingMs ?? 30_000);
    this.agingTimer.unref?.();
  }

  private closeAll(): void {
    if (this.agingTimer) clearInterval(this.agingTimer);
    this.agingTimer = undefined;
    for (const m of this.monitors.values()) void m.then((mon) => mon?.close());
    this.monitors.clear();
    this.tokens.clear();
  }
}

/** `waves` with every subagent's ages `ms` older (an orphan transition `ms` nearer, not below 0). Pure. */
export function agedWaves(waves: readonly WaveJson[], ms: number): WaveJson[] {
  return waves.map((w) => ({
    ...w,
    subagents: w.subagents.map((s) => {
      const a = { ...s };
      if (a.checkpoint_age_ms !== null) a.checkpoint_age_ms += ms;
      if (a.last_activity_age_ms !== null) a.last_activity_age_ms += ms;
      if (a.orphan_in_ms !== undefined) a.orphan_in_ms = Math.max(0, a.orphan_in_ms - ms);
      return a;
    }),
  }));
}
