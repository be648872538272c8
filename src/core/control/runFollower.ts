import { EventEmitter } from 'node:events';
import { closeSync, fstatSync, openSync, readdirSync, readSync, statSync, watch, type FSWatcher } from 'node:fs';
import * as path from 'node:path';
import { claudeAdapter } from '../agents/claude';
import type { StreamMapper } from '../agents/adapter';
import {
  EXIT_CODES,
  parseRunLogLine,
  type EngineEvent,
  type EngineEventOf,
  type RunLogEntry,
  type UnknownRunLogEntry,
} from '../model/runEvent';
import { FINAL_RUN_STATES, runRecordSchema, type RunRecord } from '../model/runRecord';
import { isPidAlive } from '../process/processGroup';
import { parseProgressTxt, pidFromRunId } from '../sources/flowNext/progressTxt';
import { parseJsonFileText, readTextSync } from '../store/readJsonFile';
import { TokenLedger } from '../stream/ledger';
import type { FileProblem } from '../store/parseError';
import { thisHostNames } from './processAlive';
import { emptyRunView, reduceRunView, withFollowEnd, type FollowEnd, type RunView } from './runView';
import { flowRunDir, ralphRunDir } from './sentinels';

/**
 * Follows one run, whoever started it (this process, a terminal, a bot, the extension): reads its log from a byte
 * offset and reports new entries as they are appended, until the run ends.
 *
 * - Our runs (`.ralph/runs/<id>/`): the entries of `events.jsonl` (core/model/runEvent.ts). A partial last line
 *   (a write in progress) is left for the next read; a log that does not exist yet reads as empty; the run has
 *   ended when a `runEnded` entry was read, or run.json holds a final state (an exit the engine did not log); it
 *   has crashed when run.json is not final, the log has no more lines and the engine pid is dead on this host.
 * - flow-next driver runs (`scripts/ralph/runs/<id>/`, no events.jsonl): `progress.txt` and the iteration logs
 *   `iter-NNN.log`, as `ralph status` reads them. Their entries are synthesized: `runStarted` from the header,
 *   `iterationStarted` when `iter-NNN.log` appears, `tokens` (context gauge, cost) from its stream-json lines,
 *   `output` for the assistant's text, `iterationEnded` per progress block, `runEnded` from the completion marker.
 *   A v0.8 run id carries the driver's pid: dead without a marker = crashed.
 *
 * Use {@link RunFollower.poll} to read what is new now (synchronous; drive it from your own file watcher), or
 * {@link RunFollower.start} to have the follower poll on a timer and `fs.watch` and emit `entries` / `problem` /
 * `end`. Reads are bounded: at most `maxReadBytes` per poll per file.
 */

/** What one {@link RunFollower.poll} found. */
export interface RunFollowBatch {
  /** New entries in log order (unknown event types included, flagged `unknown`). */
  entries: (RunLogEntry | UnknownRunLogEntry)[];
  /** Lines that are not valid entries (file:line); they are skipped. */
  problems: FileProblem[];
  /** Byte offset in events.jsonl after the last whole line read (flow-next runs: in progress.txt). */
  offset: number;
  /** Set once, when the run is seen to have ended or crashed. */
  end: FollowEnd | null;
}

export interface RunFollowerOptions {
  /**
   * Byte offset in events.jsonl to start from (0 = replay the whole log; a value from an earlier batch's `offset`
   * to go on). Our runs only. Line numbers in problems count from this offset.
   */
  fromOffset?: number;
  /** Run kind; default: ours when `.ralph/runs/<id>/` exists, else flow-next's when `scripts/ralph/runs/<id>/` does, else ours. */
  kind?: 'ralph' | 'flow-next';
  /** Poll interval of {@link RunFollower.start}, ms (default 200). `fs.watch` wakes it sooner where it works. */
  pollMs?: number;
  /** Most bytes read per poll and file (default 8 MiB); the rest is read by the next polls. */
  maxReadBytes?: number;
  /**
   * How long run.json may say "final" without a `runEnded` entry in the log before the run counts as ended
   * anyway (an exit the engine did not log), ms (default 2000).
   */
  endGraceMs?: number;
  /** Liveness probe (tests). */
  isAlive?: (pid: number) => boolean;
  /** Names of this host (tests). */
  hostNames?: string[];
}

interface Tail {
  offset: number;
  lineNo: number;
}

