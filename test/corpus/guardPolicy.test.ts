import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseCommandPolicy } from '../../src/core/gates/commandPolicy';
import { decideGuard, type GuardContext } from '../../src/core/gates/guardDecision';
import { describeCorpus } from '../support/corpus';

/** The seed's policy template drives the guard (issue 17): it parses, and its pins and rows decide as written. */
describeCorpus('guard: the seed policy template (corpus ralph-wiggum-plugin/command-policy.template)', (dir) => {
  const text = fs.readFileSync(path.join(dir, 'ralph-wiggum-plugin', 'command-policy.template'), 'utf8');
  // The template's example rows are comments; enable them (`# row` → `row`) inside the sections.
  const enabled = text.replace(/^# (\^.*|pnpm .*)$/gm, '$1');
  const ctx = (policyText: string): GuardContext => ({
    workspace: '/w',
    stateDir: '/s/ralph/x',
    home: '/h',
    policy: parseCommandPolicy(policyText, 'command-policy.template').policy,
    gateRunner: { node: '/n/node', cliPath: '/r/dist/cli.js' },
    state: { lastWriteMs: 0, lastGateMs: {}, latestExitMs: {}, runningLabels: [] },
    now: 1,
  });
  const decide = (command: string, policyText = enabled) =>
    decideGuard({ tool_name: 'Bash', tool_input: { command }, cwd: '/w' }, ctx(policyText));

  it('parses without problems, as shipped and with its example rows enabled', () => {
    assert.deepEqual(parseCommandPolicy(text, 'command-policy.template').problems, []);
    const { policy, problems } = parseCommandPolicy(enabled, 'command-policy.template');
    assert.deepEqual(problems, []);
    assert.equal(policy.rewrite.length, 3);
    assert.equal(policy.wrap.length, 5);
  });

  it('wraps the pinned tier commands under their tiers', () => {
    const d = decide('pnpm basic-check', text);
    assert.equal(d.kind, 'rewrite');
    assert.match(
      d.kind === 'rewrite' ? String(d.updatedInput.command) : '',
      /cli\.js -C \/w gate basic --wait-ms \d+ -- 'pnpm basic-check'$/,
    );
    const full = decide('pnpm run all-check', text);
    assert.match(full.kind === 'rewrite' ? String(full.updatedInput.command) : '', /gate full .* 'pnpm all-check'$/);
  });

  it('applies the example rows: rewrite, deny, wrap, protect', () => {
    const r = decide('pnpm -w run test-unit');
    assert.equal(r.kind, 'rewrite');
    assert.match(r.kind === 'rewrite' ? String(r.updatedInput.command) : '', /gate unit .* 'pnpm test-unit'$/);
    assert.equal(decide('pnpm test-e2e').kind, 'deny');
    const e2e = decide('pnpm test-e2e:local');
    assert.match(e2e.kind === 'rewrite' ? String(e2e.updatedInput.command) : '', /gate e2e .* 'pnpm test-e2e:local'$/);
    assert.equal(decide('pnpm format:write').kind, 'allow');
    assert.equal(decide('pnpm format:write | head').kind, 'deny');
  });
});
