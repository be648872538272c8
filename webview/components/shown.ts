import { html } from 'lit';
import { MAX_BLOCK_CHARS, MAX_LINE_CHARS, visibleParts, visibleText } from '../../src/protocol/visibleText';

/**
 * Text a repository controls (titles, log lines, commands, questions), as the page draws it: each control,
 * bidirectional control and invisible character (src/protocol/visibleText.ts) becomes a marked escape
 * (`<span class="hidden-char" title="U+202E RIGHT-TO-LEFT OVERRIDE">\u202e</span>`) instead of acting, so a title
 * holding U+202E reads `evil\u202e-bidi`, not `idib-live`, and a zero-width space cannot hide a word. Text with nothing hidden is
 * returned as the same string (Lit renders it as a text node). `singleLine` escapes line feeds and tabs too. Text
 * longer than a line (MAX_LINE_CHARS) or a block (MAX_BLOCK_CHARS) is cut, marked with what was left out.
 */
export function shown(text: string, singleLine = false): unknown {
  const parts = visibleParts(text, { singleLine, maxChars: singleLine ? MAX_LINE_CHARS : MAX_BLOCK_CHARS });
  if (parts.length <= 1 && (parts.length === 0 || 'text' in parts[0]!)) return text;
  return parts.map((p) =>
    'text' in p ? p.text : html`<span class="hidden-char" title=${p.name} aria-label=${p.name}>${p.escape}</span>`,
  );
}

/**
 * Repository text for a place that holds a plain string only (an attribute such as `title`, an `<option>`): the
 * same escapes, unmarked, on one line.
 */
export function plain(text: string): string {
  return visibleText(text, { singleLine: true, maxChars: MAX_LINE_CHARS });
}
