import { execa } from 'execa';
import { access, constants, realpath, stat } from 'node:fs/promises';
import * as path from 'node:path';

/** An agent CLI found on PATH. */
export interface DiscoveredAgent {
  /** The agent's name as users type it: `claude`, `codex`, `gemini`, `opencode`, `qwen`, `copilot`, `cursor-agent`, `agent` (cursor-agent's other name). */
  name: string;
  /** Absolute path of the executable. */
  path: string;
  /** What `<agent> --version` printed (first line), or null when it was not run or failed. */
  version: string | null;
  /** Why there is no version, when there is none. */
  note?: string;
}

/** Agent CLIs Ralph knows, in the order `ralph doctor` lists them. */
export const KNOWN_AGENT_BINARIES = [
  'claude',
  'codex',
  'gemini',
  'opencode',
  'qwen',
  'copilot',
  'cursor-agent',
  'agent',
] as const;

export interface DiscoverOptions {
  /** PATH to search; defaults to `process.env.PATH`. */
  pathEnv?: string;
  /** When false (untrusted workspace), binaries are located but never executed. Default true. */
  runVersions?: boolean;
  /** Per-binary timeout of `--version`, ms. Default 5000. */
  timeoutMs?: number;
  /** Names to look for; default {@link KNOWN_AGENT_BINARIES}. */
  names?: readonly string[];
  /** Versions kept from earlier calls: a binary whose file is unchanged is not run again. Default: none kept. */
  versionCache?: VersionCache;
}

/** What identifies one state of a binary's file: its real path (links followed), inode, size (bytes) and mtime (ms). */
export interface BinaryStamp {
  realPath: string;
  ino: number;
  size: number;
  mtimeMs: number;
}

/** The stamp of `file` now, or null when it cannot be read. */
export async function binaryStamp(file: string): Promise<BinaryStamp | null> {
  try {
    const realPath = await realpath(file);
    const s = await stat(realPath);
    return { realPath, ino: s.ino, size: s.size, mtimeMs: s.mtimeMs };
  } catch {
    return null;
  }
}

/** What `--version` told about one binary. */
export type VersionAnswer = Pick<DiscoveredAgent, 'version' | 'note'>;

/**
 * The versions agent binaries printed, each kept with the stamp its file had before it ran ({@link BinaryStamp}), in
 * memory. Asking for a version a binary gave while its file is unchanged (same real path, inode, size and mtime) runs
 * nothing: `--version` costs seconds of CPU for some agents (Gemini CLI about 3.7 s), and **Ralph: Start** asks on
 * every start. An update of the agent replaces its file, so the next ask runs it again. Only versions are kept: a
 * failure or a timeout (a loaded machine) is asked again next time.
 */
export class VersionCache {
  private readonly kept = new Map<string, { stamp: BinaryStamp; answer: VersionAnswer }>();

  /** The version of `file`: the one kept for its current stamp, else `run()`'s answer (kept when it is a version). */
  async version(file: string, run: () => Promise<VersionAnswer>): Promise<VersionAnswer> {
    const stamp = await binaryStamp(file);
    const k = stamp ? this.kept.get(file) : undefined;
    if (stamp && k && sameStamp(k.stamp, stamp)) return k.answer;
    const answer = await run();
    if (stamp && answer.version !== null) this.kept.set(file, { stamp, answer });
    else this.kept.delete(file);
    return answer;
  }
}

function sameStamp(a: BinaryStamp, b: BinaryStamp): boolean {
  return a.realPath === b.realPath && a.ino === b.ino && a.size === b.size && a.mtimeMs === b.mtimeMs;
}

/**
 * Finds agent CLIs on PATH and asks each for `--version` (concurrently, with a timeout, in its own process
 * group so nothing outlives the call). In Restricted Mode (`runVersions: false`) nothing is executed.
 */
export async function discoverAgents(opts: DiscoverOptions = {}): Promise<DiscoveredAgent[]> {
  const names = opts.names ?? KNOWN_AGENT_BINARIES;
  const found = await Promise.all(
    names.map(async (name) => ({ name, file: await which(name, opts.pathEnv ?? process.env.PATH ?? '') })),
  );
  return Promise.all(
    found
      .filter((f): f is { name: string; file: string } => f.file !== null)
      .map(async ({ name: given, file }) => {
        // A configured path (`claudePath: /opt/claude/bin/claude`) is shown by its file name.
        const name = given.includes('/') ? path.basename(given) : given;
        if (opts.runVersions === false)
          return { name, path: file, version: null, note: 'not run: workspace is not trusted' };
        const answer = opts.versionCache
          ? await opts.versionCache.version(file, () => runVersion(file, opts.timeoutMs))
          : await runVersion(file, opts.timeoutMs);
        return { name, path: file, ...answer };
      }),
  );
}

/** Runs `<file> --version` (with a timeout, in its own process group so nothing outlives the call). */
async function runVersion(file: string, timeoutMs = 5000): Promise<VersionAnswer> {
  try {
    const r = await execa(file, ['--version'], {
      timeout: timeoutMs,
      stdin: 'ignore',
      reject: false,
      detached: true,
      forceKillAfterDelay: 1000,
    });
    const line = `${r.stdout}`.trim().split(/\r?\n/)[0] ?? '';
    if (r.exitCode === 0 && line) return { version: parseVersion(line) };
    return {
      version: null,
      note: r.timedOut ? 'timed out on --version' : `--version exited ${r.exitCode ?? r.signal}`,
    };
  } catch (err) {
    return { version: null, note: (err as Error).message.split('\n')[0] };
  }
}

/** `2.1.328 (Claude Code)` → `2.1.328`; other shapes are returned trimmed. */
export function parseVersion(line: string): string {
  const m = /\b(\d+\.\d+\.\d+(?:[-+][\w.]+)?)\b/.exec(line);
  return m ? m[1]! : line.trim();
}

/** Locates an executable on a PATH string, as `which` does. Returns null when absent. */
export async function which(name: string, pathEnv: string): Promise<string | null> {
  if (name.includes('/')) return (await isExecutable(name)) ? path.resolve(name) : null;
  for (const dir of pathEnv.split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    if (await isExecutable(candidate)) return candidate;
  }
  return null;
}

async function isExecutable(p: string): Promise<boolean> {
  const isFile = await stat(p).then(
    (s) => s.isFile(),
    () => false,
  );
  return (
    isFile &&
    access(p, constants.X_OK).then(
      () => true,
      () => false,
    )
  );
}
