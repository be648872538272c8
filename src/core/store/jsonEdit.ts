import type * as Jsonc from 'jsonc-parser';
import type { SyntaxKind, FormattingOptions, JSONPath, Node } from 'jsonc-parser';
import { FileProblemError, positionAt } from './parseError';

/**
 * jsonc-parser, loaded at the first edit: the read-only commands (dist/cli-read.js) bundle the writers' modules but
 * never edit, and the library is a file of its own there (esbuild.mjs `deferLibs`).
 */
function jsonc(): typeof Jsonc {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('jsonc-parser') as typeof Jsonc;
}

/** One change to a JSON document, addressed by a path of keys and array indexes. */
export type JsonChange =
  | { op: 'set'; path: JSONPath; value: unknown }
  | { op: 'delete'; path: JSONPath }
  /** Appends `value` to the array at `path` (which must exist). */
  | { op: 'append'; path: JSONPath; value: unknown };

/** How the owning tool formatted the file, so new text matches it. */
export interface JsonTextStyle {
  formatting: FormattingOptions;
  /** The file holds no raw non-ASCII characters (Python's `ensure_ascii`): new text escapes them as `\uXXXX`. */
  asciiOnly: boolean;
  /**
   * Set when the document is on one line (minified, or `{ "a": 1 }`): edits insert no line break, and new text
   * puts `colon` after each `:` and `comma` after each `,` as the file does.
   */
  oneLine?: { colon: string; comma: string };
  /** Every object with two or more keys has them sorted (flowctl's `sort_keys=True`): new keys go to their sorted place. */
  sortedKeys: boolean;
}

/** Indentation (first indented line), line ending, one-line spacing, sorted keys, and whether the text is pure ASCII. */
export function detectJsonStyle(text: string): JsonTextStyle {
  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  const indent = /\n([ \t]+)\S/.exec(text)?.[1] ?? '  ';
  const insertSpaces = !indent.startsWith('\t');
  const asciiOnly = !/[^\x00-\x7f]/.test(text);
  const oneLine = /[\r\n]/.test(text.trim())
    ? undefined
    : { colon: spacingAfter(text, COLON), comma: spacingAfter(text, COMMA) };
  return {
    formatting: { insertSpaces, tabSize: insertSpaces ? indent.length : 1, eol, insertFinalNewline: false },
    asciiOnly,
    oneLine,
    sortedKeys: keysSorted(text),
  };
}

/** jsonc-parser's `SyntaxKind` values (a const enum, which `isolatedModules` cannot read). */
const COMMA = 5 as SyntaxKind;
const COLON = 6 as SyntaxKind;
const TRIVIA = 15 as SyntaxKind;
const EOF = 17 as SyntaxKind;

/** The whitespace the text puts after its first token of `kind` (`''` when there is none). */
function spacingAfter(text: string, kind: SyntaxKind): string {
  const scanner = jsonc().createScanner(text, false);
  for (let t = scanner.scan(); t !== EOF; t = scanner.scan()) {
    if (t !== kind) continue;
    return scanner.scan() === TRIVIA ? scanner.getTokenValue() : '';
  }
  return '';
}

function keysSorted(text: string): boolean {
  const open: string[][] = [];
  let sorted = true;
  jsonc().visit(text, {
    onObjectBegin: () => {
      open.push([]);
    },
    onObjectProperty: (key) => {
      const keys = open.at(-1);
      if (keys?.length && keys.at(-1)! > key) sorted = false;
      keys?.push(key);
    },
    onObjectEnd: () => {
      open.pop();
    },
  });
  return sorted;
}

/** New JSON text without line breaks, spaced as a one-line file is: `,"a": 1` → `, "a":1` for `{colon:'', comma:' '}`. */
function oneLineText(content: string, spacing: { colon: string; comma: string }): string {
  const scanner = jsonc().createScanner(content, true);
  let out = '';
  for (let t = scanner.scan(); t !== EOF; t = scanner.scan()) {
    out += content.substr(scanner.getTokenOffset(), scanner.getTokenLength());
    if (t === COLON) out += spacing.colon;
    else if (t === COMMA) out += spacing.comma;
  }
  return out;
}

/**
 * Applies changes to JSON text in place with jsonc-parser's `modify`: only the changed values' text is replaced,
 * so key order, indentation, escapes such as `\u00e9` elsewhere, line endings and the trailing newline stay as
 * the owning tool wrote them and a diff shows only the real change. A one-line file stays one line. A new key
 * goes where the same key sits in a sibling object (`stories[0].retries.failureLog` placed as in
 * `stories[1].retries`); without such a sibling, at its sorted place when the document's keys are all sorted
 * (flowctl writes `sort_keys=True`), else at the end. A `set` to a value the file already holds and a `delete`
 * of an absent key change nothing, so a no-op plan returns `text` itself.
 * Callers refuse a text with duplicate keys first ({@link refuseDuplicateKeys}): `modify` edits the first of
 * two equal keys while `JSON.parse` (and every reader) takes the last, so such an edit would change nothing visible.
 */
