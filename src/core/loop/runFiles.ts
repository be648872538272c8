import {
  appendFileSync,
  closeSync,
  createWriteStream,
  fstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  type WriteStream,
} from 'node:fs';
import { appendFile, mkdir } from 'node:fs/promises';
import * as path from 'node:path';
import { runRecordPath } from '../control/runRecords';
import { ralphRunDir } from '../control/sentinels';
import { isoString } from '../model/time';
import { type FileProblem } from '../store/parseError';
import { RUN_FILES } from '../model/ralphPaths';
import { parseProgressTxt } from '../sources/flowNext/progressTxt';
import { WriteQueue } from './writeQueue';

/**
 * The per-run records under `.ralph/runs/<run_id>/` besides `run.json` (whose schema and writer belong to the
 * control plane: core/model/runRecord.ts, core/control/runRecords.ts; the folder is `ralphRunDir`):
 *
 * - `events.jsonl`: every engine event, one JSON object per line, append-only ({@link EventsWriter});
 * - `iter-NNN.jsonl`: the raw agent stream of iteration NNN, capped ({@link IterationStreamWriter});
 * - `progress.txt`: flow-next's run log (seed-systems.md §2.8), so flow-next's tooling and `ralph status` read
 *   our runs like theirs ({@link ProgressTxtWriter}).
 */

/** Largest raw stream kept per iteration, bytes (256 MiB). */
export const ITERATION_STREAM_CAP_BYTES = 256 * 1024 * 1024;

/** Paths of one run's files. */
export interface RunFilePaths {
  dir: string;
  runJson: string;
  events: string;
  progress: string;
}

/** Paths of the files of run `runId` in `folder`. */
export function runFilePaths(folder: string, runId: string): RunFilePaths {
  const dir = ralphRunDir(folder, runId);
  return {
    dir,
    runJson: runRecordPath(folder, runId),
    events: path.join(dir, RUN_FILES.events),
    progress: path.join(dir, RUN_FILES.progress),
  };
}

/** `iter-001.jsonl` … `iter-999.jsonl`, then `iter-1000.jsonl` (at least three digits, sortable up to 999). */
export function iterationStreamName(iteration: number): string {
  return `iter-${String(iteration).padStart(3, '0')}.jsonl`;
}

// ---------------------------------------------------------------------------------------------------------------
// events.jsonl

/**
 * Appends events to `events.jsonl` (the run log, core/model/runEvent.ts): `{"seq":N,"at":"<ISO ms>","lane":L,
 * ...event}` + `\n` per event, one append each, in call order. `seq` counts 1, 2, 3 … per run without gaps; a
 * writer opened on an existing log goes on after its last `seq`. The file is only ever appended to. `append`
 * rejects with the file system's error; a failure does not block later events (its `seq` is then missing: the
 * gap tells a reader a line was lost).
 */
export class EventsWriter<E extends object = Record<string, unknown>> {
  readonly file: string;
  private readonly queue = new WriteQueue();
  private seq: number | undefined;

  constructor(
    folder: string,
    runId: string,
    private readonly now: () => number = Date.now,
  ) {
    this.file = runFilePaths(folder, runId).events;
  }

  /** The `seq` the next line gets. */
  nextSeq(): number {
    this.seq ??= lastSeqOf(this.file);
    return this.seq + 1;
  }

  /** The line written for `event` in `lane`; takes the next `seq`. */
  line(event: E, lane = 0): string {
    const seq = this.nextSeq();
    this.seq = seq;
    return `${JSON.stringify({ seq, at: isoString(this.now()), lane, ...event })}\n`;
  }

  /** Appends one event of `lane` (default 0); resolves when it is on disk. */
  append(event: E, lane = 0): Promise<void> {
    const line = this.line(event, lane);
    return this.queue.push(() => this.write(line));
  }

  /**
   * Appends synchronously, for exit paths where no promise will be awaited (`process.on('exit')`, a signal
   * handler about to exit). Waits for nothing: call it only when no async append is still pending, or accept
   * that this line may land before them (its `seq` still tells its place).
   */
  appendSync(event: E, lane = 0): void {
    mkdirSync(path.dirname(this.file), { recursive: true });
    appendFileSync(this.file, this.line(event, lane), 'utf8');
  }

