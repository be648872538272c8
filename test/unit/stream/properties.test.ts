import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import fc from 'fast-check';
import { AgentStream } from '../../../src/core/agents/agentStream';
import { claudeAdapter } from '../../../src/core/agents/claude';
import { cursorAgentAdapter } from '../../../src/core/agents/cursorAgent';
import { inspectStream } from '../../../src/core/agents/inspect';
import type { AgentEvent } from '../../../src/core/stream/events';
import { streamFixture } from '../../support/fixtures';

/** Events of `bytes` fed in the pieces that `cuts` (sorted offsets) define. */
function eventsOf(adapter: typeof claudeAdapter, bytes: Buffer, cuts: number[]): AgentEvent[] {
  const out: AgentEvent[] = [];
  const s = new AgentStream((e) => out.push(e), { adapter });
  let prev = 0;
  for (const c of [...cuts, bytes.length]) {
    s.push(bytes.subarray(prev, c));
    prev = c;
  }
  s.end();
  return out;
}

const cutsOf = (len: number) =>
  fc.uniqueArray(fc.integer({ min: 0, max: len }), { maxLength: 64 }).map((a) => a.sort((x, y) => x - y));

describe('stream properties (fast-check)', () => {
  const real = [
    { adapter: claudeAdapter, file: streamFixture('claude', 'recorded', 'tool-use-bash-success.jsonl') },
    { adapter: claudeAdapter, file: streamFixture('claude', 'recorded', 'http-429-max-retries-1.jsonl') },
    { adapter: cursorAgentAdapter, file: streamFixture('cursor-agent', 'sequential-shell.jsonl') },
  ];

  for (const { adapter, file } of real) {
    it(`any chunking of ${path.basename(file)} yields the same events`, () => {
      // CRLF endings and a multi-byte character make the boundaries interesting.
      const bytes = Buffer.from(
        fs.readFileSync(file, 'utf8').replace(/\n/g, '\r\n').replace('"hello-from-bash"', '"héllo · 🎉"'),
      );
      const whole = eventsOf(adapter, bytes, []);
      fc.assert(
        fc.property(cutsOf(bytes.length), (cuts) => {
          assert.deepEqual(eventsOf(adapter, bytes, cuts), whole);
        }),
        { numRuns: 150 },
      );
    });
  }

  it('random byte damage never throws, whatever the chunking', async () => {
    const bytes = fs.readFileSync(real[0]!.file);
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ at: fc.nat({ max: bytes.length - 1 }), byte: fc.integer({ min: 0, max: 255 }) }), {
          maxLength: 40,
        }),
        fc.nat({ max: bytes.length }),
        cutsOf(bytes.length),
        async (damage, truncateAt, cuts) => {
          const b = Buffer.from(bytes);
          for (const d of damage) b[d.at] = d.byte;
          const damaged = b.subarray(0, Math.max(truncateAt, 1));
          eventsOf(
            claudeAdapter,
            damaged,
            cuts.filter((c) => c <= damaged.length),
          );
          eventsOf(cursorAgentAdapter, damaged, []);
          const s = await inspectStream(damaged);
          assert.ok(s.outcome.kind);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('arbitrary JSON objects never make a mapper throw', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.object(),
          fc.record({
            type: fc.constantFrom('assistant', 'user', 'result', 'system', 'rate_limit_event', 'tool_call', 'thinking'),
            subtype: fc.option(
              fc.constantFrom('init', 'api_retry', 'compact_boundary', 'started', 'completed', 'delta'),
            ),
            message: fc.anything(),
            tool_call: fc.anything(),
            rate_limit_info: fc.anything(),
            call_id: fc.anything(),
            usage: fc.anything(),
            modelUsage: fc.anything(),
          }),
        ),
        (obj) => {
          for (const a of [claudeAdapter, cursorAgentAdapter]) a.createMapper().map(obj as Record<string, unknown>);
        },
      ),
      { numRuns: 500 },
    );
  });
});
