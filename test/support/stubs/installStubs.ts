import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { cursorAgentAdapter } from '../../../src/core/agents/cursorAgent';
import { type IterationExit, processGroupAlive, spawnIteration } from '../../../src/core/agents/spawn';
import type { AgentEvent } from '../../../src/core/stream/events';
import { repoRoot } from '../repoRoot';
import { makeTempDir } from '../tempFolder';

/** The cursor-agent stand-in (see its header for what it checks and how it is driven). */
export const cursorAgentStub = path.join(repoRoot, 'test', 'support', 'stubs', 'cursor-agent.cjs');

/**
 * A temp folder holding one executable per entry of `scripts` (file name → whole script text, shebang included),
 * for putting first on PATH or naming by path. Returns the folder; remove it with `fs.rmSync(dir, { recursive: true })`.
 */
export function stubBinDir(scripts: Record<string, string>): string {
  const dir = makeTempDir('ralph-stub-bin-');
  for (const [name, script] of Object.entries(scripts)) fs.writeFileSync(path.join(dir, name), script, { mode: 0o755 });
  return dir;
}

/** A folder holding one executable `/bin/sh` script `name` running `body`; see {@link stubBinDir}. */
export function shellStub(name: string, body: string): string {
  return stubBinDir({ [name]: `#!/bin/sh\n${body}\n` });
}

/** A folder holding `cursor-agent` and `agent` executables that run the stub with this Node; see {@link stubBinDir}. */
export function installCursorAgentStub(): string {
  const script = `#!/bin/sh\nexec '${process.execPath}' '${cursorAgentStub}' "$@"\n`;
  return stubBinDir({ 'cursor-agent': script, agent: script });
}

/**
 * The checks every replayed cursor-agent capture must pass through the adapter: exit 0, success, no non-JSON line,
 * `init` first, one result, every started tool call completed, context estimated (cursor reports no live usage).
 */
export function assertReplayedToSuccess(exit: IterationExit, events: AgentEvent[]): void {
  assert.equal(exit.exitCode, 0);
  assert.equal(exit.outcome.kind, 'success');
  assert.equal(exit.decoder.nonJsonLines, 0);
  assert.equal(events[0]!.type, 'init');
  assert.equal(events.filter((e) => e.type === 'result').length, 1);
  const uses = events.filter((e) => e.type === 'toolUse').length;
  assert.equal(events.filter((e) => e.type === 'toolResult').length, uses, 'every started call completes');
  assert.equal(exit.ledger.contextEstimated, true);
}

/** Replays `capture` through the cursor-agent adapter with the stub on PATH, in a temp workspace; cleans up after. */
export async function replayThroughCursorStub(capture: string): Promise<{ exit: IterationExit; events: AgentEvent[] }> {
  const bin = installCursorAgentStub();
  const ws = makeTempDir('ralph-cursor-ws-');
  try {
    const handle = spawnIteration(cursorAgentAdapter, {
      prompt: 'Do the task.',
      cwd: ws,
      env: { PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}`, RALPH_STUB_REPLAY: capture },
    });
    const events: AgentEvent[] = [];
    handle.onEvent((e) => events.push(e));
    const exit = await handle.done;
    assert.ok(!exit.stderr.startsWith('stub:'), exit.stderr);
    assert.equal(
      handle.pid !== undefined && processGroupAlive(handle.pid),
      false,
      'no process remains in the agent group',
    );
    return { exit, events };
  } finally {
    fs.rmSync(bin, { recursive: true, force: true });
    fs.rmSync(ws, { recursive: true, force: true });
  }
}
