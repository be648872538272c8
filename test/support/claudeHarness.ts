import * as fs from 'node:fs';
import type { IterationSpec } from '../../src/core/agents/adapter';
import { claudeAdapter } from '../../src/core/agents/claude';
import {
  type IterationExit,
  type IterationHandle,
  type SpawnOptions,
  spawnIteration,
} from '../../src/core/agents/spawn';
import type { AgentEvent } from '../../src/core/stream/events';
import type { LedgerSignal } from '../../src/core/stream/ledger';
import { claudeBinary, scriptedClaudeEnv, withoutClaudeVars } from './claude';
import { type ModelServer, type Turn, startModelServer } from './modelServer';
import { makeTempFolder } from './tempFolder';

export interface ClaudeRun {
  handle: IterationHandle;
  server: ModelServer;
  /** The workspace the agent runs in (a fresh temp folder). */
  cwd: string;
  events: AgentEvent[];
  signals: LedgerSignal[];
  done: Promise<IterationExit>;
  /** Closes the server and removes the temp folders. */
  cleanup(): Promise<void>;
}

/**
 * Starts the real `claude` through the adapter against a scripted server, hermetically: HOME is a temp
 * folder, ANTHROPIC_BASE_URL the server, no ANTHROPIC_* / CLAUDE_* from the outer environment.
 */
export async function startClaude(
  script: Turn[] | ((cwd: string) => Turn[]),
  o: {
    prompt?: string;
    env?: Record<string, string>;
    spec?: Partial<IterationSpec>;
    spawn?: SpawnOptions;
    onSignal?: (s: LedgerSignal, h: IterationHandle) => void;
  } = {},
): Promise<ClaudeRun> {
  const root = makeTempFolder('ralph-claude-');
  const cwd = root.file('ws');
  const home = root.file('home');
  fs.mkdirSync(cwd);
  fs.mkdirSync(home);
  const server = await startModelServer(typeof script === 'function' ? script(cwd) : script);
  const baseEnv = withoutClaudeVars();
  const handle = spawnIteration(
    claudeAdapter,
    {
      prompt: o.prompt ?? 'Do the task.',
      cwd,
      binary: claudeBinary,
      permissionMode: 'bypassPermissions',
      baseEnv,
      env: {
        ...scriptedClaudeEnv(server.url, home),
        ...o.env,
      },
      ...o.spec,
    },
    { killGraceMs: 2000, ...o.spawn },
  );
  const events: AgentEvent[] = [];
  const signals: LedgerSignal[] = [];
  handle.onEvent((e) => events.push(e));
  handle.onLedgerSignal((s) => {
    signals.push(s);
    o.onSignal?.(s, handle);
  });
  return {
    handle,
    server,
    cwd,
    events,
    signals,
    done: handle.done,
    async cleanup() {
      await handle.kill('cleanup');
      await server.close();
      root.dispose();
    },
  };
}