/** Reads whole lines appended to `file` since `tail.offset`, at most `max` bytes; advances `tail`. Missing file: none. */
function readLines(file: string, tail: Tail, max: number): string[] {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  try {
    const size = fstatSync(fd).size;
    if (size < tail.offset) tail.offset = 0; // replaced or truncated: start over
    const len = Math.min(size - tail.offset, max);
    if (len <= 0) return [];
    const buf = Buffer.alloc(len);
    const got = readSync(fd, buf, 0, len, tail.offset);
    const end = buf.lastIndexOf(10, got - 1);
    if (end < 0) {
      // No newline in a capped read: a single line longer than `max`. It cannot be a valid entry; it is passed on
      // as read (the parser reports it) so the follower moves past it instead of stalling. Otherwise: a partial
      // last line, left for the next read.
      if (got === max) {
        tail.offset += got;
        return [buf.toString('utf8', 0, got)];
      }
      return [];
    }
    tail.offset += end + 1;
    const lines = buf.toString('utf8', 0, end).split('\n');
    return lines;
  } finally {
    closeSync(fd);
  }
}

const exists = (f: string) => {
  try {
    statSync(f);
    return true;
  } catch {
    return false;
  }
};

/** How a flow-next completion reason maps to an engine end state (NEEDS_HUMAN: blocked). */
function flowEndState(reason: string): EngineEventOf<'runEnded'>['state'] {
  if (reason === 'DONE' || reason === 'NO_WORK') return 'completed';
  if (reason === 'STOPPED') return 'stopped';
  if (reason === 'MAX_ITERATIONS') return 'capReached';
  if (reason.startsWith('NEEDS_HUMAN')) return 'blocked';
  return 'failed';
}

/** The keys of one progress.txt iteration block (both dialects), the tail after `last_output:` skipped. */
function parseFlowBlock(lines: readonly string[]): {
  iteration: number | null;
  task: string | null;
  kv: Record<string, string>;
} {
  const head = lines.slice(0, Math.max(0, lines.indexOf('last_output:')) || lines.length);
  const info = parseProgressTxt(`${head.join('\n')}\n`);
  const kv: Record<string, string> = {};
  for (const l of head) {
    for (const tok of /^status=\S*\s+(?:epic|spec)=/.test(l) ? l.split(/\s+/) : [l]) {
      const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(tok);
      if (m) kv[m[1]!] = m[2]!.trim();
    }
  }
  return { iteration: info.iteration, task: info.task, kv };
}

/**
 * Follower of one run; see the module docstring. Events: `entries` (a non-empty batch), `problem` (a bad line),
 * `end` (once). Call {@link close} when done (it is called for you after `end`).
 */
