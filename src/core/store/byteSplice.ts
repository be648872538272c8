import { isUtf8 } from 'node:buffer';

/**
 * A text edit applied to a file's bytes when the file is not UTF-8 text (the agent
 * appended a byte that is not UTF-8 so that the put-back of its tick would be refused). The planners edit text decoded
 * with replacement characters (U+FFFD), so writing their text back would replace the file's other bytes; this places
 * only the change into the original bytes.
 *
 * `raw`: the file's bytes; `before`: `raw` decoded as UTF-8 (lossy, what the planner read); `after`: the planner's
 * text. The edit must keep the number of lines (a put-back changes marks inside lines: `[x]` → `[ ]`, a status
 * value). Each changed line whose bytes are valid UTF-8 is replaced whole; a changed line that holds the invalid
 * bytes itself is changed only between the longest common prefix and suffix of its old and new text, placed by
 * whichever side of the change has exactly the decoded bytes. Every other byte is kept.
 *
 * Returns the new bytes, or `null` when the change cannot be placed exactly (a line added or removed, `before` not
 * the decoding of `raw`, a changed span that itself covers an invalid byte): the caller then refuses the write.
 */
export function spliceChangedLines(raw: Buffer, before: string, after: string): Buffer | null {
  const rawLines = splitBytesKeepingNewlines(raw);
  const oldLines = splitKeepingNewlines(before);
  const newLines = splitKeepingNewlines(after);
  if (rawLines.length !== oldLines.length || newLines.length !== oldLines.length) return null;
  const out: Buffer[] = [];
  for (let i = 0; i < rawLines.length; i++) {
    const bytes = rawLines[i]!;
    const was = oldLines[i]!;
    const now = newLines[i]!;
    if (bytes.toString('utf8') !== was) return null;
    if (was === now) {
      out.push(bytes);
      continue;
    }
    if (isUtf8(bytes)) {
      out.push(Buffer.from(now, 'utf8'));
      continue;
    }
    const placed = spliceInLine(bytes, was, now);
    if (!placed) return null;
    out.push(placed);
  }
  return Buffer.concat(out);
}

/** One line's change placed between the bytes of its unchanged prefix or suffix (see {@link spliceChangedLines}). */
function spliceInLine(bytes: Buffer, was: string, now: string): Buffer | null {
  let p = 0;
  while (p < was.length && p < now.length && was[p] === now[p]) p++;
  let s = 0;
  while (s < was.length - p && s < now.length - p && was[was.length - 1 - s] === now[now.length - 1 - s]) s++;
  const removed = was.slice(p, was.length - s);
  if (removed.includes('\ufffd')) return null;
  const removedBytes = Buffer.from(removed, 'utf8');
  const inserted = Buffer.from(now.slice(p, now.length - s), 'utf8');
  // Anchored by the prefix: its bytes are exactly its text's, so the change starts right after them.
  const prefix = Buffer.from(was.slice(0, p), 'utf8');
  if (
    bytes.subarray(0, prefix.length).equals(prefix) &&
    bytes.subarray(prefix.length, prefix.length + removedBytes.length).equals(removedBytes)
  ) {
    return Buffer.concat([prefix, inserted, bytes.subarray(prefix.length + removedBytes.length)]);
  }
  // Anchored by the suffix (the invalid bytes are before the change).
  const suffix = Buffer.from(was.slice(was.length - s), 'utf8');
  const end = bytes.length - suffix.length;
  if (
    end - removedBytes.length >= 0 &&
    bytes.subarray(end).equals(suffix) &&
    bytes.subarray(end - removedBytes.length, end).equals(removedBytes)
  ) {
    return Buffer.concat([bytes.subarray(0, end - removedBytes.length), inserted, suffix]);
  }
  return null;
}

function splitKeepingNewlines(text: string): string[] {
  const out: string[] = [];
  let start = 0;
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) {
    out.push(text.slice(start, i + 1));
    start = i + 1;
  }
  if (start < text.length || out.length === 0) out.push(text.slice(start));
  return out;
}

function splitBytesKeepingNewlines(raw: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let start = 0;
  for (let i = raw.indexOf(0x0a); i >= 0; i = raw.indexOf(0x0a, i + 1)) {
    out.push(raw.subarray(start, i + 1));
    start = i + 1;
  }
  if (start < raw.length || out.length === 0) out.push(raw.subarray(start));
  return out;
}
