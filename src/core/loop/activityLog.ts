import { visibleText } from '../../protocol/visibleText';
import { appendFile, mkdir, rename, stat } from 'node:fs/promises';
import * as path from 'node:path';
import { ralphFile } from '../model/ralphPaths';
import { formatActivityLines, localDateTime } from '../control/activityText';
import { WriteQueue } from './writeQueue';

/**
 * The human-readable logs under `.ralph/` that the seed's monitors and people `tail -f` (seed-systems.md §3.1,
 * §3.12): `activity.log` (`[HH:MM:SS] <text>`, local time, rotated), `errors.log` (`[HH:MM:SS] <message>`) and
 * `progress.md` (`# Progress Log`, then `\n### <YYYY-MM-DD HH:MM:SS>\n<message>` entries). A monitor keys on the
 * label substrings, so they are constants (control/activityText.ts `ACTIVITY`), never retyped.
 *
 * Writes are appends of whole lines (one `write` with O_APPEND each), queued per file within this process so
 * lines keep their order; other writers (the guard, a second tool) interleave by whole lines.
 */

/** Largest activity.log before rotation, bytes (50 MiB). */
export const ACTIVITY_LOG_MAX_BYTES = 50 * 1024 * 1024;
/** Rotated generations kept: `activity.log.1` (newest) … `activity.log.3`. */
export const ACTIVITY_LOG_KEEP = 3;

export interface ActivityLogOptions {
  /** Rotate when a write would take the file past this many bytes; default {@link ACTIVITY_LOG_MAX_BYTES}. */
  maxBytes?: number;
  /** Rotated generations kept (at least 1); default {@link ACTIVITY_LOG_KEEP}. */
  keep?: number;
  /** Clock, for tests. */
  now?: () => Date;
}

/** Paths of the logs of a workspace folder. */
export function ralphLogPaths(folder: string): { activity: string; errors: string; progress: string } {
  return {
    activity: ralphFile(folder, 'activityLog'),
    errors: ralphFile(folder, 'errorsLog'),
    progress: ralphFile(folder, 'progressMd'),
  };
}

/**
 * Writer of one workspace's activity.log, errors.log and progress.md. Methods resolve when the line is on
 * disk and reject with the file system's error (a log that cannot be written is reported, never hidden);
 * a failed write does not block later ones.
 */
export class ActivityLog {
  readonly paths: ReturnType<typeof ralphLogPaths>;
  private readonly maxBytes: number;
  private readonly keep: number;
  private readonly now: () => Date;
  private readonly queue = new WriteQueue();

  constructor(
    readonly folder: string,
    opts: ActivityLogOptions = {},
  ) {
    this.paths = ralphLogPaths(folder);
    this.maxBytes = opts.maxBytes ?? ACTIVITY_LOG_MAX_BYTES;
    this.keep = Math.max(1, opts.keep ?? ACTIVITY_LOG_KEEP);
    this.now = opts.now ?? (() => new Date());
  }

  /** Appends `[HH:MM:SS] <text>` (one stamped line per line of `text`), rotating first when the file would pass the cap. */
  append(text: string): Promise<void> {
    const line = formatActivityLines(text, this.now());
    return this.enqueue(async () => {
      await mkdir(path.dirname(this.paths.activity), { recursive: true });
      const size = await stat(this.paths.activity).then(
        (s) => s.size,
        () => 0,
      );
      if (size > 0 && size + Buffer.byteLength(line) > this.maxBytes) await this.rotate();
      await appendFile(this.paths.activity, line, 'utf8');
    });
  }

  /** Appends `[HH:MM:SS] <message>` to errors.log (§3.1). */
  error(message: string): Promise<void> {
    const line = formatActivityLines(message, this.now());
    return this.enqueue(async () => {
      await mkdir(path.dirname(this.paths.errors), { recursive: true });
      await appendFile(this.paths.errors, line, 'utf8');
    });
  }

  /**
   * Appends a progress.md entry `\n### <YYYY-MM-DD HH:MM:SS>\n<message>\n`, writing the `# Progress Log` header
   * first when the file is new (§3.1).
   */
  progress(message: string): Promise<void> {
    const entry = `\n### ${localDateTime(this.now())}\n${visibleText(message.replace(/\r\n/g, '\n')).replace(/\n+$/, '')}\n`;
    return this.enqueue(async () => {
      await mkdir(path.dirname(this.paths.progress), { recursive: true });
      const size = await stat(this.paths.progress).then(
        (st) => st.size,
        () => 0,
      );
      await appendFile(this.paths.progress, size === 0 ? `# Progress Log\n${entry}` : entry, 'utf8');
    });
  }

  /** Resolves when every write queued so far has settled. */
  flush(): Promise<void> {
    return this.queue.flush();
  }

  /** `activity.log.(keep-1)` → `.keep`, …, `activity.log` → `.1`; the oldest generation is overwritten. */
  private async rotate(): Promise<void> {
    const base = this.paths.activity;
    for (let i = this.keep - 1; i >= 1; i--) {
      await rename(`${base}.${i}`, `${base}.${i + 1}`).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw err;
      });
    }
    await rename(base, `${base}.1`);
  }

  private enqueue(task: () => Promise<void>): Promise<void> {
    return this.queue.push(task);
  }
}
