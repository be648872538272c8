/**
 * A small fake of the `vscode` module for fast unit tests of adapters on plain Node. It records what the
 * extension registers; it is never the only test of a feature (the integration tier runs the real VS Code).
 */
import * as path from 'node:path';

type Listener<T> = (e: T) => unknown;

export class EventEmitter<T> {
  private listeners = new Set<Listener<T>>();
  event = (l: Listener<T>) => {
    this.listeners.add(l);
    return { dispose: () => this.listeners.delete(l) };
  };
  fire(e: T): void {
    for (const l of [...this.listeners]) l(e);
  }
  dispose(): void {
    this.listeners.clear();
  }
}

export class Disposable {
  constructor(private readonly fn: () => void) {}
  static from(...ds: { dispose(): unknown }[]): Disposable {
    return new Disposable(() => ds.forEach((d) => d.dispose()));
  }
  dispose(): void {
    this.fn();
  }
}

export class Uri {
  private constructor(readonly scheme: string, readonly path: string) {}
  static file(p: string): Uri {
    return new Uri('file', path.resolve(p));
  }
  static from(c: { scheme: string; path: string }): Uri {
    return new Uri(c.scheme, c.path);
  }
  static joinPath(base: Uri, ...parts: string[]): Uri {
    return new Uri(base.scheme, path.posix.join(base.path, ...parts));
  }
  get fsPath(): string {
    return this.path;
  }
  toString(): string {
    return `${this.scheme}://${this.path}`;
  }
}

export enum TreeItemCollapsibleState { None = 0, Collapsed = 1, Expanded = 2 }
export enum StatusBarAlignment { Left = 1, Right = 2 }

export class TreeItem {
  id?: string;
  description?: string;
  tooltip?: unknown;
  iconPath?: unknown;
  contextValue?: string;
  resourceUri?: Uri;
  command?: unknown;
  constructor(public label: string, public collapsibleState: TreeItemCollapsibleState = TreeItemCollapsibleState.None) {}
}
export class ThemeIcon {
  constructor(readonly id: string, readonly color?: ThemeColor) {}
}
export class ThemeColor {
  constructor(readonly id: string) {}
}
export class MarkdownString {
  supportThemeIcons = false;
  constructor(public value = '') {}
  appendMarkdown(text: string): this {
    this.value += text;
    return this;
  }
}
export class Position {
  constructor(readonly line: number, readonly character: number) {}
}
export class Range {
  constructor(readonly start: Position, readonly end: Position) {}
}
export enum TextEditorRevealType { Default = 0, InCenter = 1, InCenterIfOutsideViewport = 2, AtTop = 3 }

/** A status bar item as the fake records it: every field the extension sets, and whether it is shown. */
export interface FakeStatusBarItem {
  id: string;
  alignment: StatusBarAlignment;
  priority: number | undefined;
  name?: string;
  text: string;
  tooltip?: unknown;
  backgroundColor?: ThemeColor;
  command?: unknown;
  accessibilityInformation?: { label: string; role?: string };
  visible: boolean;
  /** How many times `text` was assigned. */
  textSets: number;
  show(): void;
  hide(): void;
  dispose(): void;
}

/** What the fake recorded: inspect from tests, reset with {@link resetFake}. */
export const recorded = {
  commands: new Map<string, (...args: unknown[]) => unknown>(),
  treeViews: [] as string[],
  logLines: [] as string[],
  contexts: new Map<string, unknown>(),
  settings: new Map<string, unknown>(),
  statusBarItems: [] as FakeStatusBarItem[],
  /** Messages shown (`info|warn|error: text [actions]`). */
  messages: [] as string[],
};

export function resetFake(): void {
  recorded.commands.clear();
  recorded.treeViews.length = 0;
  recorded.logLines.length = 0;
  recorded.contexts.clear();
  recorded.settings.clear();
  recorded.statusBarItems.length = 0;
  recorded.messages.length = 0;
  workspace.workspaceFolders = undefined;
  workspace.isTrusted = true;
}

const noop = () => ({ dispose() {} });

export const commands = {
  registerCommand(id: string, fn: (...args: unknown[]) => unknown) {
    if (recorded.commands.has(id)) throw new Error(`command '${id}' already exists`);
    recorded.commands.set(id, fn);
    return { dispose: () => recorded.commands.delete(id) };
  },
  async executeCommand(id: string, ...args: unknown[]) {
    if (id === 'setContext') {
      recorded.contexts.set(String(args[0]), args[1]);
      return undefined;
    }
    const fn = recorded.commands.get(id);
    if (!fn) throw new Error(`command '${id}' not found`);
    return fn(...args);
  },
  async getCommands() {
    return [...recorded.commands.keys()];
  },
};

function logChannel(name: string) {
  const line = (level: string) => (msg: string) => recorded.logLines.push(`${name} ${level} ${msg}`);
  return { name, trace: line('trace'), debug: line('debug'), info: line('info'), warn: line('warn'), error: line('error'), append() {}, appendLine: line('info'), show() {}, dispose() {} };
}

export const window = {
  createOutputChannel: (name: string) => logChannel(name),
  createTreeView: (id: string) => {
    recorded.treeViews.push(id);
    return { onDidExpandElement: noop, onDidCollapseElement: noop, dispose() {} };
  },
  showTextDocument: async () => undefined,
  showInformationMessage: async (text: string, ...actions: string[]) => void recorded.messages.push(`info: ${text}${actions.length ? ` [${actions.join(', ')}]` : ''}`),
  showErrorMessage: async (text: string, ...actions: string[]) => void recorded.messages.push(`error: ${text}${actions.length ? ` [${actions.join(', ')}]` : ''}`),
  showWarningMessage: async (text: string, ...actions: string[]) => void recorded.messages.push(`warn: ${text}${actions.length ? ` [${actions.join(', ')}]` : ''}`),
  showInputBox: async () => undefined,
  createStatusBarItem: (id: string, alignment = StatusBarAlignment.Left, priority?: number): FakeStatusBarItem => {
    let text = '';
    const item: FakeStatusBarItem = {
      id, alignment, priority, visible: false, textSets: 0,
      get text() { return text; },
      set text(v: string) { text = v; item.textSets++; },
      show() { item.visible = true; },
      hide() { item.visible = false; },
      dispose() { item.visible = false; },
    };
    recorded.statusBarItems.push(item);
    return item;
  },
};

export const workspace = {
  workspaceFolders: undefined as { uri: Uri; name: string; index: number }[] | undefined,
  isTrusted: true,
  getConfiguration: (section: string) => ({
    get: (key: string, dflt?: unknown) => recorded.settings.get(`${section}.${key}`) ?? dflt,
    inspect: (key: string) => {
      const v = recorded.settings.get(`${section}.${key}`);
      return v === undefined ? { key } : { key, workspaceValue: v };
    },
  }),
  registerTextDocumentContentProvider: noop,
  openTextDocument: async () => ({}),
  textDocuments: [] as { uri: Uri }[],
  onDidChangeWorkspaceFolders: noop,
  onDidGrantWorkspaceTrust: noop,
  onDidChangeConfiguration: noop,
};

export const version = '1.100.3-fake';
