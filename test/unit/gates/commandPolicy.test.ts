import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import {
  applyRewriteRule,
  compileEre,
  loadCommandPolicy,
  normalizeCommand,
  parseCommandPolicy,
  type CommandPolicy,
} from '../../../src/core/gates/commandPolicy';
import { FileProblemError } from '../../../src/core/store/parseError';
import { fixture } from '../../support/fixtures';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

const F = '.ralph/command-policy';
const parse = (text: string) => parseCommandPolicy(text, F);
const gates = (p: CommandPolicy) => Object.fromEntries(Object.entries(p.gates).map(([k, v]) => [k, v.command]));

describe('command policy: a whole file (test/fixtures/seed-formats/command-policy)', () => {
  const text = fs.readFileSync(fixture('seed-formats', 'command-policy'), 'utf8');
  const { policy, problems } = parseCommandPolicy(text, 'command-policy');

  it('pins the three tiers and records the line of each pin', () => {
    assert.deepEqual(gates(policy), {
      basic: 'npm run lint && npm run test:unit',
      full: 'npm test',
      final: 'npm test',
    });
    assert.equal(text.split('\n')[policy.gates.basic!.line - 1], 'basic | npm run lint && npm run test:unit');
  });

  it('reads the active rows of every section and skips the commented ones', () => {
    assert.deepEqual(policy.sectionsPresent, ['gates', 'rewrite', 'deny', 'wrap', 'protect']);
    assert.deepEqual(
      policy.rewrite.map((x) => [x.pattern, x.replacement, x.reason]),
      [['^npx mocha (.+)$', 'npm run test:unit -- \\1', 'run mocha through the package script']],
    );
    assert.deepEqual(
      policy.deny.map((x) => [x.prefix, x.reason]),
      [['git push --force', 'never rewrite shared history']],
    );
    assert.deepEqual(
      policy.wrap.map((x) => [x.prefix, x.label]),
      [
        ['npm run test:unit', 'unit'],
        ['npm run lint', 'lint'],
      ],
    );
    assert.deepEqual(
      policy.protect.map((x) => x.prefix),
      ['npm run format'],
    );
    assert.deepEqual(problems, []);
  });

  it('reads the commented example rows once they are enabled', () => {
    const r = parseCommandPolicy(text.replace(/^# off: /gm, ''), 'x');
    assert.deepEqual(r.problems, []);
    assert.deepEqual(
      r.policy.rewrite.map((x) => x.pattern),
      ['^npx mocha (.+)$', '^yarn (.+)$'],
    );
    assert.deepEqual(
      r.policy.deny.map((x) => x.prefix),
      ['git push --force', 'npm publish'],
    );
    assert.deepEqual(
      r.policy.wrap.map((x) => x.label),
      ['unit', 'lint', 'e2e'],
    );
  });
});

describe('command policy: rows (seed-systems.md §3.9)', () => {
  const table: { name: string; text: string; gates?: Record<string, string>; check?: (p: CommandPolicy) => void }[] = [
    {
      name: 'CR line ends and trailing spaces are stripped',
      text: '[gates]\r\nbasic | npm test   \r\n',
      gates: { basic: 'npm test' },
    },
    {
      name: 'a header followed by spaces still opens its section',
      text: '[gates]  \nfull|make all\n',
      gates: { full: 'make all' },
    },
    {
      name: 'fields are trimmed on both sides of the bar',
      text: '[gates]\n  final   |   ./gate.sh   final  \n',
      gates: { final: './gate.sh   final' },
    },
    {
      name: 'the command takes the rest of the line, bars included',
      text: '[gates]\nbasic | npm test | tee out.txt\n',
      gates: { basic: 'npm test | tee out.txt' },
    },
    {
      name: 'an unknown header ends the section',
      text: '[gates]\nbasic | a\n[extra]\nfull | b\n[gates]\nfinal | c\n',
      gates: { basic: 'a', final: 'c' },
    },
    {
      name: 'comments, also indented ones, are skipped',
      text: '[gates]\n# basic | no\n   # full | no\nfinal | yes\n',
      gates: { final: 'yes' },
    },
    { name: 'a later pin of the same tier wins', text: '[gates]\nbasic | one\nbasic | two\n', gates: { basic: 'two' } },
    {
      name: 'a deny row without a reason has an empty reason',
      text: '[deny]\nrm -rf /\ngit push --force | never force\n',
      check: (p) =>
        assert.deepEqual(
          p.deny.map((d) => [d.prefix, d.reason, d.line]),
          [
            ['rm -rf /', '', 2],
            ['git push --force', 'never force', 3],
          ],
        ),
    },
    {
      name: 'a wrap row with an unknown label is ignored',
      text: '[wrap]\npnpm a | custom\npnpm b |\npnpm c\npnpm d | lint\n',
      check: (p) =>
        assert.deepEqual(
          p.wrap.map((w) => [w.prefix, w.label]),
          [['pnpm d', 'lint']],
        ),
    },
    {
      name: 'a protect row is the whole trimmed line',
      text: '[protect]\n  pnpm format:write  \n',
      check: (p) =>
        assert.deepEqual(
          p.protect.map((x) => x.prefix),
          ['pnpm format:write'],
        ),
    },
    {
      name: 'a rewrite row keeps the reason after the second bar',
      text: '[rewrite]\n^npx pnpm (.+)$ | pnpm \\1 | use the local pnpm\n',
      check: (p) =>
        assert.deepEqual(
          p.rewrite.map((r) => [r.pattern, r.replacement, r.reason]),
          [['^npx pnpm (.+)$', 'pnpm \\1', 'use the local pnpm']],
        ),
    },
    {
      name: 'a file without [gates] pins nothing',
      text: '[deny]\nx\n',
      check: (p) => assert.deepEqual([p.gates, p.sectionsPresent], [{}, ['deny']]),
    },
  ];
  for (const c of table) {
    it(c.name, () => {
      const { policy } = parse(c.text);
      if (c.gates) assert.deepEqual(gates(policy), c.gates);
      c.check?.(policy);
    });
  }
});

describe('command policy: problems name file, line and column', () => {
  const table: {
    name: string;
    text: string;
    problem: { severity: string; line: number; column: number; message: RegExp };
  }[] = [
    {
      name: 'an unknown tier is an error at the tier',
      text: '[gates]\n  quick | npm test\n',
      problem: { severity: 'error', line: 2, column: 3, message: /unknown gate tier "quick"/ },
    },
    {
      name: 'a gate without a command is an error after the bar',
      text: '[gates]\nbasic |   \n',
      problem: { severity: 'error', line: 2, column: 8, message: /basic gate has no command/ },
    },
    {
      name: 'a gate row without a bar is an error',
      text: '\n[gates]\nnpm test\n',
      problem: { severity: 'error', line: 3, column: 1, message: /no `\|` found/ },
    },
    {
      name: 'an invalid rewrite pattern is an error at the pattern',
      text: '[rewrite]\n  ^(pnpm | pnpm | unbalanced\n',
      problem: { severity: 'error', line: 2, column: 3, message: /invalid regular expression/ },
    },
    {
      name: 'a rewrite row without a replacement is an error',
      text: '[rewrite]\n^x$\n',
      problem: { severity: 'error', line: 2, column: 4, message: /no replacement/ },
    },
    {
      name: 'a wrap row with a bad label is a warning at the label',
      text: '[wrap]\npnpm a | smoke\n',
      problem: { severity: 'warning', line: 2, column: 10, message: /"smoke" is not one/ },
    },
    {
      name: 'an unknown section is a warning',
      text: '[gates]\nbasic | a\n[Gates]\n',
      problem: { severity: 'warning', line: 3, column: 1, message: /unknown section \[Gates\]/ },
    },
    {
      name: 'a row before any section is a warning',
      text: 'basic | a\n',
      problem: { severity: 'warning', line: 1, column: 1, message: /outside any known section/ },
    },
    {
      name: 'a pin repeated is a warning naming the earlier line',
      text: '[gates]\nbasic | a\nbasic | b\n',
      problem: { severity: 'warning', line: 3, column: 1, message: /line 2 is overridden/ },
    },
  ];
  for (const c of table) {
    it(c.name, () => {
      const { problems } = parse(c.text);
      assert.equal(problems.length, 1, JSON.stringify(problems));
      const p = problems[0]!;
      assert.deepEqual(
        [p.file, p.severity, p.line, p.column],
        [F, c.problem.severity, c.problem.line, c.problem.column],
      );
      assert.match(p.message, c.problem.message);
    });
  }
});

describe('command policy: rewrite semantics (sed -E "s|re|rep|")', () => {
  const table: { name: string; pattern: string; replacement: string; input: string; output: string | undefined }[] = [
    {
      name: 'groups are inserted with \\1',
      pattern: '^pnpm -w run (.+)$',
      replacement: 'pnpm \\1',
      input: 'pnpm -w run lint',
      output: 'pnpm lint',
    },
    {
      name: '& inserts the whole match and \\& a literal ampersand',
      pattern: 'lint',
      replacement: '&:fix \\&',
      input: 'pnpm lint',
      output: 'pnpm lint:fix &',
    },
    { name: 'only the first match is replaced', pattern: 'a', replacement: 'b', input: 'aaa', output: 'baa' },
    {
      name: 'POSIX bracket classes work',
      pattern: '^pnpm[[:space:]]+nx[[:space:]]+([[:alnum:]-]+)$',
      replacement: 'pnpm \\1',
      input: 'pnpm  nx  basic-check',
      output: 'pnpm basic-check',
    },
    { name: 'no match gives undefined', pattern: '^yarn ', replacement: 'pnpm ', input: 'pnpm x', output: undefined },
  ];
  for (const c of table) {
    it(c.name, () => {
      const regex = compileEre(c.pattern);
      assert.ok(regex instanceof RegExp, String(regex));
      assert.equal(applyRewriteRule({ regex, replacement: c.replacement }, c.input), c.output);
    });
  }

  it('an unknown POSIX class is reported, not silently dropped', () => {
    assert.equal(compileEre('[[:nope:]]'), 'unknown character class [:nope:]');
  });

  it('normalising a command collapses whitespace and trims the ends', () => {
    assert.equal(normalizeCommand('  pnpm\t basic-check \n --x  '), 'pnpm basic-check --x');
  });
});

describe('command policy: loading from a workspace', () => {
  let ws: TempFolder;
  beforeEach(() => {
    ws = makeTempFolder('ralph-gates-', { ralphDir: true });
  });
  afterEach(() => ws.dispose());

  it('is undefined when the file does not exist', async () => {
    assert.equal(await loadCommandPolicy(ws.dir), undefined);
  });

  it('returns the policy with its warnings', async () => {
    ws.write(F, '[gates]\nbasic | npm test\n[wrap]\nnpm x | nope\n');
    const loaded = await loadCommandPolicy(ws.dir);
    assert.equal(loaded?.policy.gates.basic?.command, 'npm test');
    assert.deepEqual(
      loaded?.warnings.map((w) => w.line),
      [4],
    );
  });

  it('throws a FileProblemError naming file:line:column for an error row', async () => {
    ws.write(F, '[gates]\nbasic | ok\nfinl | npm test\n');
    await assert.rejects(loadCommandPolicy(ws.dir), (err: unknown) => {
      assert.ok(err instanceof FileProblemError);
      assert.match(err.message, /command-policy:3:1: unknown gate tier "finl"/);
      return true;
    });
  });
});
