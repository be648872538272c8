import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { repoRoot } from '../../support/repoRoot';

interface Setting {
  order?: number;
  markdownDescription?: string;
  description?: string;
}
interface Category {
  id: string;
  title: string;
  order: number;
  properties: Record<string, Setting>;
}
const manifest = JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8'));
const categories = manifest.contributes.configuration as Category[];
const all: Record<string, Setting> = Object.assign({}, ...categories.map((c) => c.properties));

/** The settings a markdownDescription links to (VS Code's `` `#ralph.key#` `` syntax). */
const linksOf = (s: Setting): string[] =>
  [...(s.markdownDescription ?? '').matchAll(/`#(ralph\.[A-Za-z]+)#`/g)].map((m) => m[1]!);

describe('the settings (contributes.configuration)', () => {
  it('are grouped in titled categories shown in a fixed order, the agent first', () => {
    assert.ok(Array.isArray(categories) && categories.length >= 5, 'a list of categories');
    assert.deepEqual(
      categories.map((c) => c.order),
      categories.map((_, i) => i + 1),
    );
    assert.equal(categories[0]!.title, 'Agent');
    assert.equal(new Set(categories.map((c) => c.id)).size, categories.length, 'category ids are unique');
    for (const c of categories) assert.match(c.id, /^ralph\./, c.id);
  });

  it('are ordered inside each category (order 1..n) and described in markdown', () => {
    for (const c of categories) {
      const orders = Object.values(c.properties).map((s) => s.order);
      assert.deepEqual(
        orders,
        orders.map((_, i) => i + 1),
        c.title,
      );
      for (const [name, s] of Object.entries(c.properties)) {
        assert.ok(s.markdownDescription, `${name} has a markdownDescription`);
        assert.equal(s.description, undefined, `${name}: markdownDescription only`);
      }
    }
  });

  it('link only to settings that exist, never to themselves', () => {
    for (const [name, s] of Object.entries(all))
      for (const l of linksOf(s)) {
        assert.ok(all[l], `${name} links to ${l}, which is not a setting`);
        assert.notEqual(l, name, `${name} links to itself`);
      }
  });

  const related: [string, string][] = [
    ['ralph.agent', 'ralph.claudePath'],
    ['ralph.agent', 'ralph.cursorAgentPath'],
    ['ralph.gates', 'ralph.gateTimeoutMs'],
    ['ralph.rotateThresholdTokens', 'ralph.warnThresholdTokens'],
    ['ralph.contextWindowTokens', 'ralph.rotateThresholdTokens'],
    ['ralph.parallel', 'ralph.maxParallel'],
    ['ralph.parallel', 'ralph.storyTimeoutMs'],
    ['ralph.notify', 'ralph.notifyTimeoutMs'],
    ['ralph.maxIterations', 'ralph.maxCostUsd'],
    ['ralph.keepRuns', 'ralph.runsMaxMb'],
  ];
  for (const [a, b] of related)
    it(`link ${a} and ${b} both ways`, () => {
      assert.ok(linksOf(all[a]!).includes(b), `${a} links to ${b}`);
      assert.ok(linksOf(all[b]!).includes(a), `${b} links to ${a}`);
    });

  it('put related settings in one category', () => {
    const categoryOf = (name: string) => categories.find((c) => name in c.properties)?.id;
    for (const group of [
      ['ralph.agent', 'ralph.claudePath', 'ralph.cursorAgentPath'],
      ['ralph.rotateThresholdTokens', 'ralph.warnThresholdTokens', 'ralph.contextWindowTokens'],
      ['ralph.parallel', 'ralph.maxParallel', 'ralph.storyTimeoutMs'],
      ['ralph.gates', 'ralph.gateTimeoutMs'],
    ])
      assert.equal(new Set(group.map(categoryOf)).size, 1, group.join(', '));
  });
});
