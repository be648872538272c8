import { createReadStream, readFileSync } from 'node:fs';
import { open, readdir, stat } from 'node:fs/promises';
import * as path from 'node:path';
import { createInterface } from 'node:readline';
import { removeIfExists } from '../store/atomicWrite';
import { normalizeCommand } from './commandPolicy';
import { ralphFile } from '../model/ralphPaths';

/**
 * What a gate run leaves in `.ralph/gates/` (seed-systems.md §3.10) and how it is read back: paths, the
 * summary text, failing lines, the tail, coverage gaps, retention. See gateRunner.ts for the table of files.
 */

/** Logs kept per label (`RALPH_GATE_KEEP`, §3.10). */
export const GATE_LOGS_KEPT = 10;
/** Largest summary, bytes; a longer one is cut to {@link SUMMARY_CUT_BYTES} plus a pointer to the log (§3.10). */
export const SUMMARY_MAX_BYTES = 2048;
export const SUMMARY_CUT_BYTES = 2000;
/** First failing lines kept in a result (and in the summary). */
export const FAILING_LINES_MAX = 20;
/** Lines of output kept as the result's tail (gate-run.sh prints the last 60). */
export const TAIL_LINES = 60;

/** `.ralph/gates/` of a workspace. */
export function gatesDir(folder: string): string {
  return ralphFile(folder, 'gates');
}

/** Paths of the `latest` breadcrumbs of `label`. */
export function latestGatePaths(
  folder: string,
  label: string,
): { log: string; exit: string; cmd: string; summary: string } {
  const dir = gatesDir(folder);
  return {
    log: path.join(dir, `${label}-latest.log`),
    exit: path.join(dir, `${label}-latest.exit`),
    cmd: path.join(dir, `${label}-latest.cmd`),
    summary: path.join(dir, `${label}-latest.summary`),
  };
}

/** `20260518T144012Z`: the UTC stamp in log names (§3.10). */
export function gateTimestamp(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
}

/** Inputs of {@link gateSummary}. */
export interface GateSummaryInput {
  label: string;
  exitCode: number;
  durationMs: number;
  /** Workspace-relative log path. */
  logRelPath: string;
  command: string;
  failingLines?: readonly string[];
  /** Lines of a `=== coverage gaps ===` section of the log, if any. */
  coverageGaps?: readonly string[];
}

/**
 * The text of `<L>-latest.summary` (§3.10): `label:`, `exit:`, `duration: Ns`, `log:`, `cmd:`, then an optional
 * `coverage_gaps:` block and (ours) a `failing:` block with the first failing lines, so the next prompt's
 * "Last gate state" names the failure. Longer than {@link SUMMARY_MAX_BYTES} bytes → cut at
 * {@link SUMMARY_CUT_BYTES} (on a character boundary) plus `[truncated — see <log>]`. Pure.
 */
export function gateSummary(s: GateSummaryInput): string {
  let text = `label: ${s.label}\nexit: ${s.exitCode}\nduration: ${Math.round(s.durationMs / 1000)}s\nlog: ${s.logRelPath}\ncmd: ${normalizeCommand(s.command)}\n`;
  if (s.coverageGaps?.length) text += `coverage_gaps:\n${s.coverageGaps.map((l) => `  ${l}`).join('\n')}\n`;
  if (s.failingLines?.length) text += `failing:\n${s.failingLines.map((l) => `  ${l}`).join('\n')}\n`;
  if (Buffer.byteLength(text) <= SUMMARY_MAX_BYTES) return text;
  return `${cutUtf8(text, SUMMARY_CUT_BYTES)}\n[truncated — see ${s.logRelPath}]\n`;
}

/** The longest prefix of `text` of at most `maxBytes` UTF-8 bytes that does not split a character. */
function cutUtf8(text: string, maxBytes: number): string {
  const buf = Buffer.from(text);
  let end = Math.min(maxBytes, buf.length);
  while (end > 0 && (buf[end]! & 0xc0) === 0x80) end--;
  return buf.subarray(0, end).toString();
}

/**
 * Line tests for "first failing lines" (after gate-run.sh's line-anchored grep, §3.10, plus mocha, TAP, tsc
 * anywhere on the line, ESLint's stylish rows and esbuild's ✘). Stack frames (`at …`) are left out on purpose:
 * they would crowd the 20 lines an attempt record carries.
 */
