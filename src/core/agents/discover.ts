import { execa } from 'execa';
import { access, constants, stat } from 'node:fs/promises';
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
        try {
          const r = await execa(file, ['--version'], {
            timeout: opts.timeoutMs ?? 5000,
            stdin: 'ignore',
            reject: false,
            detached: true,
            forceKillAfterDelay: 1000,
          });
          const line = `${r.stdout}`.trim().split(/\r?\n/)[0] ?? '';
          if (r.exitCode === 0 && line) return { name, path: file, version: parseVersion(line) };
          return {
            name,
            path: file,
            version: null,
            note: r.timedOut ? 'timed out on --version' : `--version exited ${r.exitCode ?? r.signal}`,
          };
        } catch (err) {
          return { name, path: file, version: null, note: (err as Error).message.split('\n')[0] };
        }
      }),
  );
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
