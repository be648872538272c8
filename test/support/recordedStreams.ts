import * as fs from 'node:fs';
import type { AgentAdapter } from '../../src/core/agents/adapter';
import { AgentStream } from '../../src/core/agents/agentStream';
import { type SessionSummary, SessionInspector } from '../../src/core/agents/inspect';
import type { AgentEvent } from '../../src/core/stream/events';
import { streamFixture } from './fixtures';

/** One recorded stream of scripts/record-agent-streams.ts replayed through an adapter, as spawn.ts does live. */
export interface Replay {
  events: AgentEvent[];
  summary: SessionSummary;
  /** The recorded exit code (null: killed). */
  exitCode: number | null;
}

/**
 * Replays `test/fixtures/streams/<agent>/recorded/<file>` (with its `.stderr.txt` and `.exit`) through `adapter`,
 * in chunks of `chunkBytes` (default: whole), and finishes the summary with the recorded exit.
 */
export function replayRecorded(adapter: AgentAdapter, file: string, chunkBytes?: number): Replay {
  const base = streamFixture(adapter.name, 'recorded', file);
  const bytes = fs.readFileSync(base);
  const stderrFile = base.replace(/\.jsonl$/, '.stderr.txt');
  const stderr = fs.existsSync(stderrFile) ? fs.readFileSync(stderrFile, 'utf8') : '';
  const exitText = fs.readFileSync(base.replace(/\.jsonl$/, '.exit'), 'utf8').trim();
  const exitCode = exitText === 'null' ? null : Number(exitText);
  const events: AgentEvent[] = [];
  const inspector = new SessionInspector({}, adapter);
  const stream = new AgentStream(
    (e) => {
      events.push(e);
      inspector.apply(e);
    },
    { adapter },
  );
  const step = chunkBytes ?? bytes.length;
  for (let i = 0; i < bytes.length; i += step) stream.push(bytes.subarray(i, i + step));
  stream.end();
  const summary = inspector.finish(adapter, stream.stats, {
    exitCode,
    signal: exitCode === null ? 'SIGKILL' : null,
    stderr,
  });
  return { events, summary, exitCode };
}

/** Maps raw lines (objects or JSON text, partial lines allowed) through a fresh mapper of `adapter`. */
export function mapLines(adapter: AgentAdapter, text: string): AgentEvent[] {
  const events: AgentEvent[] = [];
  const stream = new AgentStream((e) => events.push(e), { adapter });
  stream.push(text);
  stream.end();
  return events;
}
