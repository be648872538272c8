import * as assert from 'node:assert/strict';
import { defaultConfigLiteral } from '../../../src/core/model/config';
import {
  AGENT_MEMORY_KEY,
  AgentChooser,
  agentChoiceOf,
  agentPickItems,
  foundAgentsOf,
  memoryState,
  type AgentChoiceInput,
  type FoundAgent,
} from '../../../src/extension/startAgent';
import { recorded, resetFake } from '../../support/fakeVscode';

const claude: FoundAgent = { agent: 'claude', version: '2.1.328', path: '/usr/bin/claude' };
const codex: FoundAgent = { agent: 'codex', version: '0.171.0', path: '/opt/codex/bin/codex' };
const gemini: FoundAgent = { agent: 'gemini', version: null, path: '/usr/bin/gemini', note: 'timed out on --version' };
/** The agent of a choice (its `why` is for the log). */
const agentOf = (c: { agent: string | undefined } | null) => (c ? { agent: c.agent } : c);
const base: AgentChoiceInput = { given: undefined, configured: undefined, remembered: undefined, found: [] };

describe('Ralph: Start — which agent (pure)', () => {
  const table: { name: string; input: Partial<AgentChoiceInput>; want: ReturnType<typeof agentChoiceOf> }[] = [
    {
      name: 'the caller names one: run it',
      input: { given: 'qwen', found: [claude, codex] },
      want: { kind: 'given', agent: 'qwen' },
    },
    {
      name: 'the settings or config file name one: the engine decides, nothing asked',
      input: { configured: 'codex', found: [claude, codex], remembered: 'claude' },
      want: { kind: 'configured' },
    },
    {
      name: 'a remembered agent still on this machine: run it without asking',
      input: { remembered: 'codex', found: [claude, codex] },
      want: { kind: 'remembered', agent: 'codex' },
    },
    {
      name: 'a remembered agent no longer found, several others: ask',
      input: { remembered: 'gemini', found: [claude, codex] },
      want: { kind: 'ask', found: [claude, codex], remembered: undefined },
    },
    {
      name: 'two found, none remembered: ask',
      input: { found: [claude, codex] },
      want: { kind: 'ask', found: [claude, codex], remembered: undefined },
    },
    { name: 'one found: the default, nothing asked', input: { found: [codex] }, want: { kind: 'default' } },
    { name: 'none found: the default (the engine says it is missing)', input: {}, want: { kind: 'default' } },
    {
      name: 'Choose Agent: ask even with a remembered agent, marking it',
      input: { change: true, remembered: 'codex', found: [claude, codex] },
      want: { kind: 'ask', found: [claude, codex], remembered: 'codex' },
    },
    {
      name: 'Choose Agent with one agent found: still asked (the person asked to choose)',
      input: { change: true, found: [codex] },
      want: { kind: 'ask', found: [codex], remembered: undefined },
    },
  ];
  for (const t of table)
    it(t.name, () => {
      assert.deepEqual(agentChoiceOf({ ...base, ...t.input }), t.want);
    });

  it('the pick shows name, version (or why none) and path; the current agent last, marked', () => {
    assert.deepEqual(agentPickItems([claude, codex, gemini], 'codex'), [
      { label: 'claude', description: '2.1.328', detail: '/usr/bin/claude', agent: 'claude' },
      { label: 'gemini', description: 'timed out on --version', detail: '/usr/bin/gemini', agent: 'gemini' },
      { label: 'codex', description: '0.171.0 (current)', detail: '/opt/codex/bin/codex', agent: 'codex' },
    ]);
  });

  it('found binaries are named by their adapters, one per adapter, in the adapters order', () => {
    const binaries = [
      { binary: 'claude', adapter: { name: 'claude' } },
      { binary: '/work/tools/codex', adapter: { name: 'codex' } },
      { binary: 'cursor-agent', adapter: { name: 'cursor-agent' } },
    ];
    const found = foundAgentsOf(
      [
        { name: 'codex', path: '/work/tools/codex', version: '0.171.0' },
        { name: 'claude', path: '/usr/bin/claude', version: '2.1.328' },
      ],
      binaries,
    );
    assert.deepEqual(found, [
      { agent: 'claude', version: '2.1.328', path: '/usr/bin/claude' },
      { agent: 'codex', version: '0.171.0', path: '/work/tools/codex' },
    ]);
  });
});

