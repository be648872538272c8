import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { repoRoot } from '../../support/repoRoot';

/** `.vscodeignore`'s rules (gitignore-like, the last matching line wins, `!` re-includes) over a repository-relative path. */
function shipped(rules: readonly string[], rel: string): boolean {
  let included = true;
  for (const raw of rules) {
    const neg = raw.startsWith('!');
    const glob = neg ? raw.slice(1) : raw;
    const re = new RegExp(
      `^${glob
        .split('**')
        .map((part) =>
          part
            .split('*')
            .map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
            .join('[^/]*'),
        )
        .join('.*')}$`,
    );
    if (re.test(rel)) included = neg;
  }
  return included;
}

/**
 * The VSIX holds what `.vscodeignore` lets through. Every bundle in it that names a sibling bundle (a program loaded
 * by path, a library required on first use: dist/cli-waves.js's yaml.js, jsonc-parser.js, chokidar.js, dist/cli-main.js's mvdan-sh.js, remote-libs.js) must find that
 * file in the VSIX too, or the installed extension's `ralph` fails only when that path is taken.
 */
describe('VSIX: every bundle a shipped bundle loads is shipped', () => {
  it('closes over the names of dist/*.js the shipped bundles mention', () => {
    const rules = fs
      .readFileSync(path.join(repoRoot, '.vscodeignore'), 'utf8')
      .split(/\r?\n/)
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    const dist = path.join(repoRoot, 'dist');
    const bundles = fs.readdirSync(dist).filter((n) => n.endsWith('.js'));
    const inVsix = bundles.filter((n) => shipped(rules, `dist/${n}`));
    assert.ok(inVsix.includes('extension.js') && inVsix.includes('cli.js'), `control: ${inVsix.join(', ')}`);
    const missing: string[] = [];
    const seen = new Set<string>();
    for (const from of inVsix) {
      const text = fs.readFileSync(path.join(dist, from), 'utf8');
      for (const name of bundles) {
        if (name === from || !new RegExp(`["'/]${name.replace(/[.-]/g, '\\$&')}["']`).test(text)) continue;
        seen.add(name);
        if (!inVsix.includes(name)) missing.push(`${from} → ${name}`);
      }
    }
    // Control: the references this scan must see (the programs dist/cli.js loads, the deferred libraries).
    for (const name of [
      'cli-read.js',
      'cli-main.js',
      'cli-task.js',
      'cli-waves.js',
      'zod.js',
      'yaml.js',
      'jsonc-parser.js',
      'chokidar.js',
      'mvdan-sh.js',
      'remote-libs.js',
      'planWorker.js',
      'guard.js',
    ]) {
      assert.ok(seen.has(name), `control: ${name} is named by a shipped bundle`);
    }
    assert.deepEqual(missing, [], 'named by a shipped bundle but left out of the VSIX (.vscodeignore)');
  });
});
