import * as assert from 'node:assert/strict';
import fc from 'fast-check';
import { clipText, isHiddenCodePoint, visibleJson, visibleParts, visibleText } from '../../../src/protocol/visibleText';

/** Repository text shown on any face: controls, bidi controls and invisible characters become visible escapes. */
describe('protocol: visible text', () => {
  const cases: [string, string, string][] = [
    [
      'an OSC retitling the window, a screen clear and a colour',
      '\x1b]0;PWNED\x07 \x1b[2J \x1b[31m',
      '\\x1b]0;PWNED\\x07 \\x1b[2J \\x1b[31m',
    ],
    ['a carriage return overwriting a line', 'x\rAll 3 stories passed', 'x\\rAll 3 stories passed'],
    ['C1 CSI, OSC and DEL', 'a\u009b2J\u009d0;t\u009cb\u007f', 'a\\u009b2J\\u009d0;t\\u009cb\\u007f'],
    ['a right-to-left override', 'evil\u202e-bidi', 'evil\\u202e-bidi'],
    ['isolates and marks', '\u2066a\u2069\u200f\u061c', '\\u2066a\\u2069\\u200f\\u061c'],
    ['zero-width characters hiding text', 'ad\u200bmin\u200c\u2060\ufeff', 'ad\\u200bmin\\u200c\\u2060\\ufeff'],
    ['a zero-width joiner between letters', 'a\u200db', 'a\\u200db'],
    ['tag characters', 'x\u{e0041}\u{e007f}', 'x\\udb40\\udc41\\udb40\\udc7f'],
    ['a soft hyphen and a Hangul filler', 'pay\u00adpal \u3164', 'pay\\u00adpal \\u3164'],
    ['line and paragraph separators', 'a\u2028b\u2029', 'a\\u2028b\\u2029'],
    ['line feeds, tabs and non-ASCII text stay', 'Café\tdone\n日本語 — ok', 'Café\tdone\n日本語 — ok'],
    ['emoji sequences stay', '🧑‍⚖️ verdict ❤️ 👨‍👩‍👧 🏴󠁧󠁢󠁳󠁣󠁴󠁿', '🧑‍⚖️ verdict ❤️ 👨‍👩‍👧 🏴󠁧󠁢󠁳󠁣󠁴󠁿'],
    ['backspace and NUL', 'a\bb\0', 'a\\x08b\\x00'],
  ];
  for (const [name, input, expected] of cases) it(name, () => assert.equal(visibleText(input), expected));

  it('a one-line face escapes line feeds and tabs too', () => {
    assert.equal(visibleText('a\nb\tc', { singleLine: true }), 'a\\nb\\tc');
  });

  it('marks each hidden character with its name (what the dashboard draws)', () => {
    assert.deepEqual(visibleParts('evil\u202e-bidi'), [
      { text: 'evil' },
      { hidden: 0x202e, escape: '\\u202e', name: 'U+202E RIGHT-TO-LEFT OVERRIDE' },
      { text: '-bidi' },
    ]);
  });

  it('leaves no hidden character, is idempotent, and keeps text without one as the same string', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (s) => {
        const v = visibleText(s);
        for (const p of visibleParts(v)) assert.ok('text' in p, `hidden left in ${JSON.stringify(v)}`);
        assert.equal(visibleText(v), v);
        if (!Array.from(s).some((c) => isHiddenCodePoint(c.codePointAt(0)!))) assert.equal(v, s);
      }),
    );
  });

  it('JSON output keeps its value and shows nothing hidden', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (s) => {
        const j = visibleJson({ title: s, n: [s] }, 2);
        assert.deepEqual(JSON.parse(j), { title: s, n: [s] });
        for (const p of visibleParts(j)) assert.ok('text' in p, j);
      }),
    );
  });

  it('cuts text longer than maxChars, never inside a surrogate pair, saying how much it left out', () => {
    assert.equal(clipText('short', 10), 'short');
    assert.equal(clipText('a'.repeat(1_000_000), 5), 'aaaaa… (+999,995 characters)');
    assert.equal(clipText('ab😀cd', 3), 'ab… (+4 characters)');
    assert.equal(visibleText(`x\u202e${'y'.repeat(20)}`, { maxChars: 3 }), 'x\\u202ey… (+19 characters)');
    assert.deepEqual(visibleParts('z'.repeat(50), { maxChars: 4 }), [{ text: 'zzzz… (+46 characters)' }]);
  });
});
