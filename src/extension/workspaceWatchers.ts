import * as vscode from 'vscode';
import { WorkspaceWatcher, type WorkspaceChange } from '../core/watch/workspaceWatcher';
import { Disposable } from './lifecycle';
import type { Logger } from './logger';

/**
 * One core {@link WorkspaceWatcher} per file workspace folder, kept in step with the folders; forwards every
 * change to `onChange`. All watchers close on dispose.
 */
export class WorkspaceWatchers extends Disposable {
  private readonly watchers = new Map<string, WorkspaceWatcher>();

  constructor(
    private readonly log: Logger,
    private readonly onChange: (c: WorkspaceChange) => void,
  ) {
    super();
    this.sync();
    this._register(vscode.workspace.onDidChangeWorkspaceFolders(() => this.sync()));
    this._register({ dispose: () => this.closeAll() });
  }

  private sync(): void {
    const wanted = new Set(
      (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file').map((f) => f.uri.fsPath),
    );
    for (const [folder, w] of this.watchers) {
      if (!wanted.has(folder)) {
        void w.close();
        this.watchers.delete(folder);
      }
    }
    for (const folder of wanted) {
      if (this.watchers.has(folder)) continue;
      const w = new WorkspaceWatcher(folder);
      w.on('change', (c) => {
        this.log.debug('watch', `${c.kinds.join(',')}: ${c.paths.slice(0, 5).join(', ')}`);
        this.onChange(c);
      });
      w.on('error', (err) => this.log.warn('watch', `${folder}: ${err.message}`));
      this.watchers.set(folder, w);
    }
  }

  private closeAll(): void {
    for (const w of this.watchers.values()) void w.close();
    this.watchers.clear();
  }
}
