import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as ts from 'typescript';
import { repoRoot } from '../../support/repoRoot';

/** The `.ts` files under `dir` (relative to the repository), recursively. */
function sourceFiles(dir: string): string[] {
  const abs = path.join(repoRoot, dir);
  return fs
    .readdirSync(abs, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => path.join(dir, f));
}

/**
 * `file:line: text` for each call in `file` whose callee's text (spaces removed) matches `callee`; with `refs`, each
 * property access matching it as well (a method taken as a value: `const show = vscode.window.showErrorMessage`).
 */
function uses(file: string, callee: RegExp, refs = false): string[] {
  const text = fs.readFileSync(path.join(repoRoot, file), 'utf8');
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (n: ts.Node): void => {
    const target = ts.isCallExpression(n) ? n.expression : refs && ts.isPropertyAccessExpression(n) ? n : undefined;
    if (target && callee.test(target.getText(sf).replace(/\s+/g, ''))) {
      found.push(`${file}:${sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1}: ${target.getText(sf)}`);
      return;
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return found;
}

/**
 * Text a repository controls reaches a person through one door per face, where src/protocol/visibleText.ts is applied:
 * a face that wrote around it could show a title's escape sequences raw again.
 */
describe('repository text reaches each face through its one door', () => {
  it('every ralph command writes through src/cli/terminalOut.ts (or brokenPipe.ts, which escapes the same way)', () => {
    const allowed = new Set(['src/cli/terminalOut.ts', 'src/cli/brokenPipe.ts']);
    const direct = sourceFiles('src/cli')
      .filter((f) => !allowed.has(f))
      .flatMap((f) => uses(f, /^process\.(stdout|stderr)\.write$/));
    assert.deepEqual(direct, []);
  });

  it('every notification goes through src/extension/notify.ts', () => {
    const direct = sourceFiles('src/extension')
      .filter((f) => f !== 'src/extension/notify.ts')
      .flatMap((f) => uses(f, /^(vscode\.)?window\.show(Information|Warning|Error)Message$/, true));
    assert.deepEqual(direct, []);
  });
});
