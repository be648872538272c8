import * as fs from 'node:fs';
import * as path from 'node:path';
import { LoopEngine, type EngineOptions, type RunResult } from '../../src/core/loop/startRun';
import type { EngineEvent } from '../../src/core/loop/events';
import { RunRecorder } from '../../src/core/loop/recorder';
import { ralphConfigSchema, type RalphConfig } from '../../src/core/model/config';
import { claudeBinary, requireClaude, scriptedClaudeEnv } from './claude';
import { type ModelServer, type Turn, startModelServer } from './modelServer';
import { processesUnder } from './processes';
import { makeTempFolder } from './tempFolder';
import { git, gitInit } from './workspace';

/** Short delays so an engine test takes seconds (config `timing`). */
export const fastTiming = {
  betweenIterationsMs: 50,
  killGraceMs: 1000,
  backoffBaseMs: 200,
  backoffCapMs: 1000,
  resetMarginMs: 200,
};

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
  const tmp = makeTempFolder('ralph-engine-');
  const dir = tmp.file('ws');
  const home = tmp.file('home');
  fs.mkdirSync(dir);
  fs.mkdirSync(home);
  const ws: Workspace = {
    root: tmp.dir,
    dir,
    home,
    file: (rel) => path.join(dir, rel),
    read: (rel) => tmp.read(path.join('ws', rel)),
    write: (rel, text) => void tmp.write(path.join('ws', rel), text),
    git: (...args) => git(dir, ...args),
    cleanup: () => tmp.dispose(),
  };
  for (const [rel, text] of Object.entries(files)) ws.write(rel, text);
  if (o.git !== false) gitInit(dir, { commit: true });
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
export function agentEnv(
  ws: Workspace,
  server: ModelServer,
  extra: Record<string, string> = {},
): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = {};
  for (const k of Object.keys(process.env))
    if (k.startsWith('ANTHROPIC_') || k.startsWith('CLAUDE_')) env[k] = undefined;
  return {
    ...env,
    ...scriptedClaudeEnv(server.url, ws.home),
    GIT_CONFIG_GLOBAL: '/dev/null',
    ...extra,
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
export async function runEngine(
  ws: Workspace,
  script: Turn[],
  o: {
    config?: Record<string, unknown>;
    engine?: Partial<EngineOptions>;
    env?: Record<string, string>;
    onEvent?: (e: EngineEvent, engine: LoopEngine) => void;
    server?: ModelServer;
  } = {},
): Promise<EngineRun> {
  const server = o.server ?? (await startModelServer(script));
  const engine = new LoopEngine({
    folder: ws.dir,
    config: testConfig(o.config),
    agentEnv: agentEnv(ws, server, o.env),
    ...o.engine,
  });
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
      result,
      events,
      lines,
      server,
      prompts: () => {
        const seen: string[] = [];
        for (const r of server.agentRequests()) {
          const first = ((r.body as { messages?: { role: string; content: unknown }[] }).messages ?? [])[0];
          const text =
            typeof first?.content === 'string'
              ? first.content
              : Array.isArray(first?.content)
                ? (first.content as { type: string; text?: string }[])
                    .filter((c) => c.type === 'text')
                    .map((c) => c.text)
                    .join('\n')
                : '';
          if (text && !seen.includes(text)) seen.push(text);
        }
        return seen;
      },
    };
  } finally {
    if (!o.server) await server.close();
  }
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
    requireClaude();
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
