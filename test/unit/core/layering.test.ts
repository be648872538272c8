import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { repoRoot } from '../../support/repoRoot';

const repo = repoRoot;

function tsFiles(dir: string): string[] {
  return fs
    .readdirSync(dir, { recursive: true })
    .map(String)
    .filter((f) => f.endsWith('.ts'))
    .map((f) => path.join(dir, f));
}

describe('layering', () => {
  it('src/core never imports vscode', () => {
    const offenders = tsFiles(path.join(repo, 'src/core')).filter((f) =>
      /from\s+['"]vscode['"]|require\(\s*['"]vscode['"]\s*\)|import\(\s*['"]vscode['"]\s*\)/.test(
        fs.readFileSync(f, 'utf8'),
      ),
    );
    assert.deepEqual(
      offenders.map((f) => path.relative(repo, f)),
      [],
    );
  });

  it('src/core never imports from the extension, CLI or webview layers', () => {
    const offenders = tsFiles(path.join(repo, 'src/core')).filter((f) =>
      /from\s+['"][./]+\/(extension|cli|webview)\//.test(fs.readFileSync(f, 'utf8')),
    );
    assert.deepEqual(
      offenders.map((f) => path.relative(repo, f)),
      [],
    );
  });

  it('src/core/model is the leaf: it imports only zod, node:path and other model modules', () => {
    const offenders = tsFiles(path.join(repo, 'src/core/model')).flatMap((f) =>
      [...fs.readFileSync(f, 'utf8').matchAll(/from\s+['"]([^'"]+)['"]/g)]
        .map((m) => m[1]!)
        .filter((m) => !['zod', 'node:path'].includes(m) && !m.startsWith('./'))
        .map((m) => `${path.relative(repo, f)}: ${m}`),
    );
    assert.deepEqual(offenders, []);
  });

  it("paths under .ralph/ are joined only in src/core/model/ralphPaths.ts (no path.join(folder, '.ralph', …) elsewhere)", () => {
    const offenders = tsFiles(path.join(repo, 'src'))
      .filter((f) => !f.endsWith('ralphPaths.ts'))
      .filter((f) => /['"]\.ralph['"]\s*,/.test(fs.readFileSync(f, 'utf8')));
    assert.deepEqual(
      offenders.map((f) => path.relative(repo, f)),
      [],
    );
  });

  it('nothing outside src/core/agents (and the threshold table) switches on an agent name', () => {
    const offenders = tsFiles(path.join(repo, 'src'))
      .filter((f) => !f.includes(`${path.sep}agents${path.sep}`) && !f.endsWith('thresholds.ts'))
      .filter((f) =>
        /[!=]==\s*['"](claude|cursor-agent)['"]|['"](claude|cursor-agent)['"]\s*[!=]==/.test(
          fs.readFileSync(f, 'utf8'),
        ),
      );
    assert.deepEqual(
      offenders.map((f) => path.relative(repo, f)),
      [],
    );
  });
});
