import type { LogLine } from '../../src/protocol/dashboard';
import { type LogFilter, matchesFilter } from './filters';

/**
 * The page's bounded log: the newest `capacity` lines in a ring, and the filtered view over them (the positions
 * of the matching lines, oldest first). Appending is O(lines appended); changing the filter is O(capacity).
 * Memory stays bounded however many lines stream in (a million lines must not grow the page's memory).
 */
export class LogBuffer {
  private readonly ring: (LogLine | undefined)[];
  /** Lines ever appended since the last reset: absolute position of the next line. */
  private pushed = 0;
  /** Absolute positions of matching lines; entries before `head` are dropped (compacted now and then). */
  private matches: number[] = [];
  private head = 0;
  private filter: LogFilter;

  constructor(
    readonly capacity: number,
    filter: LogFilter,
  ) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new Error(`LogBuffer capacity must be a positive integer, got ${capacity}`);
    this.ring = new Array<LogLine | undefined>(capacity);
    this.filter = filter;
  }

  /** Lines held (at most `capacity`). */
  get size(): number {
    return Math.min(this.pushed, this.capacity);
  }

  /** Lines pushed out of the buffer by newer ones since the last reset. */
  get dropped(): number {
    return Math.max(0, this.pushed - this.capacity);
  }

  /** Lines of the filtered view. */
  get viewSize(): number {
    return this.matches.length - this.head;
  }

  /** The `i`-th line of the filtered view (0 = oldest shown), or undefined out of range. */
  viewLine(i: number): LogLine | undefined {
    const abs = this.matches[this.head + i];
    return abs === undefined ? undefined : this.ring[abs % this.capacity];
  }

  /** Every held line, oldest first (for tests and "copy"). */
  lines(): LogLine[] {
    const out: LogLine[] = [];
    for (let abs = this.dropped; abs < this.pushed; abs++) out.push(this.ring[abs % this.capacity]!);
    return out;
  }

  /** Empties the buffer and fills it with `lines` (a snapshot). */
  reset(lines: readonly LogLine[]): void {
    this.ring.fill(undefined);
    this.pushed = 0;
    this.matches = [];
    this.head = 0;
    this.append(lines);
  }

  /** Appends lines (oldest first); the oldest held lines make room. */
  append(lines: readonly LogLine[]): void {
    for (const line of lines) {
      const abs = this.pushed++;
      this.ring[abs % this.capacity] = line;
      if (matchesFilter(line, this.filter)) this.matches.push(abs);
    }
    const first = this.dropped;
    while (this.head < this.matches.length && this.matches[this.head]! < first) this.head++;
    // Compact once the dropped prefix outweighs the live part, so the array stays O(capacity).
    if (this.head > this.capacity && this.head > this.matches.length / 2) {
      this.matches = this.matches.slice(this.head);
      this.head = 0;
    }
  }

  /** Applies a new filter to the held lines. */
  setFilter(filter: LogFilter): void {
    this.filter = filter;
    this.matches = [];
    this.head = 0;
    for (let abs = this.dropped; abs < this.pushed; abs++)
      if (matchesFilter(this.ring[abs % this.capacity]!, filter)) this.matches.push(abs);
  }
}
