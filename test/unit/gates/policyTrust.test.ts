import * as assert from 'node:assert/strict';
import { parseCommandPolicy } from '../../../src/core/gates/commandPolicy';
import { policyForTrust, policyNeedsTrust } from '../../../src/core/gates/policyTrust';

/** breaker-s6 row 28: which rows of an untrusted policy the standalone guard may use. */
describe('policyForTrust: an untrusted policy may only take power away', () => {
  const P = (text: string) => parseCommandPolicy(text, '.ralph/command-policy').policy;
  const full =
    '[gates]\nbasic | npm test\n[rewrite]\n^npm t$ | ./evil.sh | r\n[deny]\ngit push | ask\n[wrap]\nmake | basic\n[protect]\n.ralph\n';
  const rows: {
    name: string;
    text: string;
    allowed: boolean;
    ignored: string[];
    kept: { gates: number; rewrite: number; wrap: number; deny: number; protect: number };
  }[] = [
    {
      name: 'trusted: everything kept',
      text: full,
      allowed: true,
      ignored: [],
      kept: { gates: 1, rewrite: 1, wrap: 1, deny: 1, protect: 1 },
    },
    {
      name: 'untrusted: gates, rewrite, wrap ignored; deny, protect kept',
      text: full,
      allowed: false,
      ignored: ['[gates] 1 row', '[rewrite] 1 row', '[wrap] 1 row'],
      kept: { gates: 0, rewrite: 0, wrap: 0, deny: 1, protect: 1 },
    },
    {
      name: 'untrusted, only deny/protect: nothing ignored',
      text: '[deny]\ngit push | ask\n[protect]\n.ralph\n',
      allowed: false,
      ignored: [],
      kept: { gates: 0, rewrite: 0, wrap: 0, deny: 1, protect: 1 },
    },
    {
      name: 'untrusted, two rewrites',
      text: '[rewrite]\n^a$ | b | r\n^c$ | d | r\n',
      allowed: false,
      ignored: ['[rewrite] 2 rows'],
      kept: { gates: 0, rewrite: 0, wrap: 0, deny: 0, protect: 0 },
    },
  ];
  for (const r of rows) {
    it(r.name, () => {
      const v = policyForTrust(P(r.text), r.allowed);
      assert.deepEqual(v.ignored, r.ignored);
      const p = v.policy;
      assert.deepEqual(
        {
          gates: Object.keys(p.gates).length,
          rewrite: p.rewrite.length,
          wrap: p.wrap.length,
          deny: p.deny.length,
          protect: p.protect.length,
        },
        r.kept,
      );
    });
  }
  it('policyNeedsTrust is true only with rows that could allow or change a call', () => {
    assert.equal(policyNeedsTrust(P(full)), true);
    assert.equal(policyNeedsTrust(P('[deny]\ngit push | ask\n')), false);
  });
});
