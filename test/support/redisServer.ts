import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as net from 'node:net';
import { makeTempFolder, type TempFolder } from './tempFolder';

/**
 * A real `redis-server` (Debian's, installed by scripts/setup-test-env.sh) for one test file or bench: on 127.0.0.1
 * at a free port, with a password (`requirepass`), the append-only file on (`appendfsync always`, so a SIGKILL loses
 * no acknowledged write) and its files in a temp folder. {@link RedisServer.kill} and {@link RedisServer.start} take
 * it down and up again on the same port and folder (what it kept comes back from the AOF); {@link RedisServer.stop}
 * kills it and removes the folder.
 */
export interface RedisServer {
  /** `redis://:<password>@127.0.0.1:<port>` (the password-only form: the `default` user). */
  url: string;
  /** The same server without its password (what a worker must refuse). */
  urlWithoutPassword: string;
  port: number;
  password: string;
  /** The server's pid while it runs, else null. */
  pid(): number | null;
  /** Starts it again after {@link kill} (same port, folder and password); resolves once it accepts connections. */
  start(): Promise<void>;
  /** Ends it with `signal` (default SIGKILL) and resolves once it has exited. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Kills it and removes its folder. */
  stop(): Promise<void>;
}

/** A port the kernel just gave and took back: free now (the server's start retries on the rare collision). */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/**
 * Starts `redis-server` and resolves once its log says it accepts connections; rejects with its output when it exits
 * first (a port taken meanwhile: the caller tries another).
 */
function launch(dir: TempFolder, port: number, password: string): Promise<ChildProcess> {
  const child = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--requirepass',
      password,
      '--dir',
      dir.dir,
      '--appendonly',
      'yes',
      '--appendfsync',
      'always',
      '--save',
      '',
      '--daemonize',
      'no',
      '--logfile',
      '',
      '--loglevel',
      'notice',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  return new Promise((resolve, reject) => {
    let out = '';
    const onData = (b: Buffer) => {
      out += b.toString();
      if (/Ready to accept connections/.test(out)) {
        child.stdout!.off('data', onData);
        // Keep draining its log so that it never blocks on a full pipe.
        child.stdout!.resume();
        resolve(child);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (b: Buffer) => (out += b.toString()));
    child.once('error', reject);
    child.once('exit', (code, signal) =>
      reject(new Error(`redis-server exited (${code ?? signal}) before accepting connections:\n${out.slice(-2000)}`)),
    );
  });
}

/** Starts a private redis-server (see {@link RedisServer}). Throws when redis-server is not installed. */
export async function startRedis(): Promise<RedisServer> {
  const dir = makeTempFolder('ralph-redis-');
  const password = randomBytes(16).toString('hex');
  let child: ChildProcess | null = null;
  let port = 0;
  for (let tries = 0; ; tries++) {
    port = await freePort();
    try {
      child = await launch(dir, port, password);
      break;
    } catch (err) {
      if (tries >= 4) {
        dir.dispose();
        throw err;
      }
    }
  }
  const exited = (c: ChildProcess) =>
    c.exitCode !== null || c.signalCode !== null
      ? Promise.resolve()
      : new Promise<void>((resolve) => c.once('exit', () => resolve()));
  const server: RedisServer = {
    url: `redis://:${password}@127.0.0.1:${port}`,
    urlWithoutPassword: `redis://127.0.0.1:${port}`,
    port,
    password,
    pid: () => (child && child.exitCode === null && child.signalCode === null ? (child.pid ?? null) : null),
    async start() {
      if (server.pid() !== null) return;
      child = await launch(dir, port, password);
    },
    async kill(signal: NodeJS.Signals = 'SIGKILL') {
      if (!child) return;
      const c = child;
      if (c.exitCode === null && c.signalCode === null) c.kill(signal);
      await exited(c);
    },
    async stop() {
      await server.kill('SIGKILL');
      dir.dispose();
    },
  };
  return server;
}
