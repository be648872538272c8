import { MAX_LINE_CHARS, visibleText } from '../protocol/visibleText';
import * as vscode from 'vscode';
import type { WaveJson } from '../core/model/waves';
import { Disposable } from './lifecycle';
import type { Logger } from './logger';
import {
  buildTreeModel,
  diffTreeModels,
  tooltipOf,
  type RowStatus,
  type TreeModel,
  type TreeRow,
} from './planTreeModel';
import type { StoreChange, StoreSnapshot } from './runStore';

/** A node of the Ralph tree: one object per row id for the tree's life (VS Code finds a fired element by identity). */
export interface PlanNode {
  readonly id: string;
}

/** What the tree reads: the run store and the live waves (injected so unit tests drive it with fakes). */
export interface PlanTreeDeps {
  snapshot(): StoreSnapshot;
  onDidChange(listener: (c: StoreChange) => unknown): { dispose(): unknown };
  /** Live waves of a folder (`WaveMonitors.waves`); empty before the first evaluation. */
  waves?(folder: string): WaveJson[];
  onWavesChange?(listener: (folder: string) => unknown): { dispose(): unknown };
}

/** How long the tree's top level waits for the first plan reads (ms) before showing what it has. */
export const FIRST_READ_WAIT_MS = 5000;

/** Icon and theme colour per status (vscode-conventions.md: theme colours, `~spin` for work under way). */
const ICON: Record<RowStatus, [string, string | undefined]> = {
  todo: ['circle-large-outline', undefined],
  in_progress: ['sync~spin', 'charts.blue'],
  done: ['pass-filled', 'testing.iconPassed'],
  blocked: ['circle-slash', 'charts.red'],
  failed: ['error', 'testing.iconFailed'],
  unknown: ['question', 'charts.yellow'],
  stale: ['history', 'charts.yellow'],
  waiting: ['comment-discussion', 'charts.orange'],
  open: ['circle-large-outline', undefined],
  partial: ['pie-chart', 'charts.blue'],
  active: ['sync~spin', 'charts.blue'],
  pending: ['clock', undefined],
  orphan: ['debug-disconnect', 'charts.orange'],
  none: ['', undefined],
};
const SOURCE_ICON: Record<string, string> = {
  'flow-next': 'list-tree',
  quantum: 'type-hierarchy',
  checklist: 'checklist',
  waves: 'pulse',
  runs: 'history',
};

/**
 * The `ralph.plan` tree: epics → tasks, the quantum project → stories, checklist files → boxes, IJFW waves →
 * subagents, runs → the active run's lanes (rows from {@link buildTreeModel}). It reads only the {@link RunStore}'s
 * snapshot and the wave monitors, never the files; on a change it rebuilds the model from the previous one (item
 * rows whose inputs did not change are reused as they are, so a one-file change to 10,000 items stays cheap) and fires
 * `onDidChangeTreeData` for the changed rows only ({@link diffTreeModels}), or for the root when the top-level rows
 * changed. Expansion is kept: ids are stable and the rows a person expanded stay expanded when redrawn. Sets the
 * `ralph.hasSources` context key that `viewsWelcome` reads.
 */
export class PlanTreeProvider extends Disposable implements vscode.TreeDataProvider<PlanNode> {
  private readonly changed = this._register(new vscode.EventEmitter<PlanNode | PlanNode[] | undefined>());
  readonly onDidChangeTreeData = this.changed.event;
  private model: TreeModel = { rows: new Map(), roots: [] };
  private readonly nodes = new Map<string, PlanNode>();
  private readonly expanded = new Set<string>();
  private hasSources: boolean | undefined;
  private lastLogged: string | undefined;

  constructor(
    private readonly log: Logger,
    private readonly deps: PlanTreeDeps,
  ) {
    super();
    this._register(deps.onDidChange(() => this.update()));
    if (deps.onWavesChange) this._register(deps.onWavesChange(() => this.update()));
    this.update();
  }

  /** Follows a tree view's expand / collapse so redrawn rows keep their state. */
  track(view: vscode.TreeView<PlanNode>): void {
    this._register(view.onDidExpandElement((e) => this.expanded.add(e.element.id)));
    this._register(view.onDidCollapseElement((e) => this.expanded.delete(e.element.id)));
  }

  /** Notes an expansion (the tree view's events call it; tests too). */
  setExpanded(id: string, expanded: boolean): void {
    if (expanded) this.expanded.add(id);
    else this.expanded.delete(id);
  }

  /** **Ralph: Refresh**: rebuilds every row (the store is the source; this only redraws). */
  refresh(): void {
    const waves = this.deps.waves;
    this.model = buildTreeModel(this.deps.snapshot(), waves ? (f) => waves(f) : undefined);
    this.changed.fire(undefined);
  }

  /** The row of a node (commands read it), or undefined once it is gone. */
  row(node: PlanNode | string): TreeRow | undefined {
    return this.model.rows.get(typeof node === 'string' ? node : node.id);
  }

  /** The node of a row id (stable object), if the row exists. */
  node(id: string): PlanNode | undefined {
    return this.model.rows.has(id) ? this.nodeOf(id) : undefined;
  }

  /** The current rows (tests, the dashboard). */
  rows(): TreeModel {
    return this.model;
  }

