import * as assert from 'node:assert/strict';
import { parseCommandPolicy } from '../../../src/core/gates/commandPolicy';
import {
  canonicalJson,
  contentHash,
  contentLines,
  diffLines,
  TRUSTED_FIELDS,
  trustedContent,
} from '../../../src/core/trust/trustedContent';

const policy = (text: string) => parseCommandPolicy(text, '.ralph/command-policy').policy;
const hashOf = (config: unknown, policyText?: string) =>
  contentHash(trustedContent({ config, policy: policyText === undefined ? undefined : policy(policyText) }));

describe('the trusted content of a workspace', () => {
  it('lists the program-naming fields in one table, notify included before its schema exists', () => {
    assert.deepEqual(
      TRUSTED_FIELDS.map((f) => `${f.file} ${f.key}`),
      [
        '.ralph/config.json claudePath',
        '.ralph/config.json cursorAgentPath',
        '.ralph/config.json codexPath',
        '.ralph/config.json geminiPath',
        '.ralph/config.json opencodePath',
        '.ralph/config.json qwenPath',
        '.ralph/config.json copilotPath',
        '.ralph/config.json guard',
        '.ralph/config.json agentArgs',
        '.ralph/config.json gates',
        '.ralph/config.json notify',
        '.ralph/config.json containment',
        '.ralph/command-policy gates',
        '.ralph/command-policy rewrite',
        '.ralph/command-policy wrap',
      ],
    );
  });

  it('is empty when no file names a program: there is nothing to trust', () => {
    assert.deepEqual(trustedContent({}), []);
    assert.deepEqual(
      trustedContent({
        config: { model: 'opus', maxIterations: 3, timing: { stallLimit: 2 } },
        policy: policy('[deny]\nrm -rf | no\n[protect]\ngit push\n'),
      }),
      [],
    );
  });

  it('takes every trusted field the files hold, in table order', () => {
    const content = trustedContent({
      config: {
        notify: 'notify-send done',
        gates: { basic: 'npm test' },
        claudePath: './bin/claude',
        agentArgs: ['--verbose'],
        model: 'x',
      },
      policy: policy(
        '[wrap]\nnpm test | unit\n[gates]\nfull | npm run all\nbasic | npm test\n[rewrite]\n^npm t$ | npm test | canonical\n',
      ),
    });
    assert.deepEqual(
      content.map((e) => [e.file, e.key, e.value]),
      [
        ['.ralph/config.json', 'claudePath', './bin/claude'],
        ['.ralph/config.json', 'agentArgs', ['--verbose']],
        ['.ralph/config.json', 'gates', { basic: 'npm test' }],
        ['.ralph/config.json', 'notify', 'notify-send done'],
        ['.ralph/command-policy', 'gates', ['full | npm run all', 'basic | npm test']],
        ['.ralph/command-policy', 'rewrite', ['^npm t$ | npm test']],
        ['.ralph/command-policy', 'wrap', ['npm test | unit']],
      ],
    );
  });

  const base = {
    claudePath: 'claude-x',
    cursorAgentPath: 'ca',
    agentArgs: ['--a', 'b'],
    gates: { basic: 'npm test', full: 'npm run all' },
    notify: 'say done',
    model: 'm',
  };
  const table: [string, Record<string, unknown>][] = [
    ['claudePath', { ...base, claudePath: './evil' }],
    ['cursorAgentPath', { ...base, cursorAgentPath: '/tmp/x' }],
    ['agentArgs', { ...base, agentArgs: ['--a', 'c'] }],
    ['gates.basic weakened to true', { ...base, gates: { ...base.gates, basic: 'true' } }],
    ['a gate tier removed', { ...base, gates: { basic: 'npm test' } }],
    ['notify', { ...base, notify: 'curl evil' }],
    // breaker-s5 row 31: "marker" lets a `setsid env -i` process outlive its iteration and tick a box after the run.
    ['containment weakened to marker', { ...base, containment: 'marker' }],
    ['containment set where the file had none', { ...base, containment: 'auto' }],
  ];
  for (const [what, changed] of table) {
    it(`changes its hash when ${what} changes`, () => assert.notEqual(hashOf(changed), hashOf(base)));
  }

  it('keeps its hash when only untrusted fields or the key order change', () => {
    const reordered = Object.fromEntries(Object.entries({ ...base, model: 'other', maxIterations: 9 }).reverse());
    assert.equal(hashOf(reordered), hashOf(base));
    assert.equal(canonicalJson({ b: 1, a: [{ d: 2, c: 3 }] }), '{"a":[{"c":3,"d":2}],"b":1}');
  });

  it('changes its hash when a [gates], [rewrite] or [wrap] row of the command policy changes, not a [deny] reason', () => {
    const p = '[gates]\nbasic | npm test\n[rewrite]\n^a$ | b | why\n[wrap]\nnpm test | unit\n[deny]\nrm | no\n';
    assert.notEqual(hashOf({}, p.replace('basic | npm test', 'basic | true')), hashOf({}, p));
    assert.notEqual(hashOf({}, p.replace('^a$ | b', '^a$ | c')), hashOf({}, p));
    assert.notEqual(hashOf({}, p.replace('npm test | unit', 'npm t | unit')), hashOf({}, p));
    assert.equal(hashOf({}, p.replace('rm | no', 'rm | never')), hashOf({}, p));
    assert.equal(hashOf({}, p.replace('| why', '| because')), hashOf({}, p), 'a [rewrite] reason names no program');
  });

  it('reads as one line per value, agentArgs values shown only by a fingerprint', () => {
    const lines = contentLines(
      trustedContent({
        config: { agentArgs: ['--api-key', 'sk-ant-SECRET', '--x=tok'], gates: { basic: 'npm test' } },
        policy: policy('[gates]\nbasic | make\n'),
      }),
    );
    assert.deepEqual(
      lines.map((l) => l.replace(/sha256:[0-9a-f]{8}/, 'sha256:…')),
      [
        '.ralph/config.json agentArgs[0] = "--api-key"',
        '.ralph/config.json agentArgs[1] = "«redacted sha256:…»"',
        '.ralph/config.json agentArgs[2] = "--x=«redacted sha256:…»"',
        '.ralph/config.json gates.basic = "npm test"',
        '.ralph/command-policy [gates] basic | make',
      ],
    );
    assert.doesNotMatch(lines.join('\n'), /SECRET|tok"/);
    const other = contentLines(trustedContent({ config: { agentArgs: ['--api-key', 'sk-ant-OTHER'] } }));
    assert.notEqual(other[1], lines[1], 'a changed secret still shows in a diff');
  });

  it('diffs two contents as removed then added lines', () => {
    assert.deepEqual(diffLines(['a = 1', 'b = 2', 'c = 3'], ['a = 1', 'b = 9', 'c = 3', 'd = 4']), [
      '- b = 2',
      '+ b = 9',
      '+ d = 4',
    ]);
    assert.deepEqual(diffLines(['x', 'y'], ['y', 'x']), []);
    assert.deepEqual(diffLines([], ['x']), ['+ x']);
  });
});
