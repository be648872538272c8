import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { repoRoot } from '../../support/repoRoot';

const manifest = JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8'));
const vscodeignore = fs.readFileSync(path.join(repoRoot, '.vscodeignore'), 'utf8').split('\n');

/** Width and height of a PNG, from its IHDR chunk (bytes 16..24); throws when the file is not a PNG. */
function pngSize(file: string): { width: number; height: number } {
  const b = fs.readFileSync(file);
  assert.deepEqual([...b.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], `${file} is not a PNG`);
  assert.equal(b.subarray(12, 16).toString('ascii'), 'IHDR', `${file} has no IHDR chunk first`);
  return { width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
}

describe('the Marketplace metadata', () => {
  it('lists the categories "AI" and "Other" and searchable keywords (the Marketplace takes at most 30)', () => {
    assert.deepEqual(manifest.categories, ['AI', 'Other']);
    assert.ok(Array.isArray(manifest.keywords) && manifest.keywords.length >= 5, 'keywords');
    assert.ok(manifest.keywords.length <= 30, `${manifest.keywords.length} keywords`);
    for (const k of ['ralph', 'agent', 'claude']) assert.ok(manifest.keywords.includes(k), k);
  });

  it('has a 128×128 PNG icon, packaged (vsce refuses an SVG icon)', () => {
    assert.equal(manifest.icon, 'media/icon.png');
    assert.deepEqual(pngSize(path.join(repoRoot, manifest.icon)), { width: 128, height: 128 });
    assert.ok(vscodeignore.includes('!media/**'), '.vscodeignore keeps media/');
  });

  it('names no made-up repository: a real URL or none', () => {
    const url: string | undefined =
      typeof manifest.repository === 'string' ? manifest.repository : manifest.repository?.url;
    if (url !== undefined) assert.doesNotMatch(url, /example\.(invalid|com|org)|localhost/, url);
  });

  it('ships a CHANGELOG.md with an entry for the current version', () => {
    const changelog = fs.readFileSync(path.join(repoRoot, 'CHANGELOG.md'), 'utf8');
    assert.match(changelog, new RegExp(`^## \\[${manifest.version.replace(/\./g, '\\.')}\\]`, 'm'));
    assert.ok(vscodeignore.includes('!CHANGELOG.md'), '.vscodeignore keeps CHANGELOG.md');
  });

  it('packages through scripts/package.mjs, which fails on a vsce warning (the e2e tier packages with it too)', () => {
    assert.match(manifest.scripts.package, /^node scripts\/package\.mjs\b/);
    const script = fs.readFileSync(path.join(repoRoot, 'scripts', 'package.mjs'), 'utf8');
    assert.match(script, /WARNING/);
    const runner = fs.readFileSync(path.join(repoRoot, 'test', 'runners', 'vscodeServer.ts'), 'utf8');
    assert.match(runner, /scripts', 'package\.mjs'/);
  });

  it("shows the product on the README's first screen (the screenshot within its first 15 lines)", () => {
    const lines = fs.readFileSync(path.join(repoRoot, 'README.md'), 'utf8').trimEnd().split('\n');
    const at = lines.findIndex((l) => /^!\[[^\]]*\]\(docs\/demo\.png\)/.test(l));
    assert.ok(at >= 0 && at < 15, `the screenshot is on line ${at + 1}`);
    assert.ok(lines.length <= 250, `README.md has ${lines.length} lines`);
  });
});
