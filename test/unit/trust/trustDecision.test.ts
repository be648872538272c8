import * as assert from 'node:assert/strict';
import {
  decideTrust,
  describeTrust,
  formatTrustRefusal,
  trustOverride,
  type TrustRecord,
} from '../../../src/core/trust/trustDecision';
import { contentHash, contentLines, trustedContent } from '../../../src/core/trust/trustedContent';

const trusted = trustedContent({ config: { gates: { basic: 'npm test' } } });
const weakened = trustedContent({ config: { gates: { basic: 'true' } } });
const record = (content = trusted): TrustRecord => ({
  folder: '/w',
  hash: contentHash(content),
  lines: contentLines(content),
  trustedAt: '2026-12-01T09:00:00.000Z',
});

describe('deciding whether workspace configuration may be used', () => {
  const table: {
    name: string;
    content: typeof trusted;
    record: TrustRecord | null;
    override: ReturnType<typeof trustOverride>;
    state: string;
    allowed: boolean;
    diff: string[];
  }[] = [
    {
      name: 'nothing names a program: allowed without a record',
      content: [],
      record: null,
      override: null,
      state: 'nothing',
      allowed: true,
      diff: [],
    },
    {
      name: 'the content trusted: allowed',
      content: trusted,
      record: record(),
      override: null,
      state: 'trusted',
      allowed: true,
      diff: [],
    },
    {
      name: 'never trusted: refused, the whole content as added lines',
      content: trusted,
      record: null,
      override: null,
      state: 'untrusted',
      allowed: false,
      diff: ['+ .ralph/config.json gates.basic = "npm test"'],
    },
    {
      name: 'gates.basic rewritten to true: refused with the diff',
      content: weakened,
      record: record(),
      override: null,
      state: 'changed',
      allowed: false,
      diff: ['- .ralph/config.json gates.basic = "npm test"', '+ .ralph/config.json gates.basic = "true"'],
    },
    {
      name: 'changed but --trust: allowed for this command',
      content: weakened,
      record: record(),
      override: '--trust',
      state: 'changed',
      allowed: true,
      diff: ['- .ralph/config.json gates.basic = "npm test"', '+ .ralph/config.json gates.basic = "true"'],
    },
    {
      name: 'never trusted but RALPH_TRUST=1: allowed for this command',
      content: trusted,
      record: null,
      override: 'RALPH_TRUST=1',
      state: 'untrusted',
      allowed: true,
      diff: ['+ .ralph/config.json gates.basic = "npm test"'],
    },
    {
      name: 'a record of other content does not trust this one',
      content: trusted,
      record: record(weakened),
      override: null,
      state: 'changed',
      allowed: false,
      diff: ['- .ralph/config.json gates.basic = "true"', '+ .ralph/config.json gates.basic = "npm test"'],
    },
  ];
  for (const t of table) {
    it(t.name, () => {
      const v = decideTrust(t.content, t.record, t.override);
      assert.equal(v.state, t.state);
      assert.equal(v.allowed, t.allowed);
      assert.deepEqual(v.diff, t.diff);
      assert.equal(v.via, t.override ?? undefined);
    });
  }

  it('takes the override from --trust or RALPH_TRUST=1 (or true), nothing else', () => {
    assert.equal(trustOverride(true, {}), '--trust');
    assert.equal(trustOverride(false, { RALPH_TRUST: '1' }), 'RALPH_TRUST=1');
    assert.equal(trustOverride(undefined, { RALPH_TRUST: 'true' }), 'RALPH_TRUST=1');
    assert.equal(trustOverride(undefined, { RALPH_TRUST: '0' }), null);
    assert.equal(trustOverride(undefined, {}), null);
  });

  it('refuses with what changed and how to trust it', () => {
    const text = formatTrustRefusal(decideTrust(weakened, record()), '`ralph run`');
    assert.match(text, /`ralph run` refused: .* changed since you trusted it/);
    assert.match(
      text,
      /- \.ralph\/config\.json gates\.basic = "npm test"\n\s+\+ \.ralph\/config\.json gates\.basic = "true"/,
    );
    assert.match(text, /ralph trust/);
    assert.match(text, /RALPH_TRUST=1/);
    assert.match(
      formatTrustRefusal(decideTrust(trusted, null), 'x'),
      /not trusted here\.\nWhat it runs:\n {2}\.ralph\/config\.json gates\.basic = "npm test"/,
    );
  });

  it('describes each state in one line', () => {
    assert.match(describeTrust(decideTrust([], null)), /nothing to trust/);
    assert.match(describeTrust(decideTrust(trusted, record())), /^trusted \(sha256:/);
    assert.match(describeTrust(decideTrust(trusted, null)), /NOT TRUSTED/);
    assert.match(
      describeTrust(decideTrust(weakened, record(), '--trust')),
      /CHANGED .*allowed for this command by --trust/,
    );
  });
});
