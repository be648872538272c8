import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { LoopEngine, type EngineOptions, type RunResult } from '../../../src/core/loop/engine';
import type { EngineEvent } from '../../../src/core/loop/events';
import { RunRecorder } from '../../../src/core/loop/recorder';
import { ralphConfigSchema, type RalphConfig } from '../../../src/core/model/config';
import { type ModelServer, type Turn, startModelServer } from '../../support/modelServer';
import { repoRoot } from '../../support/repoRoot';

/** The real Claude Code CLI installed in the repository (2.1.328). */
export const claudeBinary = path.join(repoRoot, 'node_modules', '.bin', 'claude');

/** Short delays so an engine test takes seconds (config `timing`). */
export const fastTiming = { betweenIterationsMs: 50, killGraceMs: 1000, backoffBaseMs: 200, backoffCapMs: 1000, resetMarginMs: 200 };

export interface Workspace {
  root: string;
  /** The workspace folder (a git repository with a local identity unless `git: false`). */
  dir: string;
  home: string;
  file(rel: string): string;
  read(rel: string): string;
  write(rel: string, text: string): void;
  git(...args: string[]): string;
  cleanup(): void;
}

/** A temporary workspace with the given files, committed to a fresh git repository. */
export function makeWorkspace(files: Record<string, string>, o: { git?: boolean } = {}): Workspace {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'ralph-engine-'));
  const dir = path.join(root, 'ws');
  const home = path.join(root, 'home');
  fs.mkdirSync(dir);
  fs.mkdirSync(home);
  const ws: Workspace = {
    root, dir, home,
    file: (rel) => path.join(dir, rel),
    read: (rel) => fs.readFileSync(path.join(dir, rel), 'utf8'),
    write: (rel, text) => {
      fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
      fs.writeFileSync(path.join(dir, rel), text);
    },
    git: (...args) => execFileSync('git', args, { cwd: dir, encoding: 'utf8', env: { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null' } }).trim(),
    cleanup: () => fs.rmSync(root, { recursive: true, force: true }),
  };
  for (const [rel, text] of Object.entries(files)) ws.write(rel, text);
  if (o.git !== false) {
    ws.git('init', '-q', '-b', 'main');
    ws.git('config', 'user.email', 'ralph-test@example.invalid');
    ws.git('config', 'user.name', 'Ralph Test');
    ws.git('config', 'commit.gpgsign', 'false');
    ws.git('add', '-A');
    ws.git('commit', '-q', '-m', 'initial');
  }
  return ws;
}

export interface EngineRun {
  result: RunResult;
  events: EngineEvent[];
  lines: string[];
  server: ModelServer;
  /** Prompt text of each iteration's first agent request, in order. */
  prompts(): string[];
}

/** Environment for the real claude: hermetic HOME, the scripted server, no outer ANTHROPIC_* / CLAUDE_*. */
export function agentEnv(ws: Workspace, server: ModelServer, extra: Record<string, string> = {}): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = {};
  for (const k of Object.keys(process.env)) if (k.startsWith('ANTHROPIC_') || k.startsWith('CLAUDE_')) env[k] = undefined;
  return {
    ...env, HOME: ws.home, ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: 'test', IS_SANDBOX: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    GIT_CONFIG_GLOBAL: '/dev/null', ...extra,
  };
}

/** The engine configuration for tests: the real claude binary, fast timing, plus `overrides`. */
export function testConfig(overrides: Record<string, unknown> = {}): RalphConfig {
  const timing = { ...fastTiming, ...((overrides.timing as object) ?? {}) };
  return ralphConfigSchema.parse({ claudePath: claudeBinary, ...overrides, timing });
}

/**
 * Runs the engine on `ws` against a scripted model server (the real claude CLI does the tools), recording as
 * `ralph run` does. `onEvent` may act during the run (touch a sentinel, abort).
 */
export async function runEngine(ws: Workspace, script: Turn[], o: { config?: Record<string, unknown>; engine?: Partial<EngineOptions>; env?: Record<string, string>; onEvent?: (e: EngineEvent, engine: LoopEngine) => void; server?: ModelServer } = {}): Promise<EngineRun> {
  const server = o.server ?? (await startModelServer(script));
  const engine = new LoopEngine({ folder: ws.dir, config: testConfig(o.config), agentEnv: agentEnv(ws, server, o.env), ...o.engine });
  const lines: string[] = [];
  const events: EngineEvent[] = [];
  const recorder = new RunRecorder(ws.dir, engine.runId, { onLine: (l) => lines.push(l), tokensEveryMs: 0 });
  engine.on('event', (e) => {
    events.push(e);
    recorder.record(e);
    o.onEvent?.(e, engine);
  });
  try {
    const result = await engine.run();
    await recorder.flush();
    return {
      result, events, lines, server,
      prompts: () => {
        const seen: string[] = [];
        for (const r of server.agentRequests()) {
          const first = ((r.body as { messages?: { role: string; content: unknown }[] }).messages ?? [])[0];
          const text = typeof first?.content === 'string' ? first.content : Array.isArray(first?.content) ? (first.content as { type: string; text?: string }[]).filter((c) => c.type === 'text').map((c) => c.text).join('\n') : '';
          if (text && !seen.includes(text)) seen.push(text);
        }
        return seen;
      },
    };
  } finally {
    if (!o.server) await server.close();
  }
}

/** Pids of processes running in, or naming, a folder under `root` (to prove none is left behind). */
export function processesUnder(root: string): number[] {
  const out: number[] = [];
  for (const pid of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    if (Number(pid) === process.pid) continue;
    try {
      const cwd = fs.readlinkSync(`/proc/${pid}/cwd`);
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (cwd.startsWith(root) || cmd.includes(root)) out.push(Number(pid));
    } catch {
      // gone, or not ours to read
    }
  }
  return out;
}

/**
 * Removes a test workspace and fails when any process of it is still running (the engine suites fail if a test
 * leaves a process behind); such processes are killed first so one failure does not cascade.
 */
export function cleanupWorkspace(ws: Workspace | undefined): void {
  if (!ws) return;
  const left = processesUnder(ws.root);
  for (const pid of left) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  ws.cleanup();
  if (left.length) throw new Error(`processes of the test workspace were left behind: ${left.join(', ')}`);
}

/**
 * For a describe block of engine tests: checks the claude CLI is installed, and returns `make(files)`, which creates
 * a workspace that is removed after each test (failing the test if any of its processes is left, see
 * {@link cleanupWorkspace}).
 */
export function useWorkspaces(): (files: Record<string, string>, o?: { git?: boolean }) => Workspace {
  const made: Workspace[] = [];
  before(function () {
    if (!fs.existsSync(claudeBinary)) throw new Error(`the claude CLI is missing at ${claudeBinary}: run scripts/setup-test-env.sh`);
  });
  afterEach(() => {
    const errors: unknown[] = [];
    for (const w of made.splice(0)) {
      try {
        cleanupWorkspace(w);
      } catch (err) {
        errors.push(err);
      }
    }
    if (errors.length) throw errors[0];
  });
  return (files, o) => {
    const w = makeWorkspace(files, o);
    made.push(w);
    return w;
  };
}
