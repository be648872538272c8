/**
 * Text a repository controls (task titles, reasons, summaries, file names, an agent's words), made safe to show: the
 * one rule every face applies (the CLI and the activity log, the Output channel, notifications, the Plan tree and its
 * tooltips, the dashboard). Pure, dependency-free, shared by core, extension and webview.
 *
 * Hidden are the characters that act instead of showing:
 * - C0 controls (but line feed and tab), DEL and C1 (U+0080–U+009F): a terminal obeys them, so `ESC ] 0 ; … BEL`
 *   retitles the window, `ESC [ 2 J` clears the screen, `\r` overwrites a line (ECMA-48; some terminals take C1
 *   CSI/OSC as well);
 * - bidirectional controls (U+061C, U+200E/F, U+202A–U+202E, U+2066–U+2069): they reorder what follows, so
 *   `evil-bidi` can read `idib-live` (the Unicode Bidirectional Algorithm, UAX 9; the "Trojan Source" attacks, CVE-2021-42574);
 * - invisible and zero-width characters (U+00AD, U+034F, U+115F/U+1160, U+17B4/5, U+180B–U+180F, U+200B–U+200D,
 *   U+2028/U+2029, U+2060–U+2064, U+206A–U+206F, U+3164, U+FE00–U+FE0F, U+FEFF, U+FFA0, U+FFF9–U+FFFB,
 *   U+1D173–U+1D17A, U+E0000–U+E0FFF): they hide text or make two different strings look the same (Unicode Security Mechanisms, UTS 39).
 *   A zero-width joiner between two emoji and a variation selector or tag after an emoji stay: they draw one emoji
 *   (`🧑‍⚖️`), and a terminal or page shows them as such.
 *
 * Each hidden character is shown as an escape a reader can see: `\x1b`, `\r` for C0; `\u007f`, `\u009b`,
 * `\u202e`, `\u200b` for the others (`\udb40\udc41`, the UTF-16 pair, beyond the BMP). All but the C0 ones are JSON
 * escapes of the same character, and JSON.stringify leaves no raw C0 control, so escaping a JSON document keeps its
 * value.
 */

/** One piece of {@link visibleParts}: text shown as is, or one hidden character (its code point and name). */
export type TextPart = { text: string } | { hidden: number; escape: string; name: string };

/** Options of {@link visibleText} and {@link visibleParts}. */
export interface VisibleTextOptions {
  /**
   * `true`: line feeds and tabs are escaped too (`\n`, `\t`), for a one-line face (a tree label, a notification, a
   * status line). Default: they stay, for a face that shows several lines (a terminal, a log).
   */
  singleLine?: boolean;
  /**
   * Longest text shown, in UTF-16 code units (a 1 MB title must not become a 1 MB tree label, status line or log
   * row); longer text is cut there and ends `… (+N characters)`. Default: no limit.
   */
  maxChars?: number;
}

/** The limits the faces use: one line of a face (a tree label, a status line, a log row), and a tooltip or message. */
export const MAX_LINE_CHARS = 500;
export const MAX_BLOCK_CHARS = 4000;

