import { watch, type FSWatcher } from 'chokidar';
import { EventEmitter } from 'node:events';
import { statSync } from 'node:fs';
import * as path from 'node:path';
import type { SourceKind } from '../sources/detect';

/** What changed, grouped by the artifact it belongs to. */
export interface WorkspaceChange {
  folder: string;
  /** Kinds whose files changed since the last event (deduplicated). */
  kinds: SourceKind[];
  /** Workspace-relative paths (forward slashes) that changed, at most 100. */
  paths: string[];
}

export interface WorkspaceWatcherOptions {
  /** Quiet period before a batch of changes is reported, ms. Default 150. */
  debounceMs?: number;
  /**
   * Longest a change waits while changes keep coming, ms (lodash's `maxWait`). Default 1000: a file rewritten 500
   * times a second (an agent's loop) is reported about once a second instead of never (the quiet period never ends).
   */
  maxWaitMs?: number;
  /** Use polling (network file systems, some containers). Default false. */
  usePolling?: boolean;
}

/**
 * Which artifact a workspace-relative path belongs to, or null when Ralph does not read it: `.ralph/`, `.flow/`,
 * `scripts/ralph/`, `.ijfw/`, `quantum.json`, `RALPH_TASK.md`, `PROMPT.md`, `specs/<name>/tasks.md` (seed-systems.md §1–§4).
 */
export function kindOfPath(rel: string): SourceKind | null {
  const p = rel.split(path.sep).join('/');
  if (p === '.flow' || p.startsWith('.flow/') || p.startsWith('scripts/ralph')) return 'flow-next';
  if (p === 'quantum.json') return 'quantum';
  if (
    p === 'RALPH_TASK.md' ||
    p === 'PROMPT.md' ||
    /^specs\/[^/]+\/tasks\.md$/.test(p) ||
    p === 'specs' ||
    /^specs\/[^/]+$/.test(p)
  )
    return 'checklist';
  if (p === '.ijfw' || p.startsWith('.ijfw/')) return 'waves';
  if (p === '.ralph' || p.startsWith('.ralph/')) return 'ralph';
  return null;
}

/**
 * One chokidar watcher per workspace folder over the Ralph paths, emitting debounced `change` events
 * ({@link WorkspaceChange}). Events are not delayed until writes settle (no awaitWriteFinish): sentinel files must be
 * seen at once (the loop issue's ≤ 1 s reaction). Call `close()` to release every handle.
 */
export class WorkspaceWatcher extends EventEmitter<{ change: [WorkspaceChange]; error: [Error] }> {
  private readonly watcher: FSWatcher;
  private pendingKinds = new Set<SourceKind>();
  private pendingPaths = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private maxTimer: NodeJS.Timeout | undefined;
  /** The re-read of the last change's paths (see {@link recheck}). */
  private recheckTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly debounceMs: number;
  private readonly maxWaitMs: number;

  constructor(
    readonly folder: string,
    opts: WorkspaceWatcherOptions = {},
  ) {
    super();
    this.debounceMs = opts.debounceMs ?? 150;
    this.maxWaitMs = Math.max(this.debounceMs, opts.maxWaitMs ?? 1000);
    // Watch the folder itself, pruned to the Ralph paths: chokidar 4 does not report paths that did not exist when
    // watching began (a quantum.json created later), but it does report new entries of a watched folder.
    this.watcher = watch(folder, {
      ignoreInitial: true,
      // A link is watched as itself, never followed: a loop (`.ijfw/self -> .`) made chokidar walk tens of thousands
      // of nested paths and never become ready, and the readers do not follow links either (O_NOFOLLOW).
      followSymlinks: false,
      usePolling: opts.usePolling ?? false,
      ignored: (p: string) => {
        const rel = path.relative(folder, p).split(path.sep).join('/');
        if (rel === '' || rel === 'scripts') return false;
        return kindOfPath(rel) === null || /(^|\/)node_modules(\/|$)|\.lock$/.test(rel);
      },
    });
    this.watcher.on('all', (_event, file) => this.note(file));
    this.watcher.on('error', (err) => this.emit('error', err instanceof Error ? err : new Error(String(err))));
  }

  /** Resolves once the initial scan is done and changes are being reported. */
  ready(): Promise<void> {
    return new Promise((resolve) => this.watcher.once('ready', () => resolve()));
  }

  private note(file: string): void {
    const rel = path.relative(this.folder, file).split(path.sep).join('/');
    const kind = kindOfPath(rel);
    if (!kind) return;
    this.pendingKinds.add(kind);
    if (this.pendingPaths.size < 100) this.pendingPaths.add(rel);
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.flush(), this.debounceMs);
    this.maxTimer ??= setTimeout(() => this.flush(), this.maxWaitMs);
  }

  private flush(): void {
    clearTimeout(this.timer);
    clearTimeout(this.maxTimer);
    this.timer = this.maxTimer = undefined;
    const change: WorkspaceChange = {
      folder: this.folder,
      kinds: [...this.pendingKinds],
      paths: [...this.pendingPaths],
    };
    this.pendingKinds.clear();
    this.pendingPaths.clear();
    const recheck = this.recheckLater(change.paths);
    this.emit('change', change);
    recheck();
  }

  /**
   * Re-reads the paths of a change once `debounceMs` after it, and notes those that changed since: chokidar drops a
   * file's event that comes within 5 ms of its previous one (its watch throttle), so when a change was reported by the
   * `maxWaitMs` timer in the middle of a burst, the burst's last write could otherwise go unreported, and every face
   * would show the file as it was before it. The first reading is taken before the change is reported (returns the
   * function that starts the wait): one taken a moment later (an asynchronous stat on a loaded machine) could already
   * include that last write and miss it.
   */
  private recheckLater(paths: string[]): () => void {
    const signature = (rel: string) => {
      const s = statSync(path.join(this.folder, rel), { bigint: true, throwIfNoEntry: false });
      return s ? `${s.mtimeNs}:${s.size}:${s.ino}` : 'gone';
    };
    const before = paths.map(signature);
    return () => {
      clearTimeout(this.recheckTimer);
      if (this.closed) return;
      this.recheckTimer = setTimeout(() => {
        if (this.closed) return;
        paths.forEach((rel, i) => {
          if (signature(rel) !== before[i]) this.note(path.join(this.folder, rel));
        });
      }, this.debounceMs);
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.recheckTimer);
    clearTimeout(this.timer);
    clearTimeout(this.maxTimer);
    await this.watcher.close();
  }
}
