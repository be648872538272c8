import * as assert from 'node:assert/strict';
import { describeGates, gateCommandFor, resolveGates } from '../../../src/core/gates/gateConfig';
import { FileProblemError } from '../../../src/core/store/parseError';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

describe('gate configuration: where the gates come from', () => {
  let ws: TempFolder;
  beforeEach(() => {
    ws = makeTempFolder('ralph-gateconfig-', { ralphDir: true });
  });
  afterEach(() => ws.dispose());

  it('takes the [gates] of the command policy over config.json', async () => {
    ws.write('.ralph/command-policy', '[gates]\nbasic | npm run basic\nfull | npm run full\n');
    ws.write('.ralph/config.json', '{"gates": {"basic": "make basic"}}');
    const g = await resolveGates(ws.dir);
    assert.equal(g?.source, 'command-policy');
    assert.deepEqual(g?.commands, { basic: 'npm run basic', full: 'npm run full' });
  });

  it('falls back to config.json when the policy has no [gates] rows', async () => {
    ws.write('.ralph/command-policy', '[gates]\n# basic | commented\n[deny]\nrm -rf /\n');
    ws.write('.ralph/config.json', '{"gates": {"basic": "make basic", "final": "make all"}}');
    const g = await resolveGates(ws.dir);
    assert.equal(g?.source, 'config');
    assert.deepEqual(g?.commands, { basic: 'make basic', final: 'make all' });
  });

  it('uses the layered configuration it is given (settings and flags) instead of reading the file', async () => {
    ws.write('.ralph/config.json', '{"gates": {"basic": "from file"}}');
    const g = await resolveGates(ws.dir, { gates: { full: 'from settings' } });
    assert.deepEqual(g?.commands, { full: 'from settings' });
  });

  it('is null when neither the policy nor the configuration names a gate', async () => {
    assert.equal(await resolveGates(ws.dir), null);
    ws.write('.ralph/config.json', '{"gates": {"basic": "   "}}');
    assert.equal(await resolveGates(ws.dir), null);
  });

  it('refuses a policy whose [gates] row is malformed, naming its line', async () => {
    ws.write('.ralph/command-policy', '[gates]\nbasik | npm test\n');
    await assert.rejects(resolveGates(ws.dir), (e: unknown) => e instanceof FileProblemError && e.problem.line === 2);
  });

  it('describes the gates in one line', async () => {
    ws.write('.ralph/command-policy', '[gates]\nbasic | a\nfinal | b\n');
    assert.equal(describeGates(await resolveGates(ws.dir)), 'gates (command-policy): basic=a, final=b');
    assert.equal(describeGates(null), 'gates: none');
  });
});

describe('gate configuration: a missing tier stands in for another', () => {
  const table: {
    name: string;
    commands: Record<string, string>;
    tier: 'basic' | 'full' | 'final';
    expected: { tier: string; command: string } | undefined;
  }[] = [
    {
      name: 'a configured tier runs its own command',
      commands: { basic: 'b', full: 'f' },
      tier: 'basic',
      expected: { tier: 'basic', command: 'b' },
    },
    {
      name: 'a missing basic runs the next heavier tier',
      commands: { full: 'f', final: 'F' },
      tier: 'basic',
      expected: { tier: 'full', command: 'f' },
    },
    {
      name: 'a missing full runs final before basic',
      commands: { basic: 'b', final: 'F' },
      tier: 'full',
      expected: { tier: 'final', command: 'F' },
    },
    {
      name: 'a missing final runs full',
      commands: { basic: 'b', full: 'f' },
      tier: 'final',
      expected: { tier: 'full', command: 'f' },
    },
    {
      name: 'only basic configured runs basic everywhere',
      commands: { basic: 'b' },
      tier: 'final',
      expected: { tier: 'basic', command: 'b' },
    },
    { name: 'nothing configured gives nothing', commands: {}, tier: 'full', expected: undefined },
  ];
  for (const c of table)
    it(c.name, () => assert.deepEqual(gateCommandFor({ commands: c.commands }, c.tier), c.expected));
});
