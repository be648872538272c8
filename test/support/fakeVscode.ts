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
  private constructor(
    readonly scheme: string,
    readonly path: string,
  ) {}
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

export enum TreeItemCollapsibleState {
  None = 0,
  Collapsed = 1,
  Expanded = 2,
}
export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}

export class TreeItem {
  id?: string;
  description?: string;
  tooltip?: unknown;
  iconPath?: unknown;
  contextValue?: string;
  resourceUri?: Uri;
  command?: unknown;
  constructor(
    public label: string,
    public collapsibleState: TreeItemCollapsibleState = TreeItemCollapsibleState.None,
  ) {}
}
export class ThemeIcon {
  constructor(
    readonly id: string,
    readonly color?: ThemeColor,
  ) {}
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
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
}
export class Range {
  constructor(
    readonly start: Position,
    readonly end: Position,
  ) {}
}
export enum TextEditorRevealType {
  Default = 0,
  InCenter = 1,
  InCenterIfOutsideViewport = 2,
  AtTop = 3,
}

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
  /** Language Model Tools registered with `lm.registerTool`, by name. */
  lmTools: new Map<string, unknown>(),
  treeViews: [] as string[],
  logLines: [] as string[],
  contexts: new Map<string, unknown>(),
  settings: new Map<string, unknown>(),
  statusBarItems: [] as FakeStatusBarItem[],
  /** Every message shown (information, warning, error), with its options and buttons. */
  messages: [] as {
    kind: 'info' | 'warning' | 'error';
    message: string;
    options?: { modal?: boolean; detail?: string };
    items: string[];
    /** The titles of the MessageItems marked `isCloseAffordance` (Escape, ×). */
    closeAffordance?: string[];
  }[],
  /** Answers the next messages return, in order (a button's title; undefined = dismissed / Cancel; a function is called when the message shows). */
  answers: [] as (string | undefined | (() => string | undefined))[],
  /** Every quick pick shown: its title and the labels of its items. */
  quickPicks: [] as { title?: string; labels: string[] }[],
  /** Answers the next quick picks return, in order: the first item whose label contains the text; undefined = Escape. */
  pickAnswers: [] as (string | undefined)[],
};

function showMessage(kind: 'info' | 'warning' | 'error') {
  return async (message: string, ...rest: unknown[]) => {
    const options =
      rest[0] !== null && typeof rest[0] === 'object'
        ? (rest.shift() as { modal?: boolean; detail?: string })
        : undefined;
    // Buttons are strings or MessageItems (`{ title, isCloseAffordance }`): an answer names a button by its title.
    const titleOf = (i: unknown) => (i !== null && typeof i === 'object' ? (i as { title: string }).title : String(i));
    recorded.messages.push({
      kind,
      message,
      options,
      items: rest.map(titleOf),
      closeAffordance: rest
        .filter((i) => i !== null && typeof i === 'object' && (i as { isCloseAffordance?: boolean }).isCloseAffordance)
        .map(titleOf),
    });
    const answer = recorded.answers.shift();
    const title = typeof answer === 'function' ? answer() : answer;
    return title === undefined ? undefined : (rest.find((i) => titleOf(i) === title) ?? title);
  };
}

/** The messages shown as `info|warn|error: text [buttons]` lines (modal options left out). */
export function messageLines(): string[] {
  return recorded.messages.map(
    (m) => `${m.kind === 'warning' ? 'warn' : m.kind}: ${m.message}${m.items.length ? ` [${m.items.join(', ')}]` : ''}`,
  );
}

export function resetFake(): void {
  recorded.commands.clear();
  recorded.lmTools.clear();
  recorded.treeViews.length = 0;
  recorded.logLines.length = 0;
  recorded.contexts.clear();
  recorded.settings.clear();
  recorded.statusBarItems.length = 0;
  recorded.messages.length = 0;
  recorded.answers.length = 0;
  recorded.quickPicks.length = 0;
  recorded.pickAnswers.length = 0;
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
  return {
    name,
    trace: line('trace'),
    debug: line('debug'),
    info: line('info'),
    warn: line('warn'),
    error: line('error'),
    append() {},
    appendLine: line('info'),
    show() {},
    dispose() {},
  };
}