describe('Ralph: Start — the agent pick and its memory per workspace folder (fake vscode)', () => {
  const config = defaultConfigLiteral();
  let finds: number;
  let found: FoundAgent[];
  const chooser = (memory = memoryState()) =>
    new AgentChooser({
      memory,
      find: async () => {
        finds++;
        return found;
      },
    });
  beforeEach(() => {
    resetFake();
    finds = 0;
    found = [claude, codex];
  });

  it('asks once, remembers the answer for the folder, and the next Start runs it without asking', async () => {
    const memory = memoryState();
    const c = chooser(memory);
    recorded.pickAnswers.push('codex');
    assert.deepEqual(agentOf(await c.choose({ folder: '/w/a', config, given: undefined, configured: undefined })), {
      agent: 'codex',
    });
    assert.deepEqual(recorded.quickPicks, [{ title: 'Ralph: Start — which agent?', labels: ['claude', 'codex'] }]);
    assert.deepEqual(memory.get(AGENT_MEMORY_KEY), { '/w/a': 'codex' });
    // The same workspace state, as a window reload gives it: no second pick.
    assert.deepEqual(
      agentOf(await chooser(memory).choose({ folder: '/w/a', config, given: undefined, configured: undefined })),
      { agent: 'codex' },
    );
    assert.equal(recorded.quickPicks.length, 1);
    // Another folder of the workspace has its own choice.
    recorded.pickAnswers.push('claude');
    assert.deepEqual(agentOf(await c.choose({ folder: '/w/b', config, given: undefined, configured: undefined })), {
      agent: 'claude',
    });
    assert.deepEqual(memory.get(AGENT_MEMORY_KEY), { '/w/a': 'codex', '/w/b': 'claude' });
    await c.forget('/w/a');
    assert.deepEqual(memory.get(AGENT_MEMORY_KEY), { '/w/b': 'claude' });
  });

  it('Choose Agent asks again with the current one last, and Start then runs the new choice', async () => {
    const memory = memoryState();
    await memory.update(AGENT_MEMORY_KEY, { '/w/a': 'codex' });
    const c = chooser(memory);
    recorded.pickAnswers.push('claude');
    assert.deepEqual(
      agentOf(await c.choose({ folder: '/w/a', config, given: undefined, configured: undefined, change: true })),
      { agent: 'claude' },
    );
    assert.deepEqual(recorded.quickPicks[0]!.labels, ['claude', 'codex']);
    assert.match(recorded.quickPicks[0]!.title!, /Choose Agent/);
    assert.deepEqual(agentOf(await c.choose({ folder: '/w/a', config, given: undefined, configured: undefined })), {
      agent: 'claude',
    });
    assert.equal(recorded.quickPicks.length, 1);
  });

  it('a dismissed pick starts nothing and remembers nothing', async () => {
    const memory = memoryState();
    recorded.pickAnswers.push(undefined);
    assert.equal(
      await chooser(memory).choose({ folder: '/w/a', config, given: undefined, configured: undefined }),
      null,
    );
    assert.equal(memory.get(AGENT_MEMORY_KEY), undefined);
  });

  it('a named or configured agent runs no --version and asks nothing; one agent found is the default', async () => {
    const c = chooser();
    assert.deepEqual(agentOf(await c.choose({ folder: '/w/a', config, given: 'gemini', configured: 'codex' })), {
      agent: 'gemini',
    });
    assert.deepEqual(agentOf(await c.choose({ folder: '/w/a', config, given: undefined, configured: 'codex' })), {
      agent: undefined,
    });
    assert.equal(finds, 0);
    found = [codex];
    assert.deepEqual(agentOf(await c.choose({ folder: '/w/a', config, given: undefined, configured: undefined })), {
      agent: undefined,
    });
    assert.equal(recorded.quickPicks.length, 0);
  });
});
