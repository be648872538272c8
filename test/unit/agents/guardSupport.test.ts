import * as assert from 'node:assert/strict';
import {
  GUARD_ROW_KINDS,
  GUARD_SUPPORT,
  guardGaps,
  guardGapWarning,
  guardRefusal,
} from '../../../src/core/agents/guardSupport';
import { agentAdapters } from '../../../src/core/agents/registry';
import { parseCommandPolicy } from '../../../src/core/gates/commandPolicy';
import { AGENT_NAMES } from '../../../src/core/model/agentNames';

const POLICY = `[gates]
basic | npm test

[deny]
git push | pushing is the operator's job

[protect]
npm run format

[wrap]
node unit.js | unit

[rewrite]
^npm i$ | npm ci | reproducible installs
`;
const policy = parseCommandPolicy(POLICY, '.ralph/command-policy').policy;

describe('the guard per agent (what each CLI enforces of .ralph/command-policy)', () => {
  it('has a row for every agent and every kind of policy row, each saying how', () => {
    assert.deepEqual(Object.keys(GUARD_SUPPORT).sort(), [...AGENT_NAMES].sort());
    for (const agent of AGENT_NAMES)
      for (const kind of GUARD_ROW_KINDS) assert.ok(GUARD_SUPPORT[agent][kind].how.length > 10, `${agent} ${kind}`);
  });

  it('claims enforcement only for agents that run the PreToolUse hook', () => {
    for (const agent of AGENT_NAMES) {
      const enforced = GUARD_ROW_KINDS.some((k) => GUARD_SUPPORT[agent][k].level !== 'not-enforced');
      assert.equal(enforced, agentAdapters[agent]!.guardHook, agent);
    }
  });

  const table: { agent: string; rows: string[] }[] = [
    { agent: 'claude', rows: [] },
    { agent: 'codex', rows: [] },
    {
      agent: 'opencode',
      rows: [
        '[gates] basic | npm test',
        '[deny] git push',
        '[protect] npm run format',
        '[wrap] node unit.js | unit',
        '[rewrite] ^npm i$',
      ],
    },
    {
      agent: 'cursor-agent',
      rows: [
        '[gates] basic | npm test',
        '[deny] git push',
        '[protect] npm run format',
        '[wrap] node unit.js | unit',
        '[rewrite] ^npm i$',
      ],
    },
  ];
  for (const t of table)
    it(`${t.agent}: ${t.rows.length ? `${t.rows.length} rows not enforced, in file order` : 'every row enforced'}`, () => {
      assert.deepEqual(
        guardGaps(t.agent, policy).map((g) => g.row),
        t.rows,
      );
    });

  it('no policy, no gaps; the refusal names each row with its line and the ways on', () => {
    assert.deepEqual(guardGaps('qwen', undefined), []);
    const gaps = guardGaps('qwen', parseCommandPolicy('[deny]\ngit push | no\n', 'p').policy);
    const text = guardRefusal('qwen', '.ralph/command-policy', gaps);
    assert.match(text, /^The qwen agent cannot enforce this row of \.ralph\/command-policy/);
    assert.match(text, /line 2: \[deny\] git push/);
    assert.match(text, /"guard": "best-effort"/);
    assert.equal(
      guardGapWarning('qwen', gaps[0]!),
      'guard: not enforced for qwen: line 2: [deny] git push (not translated for Qwen Code yet (it runs Claude-style PreToolUse hooks, but only from settings files ralph does not write))',
    );
  });
});