  /** Resolves when every append queued so far has settled. */
  flush(): Promise<void> {
    return this.queue.flush();
  }

  private async write(line: string): Promise<void> {
    await mkdir(path.dirname(this.file), { recursive: true });
    await appendFile(this.file, line, 'utf8');
  }
}

/** The largest `seq` in the last 64 KiB of an existing log; 0 for a missing or empty one. */
function lastSeqOf(file: string): number {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw err;
  }
  try {
    const size = fstatSync(fd).size;
    const len = Math.min(size, 64 * 1024);
    const buf = Buffer.alloc(len);
    readSync(fd, buf, 0, len, size - len);
    let max = 0;
    for (const m of buf.toString('utf8').matchAll(/"seq":(\d+)/g)) max = Math.max(max, Number(m[1]));
    return max;
  } finally {
    closeSync(fd);
  }
}

/**
 * Reads an `events.jsonl`: the objects in order, and a problem (file:line) for each line that is not a JSON
 * object. A last line without its newline that does not parse is a write in progress, not a problem: skipped.
 * A missing file reads as no events.
 */
export function readEventsFile(file: string): { events: Record<string, unknown>[]; problems: FileProblem[] } {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { events: [], problems: [] };
    throw err;
  }
  const events: Record<string, unknown>[] = [];
  const problems: FileProblem[] = [];
  const lines = text.split('\n');
  const torn = !text.endsWith('\n');
  lines.forEach((raw, i) => {
    if (raw.trim() === '') return;
    try {
      const v = JSON.parse(raw) as unknown;
      if (v && typeof v === 'object' && !Array.isArray(v)) {
        events.push(v as Record<string, unknown>);
        return;
      }
    } catch {
      if (torn && i === lines.length - 1) return;
    }
    problems.push({ file, line: i + 1, column: 1, message: 'not a JSON object' });
  });
  return { events, problems };
}

// ---------------------------------------------------------------------------------------------------------------
// iter-NNN.jsonl

/** What an {@link IterationStreamWriter} kept and dropped. Sizes in bytes. */
export interface IterationStreamStats {
  file: string;
  bytesWritten: number;
  truncated: boolean;
  droppedBytes: number;
  droppedChunks: number;
}

/**
 * Writes one iteration's raw agent stream to `iter-NNN.jsonl`, up to `capBytes` (default
 * {@link ITERATION_STREAM_CAP_BYTES}). Chunks are kept or dropped whole, so when the engine passes whole lines
 * the file stays whole lines. The first chunk that would pass the cap ends the recording: that chunk and every
 * later one are dropped (and counted), and one line
 * `{"type":"ralph_stream_truncated","capBytes":N,"at":"<ISO>"}` is written at once, so a reader (or a crash right
 * after) can tell a cut stream from a short one.
 */
export class IterationStreamWriter {
  readonly file: string;
  private readonly stream: WriteStream;
  private readonly capBytes: number;
  private written = 0;
  private dropped = 0;
  private droppedChunks = 0;
  private truncated = false;
  private lastByte = 10;
  private error: Error | undefined;
  private readonly now: () => number;

  constructor(folder: string, runId: string, iteration: number, opts: { capBytes?: number; now?: () => number } = {}) {
    const dir = ralphRunDir(folder, runId);
    mkdirSync(dir, { recursive: true });
    this.file = path.join(dir, iterationStreamName(iteration));
    this.capBytes = opts.capBytes ?? ITERATION_STREAM_CAP_BYTES;
    this.now = opts.now ?? Date.now;
    this.stream = createWriteStream(this.file, { flags: 'a' });
    this.stream.on('error', (err) => {
      this.error ??= err;
    });
  }

  /** Records a chunk of the raw stream (a string is UTF-8). Returns false when it was dropped because of the cap. */
  write(chunk: string | Uint8Array): boolean {
    const buf =
      typeof chunk === 'string'
        ? Buffer.from(chunk, 'utf8')
        : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (buf.length === 0) return true;
    if (this.truncated || this.written + buf.length > this.capBytes) {
      if (!this.truncated) {
        this.truncated = true;
        const marker = `${this.lastByte === 10 ? '' : '\n'}${JSON.stringify({ type: 'ralph_stream_truncated', capBytes: this.capBytes, at: isoString(this.now()) })}\n`;
        this.stream.write(marker);
      }
      this.dropped += buf.length;
      this.droppedChunks++;
      return false;
    }
    this.stream.write(buf);
    this.written += buf.length;
    this.lastByte = buf[buf.length - 1]!;
    return true;
  }

