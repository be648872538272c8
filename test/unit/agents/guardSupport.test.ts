import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
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
import { repoRoot } from '../../support/repoRoot';

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

  it('claims every section only for agents that run the guard hook; the others approximate at most [deny] with their own rules', () => {
    for (const agent of AGENT_NAMES) {
      const all = GUARD_ROW_KINDS.every((k) => GUARD_SUPPORT[agent][k].level === 'enforced');
      assert.equal(all, agentAdapters[agent]!.guardHook, agent);
      if (!all)
        for (const k of GUARD_ROW_KINDS.filter((k) => k !== 'deny'))
          assert.equal(GUARD_SUPPORT[agent][k].level, 'not-enforced', `${agent} ${k}`);
      // An agent that approximates a row translates it when it starts (AgentAdapter.prepareGuard).
      if (GUARD_SUPPORT[agent].deny.level === 'approximated') assert.ok(agentAdapters[agent]!.prepareGuard, agent);
    }
  });

  const table: { agent: string; rows: string[] }[] = [
    { agent: 'claude', rows: [] },
    { agent: 'codex', rows: [] },
    {
      agent: 'gemini',
      rows: ['[gates] basic | npm test', '[protect] npm run format', '[wrap] node unit.js | unit', '[rewrite] ^npm i$'],
    },
    { agent: 'qwen', rows: [] },
    {
      agent: 'opencode',
      rows: ['[gates] basic | npm test', '[protect] npm run format', '[wrap] node unit.js | unit', '[rewrite] ^npm i$'],
    },
    {
      agent: 'copilot',
      rows: ['[gates] basic | npm test', '[protect] npm run format', '[wrap] node unit.js | unit', '[rewrite] ^npm i$'],
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
    assert.deepEqual(guardGaps('cursor-agent', undefined), []);
    const gaps = guardGaps('cursor-agent', parseCommandPolicy('[deny]\ngit push | no\n', 'p').policy);
    const text = guardRefusal('cursor-agent', '.ralph/command-policy', gaps);
    assert.match(text, /^The cursor-agent agent cannot enforce this row of \.ralph\/command-policy/);
    assert.match(text, /line 2: \[deny\] git push/);
    assert.match(text, /"guard": "best-effort"/);
    assert.equal(
      guardGapWarning('cursor-agent', gaps[0]!),
      'guard: not enforced for cursor-agent: line 2: [deny] git push (cursor-agent has no hook or policy ralph can hand a decision to)',
    );
  });

  it("a [deny] prefix the agent's own rules cannot express is a gap of that row alone, saying why", () => {
    const p = parseCommandPolicy(
      '[deny]\ngit push | no\nrm -rf | no\nnpm run * | no\n',
      '.ralph/command-policy',
    ).policy;
    assert.deepEqual(
      guardGaps('copilot', p).map((g) => [g.line, g.row, g.why]),
      [
        [3, '[deny] rm -rf', "Copilot's shell rules name a command and at most one subcommand"],
        [4, '[deny] npm run *', "Copilot's shell rules name a command and at most one subcommand"],
      ],
    );
    assert.deepEqual(
      guardGaps('opencode', p).map((g) => [g.line, g.why]),
      [[4, 'a prefix with * or ? would be read as a wildcard by opencode']],
    );
  });

  /** The rows of the first Markdown table after `heading` in `file`, cells trimmed (header and rule left out). */
  const tableAfter = (file: string, heading: string): string[][] => {
    const text = fs.readFileSync(path.join(repoRoot, file), 'utf8');
    const from = text.indexOf(heading);
    assert.ok(from >= 0, `${file} has ${heading}`);
    const lines = text.slice(from).split('\n');
    const start = lines.findIndex((l) => l.startsWith('|'));
    const rows = lines.slice(start, start + lines.slice(start).findIndex((l) => !l.startsWith('|')));
    return rows.slice(2).map((r) =>
      r
        .split(/(?<!\\)\|/)
        .slice(1, -1)
        .map((c) => c.trim()),
    );
  };

  it("README's agent table says for each agent what its guard keeps, as the table the run checks", () => {
    const rows = tableAfter('README.md', '## Agents');
    const said = Object.fromEntries(rows.map((r) => [/`agent: "([\w-]+)"`/.exec(r[0]!)?.[1], r[2]!]));
    assert.deepEqual(Object.keys(said).sort(), [...AGENT_NAMES].sort());
    for (const agent of AGENT_NAMES) {
      const levels = GUARD_ROW_KINDS.map((k) => GUARD_SUPPORT[agent][k].level);
      const claim = levels.every((l) => l === 'enforced')
        ? /^yes: /
        : levels.every((l) => l === 'not-enforced')
          ? /^no: /
          : /^`\[deny\]` only, as /;
      assert.match(said[agent]!, claim, agent);
    }
  });

  it('docs/agents.md says per agent and per kind of row what the table the run checks says', () => {
    const rows = tableAfter('docs/agents.md', '## The guard per agent');
    assert.deepEqual(rows.map((r) => r[0]).sort(), [...AGENT_NAMES].sort());
    const word = { enforced: /^enforced\b/, approximated: /^approximated\b/, 'not-enforced': /^not enforced\b/ };
    for (const [agent, ...cells] of rows)
      GUARD_ROW_KINDS.forEach((k, i) =>
        assert.match(cells[i]!, word[GUARD_SUPPORT[agent as (typeof AGENT_NAMES)[number]][k].level], `${agent} ${k}`),
      );
  });
});
