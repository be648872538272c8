import { EventEmitter } from 'node:events';
import { existsSync, watch, type FSWatcher } from 'node:fs';
import * as path from 'node:path';
import {
  checkSentinels,
  GLOBAL_PAUSE_FILES,
  GLOBAL_STOP_FILES,
  ralphRunDir,
  type SentinelCheck,
} from '../control/sentinels';
import { ralphDir, RUN_FILES } from '../model/ralphPaths';

/**
 * The names of the sentinel files in the folders watched: an event naming another file (the run's own writes of
 * run.json, its iteration streams, temp files: hundreds per iteration) cannot change what they say.
 */
const SENTINEL_NAMES: ReadonlySet<string> = new Set([
  RUN_FILES.stop,
  RUN_FILES.pause,
  ...[...GLOBAL_STOP_FILES, ...GLOBAL_PAUSE_FILES].map((f) => path.basename(f)),
]);

/**
 * Watches a run's sentinel files (core/control/sentinels.ts decides what counts) and reports changes at once:
 * `fs.watch` on the folders that hold them, without waiting for writes to settle, plus a short poll as a fallback
 * for file systems that drop events. flow-next polls every 5 s (seed-systems.md §2.9); the target here is a
 * reaction within 1 s (measured in the benchmark, p95 ≤ 250 ms). An event is looked at only when it names a sentinel
 * file, or names none (some platforms leave the name out).
 */
export class SentinelWatcher extends EventEmitter<{ change: [SentinelCheck] }> {
  private readonly watchers: FSWatcher[] = [];
  private readonly timer: NodeJS.Timeout;
  private last = '';
  private current: SentinelCheck = { stop: [], pause: [] };

  constructor(
    private readonly folder: string,
    private readonly run: { runId: string; startedAt: string },
    pollMs = 250,
  ) {
    super();
    for (const dir of [ralphRunDir(folder, run.runId), ralphDir(folder), path.join(folder, 'scripts', 'ralph')]) {
      if (!existsSync(dir)) continue;
      try {
        const w = watch(dir, { persistent: false }, (_event, name) => {
          if (name === null || SENTINEL_NAMES.has(String(name))) this.check();
        });
        w.on('error', () => undefined);
        this.watchers.push(w);
      } catch {
        // The poll below still sees it.
      }
    }
    this.timer = setInterval(() => this.check(), pollMs);
    this.timer.unref();
    this.check();
  }

  /** The sentinels as last seen. */
  get state(): SentinelCheck {
    return this.current;
  }

  /** Re-reads the sentinels now; emits `change` when the set of hits differs from the last one. */
  check(): SentinelCheck {
    const c = checkSentinels(this.folder, this.run);
    const key = JSON.stringify([c.stop.map((h) => h.file), c.pause.map((h) => h.file)]);
    this.current = c;
    if (key !== this.last) {
      this.last = key;
      this.emit('change', c);
    }
    return c;
  }

  close(): void {
    clearInterval(this.timer);
    for (const w of this.watchers) w.close();
  }
}