  /** Kept and dropped so far. */
  stats(): IterationStreamStats {
    return {
      file: this.file,
      bytesWritten: this.written,
      truncated: this.truncated,
      droppedBytes: this.dropped,
      droppedChunks: this.droppedChunks,
    };
  }

  /** Flushes and closes the file; rejects with the first write error, if any. */
  async close(): Promise<IterationStreamStats> {
    await new Promise<void>((resolve) => this.stream.end(() => resolve()));
    if (this.error) throw this.error;
    return this.stats();
  }
}

// ---------------------------------------------------------------------------------------------------------------
// progress.txt

/** flow-next's completion reasons (§2.8). */
export const FLOW_COMPLETION_REASONS = ['DONE', 'NO_WORK', 'STOPPED', 'MAX_ITERATIONS', 'FAILED'] as const;
/** Ours, for endings flow-next has no word for: stalled, blocked item, the cost and wall-time caps, Ctrl-C / cancel, crash recovery. */
export const RALPH_COMPLETION_REASONS = [
  'STALLED',
  'BLOCKED',
  'MAX_COST',
  'MAX_WALL_TIME',
  'INTERRUPTED',
  'CRASHED',
] as const;
/** A reason written after `completion_reason=`; HEAD's `NEEDS_HUMAN: <why>` form is accepted too (§2.8). */
export type CompletionReason =
  (typeof FLOW_COMPLETION_REASONS)[number] | (typeof RALPH_COMPLETION_REASONS)[number] | `NEEDS_HUMAN: ${string}`;

/** One iteration block of progress.txt. Keys follow flow-next HEAD's contract (one `key=value` per line, §2.8). */
export interface ProgressIteration {
  iteration: number;
  /** Time of the block, ms since the epoch; default now. */
  atMs?: number;
  /** `plan | work | none` in flow-next; ours also `review`, `finalFix`. */
  status?: string;
  /** Epic / spec id (flow-next), else empty. */
  spec?: string;
  /** Item worked on: task or story id. */
  task?: string;
  reason?: string;
  /** Exit code of the agent process (`claude_rc`). */
  agentRc?: number | null;
  verdict?: string;
  /** Text of the last `<promise>` tag the agent emitted. */
  promise?: string;
  receipt?: string;
  receiptExists?: boolean;
  planReviewStatus?: string;
  completionReviewStatus?: string;
  taskStatus?: string;
  /** Workspace-relative path of the raw stream (`.ralph/runs/<id>/iter-NNN.jsonl`). */
  iterLog?: string;
  /** Our keys (e.g. `agent`, `ending`, `gate_exit`, `cost_usd`), written after flow-next's, before `iter_log`. */
  extra?: Record<string, string | number | boolean | null | undefined>;
  /** Last lines of the iteration's output (flow-next keeps 10), written under `last_output:`. */
  lastOutput?: readonly string[];
}

/** Keys of the contract (and of the marker) that `extra` may not repeat. */
const RESERVED_KEYS = new Set([
  'iteration',
  'status',
  'spec',
  'epic',
  'task',
  'reason',
  'claude_rc',
  'verdict',
  'promise',
  'receipt',
  'receipt_exists',
  'plan_review_status',
  'completion_review_status',
  'task_status',
  'iter_log',
  'completion_reason',
]);

/** A value on one line: newlines become spaces, `null`/`undefined` become empty. */
function kv(key: string, value: string | number | boolean | null | undefined): string {
  const v =
    value === null || value === undefined ? '' : typeof value === 'boolean' ? (value ? '1' : '0') : String(value);
  return `${key}=${v.replace(/\r?\n/g, ' ')}\n`;
}

/** The progress.txt header: `# Ralph Progress Log`, `Run: <id>`, `Started: <ISO>`, `---` (§2.8). Pure. */
export function progressHeader(runId: string, startedAtMs: number): string {
  return `# Ralph Progress Log\nRun: ${runId}\nStarted: ${isoString(startedAtMs)}\n---\n`;
}

