import { execa } from 'execa';
import { createReadStream, readFileSync } from 'node:fs';
import { copyFile, mkdir, open, readdir, rename, stat } from 'node:fs/promises';
import { constants as osConstants } from 'node:os';
import * as path from 'node:path';
import { createInterface } from 'node:readline';
import { randomBytes } from 'node:crypto';
import { endMarkedProcesses, endProcessGroup, trackProcessGroup, untrackProcessGroup } from '../process/processGroup';
import { removeIfExists, writeTextAtomic } from '../store/atomicWrite';
import { GATE_LABELS, normalizeCommand, type GateLabel } from './commandPolicy';
import { ralphFile } from '../model/ralphPaths';

/**
 * The gate runner (seed-systems.md §3.10, `gate-run.sh`, reduced to what the loop engine needs; the guard's
 * lock/join/wait protocol comes later and extends this): runs one verification command with `bash -c` from the
 * workspace root in its own process group, with a watchdog, and leaves the seed's artifacts under `.ralph/gates/`
 * so the completion guard, the UI and the agent all read the same breadcrumbs:
 *
 * | file | content |
 * |---|---|
 * | `<L>-<YYYYMMDDTHHMMSSZ>-<pid>.log` | header `=== gate-run label=… ts=… cwd=…`, `=== cmd: …`, `===`; the command's stdout+stderr interleaved; footer `=== gate-run end exit=N duration=Ns ===` |
 * | `<L>-<…>-<pid>.exit` | the exit code of that run, no newline |
 * | `<L>-latest.log` | a copy of the newest log (a copy, not a symlink: readable on every file system and by the webview) |
 * | `<L>-latest.exit` | exit code, no newline |
 * | `<L>-latest.cmd` | the command, whitespace-normalised, no newline (compared with the `[gates]` pin, §3.6.1) |
 * | `<L>-latest.summary` | on failure only: `label:`, `exit:`, `duration: Ns`, `log:`, `cmd:`, optional `coverage_gaps:` and `failing:` blocks; ≤ 2048 bytes; deleted on success |
 * | `last-failed-label`, `last-failed-log` | label and `.ralph/gates/<L>-latest.log` of the last failure, no newline |
 *
 * `<pid>` is the gate command's pid (= its process group id). The 10 newest logs per label are kept
 * (`RALPH_GATE_KEEP` 10; the seed's README says 5, the code 10: §3.15-6). Exit codes: the command's own; 124
 * after a timeout (GNU `timeout` convention, as gate-run.sh normalises signal deaths); 130 when cancelled
 * through the AbortSignal; 128+n when something else killed it with signal n; 127 when bash could not start.
 */

/** Default between SIGTERM and SIGKILL of a timed-out or cancelled gate, ms (`RALPH_GATE_KILL_GRACE` 10 s, §3.10). */
export const GATE_KILL_GRACE_MS = 10_000;
/** Default gate timeout, ms (`RALPH_GATE_TIMEOUT` 1200 s, §3.10; config `gateTimeoutMs`). */
export const GATE_TIMEOUT_MS = 1_200_000;
/** Logs kept per label (`RALPH_GATE_KEEP`, §3.10). */
export const GATE_LOGS_KEPT = 10;
/** Environment variable marking every process of one gate run, so detached ones are ended with it. */
export const GATE_MARKER = 'RALPH_GATE_TOKEN';
/** Largest summary, bytes; a longer one is cut to {@link SUMMARY_CUT_BYTES} plus a pointer to the log (§3.10). */
export const SUMMARY_MAX_BYTES = 2048;
export const SUMMARY_CUT_BYTES = 2000;
/** First failing lines kept in a result (and in the summary). */
export const FAILING_LINES_MAX = 20;
/** Lines of output kept as the result's tail (gate-run.sh prints the last 60). */
export const TAIL_LINES = 60;

/** Exit code of a gate that ran out of time (GNU `timeout`; gate-run.sh maps signal deaths to it, §3.10). */
export const EXIT_TIMEOUT = 124;
/** Exit code of a gate cancelled through its AbortSignal (the shell's code for SIGINT). */
export const EXIT_CANCELLED = 130;
/** Exit code when bash itself could not be started. */
export const EXIT_SPAWN_FAILED = 127;

/** `12s`, or `0.3s` below ten seconds when not whole: how durations and limits appear in logs. */
function secs(ms: number): string {
  return ms >= 10_000 || ms % 1000 === 0 ? `${Math.round(ms / 1000)}s` : `${(ms / 1000).toFixed(1)}s`;
}

