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
  private readonly changed = this._register(new vscode.EventEmitter<string>());
  /** Fires with the folder whose waves changed disposition (and once after a folder's first evaluation). */
  readonly onDidChange = this.changed.event;

  constructor(
    private readonly log: Logger,
    /** `windows`: the orphan windows instead of the configured ones; `clock`: ms since epoch (default `Date.now`). */
    private readonly o: { windows?: OrphanWindows; clock?: () => number } = {},
  ) {
    super();
    this.sync();
    this._register(vscode.workspace.onDidChangeWorkspaceFolders(() => this.sync()));
    this._register({ dispose: () => this.closeAll() });
  }

  /**
   * The folder's waves as JSON (newest first; subagents with disposition, ages, next step, checkpoint path, worktree),
   * from the last evaluation: what the tree's wave → subagent children show. Empty before the first evaluation.
   */
  waves(folder: string): WaveJson[] {
    return this.json.get(folder) ?? [];
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

  private closeAll(): void {
    for (const m of this.monitors.values()) void m.then((mon) => mon?.close());
    this.monitors.clear();
    this.tokens.clear();
  }
}
