import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
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

/**
 * The files `file` imports from this tree: every relative `import … from`, `export … from`, `import()` and
 * `require()`, type-only imports included (a circle of types still ties two files' designs together: neither can
 * move or be read without the other), resolved to `.ts` / `.d.ts` / `index.ts` files.
 */
function importsOf(file: string): string[] {
  const text = fs.readFileSync(file, 'utf8');
  const specs = [
    ...text.matchAll(/^\s*(?:import|export)\s[^;]*?\sfrom\s+['"](\.[^'"]+)['"]/gm),
    ...text.matchAll(/^\s*import\s+['"](\.[^'"]+)['"]/gm),
    ...text.matchAll(/\b(?:import|require)\(\s*['"](\.[^'"]+)['"]\s*\)/g),
  ].map((m) => m[1]!);
  return specs.flatMap((spec) => {
    const base = path.resolve(path.dirname(file), spec);
    const found = [`${base}.ts`, `${base}.d.ts`, path.join(base, 'index.ts'), base].find(
      (f) => f.endsWith('.ts') && fs.existsSync(f),
    );
    return found ? [found] : [];
  });
}

/** The import circles among `files` (strongly connected components of two files or more, or a file importing itself). */
function importCircles(files: readonly string[]): string[][] {
  const graph = new Map(files.map((f) => [f, importsOf(f)]));
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  let next = 0;
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const scc: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      scc.push(w);
    } while (w !== v);
    if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) circles.push(scc.sort());
  };
  for (const f of files) if (!index.has(f)) visit(f);
  return circles;
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
  it('no import circle in src/: every file can be read before the files that import it', () => {
    const circles = importCircles(tsFiles(path.join(repo, 'src'))).map((c) => c.map((f) => path.relative(repo, f)));
    assert.deepEqual(circles, []);
  });

  it('the circle rule finds a circle (two files importing each other, type-only or not)', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ralph-circles-'));
    try {
      fs.writeFileSync(path.join(dir, 'a.ts'), "import type { B } from './b';\nexport type A = B;\n");
      fs.writeFileSync(path.join(dir, 'b.ts'), "export type B = 1;\nexport const f = () => import('./a');\n");
      fs.writeFileSync(path.join(dir, 'c.ts'), "import { f } from './b';\nexport const g = f;\n");
      assert.deepEqual(
        importCircles(tsFiles(dir)).map((c) => c.map((f) => path.basename(f))),
        [['a.ts', 'b.ts']],
      );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
