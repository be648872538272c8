import { spawn, spawnSync } from 'node:child_process';
import type * as FsModule from 'node:fs';
import * as path from 'node:path';
import { repoRoot } from './repoRoot';
import { testCacheHome } from './tempFolder';

/** The bundled CLI the tests drive (built by `node esbuild.mjs --only=cli`). */
export const cliPath = path.join(repoRoot, 'dist', 'cli.js');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  json: () => Record<string, unknown>;
}

/** Runs `node dist/cli.js -C <folder> …args` and waits for it. */
export function runCli(folder: string, args: string[], env: NodeJS.ProcessEnv = {}): CliResult {
  const r = spawnSync(process.execPath, [cliPath, '-C', folder, ...args], {
    encoding: 'utf8',
    env: { ...process.env, XDG_CACHE_HOME: testCacheHome(), FLOW_ACTOR: 'tester', ...env },
  });
  return {
    code: r.status,
    stdout: r.stdout,
    stderr: r.stderr,
    json: () => JSON.parse(r.stdout) as Record<string, unknown>,
  };
}

/** As {@link runCli}, without blocking the event loop (for concurrent processes). */
export function runCliAsync(folder: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [cliPath, '-C', folder, ...args], {
      env: { ...process.env, XDG_CACHE_HOME: testCacheHome(), FLOW_ACTOR: 'tester', ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += String(d);
    });
    child.stderr.on('data', (d) => {
      stderr += String(d);
    });
    child.on('close', (code) =>
      resolve({ code, stdout, stderr, json: () => JSON.parse(stdout) as Record<string, unknown> }),
    );
  });
}

/**
 * As {@link runCli} with the child's address space capped by `prlimit --as` (default 2 GB) and a 60 s timeout, for
 * inputs that could make a broken build read until memory runs out (issue 12: a task source linked to /dev/zero).
 * A child killed by the cap or the timeout has `code` null.
 */
export function runCliCapped(folder: string, args: string[], o: { asBytes?: number } = {}): CliResult {
  const r = spawnSync(
    'prlimit',
    [`--as=${o.asBytes ?? 2_000_000_000}`, process.execPath, cliPath, '-C', folder, ...args],
    { encoding: 'utf8', timeout: 60_000, env: { ...process.env, FLOW_ACTOR: 'tester' } },
  );
  return {
    code: r.status,
    stdout: r.stdout,
    stderr: r.stderr,
    json: () => JSON.parse(r.stdout) as Record<string, unknown>,
  };
}

/** Where {@link runCliInProcess} runs the command: a working folder instead of `-C` (`cwd`, the command line has no `-C` then). */
export interface InProcessOptions {
  cwd?: string;
  /**
   * A program bundle of dist/ to call instead of the entry (`'cli-main.js'`: the full program, whose `main(argv)`
   * every command line can reach), for tests that compare the entry's fast paths with it.
   */
  program?: string;
}

/**
 * As {@link runCli}, inside this process: `entry` of dist/cli.js (the same code path the `ralph` bin runs: the small
 * entry, then the read, task, waves or full program), with the same environment, stdout and stderr captured and the
 * exit code the process would end with (`process.exitCode`, or `process.exit`'s; a thrown error is exit 1 with its
 * stack on stderr). Starting `node dist/cli.js` costs about 0.3 s of CPU; a call here costs the command alone, so a
 * test whose point is a command's output, exit code and files calls it here. What only a process shows stays with
 * {@link runCli}: signals, stdin, a broken pipe, start-up, the answer cache across processes, a command that runs
 * on (`run`, `watch`, `--watch`). Without `-C` when `o.cwd` is given (the command runs in that folder). One call at
 * a time: a call borrows the process's environment, working folder, exit code and standard streams, and gives them
 * back when it ends.
 */
export function runCliInProcess(
  folder: string | undefined,
  args: string[],
  env: NodeJS.ProcessEnv = {},
  o: InProcessOptions = {},
): Promise<CliResult> {
  const argv = [process.execPath, cliPath, ...(folder !== undefined ? ['-C', folder] : []), ...args];
  const call = calls.then(() =>
    callEntry(argv, { ...process.env, XDG_CACHE_HOME: testCacheHome(), FLOW_ACTOR: 'tester', ...env }, o),
  );
  calls = call.catch(() => undefined);
  return call;
}

let calls: Promise<unknown> = Promise.resolve();

