import { visibleJson, visibleText } from '../../protocol/visibleText';

/**
 * Text for a terminal from content we do not control (task titles, reasons, file names, an agent's words): the
 * characters that act instead of showing (C0 controls but line feed and tab, DEL, C1, bidirectional controls,
 * invisible characters) are printed as escapes, so a title cannot move the cursor, retitle the window, clear the
 * screen, overwrite a line (`\x1b]0;…\x07`, `\r` + "All 3 stories passed") or read backwards. The rule is
 * src/protocol/visibleText.ts, the one every face applies. Pure.
 */
export function escapeControls(text: string): string {
  return visibleText(text);
}

/**
 * `JSON.stringify` whose output is also safe on a terminal: JSON already escapes C0 controls in strings; DEL, C1,
 * bidirectional controls and invisible characters are escaped as `\u…` too (still the same JSON value).
 */
export function terminalSafeJson(value: unknown, indent?: number): string {
  return visibleJson(value, indent);
}
