import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import type * as TS from 'typescript';
import { ACTIVITY, maxLoopsReason } from '../../../src/core/control/activityText';
import { GUARD_DENY, GUARD_REWRITE } from '../../../src/core/gates/guardHook';
import { workersText } from '../../../src/core/model/runEvent';
import { LOG_KIND_ICONS } from '../../../webview/model/format';
import { repoRoot } from '../../support/repoRoot';

/**
 * No emoji in what Ralph writes: the activity log, the Output channel, the dashboard's log and the tree are read on
 * machines without an emoji font (a VS Code server, a CI runner, the demo's Chromium), where an emoji is an empty box.
 * The UI marks kinds with codicons; the logs say it in words. Emoji here: Unicode's Extended_Pictographic characters
 * and the emoji presentation selector U+FE0F, and the pictographs of U+1F000-1FAFF that are no emoji (🖧).
 *
 * Scanned: every string and template literal of src/, webview/ and scripts/ (regular expressions are left out: they
 * read other programs' output, such as a test runner's ✖), and the text the extension contributes (package.json,
 * media/**.md).
 */
const EMOJI = /[\p{Extended_Pictographic}\u{FE0F}\u{1F000}-\u{1FAFF}]/u;

function files(dir: string, ext: RegExp): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return files(p, ext);
    return ext.test(e.name) ? [p] : [];
  });
}

/** The literal texts of a TypeScript file that hold an emoji, with their 1-based lines. */
function emojiLiterals(ts: typeof TS, file: string): string[] {
  const text = fs.readFileSync(file, 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const found: string[] = [];
  const visit = (node: TS.Node) => {
    if (
      (ts.isStringLiteral(node) ||
        ts.isNoSubstitutionTemplateLiteral(node) ||
        ts.isTemplateHead(node) ||
        ts.isTemplateMiddle(node) ||
        ts.isTemplateTail(node)) &&
      EMOJI.test(node.text)
    ) {
      const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
      found.push(`${path.relative(repoRoot, file)}:${line}: ${JSON.stringify(node.text.slice(0, 80))}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('no emoji in what Ralph writes (a machine without an emoji font shows empty boxes)', () => {
  it('tells an emoji from the typography the logs use', () => {
    for (const s of ['✅', '⚠️', '⚠', '🧪', '⏸', '▶', '↩', '🖧', '🧑‍⚖️', '⛔']) assert.ok(EMOJI.test(s), s);
    for (const s of ['→', '—', '≥', '·', '═══', '…', '⏎', '×']) assert.ok(!EMOJI.test(s), s);
  });

  it('the activity-log labels, the guard lines, the workers line and the max-loops reason are plain words', () => {
    const texts = [
      ...Object.values(ACTIVITY),
      GUARD_DENY,
      GUARD_REWRITE,
      workersText([{ id: 'build1:1' }]),
      maxLoopsReason(25),
    ];
    assert.deepEqual(
      texts.filter((t) => EMOJI.test(t)),
      [],
    );
    assert.equal(ACTIVITY.ROTATE, 'ROTATE');
    assert.equal(GUARD_DENY, 'GUARD DENY');
  });

  it('every log kind of the dashboard has a codicon', () => {
    for (const icon of Object.values(LOG_KIND_ICONS)) assert.match(icon, /^[a-z-]+$/);
  });

  it('no string or template literal of src/, webview/ or scripts/ holds one', function () {
    // Parses every source file: seconds on a quiet machine; the limit only catches a hang.
    this.timeout(180_000);
    const ts = createRequire(path.join(repoRoot, 'package.json'))('typescript') as typeof TS;
    const found = ['src', 'webview', 'scripts']
      .flatMap((d) => files(path.join(repoRoot, d), /\.(ts|mts)$/))
      .flatMap((f) => emojiLiterals(ts, f));
    assert.deepEqual(found, []);
  });

  it('no text the extension contributes holds one (package.json, the walkthrough)', () => {
    const found = [path.join(repoRoot, 'package.json'), ...files(path.join(repoRoot, 'media'), /\.md$/)].flatMap((f) =>
      fs
        .readFileSync(f, 'utf8')
        .split('\n')
        .flatMap((l, i) => (EMOJI.test(l) ? [`${path.relative(repoRoot, f)}:${i + 1}: ${l.trim()}`] : [])),
    );
    assert.deepEqual(found, []);
  });
});
