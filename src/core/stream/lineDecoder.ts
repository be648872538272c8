/**
 * NDJSON line decoding for agent output (agent-streams.md §7, pitfalls 1–5).
 *
 * Bytes are split on 0x0A first and each complete line is decoded as UTF-8 as a whole, so a multi-byte
 * character cut by a chunk boundary is never mangled (the alternative to a streaming text decoder the
 * pitfalls list names). Pieces of an unfinished line are kept in an array and joined once when the newline
 * arrives: cost stays linear in the line's length however many chunks it spans. A line longer than
 * `maxLineBytes` is dropped (its pieces are released as soon as the limit is passed) and counted.
 */

/** One decoded line: a JSON object, or text that is not a JSON object. */
export type DecodedLine =
  { kind: 'json'; value: Record<string, unknown>; lineNo: number } | { kind: 'text'; text: string; lineNo: number };

/** Counters and the bounded sample of non-JSON lines, for diagnostics and `session inspect`. */
export interface DecoderStats {
  /** Lines seen (blank lines included, dropped long lines included). */
  lines: number;
  /** Lines decoded to a JSON object. */
  jsonLines: number;
  /** Non-blank lines that were not a JSON object (noise, banners, damaged JSON, JSON scalars or arrays). */
  nonJsonLines: number;
  /** Of those, lines that started with `{` but failed to parse (possibly damaged or truncated JSON). */
  malformedJsonLines: number;
  /** Lines longer than `maxLineBytes`, dropped unread. */
  droppedLongLines: number;
  /** Bytes consumed. */
  bytes: number;
  /** The latest non-JSON lines (at most `nonJsonSampleSize`, each cut to `nonJsonSampleChars`). */
  nonJsonSamples: string[];
}

export interface LineDecoderOptions {
  /** Longest line kept, in bytes; default 64 MiB (config `maxLineBytes`, agent-streams.md §7 pitfall 5). */
  maxLineBytes?: number;
  /** How many non-JSON lines to keep as samples; default 20. */
  nonJsonSampleSize?: number;
  /** Characters kept of each sample; default 2000. */
  nonJsonSampleChars?: number;
}

/**
 * Where decoded lines go, synchronously: `json` for a line that is a JSON object, `text` for any other non-blank line
 * (cut to `nonJsonSampleChars`). Two methods instead of one {@link DecodedLine} per line: a stream of hundreds of
 * thousands of lines allocates no wrapper for each.
 */
export interface LineSink {
  json(value: Record<string, unknown>, lineNo: number): void;
  text(text: string, lineNo: number): void;
}

export const DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024;

const LF = 0x0a;
const CR = 0x0d;

/**
 * Incremental decoder: `push` chunks as they arrive, `end` once at EOF (a last line without a newline is
 * decoded then). Each decoded line is handed to the sink synchronously. Never throws on bad input.
 */
export class LineDecoder {
  readonly stats: DecoderStats = {
    lines: 0,
    jsonLines: 0,
    nonJsonLines: 0,
    malformedJsonLines: 0,
    droppedLongLines: 0,
    bytes: 0,
    nonJsonSamples: [],
  };
  private readonly maxLineBytes: number;
  private readonly sampleSize: number;
  private readonly sampleChars: number;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** True while skipping the rest of a line that exceeded the limit. */
  private discarding = false;
  private ended = false;
  private readonly sink: LineSink;

  /** `sink`: a {@link LineSink}, or a function given each line as a {@link DecodedLine}. */
  constructor(sink: LineSink | ((line: DecodedLine) => void), opts: LineDecoderOptions = {}) {
    this.sink =
      typeof sink === 'function'
        ? {
            json: (value, lineNo) => sink({ kind: 'json', value, lineNo }),
            text: (text, lineNo) => sink({ kind: 'text', text, lineNo }),
          }
        : sink;
    this.maxLineBytes = opts.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
    this.sampleSize = opts.nonJsonSampleSize ?? 20;
    this.sampleChars = opts.nonJsonSampleChars ?? 2000;
  }

