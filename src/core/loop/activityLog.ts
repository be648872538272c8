import { visibleText } from '../../protocol/visibleText';
import { appendFile, mkdir, rename, stat } from 'node:fs/promises';
import * as path from 'node:path';
import { ralphFile } from '../model/ralphPaths';
import { contextLine, type ContextFigure } from '../control/contextFigure';
import { WriteQueue } from './writeQueue';

/**
 * The human-readable logs under `.ralph/` that the seed's monitors and people `tail -f` (seed-systems.md §3.1,
 * §3.12): `activity.log` (`[HH:MM:SS] <text>`, local time, rotated), `errors.log` (`[HH:MM:SS] <message>`) and
 * `progress.md` (`# Progress Log`, then `\n### <YYYY-MM-DD HH:MM:SS>\n<message>` entries). A monitor keys on the
 * label substrings below, so they are constants, never retyped.
 *
 * Writes are appends of whole lines (one `write` with O_APPEND each), queued per file within this process so
 * lines keep their order; other writers (the guard, a second tool) interleave by whole lines.
 */

/** Largest activity.log before rotation, bytes (50 MiB). */
export const ACTIVITY_LOG_MAX_BYTES = 50 * 1024 * 1024;
/** Rotated generations kept: `activity.log.1` (newest) … `activity.log.3`. */
export const ACTIVITY_LOG_KEEP = 3;

/**
 * Labels of loop lines (§3.6, §3.12). Lines are `[HH:MM:SS] <label>[ — detail]`. The seed's words without its emoji,
 * which a machine without an emoji font shows as empty boxes (docs/decisions/0019-plain-words-in-logs.md).
 */
export const ACTIVITY = {
  ROTATE: 'ROTATE',
  GRACEFUL_YIELD: 'GRACEFUL YIELD',
  NATURAL_END: 'NATURAL END',
  STALL: 'STALL',
  COMPLETE: 'COMPLETE',
  STOP_REQUESTED: 'STOP REQUESTED',
  TURN_END: 'TURN_END',
  GUTTER: 'GUTTER',
  UNSATISFIABLE: 'UNSATISFIABLE COMPLETION BAR',
  SIGNALED_COMPLETE_CRITERIA_REMAIN: 'AGENT SIGNALED COMPLETE (criteria remain)',
  AGENT_COMPLETE: 'Agent signaled COMPLETE',
  AGENT_GUTTER: 'Agent signaled GUTTER (stuck)',
  GATE: 'GATE',
  API_ERROR: 'API ERROR',
  TASKS: 'Tasks',
} as const;

/** Local `HH:MM:SS`. */
export function clockTime(d: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/** Local `YYYY-MM-DD HH:MM:SS` (progress.md entries). */
export function localDateTime(d: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${clockTime(d)}`;
}

/**
 * `[HH:MM:SS] <text>` for each line of `text` (a multi-line text becomes several stamped lines), with `\n`. What a
 * repository controls in it is shown as in src/protocol/visibleText.ts: the logs are read with `tail -f` and `cat`.
 */
export function formatActivityLines(text: string, d: Date): string {
  return text
    .split(/\r?\n/)
    .map((l) => `[${clockTime(d)}] ${visibleText(l)}\n`)
    .join('');
}

/** Loop number as the seed shows it: `n`, or `n.r` for the r-th rate-limit retry of loop n (§3.6). */
function loopNo(n: number, retry?: number): string {
  return retry ? `${n}.${retry}` : String(n);
}

/** `Tasks: d/t complete (r remaining)` (§3.6 step 1). */
export function tasksDetail(done: number, total: number): string {
  return `Tasks: ${done}/${total} complete (${Math.max(0, total - done)} remaining)`;
}

/** `LOOP <n[.r]> START — <detail>` (§3.12). */
export function loopStartText(n: number, detail: string, retry?: number): string {
  return `LOOP ${loopNo(n, retry)} START — ${detail}`;
}

/** `LOOP <n[.r]> END — <label>[ (detail)]`, label one of {@link ACTIVITY} (§3.12). */
export function loopEndText(n: number, label: string, detail?: string, retry?: number): string {
  return `LOOP ${loopNo(n, retry)} END — ${label}${detail ? ` (${detail})` : ''}`;
}

/** `RALPH STOP — <reason>`, e.g. `RALPH STOP — Max loops (25) reached` (§3.6). */
export function ralphStopText(reason: string): string {
  return `RALPH STOP — ${reason}`;
}

/** `Max loops (N) reached`: the stop reason when the iteration cap is hit (§3.6). */
export function maxLoopsReason(n: number): string {
  return `Max loops (${n}) reached`;
}

/** `<label> — <detail>`, or the bare label. */
export function labelled(label: string, detail?: string): string {
  return detail ? `${label} — ${detail}` : label;
}

/** Inputs of {@link tokensText}. Character counts are the byte estimate's inputs (§3.4). */
export interface TokensLineInput {
  /** The run's one context figure (control/contextFigure.ts). */
  figure: ContextFigure;
  estimate?: {
    bytesRead: number;
    bytesWritten: number;
    assistantChars: number;
    shellOutputChars: number;
    subagentChars: number;
  };
}

/**
 * `TOKENS: <figure> (warn <w> · rotate <r>)[ - approaching limit| - rotation imminent][ [read:…KB write:…KB
 * assist:…KB shell:…KB[ sub:…KB]]]`: the run's one context figure as every face shows it (`16k/200k 8%`: tokens of
 * the model's window), its marks, and the seed's notes (§3.4): "approaching limit" from 72 %, "rotation imminent"
 * from 90 % of the rotate mark. Plain text: the seed's coloured-circle emoji render as empty boxes where no emoji
 * font is installed (the level is in the words).
 */
export function tokensText(t: TokensLineInput): string {
  const f = t.figure;
  const ofRotate = f.rotateAt > 0 ? Math.floor((f.tokens * 100) / f.rotateAt) : 0;
  const note = ofRotate >= 90 ? ' - rotation imminent' : ofRotate >= 72 ? ' - approaching limit' : '';
  let text = `TOKENS: ${contextLine(f)}${note}`;
  const e = t.estimate;
  if (e) {
    const kb = (n: number) => `${Math.round(n / 1024)}KB`;
    text += ` [read:${kb(e.bytesRead)} write:${kb(e.bytesWritten)} assist:${kb(e.assistantChars)} shell:${kb(e.shellOutputChars)}${e.subagentChars > 0 ? ` sub:${kb(e.subagentChars)}` : ''}]`;
  }
  return text;
}

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