const FAILING_PATTERNS: readonly RegExp[] = [
  /^\s*FAIL\b/,
  /^\s*(?:✗|×|✖|✘)\s/,
  /^\s*not ok\b/,
  /^\s*\d+ failing\b/,
  /^\s+\d+\) \S/,
  /^\s*\w*Error(?::|\s\[)/,
  /^\s*AssertionError\b/,
  /\berror TS\d+\b/,
  /^\s*ERROR in\b/,
  /^\s*\d+:\d+\s+error\s/,
];

/** True when a line of gate output looks like a failure (see {@link FAILING_PATTERNS}). Pure. */
export function isFailingLine(line: string): boolean {
  return FAILING_PATTERNS.some((re) => re.test(line));
}

/** First failing lines in log bytes [start, end), trimmed at the right and cut at 500 characters. */
export async function scanFailingLines(file: string, start: number, end: number): Promise<string[]> {
  if (end <= start) return [];
  const out: string[] = [];
  const stream = createReadStream(file, { start, end: end - 1, encoding: 'utf8' });
  const lines = createInterface({ input: stream, crlfDelay: Infinity });
  try {
    for await (const line of lines) {
      if (isFailingLine(line)) out.push(line.trimEnd().slice(0, 500));
      if (out.length >= FAILING_LINES_MAX) break;
    }
  } finally {
    lines.close();
    stream.destroy();
  }
  return out;
}

/** Last {@link TAIL_LINES} lines of log bytes [start, end), reading at most the last 64 KiB. */
export async function readTail(file: string, start: number, end: number): Promise<string[]> {
  const from = Math.max(start, end - 64 * 1024);
  if (end <= from) return [];
  const fh = await open(file, 'r');
  try {
    const buf = Buffer.alloc(end - from);
    await fh.read(buf, 0, buf.length, from);
    const lines = buf.toString('utf8').split(/\r?\n/);
    if (from > start) lines.shift();
    if (lines.at(-1) === '') lines.pop();
    return lines.slice(-TAIL_LINES);
  } finally {
    await fh.close();
  }
}

export async function endsWithNewline(file: string, size: number): Promise<boolean> {
  if (size === 0) return true;
  const fh = await open(file, 'r');
  try {
    const b = Buffer.alloc(1);
    await fh.read(b, 0, 1, size - 1);
    return b[0] === 10;
  } finally {
    await fh.close();
  }
}

/**
 * Lines of a `=== coverage gaps ===` section of the command's output (the marker on a line of its own, after the
 * header, up to the next `===` line), at most 40; [] when absent.
 */
export function coverageGaps(logPath: string, headerChars: number): string[] {
  const lines = readFileSync(logPath, 'utf8').slice(headerChars).split(/\r?\n/);
  const at = lines.findIndex((l) => l.trim() === '=== coverage gaps ===');
  if (at < 0) return [];
  const out: string[] = [];
  for (const line of lines.slice(at + 1)) {
    if (line.startsWith('===')) break;
    if (line.trim() !== '') out.push(line.trimEnd());
    if (out.length >= 40) break;
  }
  return out;
}

const TIMESTAMPED = /^(.+)-(\d{8}T\d{6}Z)-(\d+)\.log$/;

/** Deletes all but the `keep` newest timestamped logs of `label` (and their `.exit` files); never `current`. */
export async function pruneLogs(dir: string, label: string, keep: number, current: string): Promise<void> {
  const entries: { file: string; ts: string; mtime: number }[] = [];
  for (const name of await readdir(dir)) {
    const m = TIMESTAMPED.exec(name);
    if (!m || m[1] !== label) continue;
    const file = path.join(dir, name);
    const mtime = await stat(file).then(
      (s) => s.mtimeMs,
      () => 0,
    );
    entries.push({ file, ts: m[2]!, mtime });
  }
  entries.sort((a, b) => (a.ts === b.ts ? b.mtime - a.mtime : a.ts < b.ts ? 1 : -1));
  const kept = new Set(entries.slice(0, Math.max(keep, 1)).map((e) => e.file));
  kept.add(current);
  for (const e of entries) {
    if (kept.has(e.file)) continue;
    await removeIfExists(e.file);
    await removeIfExists(e.file.replace(/\.log$/, '.exit'));
  }
}
