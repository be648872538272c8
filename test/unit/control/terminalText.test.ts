import * as assert from 'node:assert/strict';
import { escapeControls, terminalSafeJson } from '../../../src/core/control/terminalText';

/** Issue 12: titles with terminal escape sequences are printed escaped. */
describe('control: terminal text', () => {
  const cases: [string, string, string][] = [
    ['retitling the window (OSC 0)', 'Fix\x1b]0;pwned\x07 bug', 'Fix\\x1b]0;pwned\\x07 bug'],
    ['a carriage return overwriting a line', 'x\rAll 3 stories passed', 'x\\rAll 3 stories passed'],
    ['clearing the screen (CSI)', '\x1b[2J\x1b[H', '\\x1b[2J\\x1b[H'],
    ['a C1 CSI and DEL', 'a\u009b2Jb\u007f', 'a\\u009b2Jb\\u007f'],
    ['line feeds, tabs and non-ASCII text stay', 'Café\tdone\n', 'Café\tdone\n'],
    ['backspace and NUL', 'a\bb\0', 'a\\x08b\\x00'],
  ];
  for (const [name, input, expected] of cases) it(name, () => assert.equal(escapeControls(input), expected));

  it('JSON output escapes C1 and DEL as well, and stays the same value', () => {
    const v = { title: 'a\u009b2J\u007f\x1b[1m' };
    const s = terminalSafeJson(v);
    assert.ok(!/[\u0000-\u001f\u007f-\u009f]/.test(s), s);
    assert.deepEqual(JSON.parse(s), v);
  });
});
