/**
 * Every context key the extension sets, in one place (menus' `when` and commands' `enablement` in package.json read
 * them). Pattern: microsoft/vscode-js-debug `src/ui/managedContextKey.ts`: typed, and set only when the value changes.
 */
export const ContextKeys = {
  /** A workspace folder has a task source (the tree's welcome view). */
  hasSources: 'ralph.hasSources',
  /** Some run in the workspace is active (whoever started it: this window, a terminal, a bot, flow-next's driver). */
  running: 'ralph.running',
  /** Some active run is paused (a PAUSE sentinel is honoured). */
  paused: 'ralph.paused',
  /** Some active run waits for a human's answer to a question. */
  waiting: 'ralph.waiting',
  /** Some active run is deferred (waiting for a usage limit to reset). */
  deferred: 'ralph.deferred',
  /** This window's own engine runs (Ralph: Cancel can end it at once). */
  runningHere: 'ralph.runningHere',
  /** The workspace has at least one run record (the gauge shows the latest run's figures). */
  hasRuns: 'ralph.hasRuns',
} as const;

export type ContextKey = (typeof ContextKeys)[keyof typeof ContextKeys];
export type ContextValues = Partial<Record<ContextKey, boolean>>;

/**
 * Holds the last value set for each key and calls `setContext` only for changes (each call is a round trip to the
 * renderer). `setContext` is `(key, value) => commands.executeCommand('setContext', key, value)` in the extension.
 */
export class ManagedContextKeys {
  private readonly values = new Map<ContextKey, boolean>();

  constructor(private readonly setContext: (key: ContextKey, value: boolean) => unknown) {}

  /** Sets each given key whose value differs from the last one set; returns the keys that changed. */
  update(values: ContextValues): ContextKey[] {
    const changed: ContextKey[] = [];
    for (const [k, v] of Object.entries(values) as [ContextKey, boolean | undefined][]) {
      if (v === undefined || this.values.get(k) === v) continue;
      this.values.set(k, v);
      changed.push(k);
      void this.setContext(k, v);
    }
    return changed;
  }

  get(key: ContextKey): boolean | undefined {
    return this.values.get(key);
  }
}