export class RunFollower extends EventEmitter<{
  entries: [(RunLogEntry | UnknownRunLogEntry)[]];
  problem: [FileProblem];
  end: [FollowEnd];
}> {
  readonly kind: 'ralph' | 'flow-next';
  /** The run's folder. */
  readonly dir: string;
  private readonly tail: Tail;
  private readonly maxRead: number;
  private readonly alive: (pid: number) => boolean;
  private readonly hosts: string[];
  private seq = 0;
  private finalSeenAt: number | undefined;
  private ended: FollowEnd | null = null;
  private timer: NodeJS.Timeout | undefined;
  private watcher: FSWatcher | undefined;
  // flow-next state
  private flow: {
    headerSeen: boolean;
    pendingReason?: string;
    block: string[];
    inBlock: boolean;
    iteration: number;
    iterTail: Tail | null;
    iterFile: string | null;
    mapper: StreamMapper | null;
    ledger: TokenLedger | null;
    lastCost: number;
  } = {
    headerSeen: false,
    block: [],
    inBlock: false,
    iteration: 0,
    iterTail: null,
    iterFile: null,
    mapper: null,
    ledger: null,
    lastCost: 0,
  };

  constructor(
    readonly folder: string,
    readonly runId: string,
    private readonly opts: RunFollowerOptions = {},
  ) {
    super();
    const ours = ralphRunDir(folder, runId);
    const theirs = flowRunDir(folder, runId);
    this.kind = opts.kind ?? (exists(ours) ? 'ralph' : exists(theirs) ? 'flow-next' : 'ralph');
    this.dir = this.kind === 'ralph' ? ours : theirs;
    this.tail = { offset: this.kind === 'ralph' ? (opts.fromOffset ?? 0) : 0, lineNo: 0 };
    this.maxRead = opts.maxReadBytes ?? 8 * 1024 * 1024;
    this.alive = opts.isAlive ?? isPidAlive;
    this.hosts = opts.hostNames ?? thisHostNames();
  }

  /** Byte offset after the last whole line read. */
  get offset(): number {
    return this.tail.offset;
  }

  /** The end, once seen. */
  get end(): FollowEnd | null {
    return this.ended;
  }

  /** The log file followed: events.jsonl, or progress.txt for a flow-next run. */
  get file(): string {
    return path.join(this.dir, this.kind === 'ralph' ? 'events.jsonl' : 'progress.txt');
  }

  /**
   * Reads what is new now. Synchronous, bounded. After the end is reported once, further polls return empty
   * batches with the same `end`.
   */
  poll(): RunFollowBatch {
    if (this.ended) return { entries: [], problems: [], offset: this.tail.offset, end: this.ended };
    const batch = this.kind === 'ralph' ? this.pollRalph() : this.pollFlow();
    if (batch.end) this.ended = batch.end;
    return batch;
  }

  private pollRalph(): RunFollowBatch {
    const entries: (RunLogEntry | UnknownRunLogEntry)[] = [];
    const problems: FileProblem[] = [];
    let end: FollowEnd | null = null;
    const read = () => {
      for (const text of readLines(this.file, this.tail, this.maxRead)) {
        this.tail.lineNo++;
        if (text.trim() === '') continue;
        const p = parseRunLogLine(text, this.file, this.tail.lineNo, this.seq + 1);
        if (p.kind === 'problem') {
          problems.push(p.problem);
          continue;
        }
        this.seq = Math.max(this.seq, p.entry.seq);
        entries.push(p.entry);
        if (p.entry.type === 'runEnded' && !('unknown' in p.entry))
          end = { kind: 'ended', exitCode: (p.entry as Extract<RunLogEntry, { type: 'runEnded' }>).exitCode };
      }
    };
    read();
    if (!end && entries.length === 0) {
      const rec = this.record();
      if (rec && FINAL_RUN_STATES.includes(rec.state)) {
        // The engine writes run.json's end just before its `runEnded` event: give the event a moment to land.
        this.finalSeenAt ??= Date.now();
        if (Date.now() - this.finalSeenAt >= (this.opts.endGraceMs ?? 2000)) {
          read();
          end ??= { kind: 'ended', exitCode: recordExitCode(rec) };
        }
      } else if (rec && this.hosts.includes(rec.host) && !this.alive(rec.pid)) {
        read();
        end ??= {
          kind: 'crashed',
          reason: `the engine (pid ${rec.pid}) is gone without ending the run`,
          at: rec.updatedAt ?? null,
          exitCode: 1,
        };
      }
    }
    return { entries, problems, offset: this.tail.offset, end };
  }

  private record(): RunRecord | undefined {
    const file = path.join(this.dir, 'run.json');
    const text = readTextSync(file);
    if (text === undefined) return undefined;
    const r = parseJsonFileText(file, text, runRecordSchema);
    return r.ok ? r.value : undefined;
  }

  /**
   * The time of the entries made from a flow-next run's files: the modification time of the file they were read
   * from (no line there carries a time), so a view read long after the run says when it happened, not when it was
   * read. Null: now.
   */
  private flowAt: string | null = null;

  private entry(e: EngineEvent, at: string = this.flowAt ?? new Date().toISOString()): RunLogEntry {
    return { ...e, seq: ++this.seq, at, lane: 0 } as RunLogEntry;
  }

  private pollFlow(): RunFollowBatch {
    const entries: RunLogEntry[] = [];
    const f = this.flow;
    let end: FollowEnd | null = null;
    // 1. The rest of the current iteration's log; 2. progress.txt (header, blocks, marker); 3. a newer iteration log.
    this.drainIterLog(entries);
    this.flowAt = mtimeIso(this.file);
    for (const raw of readLines(this.file, this.tail, this.maxRead)) {
      const line = raw.replace(/\r$/, '');
      if (!f.headerSeen) {
        if (/^Run:\s*\S+/.test(line)) {
          f.headerSeen = true;
          entries.push(
            this.entry({
              type: 'runStarted',
              runId: this.runId,
              folder: this.folder,
              source: 'flow-next',
              agent: 'claude',
              maxIterations: 0,
              gates: {},
            }),
          );
        }
        continue;
      }
      if (line.startsWith('## ')) {
        f.inBlock = true;
        f.block = [line];
        continue;
      }
      if (f.inBlock) {
        f.block.push(line);
        if (line !== '---') continue;
        f.inBlock = false;
        const b = parseFlowBlock(f.block);
        const it = b.iteration ?? f.iteration;
        const item = b.task ? { source: 'flow-next' as const, id: b.task, title: b.task } : null;
        if (it > f.iteration) {
          f.iteration = it;
          entries.push(
            this.entry({
              type: 'iterationStarted',
              iteration: it,
              item,
              attempt: 1,
              attemptKind: 'first',
              purpose: 'work',
            }),
          );
        }
        const detail = [
          b.kv.status && `status=${b.kv.status}`,
          b.task && `task=${b.task}`,
          b.kv.reason && `reason=${b.kv.reason}`,
          b.kv.verdict && `verdict=${b.kv.verdict}`,
        ]
          .filter(Boolean)
          .join(' ');
        const rc = b.kv.claude_rc !== undefined && /^-?\d+$/.test(b.kv.claude_rc) ? Number(b.kv.claude_rc) : null;
        entries.push(
          this.entry({
            type: 'iterationEnded',
            iteration: it,
            ending: b.kv.promise?.toUpperCase() === 'COMPLETE' ? 'complete' : 'natural',
            detail,
            totals: {
              tokens: f.ledger?.snapshot().tokens ?? { input: 0, output: 0, cacheRead: 0, cacheCreation: 0 },
              costUsd: f.lastCost,
            },
            exitCode: rc,
          }),
        );
        continue;
      }
      const m = /^completion_reason=(.*)$/.exec(line);
      if (m) {
        f.pendingReason = m[1]!.trim();
        continue;
      }
      if (line.trim() === 'promise=COMPLETE' && f.pendingReason !== undefined) {
        const reason = f.pendingReason;
        const state = flowEndState(reason);
        entries.push(
          this.entry({
            type: 'runEnded',
            state,
            reason: `completion_reason=${reason}`,
            completionReason: reason,
            exitCode: EXIT_CODES[state],
            iterations: f.iteration,
            costUsd: 0,
            done: 0,
            total: 0,
          }),
        );
        end = { kind: 'ended', exitCode: EXIT_CODES[state] };
      }
    }
    const newest = end ? undefined : newestIterLog(this.dir);
    if (newest && (newest.n > f.iteration || (newest.n === f.iteration && f.iterFile !== newest.file))) {
      if (newest.n > f.iteration)
        entries.push(
          this.entry({
            type: 'iterationStarted',
            iteration: newest.n,
            item: null,
            attempt: 1,
            attemptKind: 'first',
            purpose: 'work',
          }),
        );
      f.iteration = newest.n;
      f.iterFile = newest.file;
      f.iterTail = { offset: 0, lineNo: 0 };
      f.mapper = claudeAdapter.createMapper();
      f.ledger = new TokenLedger({ agent: 'claude' });
      f.lastCost = 0;
      this.drainIterLog(entries);
    }
    if (!end && entries.length === 0 && exists(this.file)) {
      const idPid = pidFromRunId(this.runId);
      if (idPid && this.hosts.some((h) => idPid.hostAndActor.startsWith(`${h}-`)) && !this.alive(idPid.pid)) {
        end = {
          kind: 'crashed',
          reason: `flow-next's ralph.sh (pid ${idPid.pid}) is gone without a completion marker`,
          at: null,
          exitCode: 1,
        };
      }
    }
    return { entries, problems: [], offset: this.tail.offset, end };
  }

  private drainIterLog(out: RunLogEntry[]): void {
    const f = this.flow;
    if (!f.iterFile || !f.iterTail || !f.mapper || !f.ledger) return;
    this.flowAt = mtimeIso(f.iterFile);
    let tokensChanged = false;
    for (const text of readLines(f.iterFile, f.iterTail, this.maxRead)) {
      if (!text.trim().startsWith('{')) continue;
      let obj: unknown;
      try {
        obj = JSON.parse(text);
      } catch {
        continue;
      }
      if (!obj || typeof obj !== 'object') continue;
      for (const ev of f.mapper.map(obj as Record<string, unknown>)) {
        f.ledger.apply(ev);
        if (ev.type === 'usage' || ev.type === 'result') tokensChanged = true;
        if (ev.type === 'text' && !ev.subagent && !ev.synthetic) {
          for (const l of ev.text
            .split('\n')
            .filter((x) => x.trim())
            .slice(-3))
            out.push(this.entry({ type: 'output', iteration: f.iteration, text: l }));
        }
      }
    }
    if (tokensChanged) {
      const s = f.ledger.snapshot();
      f.lastCost = s.costUsd ?? f.lastCost;
      out.push(
        this.entry({
          type: 'tokens',
          iteration: f.iteration,
          contextTokens: s.contextTokens,
          contextWindow: s.contextWindow,
          rotateAt: s.thresholds.rotate,
          warnAt: s.thresholds.warn,
          totals: s.tokens,
          costUsd: s.costUsd,
        }),
      );
    }
  }

  /**
   * Polls every `pollMs` (and when `fs.watch` reports a change in the run's folder), emitting `entries`,
   * `problem` and finally `end`, after which it stops. Returns this.
   */
  start(): this {
    if (this.timer) return this;
    const tick = () => {
      let b: RunFollowBatch;
      try {
        b = this.poll();
      } catch (err) {
        this.emit('problem', { file: this.file, line: 0, column: 0, message: (err as Error).message });
        return;
      }
      if (b.entries.length) this.emit('entries', b.entries);
      for (const p of b.problems) this.emit('problem', p);
      if (b.end) {
        this.close();
        this.emit('end', b.end);
      }
    };
    this.timer = setInterval(tick, this.opts.pollMs ?? 200);
    try {
      this.watcher = watch(this.dir, () => tick());
      this.watcher.on('error', () => this.watcher?.close());
    } catch {
      // The folder does not exist yet: the timer finds the log when it appears.
    }
    setImmediate(tick);
    return this;
  }

  /** Stops polling and watching. */
  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.watcher?.close();
    this.watcher = undefined;
  }
}

