import * as assert from 'node:assert/strict';
import { parsePlainCommand, parseShell, parseShellWithParser } from '../../../src/core/gates/shellSyntax';

/**
 * A command of plain words is read without loading the bash parser (shellSyntax.ts `parsePlainCommand`): the facts
 * must be exactly the parser's, and anything else must go to the parser.
 */
describe('shellSyntax: plain commands without the parser', () => {
  it('reads a command of plain words exactly as the parser does', () => {
    const rows = [
      'true',
      'npm test',
      'npx tsc --noEmit',
      '  npm  run\tlint  ',
      'make -C build check',
      'node scripts/test.mjs unit',
      './gate.sh',
      '/usr/bin/true',
      'cargo test --all-features -- --nocapture',
      'python3 -m pytest -q tests/unit',
      'go test ./...',
      'pnpm run test:unit',
      'npm run lint --if-present',
      'mvn -B verify -Dskip=false',
      'ls a,b x@y 50% +x',
      'eval true',
      'test -f x',
      'env FOO=1 make',
      'command true',
      'bash scripts/check.sh',
      'sh -e gate.sh',
      'exec make',
      'echo in',
    ];
    for (const text of rows) {
      const plain = parsePlainCommand(text);
      assert.ok(plain, `plain: ${JSON.stringify(text)}`);
      assert.deepStrictEqual(plain, parseShellWithParser(text), JSON.stringify(text));
      assert.deepStrictEqual(parseShell(text), plain);
    }
  });

  it('leaves everything else to the parser', () => {
    const rows = [
      '',
      '   ',
      'FOO=1 make',
      'npm test && npm run lint',
      'npm test; true',
      'a | b',
      'echo "x"',
      "echo 'x'",
      'echo $HOME',
      'echo ~/x',
      'ls *.ts',
      'echo {a,b}',
      'echo x # comment',
      'echo a\\ b',
      'true\nfalse',
      'true\r',
      'make > out.txt',
      'if',
      'time make',
      'export A',
      'declare -x A=1',
      'local a',
      'let x',
      'function f',
      'while',
      '! true',
      '[[ -f x ]]',
      '(true)',
      '{ true; }',
      'echo é',
    ];
    for (const text of rows) assert.equal(parsePlainCommand(text), null, JSON.stringify(text));
    // Their facts are the parser's own (and the parser's errors are still thrown).
    assert.deepStrictEqual(parseShell('npm test && npm run lint'), parseShellWithParser('npm test && npm run lint'));
    assert.throws(() => parseShell('npm test &&'), /must be followed/);
  });
});
