import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { codexAdapter } from '../../../src/core/agents/codex';
import { copilotAdapter } from '../../../src/core/agents/copilot';
import { inspectStream } from '../../../src/core/agents/inspect';
import { durationMs, resetFromHeaders, resetFromText } from '../../../src/core/agents/limitReset';
import { opencodeAdapter } from '../../../src/core/agents/opencode';
import { qwenAdapter } from '../../../src/core/agents/qwen';
import { streamFixture } from '../../support/fixtures';
import { replayRecorded } from '../../support/recordedStreams';

const NOW = Date.parse('2026-12-06T09:00:00.000Z');

describe('usage limits: when they reset, from a message or the response headers (pure)', () => {
  it('reads OpenAI reset durations', () => {
    const table: [string, number | null][] = [
      ['1h0m0s', 3_600_000],
      ['20m0s', 1_200_000],
      ['3600s', 3_600_000],
      ['1.5s', 1500],
      ['250ms', 250],
      ['6 minutes', 360_000],
      ['', null],
      ['soon', null],
      ['10x', null],
    ];
    for (const [text, want] of table) assert.equal(durationMs(text), want, text);
  });

  it('reads the reset a message names: an ISO time, a wall-clock time (Codex), a duration', () => {
    const local = (h: number, m: number, dayOffset = 0) => {
      const d = new Date(NOW);
      return new Date(d.getFullYear(), d.getMonth(), d.getDate() + dayOffset, h, m).getTime();
    };
    const nowLocal = new Date(NOW);
    const later = (nowLocal.getHours() + 1) % 24;
    const table: [string, number | null][] = [
      [
        'You exceeded your current quota: it will reset at 2026-12-06T10:16:05.000Z.',
        Date.parse('2026-12-06T10:16:05.000Z'),
      ],
      ['Quota exhausted: resets at 2026-12-06 11:00:00+01:00', Date.parse('2026-12-06T11:00:00+01:00')],
      ['Rate limit reached. Please try again in 20m0s.', NOW + 1_200_000],
      ['Your limit resets in 2 hours', NOW + 7_200_000],
      [
        `You’ve hit your usage limit. … or try again at ${later % 12 || 12}:30 ${later >= 12 ? 'PM' : 'AM'}.`,
        local(later, 30, later < nowLocal.getHours() ? 1 : 0),
      ],
      ["You've hit your usage limit … try again at Dec 7th, 2026 3:05 PM.", new Date(2026, 11, 7, 15, 5).getTime()],
      ['rate limited', null],
    ];
    for (const [text, want] of table) assert.equal(resetFromText(text, NOW), want, text);
  });

  it('a time of day already past is the next day', () => {
    const d = new Date(NOW);
    const past = new Date(d.getFullYear(), d.getMonth(), d.getDate(), d.getHours(), d.getMinutes() - 5);
    const h = past.getHours();
    const text = `try again at ${h % 12 || 12}:${String(past.getMinutes()).padStart(2, '0')} ${h >= 12 ? 'PM' : 'AM'}`;
    assert.equal(resetFromText(text, NOW), past.getTime() + 86_400_000);
  });

  it('reads retry-after (seconds or a date), else the later x-ratelimit-reset duration', () => {
    assert.equal(resetFromHeaders({ 'Retry-After': '120' }, NOW), NOW + 120_000);
    assert.equal(
      resetFromHeaders({ 'retry-after': 'Sun, 06 Dec 2026 10:00:00 GMT' }, NOW),
      Date.parse('2026-12-06T10:00:00Z'),
    );
    assert.equal(
      resetFromHeaders({ 'x-ratelimit-reset-requests': '20m0s', 'x-ratelimit-reset-tokens': '1h0m0s' }, NOW),
      NOW + 3_600_000,
    );
    assert.equal(resetFromHeaders({ 'content-type': 'application/json' }, NOW), null);
  });
});

/** The reset the recorded quota error names (the message's ISO time). */
function namedReset(agent: string): number {
  const text = fs.readFileSync(streamFixture(agent, 'recorded', 'http-429-quota.jsonl'), 'utf8');
  return Date.parse(/will reset at (\S+?Z)/.exec(text)![1]!);
}

describe('usage limits of the real CLIs: the reset each reports (recorded http-429-quota.jsonl)', () => {
  it('opencode and Qwen Code: the reset the message names', () => {
    for (const adapter of [opencodeAdapter, qwenAdapter]) {
      const { summary } = replayRecorded(adapter, 'http-429-quota.jsonl');
      assert.equal(summary.outcome.kind, 'rateLimited', adapter.name);
      assert.equal(summary.outcome.resetsAt, namedReset(adapter.name), adapter.name);
    }
  });

  it('Copilot CLI: the reset its session.error names, after its own retries', async () => {
    const s = await inspectStream(fs.createReadStream(streamFixture('copilot', 'recorded', 'http-429-quota.jsonl')), {
      adapter: copilotAdapter,
    });
    assert.equal(s.outcome.kind, 'rateLimited');
    assert.equal(s.outcome.resetsAt, namedReset('copilot'));
  });

  it('Codex: its "try again at" time of day, within the next day', () => {
    const before = Date.now();
    const { summary } = replayRecorded(codexAdapter, 'http-429-quota.jsonl');
    assert.equal(summary.outcome.kind, 'rateLimited');
    const at = summary.outcome.resetsAt!;
    const [, hh, mm, ampm] = /try again at (\d{1,2}):(\d{2}) ([AP]M)/.exec(
      fs.readFileSync(streamFixture('codex', 'recorded', 'http-429-quota.jsonl'), 'utf8'),
    )!;
    const d = new Date(at);
    assert.deepEqual([d.getHours(), d.getMinutes()], [(Number(hh) % 12) + (ampm === 'PM' ? 12 : 0), Number(mm)]);
    assert.ok(at >= before - 60_000 && at <= Date.now() + 86_400_000, new Date(at).toISOString());
  });
});