/** The `iter-NNN.log` with the highest number in a flow-next run folder. */
function newestIterLog(dir: string): { n: number; file: string } | undefined {
  let best: { n: number; file: string } | undefined;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return undefined;
  }
  for (const name of names) {
    const m = /^iter-(\d+)\.log$/.exec(name);
    if (m && (!best || Number(m[1]) > best.n)) best = { n: Number(m[1]), file: path.join(dir, name) };
  }
  return best;
}

/** The exit code a final run.json stands for (its `endState`, else its `state`). */
export function recordExitCode(rec: RunRecord): number {
  if (rec.endState && rec.endState !== 'crashed') return EXIT_CODES[rec.endState];
  if (rec.endState === 'crashed') return 1;
  return rec.state === 'completed' ? 0 : rec.state === 'stopped' ? 3 : 1;
}

/**
 * The view of a run as its log says now (one-shot, for `ralph status`): reads the whole log in bounded polls (at
 * most `maxBytes`, default 256 MiB; a longer log's view covers its start) and applies the follower's end
 * (crashed). `onView`, when given, gets the view after each entry, oldest first (the dashboard replays a past run's
 * chart, gates and log from them); the returned view is the last one with the end applied. Never throws for a bad
 * line (problems are skipped); throws only for I/O errors other than a missing file.
 */
export function readRunViewNow(
  folder: string,
  runId: string,
  opts: RunFollowerOptions & { maxBytes?: number; onView?: (v: RunView) => void } = {},
): RunView {
  const f = new RunFollower(folder, runId, { endGraceMs: 0, ...opts });
  let v = emptyRunView(runId, f.kind);
  const max = opts.maxBytes ?? 256 * 1024 * 1024;
  const each = opts.onView;
  for (;;) {
    const b = f.poll();
    for (const e of b.entries) {
      v = reduceRunView(v, e);
      each?.(v);
    }
    if (b.end) return withFollowEnd(v, b.end);
    if (!b.entries.length && !b.problems.length) {
      // Nothing new: one more poll tells an end seen only once the log is exhausted (crash, final run.json).
      const last = f.poll();
      for (const e of last.entries) {
        v = reduceRunView(v, e);
        each?.(v);
      }
      return last.end ? withFollowEnd(v, last.end) : v;
    }
    if (f.offset >= max) return v;
  }
}

/** A file's modification time as ISO-8601, or null when it cannot be read. */
function mtimeIso(file: string): string | null {
  try {
    return statSync(file).mtime.toISOString();
  } catch {
    return null;
  }
}
