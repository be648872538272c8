import * as assert from 'node:assert/strict';
import { parse as parseYaml } from 'yaml';
import { claimFor, parseClaims, parseFlatYaml, parseWaveState } from '../../../src/core/waves/waveState';

describe('STATE.md (seed-systems.md §1.6)', () => {
  const flat = [
    'wave_id: W12-A0\nstatus: in_progress\ncreated_at: 2026-05-18T14:00:00Z\nclaims_active: 3\nhard_gate: true\nnote: null\nx: ~',
    'subagents:\n  - W1-S1\n  - "W1-S2"\ntasks: ["W1-S5:DONE:k1", "a, b:DONE:k"]\nagents: [a, b]\nempty: []',
    'findings_recent:\n  - "quoted: with colon"\n  - plain text here',
  ];
  for (const text of flat) {
    it(`reads the flat subset as YAML does: ${JSON.stringify(text.slice(0, 30))}…`, () => {
      assert.deepEqual(parseFlatYaml(text), parseYaml(text));
    });
  }

  it('leaves anything outside the flat subset to the YAML parser', () => {
    for (const text of ['a:\n  b: 1', 'a: |\n  x', "a: 'single'", 'a: b: c', '  - orphan item'])
      assert.equal(parseFlatYaml(text), undefined, text);
    const st = parseWaveState("---\nwave_id: W1\nstatus: 'review'\n---\n");
    assert.ok(st.ok && st.state.status === 'review');
  });

  it('reads status, updated_at, the roster and DONE task entries', () => {
    const r = parseWaveState(
      '---\nwave_id: W1\nstatus: in_progress\nupdated_at: 2026-05-18T14:40:00Z\nsubagents:\n  - A\n  - B\ntasks: ["A:DONE:k1", "B:DONE_WITH_CONCERNS:k2", "C:BLOCKED:k3"]\n---\n\n## Body\n',
    );
    assert.ok(r.ok);
    assert.equal(r.state.status, 'in_progress');
    assert.equal(r.state.updatedAtMs, Date.parse('2026-05-18T14:40:00Z'));
    assert.deepEqual(r.state.subagents, ['A', 'B']);
    assert.deepEqual([...r.state.doneTasks].sort(), ['A', 'B']);
  });

  it('says why a STATE.md cannot be read', () => {
    const none = parseWaveState('no frontmatter');
    assert.ok(!none.ok && /frontmatter/.test(none.reason));
    const bad = parseWaveState('---\na: [unclosed\n---\n');
    assert.ok(!bad.ok && /not YAML/.test(bad.reason));
  });
});

describe('blackboard claims (seed-systems.md §1.7)', () => {
  const claims = parseClaims(
    JSON.stringify({
      version: 1,
      claims: [
        { id: 'c1', artifact_id: 'W1:lexer', agent: 'orchestrator', note: 'Lexer for W1-S2' },
        { id: 'c2', artifact: 'W1:parser', owner: 'W1-S1', note: 'Parser' },
        { id: 'c3', artifact_id: 'W2:x', agent: 'W1-S3' },
      ],
    }),
  );

  it('joins a claim by agent, then by a W<wave>: artifact mentioning the sub, with the legacy aliases', () => {
    assert.equal(claimFor(claims, 'W1', 'W1-S1')?.note, 'Parser');
    assert.equal(claimFor(claims, 'W1', 'W1-S2')?.id, 'c1');
    assert.equal(claimFor(claims, 'W1', 'W1-S3')?.id, 'c3');
    assert.equal(claimFor(claims, 'W1', 'W1-S9'), undefined);
  });

  it('reads nothing from a file that is not JSON', () => {
    assert.deepEqual(parseClaims('{'), []);
  });
});