export function applyJsonChanges(
  text: string,
  changes: readonly JsonChange[],
  style: JsonTextStyle = detectJsonStyle(text),
): string {
  let out = text;
  // No-op checks read the original document once; a change on a path an earlier change touched re-reads the text.
  const original = changes.some((c) => c.op !== 'append') ? jsonc().parseTree(text) : undefined;
  const touched: JSONPath[] = [];
  // Without formatting options `modify` inserts no line break; the one-line spacing is applied below.
  const formattingOptions = style.oneLine ? undefined : style.formatting;
  for (const change of changes) {
    let tree: Node | undefined;
    if (change.op !== 'append') {
      const overlaps = touched.some(
        (t) =>
          t.every((seg, i) => i >= change.path.length || seg === change.path[i]) ||
          change.path.every((seg, i) => i >= t.length || seg === t[i]),
      );
      tree = overlaps ? jsonc().parseTree(out) : original;
      const node = tree ? jsonc().findNodeAtLocation(tree, change.path) : undefined;
      if (change.op === 'set' && node && jsonEqual(jsonc().getNodeValue(node), change.value)) continue;
      if (change.op === 'delete' && !node) continue;
    }
    touched.push(change.path);
    // An object or array written on one line inside an indented file (a story per line) keeps its own layout
    // (one `task start` expanded a one-line story into 12 lines).
    const local = style.oneLine
      ? undefined
      : oneLineContainer(
          change.op === 'append' || tree !== original ? out : text,
          change.op === 'append' ? jsonc().parseTree(out) : tree,
          change.op === 'append' ? change.path : change.path.slice(0, -1),
        );
    const oneLine = style.oneLine ?? local;
    const edits =
      change.op === 'append'
        ? jsonc().modify(out, [...change.path, -1], change.value, {
            formattingOptions: oneLine ? undefined : formattingOptions,
            isArrayInsertion: true,
          })
        : jsonc().modify(out, change.path, change.op === 'set' ? change.value : undefined, {
            formattingOptions: oneLine ? undefined : formattingOptions,
            getInsertionIndex: (props) =>
              insertionIndex(props, String(change.path.at(-1)), siblingKeys(tree, change.path), style.sortedKeys),
          });
    for (const e of edits) {
      if (oneLine && e.content) e.content = oneLineText(e.content, oneLine);
      if (style.asciiOnly) e.content = escapeNonAscii(e.content);
    }
    out = jsonc().applyEdits(out, edits);
  }
  return out;
}

/**
 * The spacing of the object or array at `path` when it is written compactly inside an indented file, else
 * `undefined`: on one line (`{"id": "US-1", "passes": false}`), or over a few lines with members sharing a line
 * (a story on two lines, `{"id": "US-1", "title": "t",` / ` "status": "pending", "dependsOn": []}`). Such a
 * container is edited without jsonc-parser's formatting, which would put every member of the edited lines on its
 * own line (the new-user try: a no-work run turned a two-line story into 9 lines). A container whose members each
 * start their own line is not compact (formatting indents new keys as its siblings). Never the document itself
 * (its style decides).
 */
function oneLineContainer(
  text: string,
  tree: Node | undefined,
  path: JSONPath,
): { colon: string; comma: string } | undefined {
  if (!tree || !path.length) return undefined;
  const node = jsonc().findNodeAtLocation(tree, path);
  if (!node || (node.type !== 'object' && node.type !== 'array')) return undefined;
  const own = text.slice(node.offset, node.offset + node.length);
  if (/[\r\n]/.test(own) && !sharesLines(text, node)) return undefined;
  const colon = spacingAfter(own, COLON);
  return { colon, comma: own.includes(',') ? spacingAfter(own, COMMA) : colon };
}

/** Whether a multi-line container puts a member on the line of its opening bracket or of the member before it. */
function sharesLines(text: string, node: Node): boolean {
  let prevEnd = node.offset + 1;
  for (const child of node.children ?? []) {
    if (!/[\r\n]/.test(text.slice(prevEnd, child.offset))) return true;
    prevEnd = child.offset + child.length;
  }
  return false;
}

