import { copyFile, link, lstat, lutimes, mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import * as path from 'node:path';
import { writeTextAtomic, removeIfExists } from '../store/atomicWrite';
import { GATE_LABELS, normalizeCommand, type GateLabel } from './commandPolicy';
import {
  coverageGaps,
  endsWithNewline,
  GATE_LOGS_KEPT,
  gateSummary,
  gatesDir,
  gateTimestamp,
  latestGatePaths,
  pruneLogs,
  readTail,
  scanFailingLines,
} from './gateArtifacts';
import { GATE_KILL_GRACE_MS, runInGroup } from './gateProcess';
import type { ContainmentMode } from '../process/containment';

export * from './gateArtifacts';
export * from './gateProcess';

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
 * | `<L>-latest.log` | the newest log under a second name (a hard link, or a copy where the file system has none; never a symlink: readable by the webview) |
 * | `<L>-latest.exit` | exit code, no newline |
 * | `<L>-latest.cmd` | the command, whitespace-normalised, no newline (compared with the `[gates]` pin, §3.6.1) |
 * | `<L>-latest.summary` | on failure only: `label:`, `exit:`, `duration: Ns`, `log:`, `cmd:`, optional `coverage_gaps:` and `failing:` blocks; ≤ 2048 bytes; deleted on success |
 * | `last-failed-label`, `last-failed-log` | label and `.ralph/gates/<L>-latest.log` of the last failure, no newline |
 *
 * `<pid>` is the gate command's pid (= its process group id). The 10 newest logs per label are kept
 * (`RALPH_GATE_KEEP` 10; the seed's README says 5, the code 10: §3.15-6). Exit codes: the command's own; 124
 * after a timeout (GNU `timeout` convention, as gate-run.sh normalises signal deaths); 130 when cancelled
 * through the AbortSignal; 128+n when something else killed it with signal n; 127 when bash could not start.

/** Default gate timeout, ms (`RALPH_GATE_TIMEOUT` 1200 s, §3.10; config `gateTimeoutMs`). */
export const GATE_TIMEOUT_MS = 1_200_000;

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
  /** Receives activity-log texts (`GATE start …`, `GATE TIMEOUT …`, `GATE end …`, §3.10) without the time prefix. */
  onActivity?: (text: string) => void;
  /** Config `containment`; default the process's mode (process/containment.ts `setContainmentMode`). */
  containment?: ContainmentMode;
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

/**
 * Runs one gate and writes its artifacts. Resolves once the command has exited **and** its process group is
 * empty (after a timeout or cancel: SIGTERM, `killGraceMs`, SIGKILL). A failing command is a result, not an error;
 * throws only for an unknown label or when `.ralph/gates/` cannot be written.
 */
export async function runGate(opts: GateRunOptions): Promise<GateResult> {
  if (!(GATE_LABELS as readonly string[]).includes(opts.label))
    throw new Error(`unknown gate label "${opts.label}" (expected one of ${GATE_LABELS.join(', ')})`);
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
    opts.onActivity?.(`GATE start label=${label} cmd=${normalizeCommand(command)}`);
    const outcome = await runInGroup(command, {
      cwd: folder,
      fd: handle.fd,
      logPath,
      env: opts.env,
      timeoutMs,
      graceMs,
      signal: opts.signal,
      containment: opts.containment,
    });
    timedOut = outcome.timedOut;
    cancelled = outcome.cancelled;
    exitCode = outcome.exitCode;
    if (outcome.spawnError) note = `=== gate-run could not start bash: ${outcome.spawnError} ===\n`;
    if (outcome.lost) note += `=== gate-run lost the gate's exit: ${outcome.lost} ===\n`;
    if (timedOut) {
      note += `=== gate-run TIMEOUT after ${secs(timeoutMs)}: SIGTERM to the process group, SIGKILL after ${secs(graceMs)} ===\n`;
      opts.onActivity?.(`GATE TIMEOUT label=${label} after ${secs(timeoutMs)}`);
    } else if (cancelled) {
      note += '=== gate-run CANCELLED: SIGTERM to the process group ===\n';
      opts.onActivity?.(`GATE CANCELLED label=${label}`);
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

  const [failingLines, tail] = await Promise.all([
    scanFailingLines(logPath, headerBytes, contentEnd),
    readTail(logPath, headerBytes, contentEnd),
  ]);
  const logRelPath = path.relative(folder, logPath).split(path.sep).join('/');
  const latest = latestGatePaths(folder, label);
  const latestRel = path.relative(folder, latest.log).split(path.sep).join('/');

  // The gate's files are written again by the next gate and trusted by nothing after a crash (the engine believes
  // only the gate child it started): no fsync, and a file that already holds its text is not made anew.
  await writeTextAtomic(logPath.replace(/\.log$/, '.exit'), String(exitCode), LOOSE);
  await publishLatestLog(logPath, latest.log);
  // Its mtime says when the latest gate of the label ended (the guard's `latestExitMs`): set even when unchanged.
  await writeUnlessSame(latest.exit, String(exitCode), true);
  await writeUnlessSame(latest.cmd, normalizeCommand(command), false);

  let summary: string | undefined;
  if (exitCode === 0) {
    await removeIfExists(latest.summary);
  } else {
    summary = gateSummary({
      label,
      exitCode,
      durationMs,
      logRelPath,
      command,
      failingLines,
      coverageGaps: coverageGaps(logPath, header.length),
    });
    await writeTextAtomic(latest.summary, summary, LOOSE);
    await writeTextAtomic(path.join(dir, 'last-failed-label'), label, LOOSE);
    await writeTextAtomic(path.join(dir, 'last-failed-log'), latestRel, LOOSE);
  }
  await pruneLogs(dir, label, opts.keep ?? GATE_LOGS_KEPT, logPath);
  opts.onActivity?.(
    `GATE end label=${label} exit=${exitCode} duration=${Math.round(durationMs / 1000)}s log=${latestRel}`,
  );
  return {
    label,
    command,
    exitCode,
    durationMs,
    timedOut,
    cancelled,
    logPath,
    logRelPath,
    failingLines,
    tail,
    summary,
  };
}

/** The gate's own files: atomic for every reader, not fsynced (see {@link runGate}). */
const LOOSE = { durable: false } as const;

/**
 * `<L>-latest.log` becomes a second name of the run's log: a hard link renamed over it (the same bytes for every reader,
 * no copy and no new inode), or a copy where the file system has no hard links.
 */
async function publishLatestLog(log: string, latest: string): Promise<void> {
  const tmp = `${latest}.${process.pid}.tmp`;
  await rm(tmp, { force: true });
  try {
    await link(log, tmp);
  } catch {
    await copyFile(log, tmp);
  }
  await rename(tmp, latest);
}

/**
 * Writes `text` to `file` (atomically, not fsynced) unless it is a regular file of one name holding exactly that text;
 * then, with `touch`, only its mtime is set to now (on the file itself, never through a link: a hard link planted there
 * shares its inode, and its mtime, with a file that may lie outside the workspace, so it is replaced instead).
 */
async function writeUnlessSame(file: string, text: string, touch: boolean): Promise<void> {
  const st = await lstat(file).catch(() => null);
  const same =
    st?.isFile() &&
    st.nlink === 1 &&
    st.size === Buffer.byteLength(text) &&
    (await readFile(file, 'utf8').catch(() => null)) === text;
  if (!same) return writeTextAtomic(file, text, LOOSE);
  if (touch) {
    const now = new Date();
    await lutimes(file, now, now);
  }
}