export interface GateRunOptions {
  /** Workspace root: the command's working directory; artifacts go to `<folder>/.ralph/gates/`. */
  folder: string;
  /** A tier (`basic|full|final`) or kind (`unit|integration|e2e|lint|format`) label, §3.9. Others throw. */
  label: GateLabel;
  /** Shell text, run as `bash -c <command>`. */
  command: string;
  /** Longest run before the group gets SIGTERM, ms (config `gateTimeoutMs`, default {@link GATE_TIMEOUT_MS}). */
  timeoutMs?: number;
  /** Cancels the run the same way as a timeout (SIGTERM, grace, SIGKILL); the result then has `cancelled: true`. */
  signal?: AbortSignal;
  /** Between SIGTERM and SIGKILL, ms; default {@link GATE_KILL_GRACE_MS}. */
  killGraceMs?: number;
  /** Logs kept per label; default {@link GATE_LOGS_KEPT}. */
  keep?: number;
  /** Extra environment for the command (the engine's own environment is inherited). */
  env?: Record<string, string>;
  /** Receives activity-log texts (`🧪 GATE start …`, `🧪 GATE TIMEOUT …`, `🧪 GATE end …`, §3.10) without the time prefix. */
  onActivity?: (text: string) => void;
}

/** The verdict of one gate run. */
export interface GateResult {
  label: GateLabel;
  /** The command as given. */
  command: string;
  /** See the module comment for 124 / 130 / 127 / 128+n. */
  exitCode: number;
  /** Wall time from spawn to the group being empty, ms. */
  durationMs: number;
  timedOut: boolean;
  cancelled: boolean;
  /** Absolute path of this run's timestamped log. */
  logPath: string;
  /** The same, relative to the workspace root (`.ralph/gates/…`), as written into the summary. */
  logRelPath: string;
  /** First lines that look like failures (FAIL, ✗, Error:, AssertionError, error TS1234, …), at most {@link FAILING_LINES_MAX}. */
  failingLines: string[];
  /** Last {@link TAIL_LINES} lines of the command's output. */
  tail: string[];
  /** Text of `<L>-latest.summary` on failure; `undefined` when the gate passed. */
  summary?: string;
}

/** `.ralph/gates/` of a workspace. */
export function gatesDir(folder: string): string {
  return ralphFile(folder, 'gates');
}

/** Paths of the `latest` breadcrumbs of `label`. */
export function latestGatePaths(folder: string, label: string): { log: string; exit: string; cmd: string; summary: string } {
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
  return new Date(ms).toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
}

/**
 * Runs one gate and writes its artifacts. Resolves once the command has exited **and** its process group is
 * empty (after a timeout or cancel: SIGTERM, `killGraceMs`, SIGKILL). A failing command is a result, not an error;
 * throws only for an unknown label or when `.ralph/gates/` cannot be written.
 */