/**
 * One iteration block (§2.8, HEAD's form): `## <ISO>`, then `iteration=`, `status=`, `spec=`, `task=`,
 * `reason=`, `claude_rc=`, `verdict=`, `promise=`, `receipt=`, `receipt_exists=`, `plan_review_status=`,
 * `completion_review_status=`, `task_status=`, our extra keys, `iter_log=`, `last_output:`, the tail, `---`.
 * Each tail line is indented by two spaces, and at most 10 are kept: a tail line can then neither close the
 * block (`---`) nor read as a contract line such as `promise=COMPLETE` to a parser that does not skip the
 * tail (the §2.11-3 false completion). Pure.
 */
export function progressIterationBlock(b: ProgressIteration): string {
  let out = `## ${isoString(b.atMs ?? Date.now())}\n`;
  out += kv('iteration', b.iteration);
  out += kv('status', b.status);
  out += kv('spec', b.spec);
  out += kv('task', b.task);
  out += kv('reason', b.reason);
  out += kv('claude_rc', b.agentRc);
  out += kv('verdict', b.verdict);
  out += kv('promise', b.promise);
  out += kv('receipt', b.receipt);
  out += kv('receipt_exists', b.receiptExists);
  out += kv('plan_review_status', b.planReviewStatus);
  out += kv('completion_review_status', b.completionReviewStatus);
  out += kv('task_status', b.taskStatus);
  for (const [k, v] of Object.entries(b.extra ?? {})) {
    if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(k) && !RESERVED_KEYS.has(k)) out += kv(k, v);
  }
  out += kv('iter_log', b.iterLog);
  out += 'last_output:\n';
  for (const line of (b.lastOutput ?? []).slice(-10)) out += `  ${line.replace(/\r?\n/g, ' ')}\n`;
  out += '---\n';
  return out;
}

/** The terminal marker: blank line, `completion_reason=<REASON>`, `promise=COMPLETE` (§2.8). Pure. */
export function completionMarker(reason: CompletionReason): string {
  return `\ncompletion_reason=${reason.replace(/\r?\n/g, ' ')}\npromise=COMPLETE\n`;
}

/**
 * The reason of the completion marker in progress.txt text, or `undefined` when the run has none. Pure. Read by the
 * one progress.txt parser (sources/flowNext/progressTxt.ts), which also ignores a marker quoted in a `last_output:` tail.
 */
export function completionReasonOf(text: string): string | undefined {
  return parseProgressTxt(text).completionReason;
}

/**
 * Writer of a run's `progress.txt`. Synchronous on purpose: the completion marker must be written on every exit
 * path, including a signal handler and `process.on('exit')` where nothing asynchronous runs any more; each
 * call is a single small append.
 */
export class ProgressTxtWriter {
  readonly file: string;

  constructor(
    folder: string,
    private readonly runId: string,
  ) {
    this.file = runFilePaths(folder, runId).progress;
  }

  /** Writes the header when the file does not exist yet (a resumed writer leaves an existing file alone). */
  start(startedAtMs: number = Date.now()): void {
    mkdirSync(path.dirname(this.file), { recursive: true });
    try {
      appendFileSync(this.file, progressHeader(this.runId, startedAtMs), { flag: 'wx' });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }

  /** Appends one iteration block. Throws once the completion marker is written: a finished run takes no more blocks. */
  appendIteration(b: ProgressIteration): void {
    this.start();
    if (this.completionReason() !== undefined)
      throw new Error(`${this.file}: the run is already complete; no iteration block may follow the completion marker`);
    appendFileSync(this.file, progressIterationBlock(b), 'utf8');
  }

  /**
   * Writes the completion marker unless the file already has one: exactly once per run, whichever exit path
   * gets here first (fixes flow-next §2.11-5, where the interrupt path wrote none). Returns whether this call
   * wrote it.
   */
  complete(reason: CompletionReason): boolean {
    this.start();
    if (this.completionReason() !== undefined) return false;
    appendFileSync(this.file, completionMarker(reason), 'utf8');
    return true;
  }

  /** The marker's reason, or `undefined` while the run is unfinished (or the file is missing). */
  completionReason(): string | undefined {
    try {
      return completionReasonOf(readFileSync(this.file, 'utf8'));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }
}
