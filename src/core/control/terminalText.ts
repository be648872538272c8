/**
 * Text for a terminal from content we do not control (task titles, reasons, file names): control characters are
 * printed escaped, so a title cannot move the cursor, retitle the window, clear the screen or overwrite a line
 * (`\x1b]0;…\x07` retitled the window, `\r` + text faked "All 3 stories passed"). C0 controls but line
 * feed and tab, DEL, and the C1 range (U+0080–U+009F, which some terminals take as CSI/OSC) become `\xHH` / `\u00HH`;
 * everything else, non-ASCII text included, is unchanged. Pure.
 */
export function escapeControls(text: string): string {
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, (c) => {
    const code = c.charCodeAt(0);
    return code === 13
      ? '\\r'
      : code === 27
        ? '\\x1b'
        : code < 0x80
          ? `\\x${code.toString(16).padStart(2, '0')}`
          : `\\u00${code.toString(16)}`;
  });
}

/**
 * `JSON.stringify` whose output is also safe on a terminal: JSON already escapes C0 controls in strings; DEL and the
 * C1 range are escaped as `\u007f`… too (still the same JSON value).
 */
export function terminalSafeJson(value: unknown, indent?: number): string {
  return JSON.stringify(value, null, indent).replace(/[\u007f-\u009f]/g, (c) => `\\u00${c.charCodeAt(0).toString(16)}`);
}