export async function runGate(opts: GateRunOptions): Promise<GateResult> {
  if (!(GATE_LABELS as readonly string[]).includes(opts.label)) throw new Error(`unknown gate label "${opts.label}" (expected one of ${GATE_LABELS.join(', ')})`);
  const { folder, label, command } = opts;
  const timeoutMs = opts.timeoutMs ?? GATE_TIMEOUT_MS;
  const graceMs = opts.killGraceMs ?? GATE_KILL_GRACE_MS;
  const dir = gatesDir(folder);
  await mkdir(dir, { recursive: true });

  const startMs = Date.now();
  const ts = gateTimestamp(startMs);
  const header = `=== gate-run label=${label} ts=${ts} cwd=${folder}\n=== cmd: ${command}\n===\n`;
  const headerBytes = Buffer.byteLength(header);
  let logPath = path.join(dir, `${label}-${ts}-${process.pid}-${Math.random().toString(16).slice(2, 8)}.log.partial`);
  const handle = await open(logPath, 'w');
  let timedOut = false;
  let cancelled = false;
  let exitCode: number;
  let note = '';
  try {
    await handle.write(header);
    opts.onActivity?.(`🧪 GATE start label=${label} cmd=${normalizeCommand(command)}`);
    const outcome = await runInGroup(command, { cwd: folder, fd: handle.fd, env: opts.env, timeoutMs, graceMs, signal: opts.signal });
    timedOut = outcome.timedOut;
    cancelled = outcome.cancelled;
    exitCode = outcome.exitCode;
    if (outcome.spawnError) note = `=== gate-run could not start bash: ${outcome.spawnError} ===\n`;
    if (timedOut) {
      note += `=== gate-run TIMEOUT after ${secs(timeoutMs)}: SIGTERM to the process group, SIGKILL after ${secs(graceMs)} ===\n`;
      opts.onActivity?.(`🧪 GATE TIMEOUT label=${label} after ${secs(timeoutMs)}`);
    } else if (cancelled) {
      note += '=== gate-run CANCELLED: SIGTERM to the process group ===\n';
      opts.onActivity?.(`🧪 GATE CANCELLED label=${label}`);
    }
    const finalName = path.join(dir, `${label}-${ts}-${outcome.pid ?? process.pid}.log`);
    await rename(logPath, finalName);
    logPath = finalName;
  } finally {
    await handle.close().catch(() => undefined);
  }

  const durationMs = Date.now() - startMs;
  const contentEnd = (await stat(logPath)).size;
  const footer = `${(await endsWithNewline(logPath, contentEnd)) ? '' : '\n'}${note}=== gate-run end exit=${exitCode} duration=${Math.round(durationMs / 1000)}s ===\n`;
  const fh = await open(logPath, 'a');
  try {
    await fh.write(footer);
  } finally {
    await fh.close();
  }

  const [failingLines, tail] = await Promise.all([scanFailingLines(logPath, headerBytes, contentEnd), readTail(logPath, headerBytes, contentEnd)]);
  const logRelPath = path.relative(folder, logPath).split(path.sep).join('/');
  const latest = latestGatePaths(folder, label);
  const latestRel = path.relative(folder, latest.log).split(path.sep).join('/');

  await writeTextAtomic(logPath.replace(/\.log$/, '.exit'), String(exitCode));
  const tmpCopy = `${latest.log}.${process.pid}.tmp`;
  await copyFile(logPath, tmpCopy);
  await rename(tmpCopy, latest.log);
  await writeTextAtomic(latest.exit, String(exitCode));
  await writeTextAtomic(latest.cmd, normalizeCommand(command));

  let summary: string | undefined;
  if (exitCode === 0) {
    await removeIfExists(latest.summary);
  } else {
    summary = gateSummary({ label, exitCode, durationMs, logRelPath, command, failingLines, coverageGaps: coverageGaps(logPath, header.length) });
    await writeTextAtomic(latest.summary, summary);
    await writeTextAtomic(path.join(dir, 'last-failed-label'), label);
    await writeTextAtomic(path.join(dir, 'last-failed-log'), latestRel);
  }
  await pruneLogs(dir, label, opts.keep ?? GATE_LOGS_KEPT, logPath);
  opts.onActivity?.(`🧪 GATE end label=${label} exit=${exitCode} duration=${Math.round(durationMs / 1000)}s log=${latestRel}`);
  return { label, command, exitCode, durationMs, timedOut, cancelled, logPath, logRelPath, failingLines, tail, summary };
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
async function scanFailingLines(file: string, start: number, end: number): Promise<string[]> {
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
async function readTail(file: string, start: number, end: number): Promise<string[]> {
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

async function endsWithNewline(file: string, size: number): Promise<boolean> {
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
function coverageGaps(logPath: string, headerChars: number): string[] {
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
async function pruneLogs(dir: string, label: string, keep: number, current: string): Promise<void> {
  const entries: { file: string; ts: string; mtime: number }[] = [];
  for (const name of await readdir(dir)) {
    const m = TIMESTAMPED.exec(name);
    if (!m || m[1] !== label) continue;
    const file = path.join(dir, name);
    const mtime = await stat(file).then((s) => s.mtimeMs, () => 0);
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

// ---------------------------------------------------------------------------------------------------------------
// Process group handling

interface GroupRun {
  exitCode: number;
  timedOut: boolean;
  cancelled: boolean;
  pid: number | undefined;
  spawnError?: string;
}

async function runInGroup(
  command: string,
  o: { cwd: string; fd: number; env?: Record<string, string>; timeoutMs: number; graceMs: number; signal?: AbortSignal },
): Promise<GroupRun> {
  if (o.signal?.aborted) return { exitCode: EXIT_CANCELLED, timedOut: false, cancelled: true, pid: undefined };
  // Both streams go straight to the log's file descriptor (like `>log 2>&1`): true interleaving, no pipe a
  // background process could hold open, nothing buffered in the engine. execa documents an integer as a file
  // descriptor; its types only list 3–9 for stdout/stderr.
  const fd = o.fd as 3;
  const token = `${process.pid}-${randomBytes(6).toString('hex')}`;
  const child = execa('bash', ['-c', command], {
    cwd: o.cwd,
    // The marker reaches whatever the command detaches (`setsid server &`), which the group kill cannot.
    env: { ...o.env, [GATE_MARKER]: token },
    extendEnv: true,
    detached: true,
    stdin: 'ignore',
    stdout: fd,
    stderr: fd,
    reject: false,
  });
  const pid = child.pid;
  if (pid === undefined) {
    const r = await child;
    return { exitCode: EXIT_SPAWN_FAILED, timedOut: false, cancelled: false, pid, spawnError: r.shortMessage ?? r.message };
  }
  trackProcessGroup(pid);
  let timedOut = false;
  let cancelled = false;
  let ending: Promise<void> | undefined;
  const end = () => (ending ??= endProcessGroup(pid, o.graceMs));
  const timer = setTimeout(() => {
    timedOut = true;
    void end();
  }, o.timeoutMs);
  const onAbort = () => {
    if (timedOut) return;
    cancelled = true;
    void end();
  };
  o.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const result = await child;
    clearTimeout(timer);
    // The command has exited; end whatever it left behind in its group (gate-run.sh's belt-and-braces kill).
    await end();
    await endMarkedProcesses(GATE_MARKER, token, o.graceMs);
    let exitCode: number;
    if (timedOut) exitCode = EXIT_TIMEOUT;
    else if (cancelled) exitCode = EXIT_CANCELLED;
    else if (typeof result.exitCode === 'number') exitCode = result.exitCode;
    else if (result.signal) exitCode = 128 + (osConstants.signals[result.signal as NodeJS.Signals] ?? 0);
    else exitCode = EXIT_SPAWN_FAILED;
    return { exitCode, timedOut, cancelled, pid };
  } finally {
    clearTimeout(timer);
    o.signal?.removeEventListener('abort', onAbort);
    untrackProcessGroup(pid);
  }
}