// The module object itself, which the CLI's bundles call `writeSync` on (an `import * as` namespace is a copy whose
// properties cannot be set).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const fs = require('node:fs') as typeof FsModule;

/** Thrown by the borrowed `process.exit`: the command ended the "process" with `code`. */
class ProcessExit extends Error {
  constructor(readonly code: number) {
    super(`process.exit(${code})`);
  }
}

/** Replaces the contents of `process.env` with `next` (the object stays: modules keep a reference to it). */
function setEnv(next: NodeJS.ProcessEnv): void {
  for (const k of Object.keys(process.env)) if (!(k in next) || next[k] === undefined) delete process.env[k];
  for (const [k, v] of Object.entries(next)) if (v !== undefined) process.env[k] = v;
}

async function callEntry(argv: string[], env: NodeJS.ProcessEnv, o: InProcessOptions): Promise<CliResult> {
  const { cwd } = o;
  const entry = o.program
    ? // eslint-disable-next-line @typescript-eslint/no-require-imports
      (require(path.join(path.dirname(cliPath), o.program)) as { main: (argv: string[]) => Promise<void> }).main
    : // eslint-disable-next-line @typescript-eslint/no-require-imports
      (require(cliPath) as { entry: (argv: string[]) => Promise<void> }).entry;
  const saved = {
    env: { ...process.env },
    cwd: process.cwd(),
    exitCode: process.exitCode,
    out: process.stdout.write,
    err: process.stderr.write,
    writeSync: fs.writeSync,
    exit: process.exit,
  };
  let stdout = '';
  let stderr = '';
  const text = (chunk: unknown, encoding?: unknown): string =>
    typeof chunk === 'string'
      ? chunk
      : Buffer.from(chunk as Uint8Array).toString(typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
  // A stream's write: the text kept, the callback called, as a pipe that takes everything.
  const writer =
    (to: 'out' | 'err') =>
    (chunk: unknown, encoding?: unknown, cb?: unknown): boolean => {
      if (to === 'out') stdout += text(chunk, encoding);
      else stderr += text(chunk, encoding);
      const done = typeof encoding === 'function' ? encoding : cb;
      if (typeof done === 'function') process.nextTick(done as () => void);
      return true;
    };
  let code: number;
  try {
    setEnv(env);
    if (cwd !== undefined) process.chdir(cwd);
    process.exitCode = undefined;
    process.stdout.write = writer('out') as typeof process.stdout.write;
    process.stderr.write = writer('err') as typeof process.stderr.write;
    (fs as { writeSync: unknown }).writeSync = (fd: number, data: unknown, ...rest: unknown[]): number => {
      if (fd !== 1 && fd !== 2) return (saved.writeSync as (...a: unknown[]) => number)(fd, data, ...rest);
      let s: string;
      let n: number;
      if (typeof data === 'string') {
        s = data;
        n = Buffer.byteLength(data);
      } else {
        const bytes = Buffer.from(
          (data as Uint8Array).buffer,
          (data as Uint8Array).byteOffset,
          (data as Uint8Array).byteLength,
        );
        const offset = typeof rest[0] === 'number' ? rest[0] : 0;
        const length = typeof rest[1] === 'number' ? rest[1] : bytes.length - offset;
        s = bytes.subarray(offset, offset + length).toString('utf8');
        n = length;
      }
      if (fd === 1) stdout += s;
      else stderr += s;
      return n;
    };
    process.exit = ((c?: number | string | null) => {
      throw new ProcessExit(Number(c ?? process.exitCode ?? 0));
    }) as typeof process.exit;
    try {
      await entry(argv);
      // What the command left queued (a write's callback, a settled promise) runs before a process would exit.
      await new Promise((r) => setImmediate(r));
      code = Number(process.exitCode ?? 0);
    } catch (err) {
      if (err instanceof ProcessExit) code = err.code;
      else {
        stderr += `${(err as Error).stack ?? String(err)}\n`;
        code = 1;
      }
    }
  } finally {
    process.exit = saved.exit;
    (fs as { writeSync: unknown }).writeSync = saved.writeSync;
    process.stdout.write = saved.out;
    process.stderr.write = saved.err;
    process.exitCode = saved.exitCode;
    process.chdir(saved.cwd);
    setEnv(saved.env);
  }
  return { code, stdout, stderr, json: () => JSON.parse(stdout) as Record<string, unknown> };
}
