import { applyEdits, findNodeAtLocation, getNodeValue, modify, parseTree, visit, type FormattingOptions, type JSONPath } from 'jsonc-parser';
import { FileProblemError, positionAt } from './parseError';

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
}

/** Indentation (first indented line), line ending, and whether the text is pure ASCII. */
export function detectJsonStyle(text: string): JsonTextStyle {
  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  const indent = /\n([ \t]+)\S/.exec(text)?.[1] ?? '  ';
  const insertSpaces = !indent.startsWith('\t');
   
  const asciiOnly = !/[^\x00-\x7f]/.test(text);
  return { formatting: { insertSpaces, tabSize: insertSpaces ? indent.length : 1, eol, insertFinalNewline: false }, asciiOnly };
}

/**
 * Applies changes to JSON text in place with jsonc-parser's `modify`: only the changed values' text is replaced,
 * so key order, indentation, escapes such as `\u00e9` elsewhere, line endings and the trailing newline stay as
 * the owning tool wrote them and a diff shows only the real change. A new key goes at its sorted place when the
 * object's keys are already sorted (flowctl writes `sort_keys=True`), else at the end. A `set` to a value the
 * file already holds and a `delete` of an absent key change nothing, so a no-op plan returns `text` itself.
 * Callers refuse a text with duplicate keys first ({@link refuseDuplicateKeys}): `modify` edits the first of
 * two equal keys while `JSON.parse` (and every reader) takes the last, so such an edit would change nothing visible.
 */
export function applyJsonChanges(text: string, changes: readonly JsonChange[], style: JsonTextStyle = detectJsonStyle(text)): string {
  let out = text;
  // No-op checks read the original document once; a change on a path an earlier change touched re-reads the text.
  const original = changes.some((c) => c.op !== 'append') ? parseTree(text) : undefined;
  const touched: JSONPath[] = [];
  for (const change of changes) {
    if (change.op !== 'append') {
      const overlaps = touched.some((t) => t.every((seg, i) => i >= change.path.length || seg === change.path[i]) || change.path.every((seg, i) => i >= t.length || seg === t[i]));
      const tree = overlaps ? parseTree(out) : original;
      const node = tree ? findNodeAtLocation(tree, change.path) : undefined;
      if (change.op === 'set' && node && jsonEqual(getNodeValue(node), change.value)) continue;
      if (change.op === 'delete' && !node) continue;
    }
    touched.push(change.path);
    const edits = change.op === 'append'
      ? modify(out, [...change.path, -1], change.value, { formattingOptions: style.formatting, isArrayInsertion: true })
      : modify(out, change.path, change.op === 'set' ? change.value : undefined, {
        formattingOptions: style.formatting,
        getInsertionIndex: (props) => sortedInsertionIndex(props, String(change.path.at(-1))),
      });
    if (style.asciiOnly) for (const e of edits) e.content = escapeNonAscii(e.content);
    out = applyEdits(out, edits);
  }
  return out;
}

/** The second occurrence of the first key that repeats within one object, with its 0-based offset. */
export function findDuplicateKey(text: string): { key: string; offset: number } | undefined {
  const open: Set<string>[] = [];
  let found: { key: string; offset: number } | undefined;
  visit(text, {
    onObjectBegin: () => { open.push(new Set()); },
    onObjectEnd: () => { open.pop(); },
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
  const dup = findDuplicateKey(text);
  if (dup) throw new FileProblemError({ file, ...positionAt(text, dup.offset), message: `duplicate key ${JSON.stringify(dup.key)}: remove one of them (nothing was written)` });
}

/** Structural equality of JSON values, key order included (jsonc-parser's objects have no prototype). */
function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k, i) => k === kb[i] && jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

function sortedInsertionIndex(props: string[], key: string): number {
  const sorted = props.every((p, i) => i === 0 || props[i - 1]! <= p);
  if (!sorted) return props.length;
  const i = props.findIndex((p) => p > key);
  return i < 0 ? props.length : i;
}

/** `é` → `\u00e9` (JSON text only holds non-ASCII inside strings, so this is always safe). */
export function escapeNonAscii(s: string): string {
   
  return s.replace(/[^\x00-\x7f]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
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
  if (v && typeof v === 'object') return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sortKeysDeep((v as Record<string, unknown>)[k])]));
  return v;
}
