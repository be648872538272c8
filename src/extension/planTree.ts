import * as vscode from 'vscode';
import { detectSources, formatCount, type DetectedSource, type SourceKind } from '../core/sources/detect';
import { Disposable } from './lifecycle';
import type { Logger } from './logger';

/** A root node of the Ralph tree: one detected source of one workspace folder. */
export interface SourceNode {
  type: 'source';
  folder: vscode.WorkspaceFolder;
  source: DetectedSource;
}
export type PlanNode = SourceNode;

const ICONS: Record<SourceKind, string> = { 'flow-next': 'list-tree', quantum: 'type-hierarchy', checklist: 'checklist', waves: 'pulse', ralph: 'history' };

/**
 * The `ralph.plan` tree: detected sources as root nodes with cheap counts. Domain facts come from
 * core (`detectSources`); this class only maps them to tree items. Sets the `ralph.hasSources` context key
 * that `viewsWelcome` reads.
 */
export class PlanTreeProvider extends Disposable implements vscode.TreeDataProvider<PlanNode> {
  private readonly changed = this._register(new vscode.EventEmitter<PlanNode | undefined>());
  readonly onDidChangeTreeData = this.changed.event;
  private roots: Promise<PlanNode[]> | undefined;
  /** The last summary logged: the log says when the sources change, not every time the tree re-reads them. */
  private lastLogged: string | undefined;

  constructor(private readonly log: Logger) {
    super();
  }

  refresh(): void {
    this.roots = undefined;
    this.changed.fire(undefined);
  }

  getTreeItem(node: PlanNode): vscode.TreeItem {
    const s = node.source;
    const item = new vscode.TreeItem(s.label, vscode.TreeItemCollapsibleState.None);
    item.id = `${node.folder.uri.toString()}#${s.kind}:${s.path}`;
    item.iconPath = new vscode.ThemeIcon(ICONS[s.kind]);
    if (s.count) item.description = formatCount(s.count);
    item.tooltip = new vscode.MarkdownString(`**${s.kind}** \`${s.path}\`${multiRoot() ? ` in ${node.folder.name}` : ''}`);
    item.contextValue = `source ${s.kind}`;
    item.resourceUri = vscode.Uri.joinPath(node.folder.uri, s.path);
    return item;
  }

  getChildren(node?: PlanNode): Promise<PlanNode[]> {
    if (node) return Promise.resolve([]);
    this.roots ??= this.loadRoots();
    return this.roots;
  }

  private async loadRoots(): Promise<PlanNode[]> {
    const folders = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file');
    const perFolder = await Promise.all(folders.map(async (folder) => {
      const report = await detectSources(folder.uri.fsPath);
      for (const p of report.problems) this.log.warn('plan', `${p.file}:${p.line}:${p.column}: ${p.message}`);
      return report.sources.map((source): PlanNode => ({ type: 'source', folder, source }));
    }));
    const roots = perFolder.flat();
    void vscode.commands.executeCommand('setContext', 'ralph.hasSources', roots.length > 0);
    const summary = `${roots.length} source(s) in ${folders.length} folder(s)`;
    if (summary !== this.lastLogged) this.log.info('plan', summary);
    else this.log.trace('plan', summary);
    this.lastLogged = summary;
    return roots;
  }
}

function multiRoot(): boolean {
  return (vscode.workspace.workspaceFolders?.length ?? 0) > 1;
}