  /** Feeds a chunk. Strings are encoded as UTF-8 (prefer passing the raw Buffer). */
  push(chunk: Uint8Array | string): void {
    if (this.ended) return;
    const buf =
      typeof chunk === 'string'
        ? Buffer.from(chunk, 'utf8')
        : Buffer.isBuffer(chunk)
          ? chunk
          : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    this.stats.bytes += buf.length;
    let start = 0;
    for (;;) {
      const nl = buf.indexOf(LF, start);
      if (nl === -1) break;
      this.completeLine(buf, start, nl);
      start = nl + 1;
    }
    if (start < buf.length) this.keep(buf, start, buf.length);
  }

  /** Marks EOF: decodes a final line that had no newline. Further pushes are ignored. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    if (this.discarding) {
      this.discarding = false;
      this.stats.lines++;
      return;
    }
    if (this.pendingBytes > 0) {
      const line = this.takePending();
      this.stats.lines++;
      this.decode(line, 0, line.length);
    }
  }

  private keep(buf: Buffer, start: number, end: number): void {
    if (this.discarding) return;
    const len = end - start;
    if (this.pendingBytes + len > this.maxLineBytes) {
      this.pending = [];
      this.pendingBytes = 0;
      this.discarding = true;
      this.stats.droppedLongLines++;
      return;
    }
    // Copy: the caller may reuse its chunk buffer; a slice would also pin the whole chunk in memory.
    this.pending.push(Buffer.from(buf.subarray(start, end)));
    this.pendingBytes += len;
  }

  private completeLine(buf: Buffer, start: number, end: number): void {
    this.stats.lines++;
    if (this.discarding) {
      this.discarding = false;
      return;
    }
    if (this.pendingBytes === 0) {
      if (end - start > this.maxLineBytes) {
        this.stats.droppedLongLines++;
        return;
      }
      this.decode(buf, start, end);
      return;
    }
    if (this.pendingBytes + (end - start) > this.maxLineBytes) {
      this.pending = [];
      this.pendingBytes = 0;
      this.stats.droppedLongLines++;
      return;
    }
    this.pending.push(buf.subarray(start, end));
    this.pendingBytes += end - start;
    const line = this.takePending();
    this.decode(line, 0, line.length);
  }

  private takePending(): Buffer {
    const line = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending, this.pendingBytes);
    this.pending = [];
    this.pendingBytes = 0;
    return line;
  }

  private decode(buf: Buffer, start: number, end: number): void {
    if (end > start && buf[end - 1] === CR) end--;
    // Skip leading whitespace cheaply; blank lines produce nothing.
    let i = start;
    while (i < end && (buf[i] === 0x20 || buf[i] === 0x09 || buf[i] === CR)) i++;
    if (i === end) return;
    const lineNo = this.stats.lines;
    const text = buf.toString('utf8', i, end);
    if (buf[i] === 0x7b /* { */) {
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        this.nonJson(text, lineNo, true);
        return;
      }
      if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
        this.stats.jsonLines++;
        this.sink.json(value as Record<string, unknown>, lineNo);
        return;
      }
    }
    this.nonJson(text, lineNo, false);
  }

  private nonJson(text: string, lineNo: number, malformed: boolean): void {
    this.stats.nonJsonLines++;
    if (malformed) this.stats.malformedJsonLines++;
    const samples = this.stats.nonJsonSamples;
    if (this.sampleSize > 0) {
      if (samples.length >= this.sampleSize) samples.shift();
      samples.push(text.length > this.sampleChars ? text.slice(0, this.sampleChars) + '…' : text);
    }
    this.sink.text(text.length > this.sampleChars ? text.slice(0, this.sampleChars) : text, lineNo);
  }
}

/** Decodes a whole buffer or string at once (tests, small files). */
export function decodeAll(
  input: Uint8Array | string,
  opts?: LineDecoderOptions,
): { lines: DecodedLine[]; stats: DecoderStats } {
  const lines: DecodedLine[] = [];
  const d = new LineDecoder((l) => lines.push(l), opts);
  d.push(input);
  d.end();
  return { lines, stats: d.stats };
}