/**
 * The key order of an object at the same place in a sibling array element that holds `path`'s last key: for
 * `['stories', 0, 'retries', 'failureLog']`, the keys of `stories[j].retries` for the first other `j` that has
 * `failureLog`. `undefined` when the path crosses no array or no sibling has the key.
 */
function siblingKeys(tree: Node | undefined, path: JSONPath): string[] | undefined {
  if (!tree) return undefined;
  const key = path.at(-1);
  const parent = path.slice(0, -1);
  for (let k = parent.length - 1; k >= 0; k--) {
    if (typeof parent[k] !== 'number') continue;
    const array = jsonc().findNodeAtLocation(tree, parent.slice(0, k));
    for (let j = 0; j < (array?.children?.length ?? 0); j++) {
      if (j === parent[k]) continue;
      const obj = jsonc().findNodeAtLocation(tree, [...parent.slice(0, k), j, ...parent.slice(k + 1)]);
      const keys = obj?.type === 'object' ? (obj.children ?? []).map((p) => String(p.children?.[0]?.value)) : [];
      if (keys.includes(String(key))) return keys;
    }
  }
  return undefined;
}

/** Where a new `key` goes among `props`: after the props a sibling puts before it, else sorted or last. */
function insertionIndex(props: string[], key: string, sibling: string[] | undefined, sortedDoc: boolean): number {
  if (sibling) {
    const before = new Set(sibling.slice(0, sibling.indexOf(key)));
    const after = new Set(sibling.slice(sibling.indexOf(key) + 1));
    let at = -1;
    props.forEach((p, i) => {
      if (before.has(p)) at = i;
    });
    if (at >= 0) return at + 1;
    if (props.some((p) => after.has(p))) return props.findIndex((p) => after.has(p));
  }
  if (!sortedDoc) return props.length;
  const i = props.findIndex((p) => p > key);
  return i < 0 ? props.length : i;
}

/** The second occurrence of the first key that repeats within one object, with its 0-based offset. */
export function findDuplicateKey(text: string): { key: string; offset: number } | undefined {
  const open: Set<string>[] = [];
  let found: { key: string; offset: number } | undefined;
  jsonc().visit(text, {
    onObjectBegin: () => {
      open.push(new Set());
    },
    onObjectEnd: () => {
      open.pop();
    },
    onObjectProperty: (key, offset) => {
      const keys = open.at(-1);
      if (!keys || found) return;
      if (keys.has(key)) found = { key, offset };
      else keys.add(key);
    },
  });
  return found;
}

/**
 * Throws {@link FileProblemError} `file:line:column: duplicate key "<key>"` at the second occurrence when any
 * object of `text` repeats a key, for writers: readers take the last value and an in-place edit changes the first,
 * so the file is never written. `file` is the name to show (workspace-relative).
 */
export function refuseDuplicateKeys(file: string, text: string): void {
  // Ralph's own form has none (a repeated key would be written once): no need to scan it.
  if (isNewJsonText(text)) return;
  const dup = findDuplicateKey(text);
  if (dup)
    throw new FileProblemError({
      file,
      ...positionAt(text, dup.offset),
      message: `duplicate key ${JSON.stringify(dup.key)}: remove one of them (nothing was written)`,
    });
}

/** Structural equality of JSON values, key order included (jsonc-parser's objects have no prototype). */
function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return (
    ka.length === kb.length &&
    ka.every((k, i) => k === kb[i] && jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
  );
}

/** `é` → `\u00e9` (JSON text only holds non-ASCII inside strings, so this is always safe). */
export function escapeNonAscii(s: string): string {
  return s.replace(/[^\x00-\x7f]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
}

/**
 * True when `text` is exactly {@link newJsonText} of its own value (two-space indent, trailing newline, keys as
 * written): a text in that form has no repeated key, since `JSON.stringify` writes each key of an object once and a
 * repeated one would make the two texts differ. False for anything else, JSON that does not parse included. Pure.
 */
export function isNewJsonText(text: string): boolean {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return false;
  }
  return newJsonText(value) === text;
}

/**
 * Text for a new JSON file in a tool's house style: two-space indent, trailing newline, optionally sorted keys
 * and ASCII-only (flowctl: `json.dumps(indent=2, sort_keys=True)`).
 */
export function newJsonText(value: unknown, opts: { sortKeys?: boolean; asciiOnly?: boolean } = {}): string {
  const json = JSON.stringify(opts.sortKeys ? sortKeysDeep(value) : value, null, 2) + '\n';
  return opts.asciiOnly ? escapeNonAscii(json) : json;
}

function sortKeysDeep(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeysDeep);
  if (v && typeof v === 'object')
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, sortKeysDeep((v as Record<string, unknown>)[k])]),
    );
  return v;
}