/** `text` cut to at most `max` code units (never inside a surrogate pair), marked `… (+N characters)` when cut. Pure. */
export function clipText(text: string, max: number): string {
  if (text.length <= max) return text;
  let cut = max;
  const last = text.charCodeAt(cut - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut--;
  return `${text.slice(0, cut)}… (+${(text.length - cut).toLocaleString('en-US')} characters)`;
}

const NAMES: Record<number, string> = {
  0x1b: 'ESCAPE',
  0x07: 'BELL',
  0x08: 'BACKSPACE',
  0x0d: 'CARRIAGE RETURN',
  0x7f: 'DELETE',
  0x9b: 'CONTROL SEQUENCE INTRODUCER',
  0x9d: 'OPERATING SYSTEM COMMAND',
  0xad: 'SOFT HYPHEN',
  0x34f: 'COMBINING GRAPHEME JOINER',
  0x61c: 'ARABIC LETTER MARK',
  0x115f: 'HANGUL CHOSEONG FILLER',
  0x1160: 'HANGUL JUNGSEONG FILLER',
  0x180e: 'MONGOLIAN VOWEL SEPARATOR',
  0x200b: 'ZERO WIDTH SPACE',
  0x200c: 'ZERO WIDTH NON-JOINER',
  0x200d: 'ZERO WIDTH JOINER',
  0x200e: 'LEFT-TO-RIGHT MARK',
  0x200f: 'RIGHT-TO-LEFT MARK',
  0x2028: 'LINE SEPARATOR',
  0x2029: 'PARAGRAPH SEPARATOR',
  0x202a: 'LEFT-TO-RIGHT EMBEDDING',
  0x202b: 'RIGHT-TO-LEFT EMBEDDING',
  0x202c: 'POP DIRECTIONAL FORMATTING',
  0x202d: 'LEFT-TO-RIGHT OVERRIDE',
  0x202e: 'RIGHT-TO-LEFT OVERRIDE',
  0x2060: 'WORD JOINER',
  0x2061: 'FUNCTION APPLICATION',
  0x2062: 'INVISIBLE TIMES',
  0x2063: 'INVISIBLE SEPARATOR',
  0x2064: 'INVISIBLE PLUS',
  0x2066: 'LEFT-TO-RIGHT ISOLATE',
  0x2067: 'RIGHT-TO-LEFT ISOLATE',
  0x2068: 'FIRST STRONG ISOLATE',
  0x2069: 'POP DIRECTIONAL ISOLATE',
  0x3164: 'HANGUL FILLER',
  0xfeff: 'ZERO WIDTH NO-BREAK SPACE',
  0xffa0: 'HALFWIDTH HANGUL FILLER',
};

/** Whether code point `cp` is hidden (see the module's list); line feed and tab count only with `singleLine`. */
export function isHiddenCodePoint(cp: number, singleLine = false): boolean {
  if (cp < 0x20) return singleLine || (cp !== 0x0a && cp !== 0x09);
  if (cp < 0x7f) return false;
  if (cp <= 0x9f) return true;
  if (cp < 0xad) return false;
  return (
    cp === 0xad ||
    cp === 0x34f ||
    cp === 0x61c ||
    cp === 0x115f ||
    cp === 0x1160 ||
    cp === 0x17b4 ||
    cp === 0x17b5 ||
    (cp >= 0x180b && cp <= 0x180f) ||
    (cp >= 0x200b && cp <= 0x200f) ||
    (cp >= 0x2028 && cp <= 0x202e) ||
    (cp >= 0x2060 && cp <= 0x2064) ||
    (cp >= 0x2066 && cp <= 0x206f) ||
    cp === 0x3164 ||
    (cp >= 0xfe00 && cp <= 0xfe0f) ||
    cp === 0xfeff ||
    cp === 0xffa0 ||
    (cp >= 0xfff9 && cp <= 0xfffb) ||
    (cp >= 0x1d173 && cp <= 0x1d17a) ||
    (cp >= 0xe0000 && cp <= 0xe0fff)
  );
}

// Candidates only (a cheap first pass): the exact rule is isHiddenCodePoint.
const CANDIDATE =
  /[\u0000-\u001f\u007f-\u009f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb]|\ud834[\udd73-\udd7a]|[\udb40-\udb43][\udc00-\udfff]/;

const PICTOGRAPHIC = /\p{Extended_Pictographic}/u;

/** The escape a reader sees for a hidden code point: `\x1b`, `\r`, `\n`, `\t`, `\u202e`, `\udb40\udc41`. */
export function escapeOf(cp: number): string {
  if (cp === 0x0d) return '\\r';
  if (cp === 0x0a) return '\\n';
  if (cp === 0x09) return '\\t';
  if (cp < 0x20) return `\\x${cp.toString(16).padStart(2, '0')}`;
  // Beyond the BMP: the UTF-16 pair, so an escaped JSON document keeps its value.
  return String.fromCodePoint(cp)
    .split('')
    .map((u) => `\\u${u.charCodeAt(0).toString(16).padStart(4, '0')}`)
    .join('');
}

/** The Unicode name of a hidden code point when we know it, else `U+XXXX` (a tooltip on the dashboard's mark). */
export function hiddenName(cp: number): string {
  const u = `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;
  const name = NAMES[cp];
  if (name) return `${u} ${name}`;
  if (cp < 0x20 || (cp >= 0x80 && cp <= 0x9f)) return `${u} control character`;
  if (cp >= 0xfe00 && cp <= 0xfe0f) return `${u} VARIATION SELECTOR-${cp - 0xfe00 + 1}`;
  if (cp >= 0xe0000) return `${u} tag character`;
  return `${u} invisible character`;
}

/**
 * Whether the hidden-looking code point at `i` of `chars` draws part of an emoji: a zero-width joiner between two
 * emoji, or an emoji variation selector / tag / cancel tag after an emoji (or after another such character).
 */
function partOfEmoji(chars: string[], i: number, cp: number): boolean {
  let j = i - 1;
  // Walk back over the modifiers of the emoji before (variation selectors, skin tones, tags).
  while (j >= 0) {
    const p = chars[j]!.codePointAt(0)!;
    if (p === 0xfe0f || p === 0xfe0e || (p >= 0x1f3fb && p <= 0x1f3ff) || (p >= 0xe0020 && p <= 0xe007f)) j--;
    else break;
  }
  if (j < 0 || !PICTOGRAPHIC.test(chars[j]!)) return false;
  if (cp === 0x200d) {
    const next = chars[i + 1];
    return next !== undefined && PICTOGRAPHIC.test(next);
  }
  return cp === 0xfe0f || cp === 0xfe0e || (cp >= 0xe0020 && cp <= 0xe007f);
}

/**
 * `text` split into what is shown as is and each hidden character (with its escape and name), for a face that marks
 * hidden characters itself (the dashboard draws each as a marked escape). Pure.
 */
export function visibleParts(text: string, opts: VisibleTextOptions = {}): TextPart[] {
  if (opts.maxChars !== undefined) text = clipText(text, opts.maxChars);
  if (!CANDIDATE.test(text) && !(opts.singleLine && /[\n\t]/.test(text))) return text ? [{ text }] : [];
  const chars = Array.from(text);
  const parts: TextPart[] = [];
  let run = '';
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i]!;
    const cp = c.codePointAt(0)!;
    if (!isHiddenCodePoint(cp, !!opts.singleLine) || partOfEmoji(chars, i, cp)) {
      run += c;
      continue;
    }
    if (run) parts.push({ text: run });
    run = '';
    parts.push({ hidden: cp, escape: escapeOf(cp), name: hiddenName(cp) });
  }
  if (run) parts.push({ text: run });
  return parts;
}

/**
 * `text` with every hidden character (see the module) written as its escape: `Fix\x1b]0;pwned\x07`, `evil\u202e-bidi`.
 * Text with nothing hidden comes back as the same string. Idempotent. Pure.
 */
export function visibleText(text: string, opts: VisibleTextOptions = {}): string {
  if (opts.maxChars !== undefined) text = clipText(text, opts.maxChars);
  if (!CANDIDATE.test(text) && !(opts.singleLine && /[\n\t]/.test(text))) return text;
  let out = '';
  for (const p of visibleParts(text, { singleLine: opts.singleLine })) out += 'text' in p ? p.text : p.escape;
  return out;
}

/**
 * `JSON.stringify` whose output is also safe to show: JSON escapes C0 controls in strings already; DEL, C1, bidi
 * controls and invisible characters are written as `\uXXXX` escapes too (surrogate pairs beyond the BMP), which is
 * still the same JSON value.
 */
export function visibleJson(value: unknown, indent?: number): string {
  const json = JSON.stringify(value, null, indent);
  if (json === undefined || !CANDIDATE.test(json)) return json;
  return visibleText(json);
}
