import * as assert from 'node:assert/strict';
import {
  type FailoverDecision,
  agentOrder,
  decideFailover,
  isLimited,
  preferredAgent,
} from '../../../src/core/agents/failover';

const NOW = Date.parse('2026-12-06T00:00:00Z');
const MIN = 60_000;
const TEN = 10 * MIN;

describe('failover on a usage limit (decision table)', () => {
  const rows: {
    name: string;
    order: string[];
    current: string;
    resetsAt: number | null;
    limits?: [string, number | null][];
    want: Pick<FailoverDecision, 'kind'> & { to?: string; agent?: string; until?: number | null };
  }[] = [
    {
      name: 'one agent: waits for its reset as before',
      order: ['claude'],
      current: 'claude',
      resetsAt: NOW + 60 * MIN,
      want: { kind: 'wait', agent: 'claude', until: NOW + 60 * MIN },
    },
    {
      name: 'reset within the threshold: waits, no switch',
      order: ['claude', 'gemini'],
      current: 'claude',
      resetsAt: NOW + 5 * MIN,
      want: { kind: 'wait', agent: 'claude', until: NOW + 5 * MIN },
    },
    {
      name: 'reset exactly at the threshold: waits',
      order: ['claude', 'gemini'],
      current: 'claude',
      resetsAt: NOW + TEN,
      want: { kind: 'wait', agent: 'claude', until: NOW + TEN },
    },
    {
      name: 'reset further than the threshold: the next agent',
      order: ['claude', 'gemini', 'codex'],
      current: 'claude',
      resetsAt: NOW + TEN + 1,
      want: { kind: 'switch', to: 'gemini' },
    },
    {
      name: 'reset unknown: the next agent',
      order: ['claude', 'gemini'],
      current: 'claude',
      resetsAt: null,
      want: { kind: 'switch', to: 'gemini' },
    },
    {
      name: 'the next agent is limited too: the one after it',
      order: ['claude', 'gemini', 'codex'],
      current: 'claude',
      resetsAt: NOW + 60 * MIN,
      limits: [['gemini', NOW + 30 * MIN]],
      want: { kind: 'switch', to: 'codex' },
    },
    {
      name: 'wraps round the order: from the last back to the first',
      order: ['claude', 'gemini'],
      current: 'gemini',
      resetsAt: NOW + 60 * MIN,
      want: { kind: 'switch', to: 'claude' },
    },
    {
      name: 'an earlier limit that has reset no longer counts',
      order: ['claude', 'gemini'],
      current: 'claude',
      resetsAt: NOW + 60 * MIN,
      limits: [['gemini', NOW - 1]],
      want: { kind: 'switch', to: 'gemini' },
    },
    {
      name: 'every agent limited: waits for the earliest reset, on that agent',
      order: ['claude', 'gemini', 'codex'],
      current: 'claude',
      resetsAt: NOW + 60 * MIN,
      limits: [
        ['gemini', NOW + 45 * MIN],
        ['codex', NOW + 90 * MIN],
      ],
      want: { kind: 'wait', agent: 'gemini', until: NOW + 45 * MIN },
    },
    {
      name: 'every agent limited, the current one resets first: waits on it',
      order: ['claude', 'gemini'],
      current: 'claude',
      resetsAt: NOW + 20 * MIN,
      limits: [['gemini', null]],
      want: { kind: 'wait', agent: 'claude', until: NOW + 20 * MIN },
    },
    {
      name: 'every agent limited, no reset known: waits on the current agent with the backoff',
      order: ['claude', 'gemini'],
      current: 'claude',
      resetsAt: null,
      limits: [['gemini', null]],
      want: { kind: 'wait', agent: 'claude', until: null },
    },
  ];
  for (const r of rows)
    it(r.name, () => {
      const d = decideFailover({
        order: r.order,
        current: r.current,
        resetsAt: r.resetsAt,
        limits: new Map(r.limits ?? []),
        now: NOW,
        failoverAfterMs: TEN,
      });
      assert.equal(d.kind, r.want.kind, d.reason);
      if (d.kind === 'switch') {
        assert.equal(d.to, r.want.to);
        assert.equal(d.from, r.current);
        assert.match(d.reason, new RegExp(`${r.current} hit its usage limit.*runs ${r.want.to}`));
      } else {
        assert.equal(d.agent, r.want.agent);
        assert.equal(d.until, r.want.until);
      }
    });

  it('the order: agents when set (duplicates once), else [agent]; --agent first', () => {
    assert.deepEqual(agentOrder([], 'claude'), ['claude']);
    assert.deepEqual(agentOrder(['gemini', 'claude', 'gemini'], 'claude'), ['gemini', 'claude']);
    assert.deepEqual(agentOrder(['claude', 'gemini', 'codex'], 'claude', 'codex'), ['codex', 'claude', 'gemini']);
    assert.deepEqual(agentOrder([], 'claude', 'qwen'), ['qwen', 'claude']);
  });

  it('prefers the first agent whose limit has reset (a run goes back to its first agent)', () => {
    const limits = new Map<string, number | null>([
      ['claude', NOW + MIN],
      ['gemini', null],
    ]);
    assert.equal(preferredAgent(['claude', 'gemini', 'codex'], limits, NOW), 'codex');
    assert.equal(preferredAgent(['claude', 'gemini', 'codex'], limits, NOW + MIN), 'claude');
    assert.equal(preferredAgent(['claude', 'gemini'], limits, NOW), null);
    assert.equal(isLimited(limits, 'gemini', NOW + 365 * 24 * 60 * MIN), true, 'unknown reset: limited');
    assert.equal(isLimited(limits, 'codex', NOW), false);
  });
});