export const window = {
  createOutputChannel: (name: string) => logChannel(name),
  createTreeView: (id: string) => {
    recorded.treeViews.push(id);
    return { onDidExpandElement: noop, onDidCollapseElement: noop, dispose() {} };
  },
  showTextDocument: async () => undefined,
  showInformationMessage: showMessage('info'),
  showErrorMessage: showMessage('error'),
  showWarningMessage: showMessage('warning'),
  showInputBox: async () => undefined,
  showQuickPick: async <T extends string | { label: string }>(
    items: readonly T[] | Thenable<readonly T[]>,
    options?: { title?: string },
  ): Promise<T | undefined> => {
    const list = await items;
    const labelOf = (i: T) => (typeof i === 'string' ? i : i.label);
    recorded.quickPicks.push({ title: options?.title, labels: list.map(labelOf) });
    const answer = recorded.pickAnswers.shift();
    return answer === undefined ? undefined : list.find((i) => labelOf(i).includes(answer));
  },
  createStatusBarItem: (id: string, alignment = StatusBarAlignment.Left, priority?: number): FakeStatusBarItem => {
    let text = '';
    const item: FakeStatusBarItem = {
      id,
      alignment,
      priority,
      visible: false,
      textSets: 0,
      get text() {
        return text;
      },
      set text(v: string) {
        text = v;
        item.textSets++;
      },
      show() {
        item.visible = true;
      },
      hide() {
        item.visible = false;
      },
      dispose() {
        item.visible = false;
      },
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

// ---------------------------------------------------------------------------------------------------------------
// Webview panels (the dashboard). Kept in one block so other additions merge cleanly.

export enum ViewColumn {
  Active = -1,
  Beside = -2,
  One = 1,
  Two = 2,
}
export class Selection extends Range {}

/** A fake webview panel: `posted` records what the extension posted; `receive` plays a message from the page. */
export interface FakeWebviewPanel {
  viewType: string;
  title: string;
  visible: boolean;
  disposed: boolean;
  posted: unknown[];
  webview: {
    html: string;
    options: unknown;
    cspSource: string;
    postMessage(m: unknown): Promise<boolean>;
    asWebviewUri(u: Uri): Uri;
    onDidReceiveMessage: EventEmitter<unknown>['event'];
  };
  receive(m: unknown): Promise<void>;
  setVisible(v: boolean): void;
  reveal(): void;
  onDidDispose: EventEmitter<void>['event'];
  onDidChangeViewState: EventEmitter<unknown>['event'];
  iconPath?: unknown;
  dispose(): void;
}

export const webviewRecord = {
  panels: [] as FakeWebviewPanel[],
  serializers: new Map<string, { deserializeWebviewPanel(p: FakeWebviewPanel, state: unknown): Thenable<void> }>(),
};

/** Makes a fake panel (as `createWebviewPanel` does; tests also pass one to a serializer). */
export function fakeWebviewPanel(viewType: string, title = ''): FakeWebviewPanel {
  const received = new EventEmitter<unknown>();
  const disposed = new EventEmitter<void>();
  const viewState = new EventEmitter<unknown>();
  const listeners: Promise<unknown>[] = [];
  const panel: FakeWebviewPanel = {
    viewType,
    title,
    visible: true,
    disposed: false,
    posted: [],
    webview: {
      html: '',
      options: {},
      cspSource: 'https://fake.vscode-cdn.net',
      postMessage: async (m) => {
        panel.posted.push(JSON.parse(JSON.stringify(m)));
        return true;
      },
      asWebviewUri: (u) => Uri.from({ scheme: 'https', path: u.path }),
      onDidReceiveMessage: (l) =>
        received.event((m) => {
          const r = l(m);
          listeners.push(Promise.resolve(r));
          return r;
        }),
    },
    async receive(m) {
      received.fire(m);
      await Promise.all(listeners.splice(0));
    },
    setVisible(v) {
      panel.visible = v;
      viewState.fire({ webviewPanel: panel });
    },
    reveal() {
      panel.setVisible(true);
    },
    onDidDispose: disposed.event,
    onDidChangeViewState: viewState.event,
    dispose() {
      if (panel.disposed) return;
      panel.disposed = true;
      disposed.fire();
    },
  };
  return panel;
}

Object.assign(window, {
  activeTextEditor: undefined,
  createWebviewPanel(viewType: string, title: string) {
    const p = fakeWebviewPanel(viewType, title);
    webviewRecord.panels.push(p);
    return p;
  },
  registerWebviewPanelSerializer(
    viewType: string,
    s: { deserializeWebviewPanel(p: FakeWebviewPanel, state: unknown): Thenable<void> },
  ) {
    webviewRecord.serializers.set(viewType, s);
    return { dispose: () => webviewRecord.serializers.delete(viewType) };
  },
});

/** `vscode.lm`: tool registration only (the tools' logic is tested on core/control/lmTools.ts). */
export const lm = {
  registerTool(name: string, tool: unknown) {
    if (recorded.lmTools.has(name)) throw new Error(`tool '${name}' already exists`);
    recorded.lmTools.set(name, tool);
    return { dispose: () => recorded.lmTools.delete(name) };
  },
};
export class LanguageModelTextPart {
  constructor(public value: string) {}
}
export class LanguageModelToolResult {
  constructor(public content: unknown[]) {}
}