  getTreeItem(node: PlanNode): vscode.TreeItem {
    const row = this.model.rows.get(node.id);
    if (!row) return new vscode.TreeItem('(gone)');
    const state = !row.children.length
      ? vscode.TreeItemCollapsibleState.None
      : this.expanded.has(row.id)
        ? vscode.TreeItemCollapsibleState.Expanded
        : vscode.TreeItemCollapsibleState.Collapsed;
    // Labels and descriptions carry repository text: hidden characters are shown as escapes, on one line.
    const item = new vscode.TreeItem(visibleText(row.label, { singleLine: true, maxChars: MAX_LINE_CHARS }), state);
    item.id = row.id;
    item.description = visibleText(row.description, { singleLine: true, maxChars: MAX_LINE_CHARS });
    item.iconPath = iconOf(row);
    // Item rows build their tooltip on hover (resolveTreeItem): producing 10,000 children stays cheap.
    if (typeof row.tooltip === 'string') item.tooltip = markdown(row.tooltip);
    item.contextValue = row.contextValue;
    // No resourceUri: rows must not carry git decorations ("M", greyed `.ralph/`) that read as task state.
    return item;
  }

  /**
   * The rows under `node` (the top level without one). Before every folder's first plan read, the top level waits for
   * it (at most {@link FIRST_READ_WAIT_MS}), so the view does not flash its "no sources" welcome.
   */
  /** Fills in a lazily built tooltip when VS Code is about to show it (hover). */
  resolveTreeItem(item: vscode.TreeItem, node: PlanNode): vscode.TreeItem {
    const row = this.model.rows.get(node.id);
    if (row && item.tooltip === undefined) item.tooltip = markdown(tooltipOf(row));
    return item;
  }

  getChildren(node?: PlanNode): PlanNode[] | Promise<PlanNode[]> {
    if (!node && !this.loaded()) return this.firstRead().then(() => this.children());
    return this.children(node);
  }

  /** The rows under `node` (the top level without one) as the model has them now. */
  children(node?: PlanNode): PlanNode[] {
    const ids = node ? (this.model.rows.get(node.id)?.children ?? []) : this.model.roots;
    return ids.map((id) => this.nodeOf(id));
  }

  private loaded(): boolean {
    return this.deps.snapshot().folders.every((f) => f.plan !== undefined);
  }

  private firstRead(): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, FIRST_READ_WAIT_MS);
      const sub = this.deps.onDidChange(() => {
        if (this.loaded()) done();
      });
      function done() {
        clearTimeout(timer);
        sub.dispose();
        resolve();
      }
    });
  }

  getParent(node: PlanNode): PlanNode | undefined {
    const p = this.model.rows.get(node.id)?.parentId;
    return p ? this.nodeOf(p) : undefined;
  }

  private nodeOf(id: string): PlanNode {
    let n = this.nodes.get(id);
    if (!n) {
      n = { id };
      this.nodes.set(id, n);
    }
    return n;
  }

  private build(): TreeModel {
    const waves = this.deps.waves;
    return buildTreeModel(this.deps.snapshot(), waves ? (f) => waves(f) : undefined, this.model);
  }

  /** Rebuilds the model from the store and fires the changed rows only. */
  private update(): void {
    const next = this.build();
    const diff = diffTreeModels(this.model, next);
    this.model = next;
    for (const id of this.nodes.keys()) if (!next.rows.has(id)) this.nodes.delete(id);
    const has = next.roots.length > 0;
    if (has !== this.hasSources) {
      this.hasSources = has;
      void vscode.commands.executeCommand('setContext', 'ralph.hasSources', has);
    }
    const summary = `${next.roots.length} source row(s), ${next.rows.size} row(s)`;
    if (summary !== this.lastLogged) this.log.trace('plan', summary);
    this.lastLogged = summary;
    if (diff.root) this.changed.fire(undefined);
    else if (diff.changed.length) this.changed.fire(diff.changed.map((id) => this.nodeOf(id)));
  }
}

/** Theme icons are immutable: one object per look, shared by every row that has it (10,000 rows, a few icons). */
const icons = new Map<string, vscode.ThemeIcon>();
/** The icon of a non-source row, by status (no key string built per row). */
const statusIcons = new Map<RowStatus, vscode.ThemeIcon>();

/** A row's icon and theme colour: a source's kind icon (green when done), else its status's. */
function iconOf(row: TreeRow): vscode.ThemeIcon {
  const source = row.contextValue.startsWith('source');
  if (!source) {
    const cached = statusIcons.get(row.status);
    if (cached) return cached;
  }
  let icon: string;
  let color: string | undefined;
  if (source) {
    const tokens = row.contextValue.split(' ');
    icon = SOURCE_ICON[tokens.find((t) => t in SOURCE_ICON) ?? 'runs'] ?? 'folder';
    color = row.status === 'done' ? 'testing.iconPassed' : undefined;
  } else [icon, color] = ICON[row.status];
  const key = color ? `${icon} ${color}` : icon;
  let out = icons.get(key);
  if (!out)
    icons.set(
      key,
      (out = new vscode.ThemeIcon(icon || 'circle-outline', color ? new vscode.ThemeColor(color) : undefined)),
    );
  if (!source) statusIcons.set(row.status, out);
  return out;
}

function markdown(text: string): vscode.MarkdownString {
  const tip = new vscode.MarkdownString(text);
  tip.supportThemeIcons = true;
  return tip;
}
