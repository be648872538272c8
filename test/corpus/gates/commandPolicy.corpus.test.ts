import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseCommandPolicy, type CommandPolicy } from '../../../src/core/gates/commandPolicy';
import { describeCorpus } from '../../support/corpus';

const gates = (p: CommandPolicy) => Object.fromEntries(Object.entries(p.gates).map(([k, v]) => [k, v.command]));

describeCorpus('command policy: the seed template (corpus ralph-wiggum-plugin/command-policy.template)', (dir) => {
  const text = fs.readFileSync(path.join(dir, 'ralph-wiggum-plugin', 'command-policy.template'), 'utf8');
  const { policy, problems } = parseCommandPolicy(text, 'command-policy.template');

  it('pins the three tiers of the template', () => {
    assert.deepEqual(gates(policy), { basic: 'pnpm basic-check', full: 'pnpm all-check', final: 'pnpm all-check' });
  });

  it('records the line of each pin', () => {
    const lines = text.split('\n');
    assert.equal(lines[policy.gates.basic!.line - 1], 'basic | pnpm basic-check');
  });

  it('sees all five sections and no active rewrite, deny, wrap or protect rows (they are commented out)', () => {
    assert.deepEqual(policy.sectionsPresent, ['gates', 'rewrite', 'deny', 'wrap', 'protect']);
    assert.deepEqual([policy.rewrite, policy.deny, policy.wrap, policy.protect], [[], [], [], []]);
  });

  it('reports no problems', () => {
    assert.deepEqual(problems, []);
  });

  it('parses the template with its commented rows enabled', () => {
    const enabled = text.replace(/^# (\^|pnpm )/gm, '$1');
    const r = parseCommandPolicy(enabled, 'x');
    assert.deepEqual(r.problems, []);
    assert.deepEqual(
      r.policy.rewrite.map((x) => [x.pattern, x.replacement]),
      [
        ['^pnpm -w run (.+)$', 'pnpm \\1'],
        ['^npx pnpm (.+)$', 'pnpm \\1'],
        ['^pnpm nx (.+)$', 'pnpm \\1'],
      ],
    );
    assert.deepEqual(
      r.policy.deny.map((x) => x.prefix),
      ['pnpm test-e2e'],
    );
    assert.deepEqual(
      r.policy.wrap.map((x) => [x.prefix, x.label]),
      [
        ['pnpm test-unit', 'unit'],
        ['pnpm test-integration', 'integration'],
        ['pnpm test-e2e:local', 'e2e'],
        ['pnpm lint', 'lint'],
        ['pnpm format:check', 'format'],
      ],
    );
    assert.deepEqual(
      r.policy.protect.map((x) => x.prefix),
      ['pnpm format:write'],
    );
  });
});
