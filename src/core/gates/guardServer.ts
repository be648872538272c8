import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, unlinkSync } from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { handleHook, loadPolicyForGuard, type GuardRecord, type HookAnswer } from './guardHook';
import { shellQuote } from './shellQuote';

/**
 * The warm guard of a run: the engine keeps the parsed policy and the shell parser loaded in a small
 * server on a Unix socket under the run folder; the hook process is a tiny client (`dist/guard-hook.js`) that
 * forwards its stdin and prints the answer, and denies (exit 2) when the server does not answer.
 *
 * Protocol: one request per connection, a JSON line `{"stdin": "<hook input>"}`; one JSON line back,
 * `{"stdout", "stderr", "exitCode"}` ({@link HookAnswer}).
 */

/** Longest Unix socket path (sun_path is 108 bytes on Linux, 104 on macOS) we use. */
const SOCKET_PATH_MAX = 100;

/** Where a run's guard socket goes: `<run folder>/guard.sock`, or a hashed name under the temp folder when that is too long. */
export function guardSocketPath(runDir: string): string {
  const p = path.join(runDir, 'guard.sock');
  if (Buffer.byteLength(p) <= SOCKET_PATH_MAX) return p;
  return path.join(os.tmpdir(), `ralph-guard-${createHash('sha256').update(p).digest('hex').slice(0, 16)}.sock`);
}

/** Paths of the hook programs in an install (`dist/`). */
export interface GuardInstall {
  /** Absolute node binary (the running process's: an Electron binary in VS Code desktop, see `electron`). */
  node: string;
  /** True when `node` is Electron: commands then set `ELECTRON_RUN_AS_NODE=1`. */
  electron?: boolean;
  /** Absolute `dist/guard-hook.js`. */
  hook: string;
  /** Absolute `dist/cli.js` (the gate runner of wrapped commands). */
  cli: string;
  /**
   * Absolute `dist/guard.js`: the decision with the shell parser, for the hook client's in-process mode (no run's
   * server: `ralph guard install`). The engine's server and `ralph guard` decide with the code of their own bundle,
   * which holds the parser anyway (the gate-file trust reads gate commands with it): loading guard.js beside it
   * parsed a second 4 MB copy of the parser, ~0.1 s of the main thread at every run's start (measured by the lanes
   * bench).
   */
  guard: string;
}

function failClosed(reason: string): HookAnswer {
  return { stdout: '', stderr: `Ralph guard: ${reason} (the call is blocked)\n`, exitCode: 2 };
}

/**
 * The install's `dist/` folder: the folder of this bundle or one of its parents that holds `guard-hook.js` and
 * `cli.js` (tests run from `dist/test/<tier>/…`). `RALPH_DIST_DIR` overrides.
 */
export function guardInstall(env: NodeJS.ProcessEnv = process.env): GuardInstall {
  const candidates = env.RALPH_DIST_DIR ? [env.RALPH_DIST_DIR] : [];
  let dir = __dirname;
  for (let i = 0; i < 5; i++) {
    candidates.push(dir);
    dir = path.dirname(dir);
  }
  const dist = candidates.find((d) =>
    ['guard-hook.js', 'guard.js', 'cli.js'].every((f) => existsSync(path.join(d, f))),
  );
  if (!dist)
    throw new Error(
      `cannot find dist/guard-hook.js, guard.js and cli.js near ${__dirname}: build with node esbuild.mjs`,
    );
  return {
    node: process.execPath,
    electron: !!process.versions.electron,
    hook: path.join(dist, 'guard-hook.js'),
    cli: path.join(dist, 'cli.js'),
    guard: path.join(dist, 'guard.js'),
  };
}

/**
 * The `--settings` JSON that hands the hook to claude for one run (agent-streams.md §3.1): PreToolUse for Bash
 * and the file tools. The hook's own timeout is long (a hook that times out lets the call through); the client
 * gives up on the server much sooner and denies.
 */
export function guardSettings(install: GuardInstall, socket?: string): Record<string, unknown> {
  const command = `${install.electron ? 'ELECTRON_RUN_AS_NODE=1 ' : ''}${[install.node, install.hook, ...(socket ? ['--socket', socket] : [])].map(shellQuote).join(' ')}`;
  return {
    hooks: {
      PreToolUse: [
        { matcher: 'Bash|Write|Edit|MultiEdit|NotebookEdit', hooks: [{ type: 'command', command, timeout: 60 }] },
      ],
    },
  };
}

/** A running guard server. */
export interface GuardServer {
  socket: string;
  settings: Record<string, unknown>;
  close(): Promise<void>;
}

/** Options of {@link startGuardServer}. */
export interface GuardServerOptions {
  workspace: string;
  /** The run folder (`.ralph/runs/<id>/`). */
  runDir: string;
  install?: GuardInstall;
  /** Receives every denial and rewrite (the engine emits a `guard` event). */
  onRecord?: (r: GuardRecord) => void;
}

/** Starts the guard server of a run. Rejects when the socket cannot be listened on. */
export async function startGuardServer(o: GuardServerOptions): Promise<GuardServer> {
  const install = o.install ?? guardInstall();
  const socket = guardSocketPath(o.runDir);
  mkdirSync(path.dirname(socket), { recursive: true });
  if (existsSync(socket)) unlinkSync(socket);
  // The policy read at the run's start is the trusted content (`ralph run` checked it) and the only one this run's
  // guard decides with: a policy the agent rewrites, empties or deletes mid-run changes nothing about what is denied
  // (the file is read-only inside the iteration where the kernel allows, and this covers where it does not). A
  // policy that cannot be read at the start refuses the run rather than guarding with none.
  const atStart = await loadPolicyForGuard(o.workspace);
  const loadPolicy = () => Promise.resolve(atStart);
  const server = net.createServer((conn) => {
    let buf = '';
    const answer = (a: HookAnswer) => {
      conn.end(`${JSON.stringify(a)}\n`);
    };
    conn.setEncoding('utf8');
    conn.on('data', (chunk: string) => {
      buf += chunk;
      if (buf.length > 4 * 1024 * 1024) {
        answer(failClosed('hook input larger than 4 MiB'));
        return;
      }
      const nl = buf.indexOf('\n');
      if (nl < 0) return;
      let stdin: string;
      try {
        stdin = String((JSON.parse(buf.slice(0, nl)) as { stdin: unknown }).stdin);
      } catch {
        answer(failClosed('malformed request to the guard server'));
        return;
      }
      void handleHook(
        stdin,
        {
          workspace: o.workspace,
          gateRunner: { node: install.node, cliPath: install.cli, electron: install.electron },
          loadPolicy,
          policyTrusted: true,
          writeActivity: !o.onRecord,
        },
        o.onRecord,
      ).then(answer);
    });
    conn.on('error', () => undefined);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socket, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    socket,
    settings: guardSettings(install, socket),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        try {
          unlinkSync(socket);
        } catch {
          // already gone
        }
      }),
  };
}
