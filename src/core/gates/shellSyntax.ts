import type { ShNode, ShSyntax } from 'mvdan-sh';

/**
 * Shell text → the facts the command guard decides on, through a real bash parser (mvdan.cc/sh v3 `syntax`, the
 * `mvdan-sh` build): every simple command anywhere in the tree (lists, pipelines, subshells, braces, `if` / `for` /
 * `while` / `case` bodies, functions, `$(…)`, backticks, process substitutions, assignments' values), each with its
 * words, the redirections of its statement and where its standard input comes from. No regexes decide here: the
 * words come from the parser's nodes, with quoting and escapes resolved as bash resolves them.
 *
 * A word whose value depends on an expansion (`$X`, `$(…)`, globs, `{a,b}`) has no exact value; it carries a
 * pattern of everything it could become, so callers can fail closed.
 */

/** One word of a command as bash would see it before running it. */
export interface ShellWord {
  /** The value after quote removal, or `null` when an expansion, glob or brace makes it unknown. */
  value: string | null;
  /** What the word may expand to (anchored); for an exact word it matches only `value`. */
  pattern: RegExp;
  /** True when an unquoted expansion may split it into several words (or none). */
  splittable: boolean;
  /** The literal characters of the word (expansions left out, glob characters kept): what a computed word surely contains. */
  literal: string;
  /** `none`: exact; `glob`: only globs or braces make it inexact (`literal` is the pattern); `dynamic`: an expansion. */
  expansion: 'none' | 'glob' | 'dynamic';
  /** Byte offsets of the word in the parsed text. */
  start: number;
  end: number;
}

/** Where a command's standard input comes from. */
export type ShellStdin =
  | { kind: 'inherited' }
  /** Output of other commands (`a | b`): `upstream` are the calls to the left in the pipeline. */
  | { kind: 'pipe'; upstream: ShellCall[] }
  /** `<<EOF … EOF` or `<<< word`. */
  | { kind: 'heredoc'; body: ShellWord }
  /** `< file` */
  | { kind: 'file'; target: ShellWord };

/** One redirection. `op` is bash's operator text (`>`, `>>`, `&>`, `<<<`, …). */
export interface ShellRedirect {
  op: string;
  /** The file descriptor written before the operator (`2>`), or null. */
  fd: string | null;
  target: ShellWord | null;
}

/** A simple command (`FOO=1 git push >x`): assignments, words, and the redirections of its statement. */
export interface ShellCall {
  words: ShellWord[];
  /** Values of `NAME=value` prefixes (the names are not needed to decide). */
  assignValues: ShellWord[];
  /** The `NAME=value` prefixes with their names (`GIT_PAGER='…' git log`); value null for `NAME=` or an array. */
  assignments: { name: string; value: ShellWord | null }[];
  redirects: ShellRedirect[];
  stdin: ShellStdin;
  /** True when the statement's output goes into a pipe. */
  pipedOut: boolean;
  /** True when its output is captured: inside `$(…)`, backticks or a process substitution `<(…)` / `>(…)`. */
  captured: boolean;
  /** Byte offsets of the whole statement. */
  start: number;
  end: number;
}

/** The facts of one parsed script. */
export interface ParsedShell {
  /** The text parsed. */
  text: string;
  /** Every simple command with at least one word, in source order (nested ones included). */
  calls: ShellCall[];
  /** Every redirection anywhere (statements of compound commands included). */
  redirects: ShellRedirect[];
  /** Names of functions the script defines. */
  functions: string[];
}

/** The script could not be parsed; `message` is the parser's (`1:3: && must be followed by a statement`). */
export class ShellSyntaxError extends Error {}

// Loaded on first use: the parser is 1.5 MB of GopherJS that commands without a guard should not pay for.
let syntaxModule: ShSyntax | undefined;
let parser: ReturnType<ShSyntax['NewParser']> | undefined;
const syntax = new Proxy({} as ShSyntax, {
  get(_t, key: keyof ShSyntax) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    syntaxModule ??= (require('mvdan-sh') as { syntax: ShSyntax }).syntax;
    return syntaxModule[key];
  },
});

/**
 * Loads the parser now (~0.1 s of this thread the first time, nothing after): for a caller that knows it will parse
 * soon and is waiting on something else meanwhile (a parallel run's start waits for git; its lanes' gate-file
 * snapshots then parse at once).
 */
export function loadShellParser(): void {
  void syntax.NewParser;
}

/** bash's redirection operators by mvdan/sh `RedirOperator` value (syntax/tokens.go). */
const REDIR_OPS: Record<number, string> = {
  54: '>',
  55: '>>',
  56: '<',
  57: '<>',
  58: '<&',
  59: '>&',
  60: '>|',
  61: '<<',
  62: '<<-',
  63: '<<<',
  64: '&>',
  65: '&>>',
};
/** `BinCmdOperator` values of `|` and `|&`. */
const PIPE_OPS = new Set([12, 13]);

/** Operators that write to their target (a `>&` whose target is not a descriptor number or `-` writes a file). */
export function writesTarget(r: ShellRedirect): boolean {
  if (r.op === '>&')
    return !(r.target?.value !== null && r.target?.value !== undefined && /^(\d+|-)$/.test(r.target.value));
  return ['>', '>>', '<>', '>|', '&>', '&>>'].includes(r.op);
}

/**
 * Parses `text` as bash. Throws {@link ShellSyntaxError} when bash would not run it (unbalanced quotes, a dangling
 * `&&`, …). Pure apart from the parser's one-time set-up. One command of plain words (`true`, `npm test`, a run's
 * usual gate) is read without the parser ({@link parsePlainCommand}: the same facts, and no 1.5 MB to load).
 */
export function parseShell(text: string): ParsedShell {
  return parsePlainCommand(text) ?? parseShellWithParser(text);
}

/** Characters of a plain word: no quote, expansion, glob, brace, tilde, comment, operator or escape. */
const PLAIN_WORD = /^[A-Za-z0-9_./,:@%+=-]+$/;
/** Words bash reads as syntax, or mvdan/sh as a declaration, test or arithmetic clause, first in a command. */
const FIRST_WORD_SYNTAX = new Set([
  'case',
  'coproc',
  'do',
  'done',
  'elif',
  'else',
  'esac',
  'fi',
  'for',
  'function',
  'if',
  'in',
  'select',
  'then',
  'time',
  'until',
  'while',
  'declare',
  'export',
  'local',
  'nameref',
  'readonly',
  'typeset',
  'let',
]);

/**
 * `text` read without the parser when it is one simple command of plain words separated by spaces or tabs (a first
 * word with no `=`, which would make it an assignment, and no keyword): exactly what {@link parseShellWithParser}
 * answers for it (a table test holds the two equal); null for anything else (the parser reads it). Pure.
 */
export function parsePlainCommand(text: string): ParsedShell | null {
  const words: ShellWord[] = [];
  const re = /[^ \t]+/g;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const value = m[0];
    if (!PLAIN_WORD.test(value)) return null;
    if (words.length === 0 && (value.includes('=') || FIRST_WORD_SYNTAX.has(value))) return null;
    words.push({
      value,
      pattern: new RegExp(`^${escapeRe(value)}$`),
      splittable: false,
      literal: value,
      expansion: 'none',
      start: m.index,
      end: m.index + value.length,
    });
  }
  if (words.length === 0) return null;
  const call: ShellCall = {
    words,
    assignValues: [],
    assignments: [],
    redirects: [],
    stdin: { kind: 'inherited' },
    pipedOut: false,
    captured: false,
    start: words[0]!.start,
    end: words[words.length - 1]!.end,
  };
  return { text, calls: [call], redirects: [], functions: [] };
}

/** {@link parseShell} through mvdan/sh's parser, whatever the text. */
export function parseShellWithParser(text: string): ParsedShell {
  parser ??= syntax.NewParser(syntax.KeepComments(false), syntax.Variant(syntax.LangBash));
  let file: ShNode;
  try {
    file = parser.Parse(text, '');
  } catch (err) {
    const e = err as { Error?: () => string; message?: string };
    throw new ShellSyntaxError(typeof e.Error === 'function' ? e.Error() : String(e.message ?? err));
  }
  const bytes = Buffer.from(text);
  const stmts: ShNode[] = [];
  const pipes: ShNode[] = [];
  const redirNodes: ShNode[] = [];
  const functions: string[] = [];
  const captured = new NodeMap<true>();
  syntax.Walk(file, (n) => {
    if (!n) return true;
    switch (syntax.NodeType(n)) {
      case 'CmdSubst':
      case 'ProcSubst':
        syntax.Walk(n, (m) => {
          if (m && syntax.NodeType(m) === 'Stmt') captured.set(m, true);
          return true;
        });
        break;
      case 'Stmt':
        stmts.push(n);
        break;
      case 'BinaryCmd':
        if (PIPE_OPS.has(n.Op as number)) pipes.push(n);
        break;
      case 'Redirect':
        redirNodes.push(n);
        break;
      case 'FuncDecl':
        functions.push(String((n.Name as ShNode | null)?.Value ?? ''));
        break;
    }
    return true;
  });

  const redirOf = (r: ShNode): ShellRedirect => ({
    op: REDIR_OPS[r.Op as number] ?? `op${String(r.Op)}`,
    fd: (r.N as ShNode | null)?.Value !== undefined ? String((r.N as ShNode).Value) : null,
    target: r.Word ? convertWord(r.Word as ShNode, bytes) : null,
  });

  // Standard input of each statement: pipes first, then its own input redirections (which win, as in bash).
  // GopherJS hands out a fresh wrapper per field access: nodes are keyed by their stable inner object.
  const stdinOf = new NodeMap<ShellStdin>();
  const pipedOut = new NodeMap<true>();
  const callOfStmt = new NodeMap<ShellCall>();
  const mark = (stmt: ShNode, s: ShellStdin) => {
    stdinOf.set(stmt, s);
    // A compound statement passes its input to every statement inside it (fail closed: all of them).
    if (syntax.NodeType(stmt.Cmd as ShNode) !== 'CallExpr') {
      syntax.Walk(stmt.Cmd as ShNode, (n) => {
        if (n && syntax.NodeType(n) === 'Stmt' && !stdinOf.has(n)) stdinOf.set(n, s);
        return true;
      });
    }
  };
  const leaves = (stmt: ShNode): ShNode[] => {
    const cmd = stmt.Cmd as ShNode | null;
    if (cmd && syntax.NodeType(cmd) === 'BinaryCmd' && PIPE_OPS.has(cmd.Op as number))
      return [...leaves(cmd.X as ShNode), ...leaves(cmd.Y as ShNode)];
    return [stmt];
  };
  const upstreamStmts = new NodeMap<ShNode[]>();
  for (const p of pipes) {
    const left = leaves(p.X as ShNode);
    const right = leaves(p.Y as ShNode);
    for (const l of left) {
      pipedOut.set(l, true);
      // `(a; b) | head`, `{ a; } | head`: every statement inside a piped compound writes into the pipe.
      if (l.Cmd && syntax.NodeType(l.Cmd as ShNode) !== 'CallExpr') {
        syntax.Walk(l.Cmd as ShNode, (n) => {
          if (n && syntax.NodeType(n) === 'Stmt') pipedOut.set(n, true);
          return true;
        });
      }
    }
    const first = right[0]!;
    upstreamStmts.set(first, left);
  }
  for (const [first, left] of upstreamStmts) {
    // Transitive: `curl | tee | bash` names curl upstream of bash.
    const all = new NodeMap<ShNode>();
    const visit = (s: ShNode) => {
      if (all.has(s)) return;
      all.set(s, s);
      for (const u of upstreamStmts.get(s) ?? []) visit(u);
    };
    left.forEach(visit);
    mark(first, { kind: 'pipe', upstream: [] });
    (stdinOf.get(first) as { upstream: ShellCall[] }).upstream = [];
    upstreamStmts.set(first, all.values());
  }
  for (const stmt of stmts) {
    for (const r of (stmt.Redirs as ShNode[] | null) ?? []) {
      const op = REDIR_OPS[r.Op as number];
      if (op === '<<' || op === '<<-')
        mark(stmt, { kind: 'heredoc', body: r.Hdoc ? convertWord(r.Hdoc as ShNode, bytes) : emptyWord() });
      else if (op === '<<<') mark(stmt, { kind: 'heredoc', body: convertWord(r.Word as ShNode, bytes) });
      else if (op === '<') mark(stmt, { kind: 'file', target: convertWord(r.Word as ShNode, bytes) });
    }
  }

  const calls: ShellCall[] = [];
  for (const stmt of stmts) {
    const cmd = stmt.Cmd as ShNode | null;
    if (cmd && syntax.NodeType(cmd) === 'DeclClause') {
      // `export NAME=value` / `declare -x …`: a call named by its variant, with the assignments (names kept).
      const declAssigns = ((cmd.Args as ShNode[] | null) ?? []).filter((x) => x.Name);
      const variant = cmd.Variant as ShNode | null;
      const name = String(variant?.Value ?? 'declare');
      const at = variant
        ? { start: variant.Pos().Offset(), end: variant.End().Offset() }
        : { start: stmt.Pos().Offset(), end: stmt.Pos().Offset() };
      const call: ShellCall = {
        words: [
          { value: name, pattern: new RegExp(`^${name}$`), splittable: false, literal: name, expansion: 'none', ...at },
        ],
        assignValues: declAssigns.filter((x) => x.Value).map((x) => convertWord(x.Value as ShNode, bytes)),
        assignments: declAssigns.map((x) => ({
          name: String((x.Name as ShNode | null)?.Value ?? ''),
          value: x.Value ? convertWord(x.Value as ShNode, bytes) : null,
        })),
        redirects: ((stmt.Redirs as ShNode[] | null) ?? []).map(redirOf),
        stdin: stdinOf.get(stmt) ?? { kind: 'inherited' },
        pipedOut: pipedOut.has(stmt),
        captured: captured.has(stmt),
        start: stmt.Pos().Offset(),
        end: stmt.End().Offset(),
      };
      callOfStmt.set(stmt, call);
      calls.push(call);
      continue;
    }
    if (!cmd || syntax.NodeType(cmd) !== 'CallExpr') continue;
    const args = (cmd.Args as ShNode[] | null) ?? [];
    const assigns = (cmd.Assigns as ShNode[] | null) ?? [];
    const assignValues = assigns.filter((a) => a.Value).map((a) => convertWord(a.Value as ShNode, bytes));
    // Array assignments `a=(x $(y))`: their words are values too.
    for (const a of assigns) {
      const arr = a.Array as ShNode | null;
      for (const el of (arr?.Elems as ShNode[] | null) ?? [])
        if (el.Value) assignValues.push(convertWord(el.Value as ShNode, bytes));
    }
    if (args.length === 0 && assignValues.length === 0) continue;
    const call: ShellCall = {
      words: args.flatMap((w) => convertArgWords(w)),
      assignValues,
      assignments: assigns.map((a) => ({
        name: String((a.Name as ShNode | null)?.Value ?? ''),
        value: a.Value ? convertWord(a.Value as ShNode, bytes) : null,
      })),
      redirects: ((stmt.Redirs as ShNode[] | null) ?? []).map(redirOf),
      stdin: stdinOf.get(stmt) ?? { kind: 'inherited' },
      pipedOut: pipedOut.has(stmt),
      captured: captured.has(stmt),
      start: stmt.Pos().Offset(),
      end: stmt.End().Offset(),
    };
    callOfStmt.set(stmt, call);
    calls.push(call);
  }
  // Fill pipe upstreams with calls now that they exist.
  for (const [first, ups] of upstreamStmts) {
    const s = stdinOf.get(first);
    if (s?.kind !== 'pipe') continue;
    const upCalls: ShellCall[] = [];
    for (const u of ups) {
      const c = callOfStmt.get(u);
      if (c) upCalls.push(c);
      else {
        // A compound upstream (`{ curl …; } | sh`): every call inside it is upstream.
        syntax.Walk(u, (n) => {
          if (n && syntax.NodeType(n) === 'Stmt' && callOfStmt.has(n)) upCalls.push(callOfStmt.get(n)!);
          return true;
        });
      }
    }
    s.upstream.push(...upCalls);
  }
  calls.sort((a, b) => a.start - b.start);
  return { text, calls, redirects: redirNodes.map(redirOf), functions };
}

/** A map keyed by syntax node identity (the GopherJS inner object, stable across wrapper objects). */
class NodeMap<V> {
  private readonly keys = new Map<unknown, ShNode>();
  private readonly vals = new Map<unknown, V>();
  private static id(n: ShNode): unknown {
    return (n as unknown as { __internal_object__?: unknown }).__internal_object__ ?? n;
  }
  get(n: ShNode): V | undefined {
    return this.vals.get(NodeMap.id(n));
  }
  has(n: ShNode): boolean {
    return this.vals.has(NodeMap.id(n));
  }
  set(n: ShNode, v: V): void {
    this.keys.set(NodeMap.id(n), n);
    this.vals.set(NodeMap.id(n), v);
  }
  values(): V[] {
    return [...this.vals.values()];
  }
  *[Symbol.iterator](): IterableIterator<[ShNode, V]> {
    for (const [k, v] of this.vals) yield [this.keys.get(k)!, v];
  }
}

function emptyWord(): ShellWord {
  return { value: '', pattern: /^$/, splittable: false, literal: '', expansion: 'none', start: 0, end: 0 };
}

const ANY = '[\\s\\S]*';

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

/** One character of a word after quote removal, or an expansion. `meta`: unquoted, so it may glob or brace. */
type WordTok = { ch: string; meta: boolean } | { dyn: true; unquoted: boolean };

/** Most words one brace expansion may give (`{1..100000}`): beyond it the word is unknown (fail closed). */
export const BRACE_EXPANSION_MAX = 256;

/** The characters and expansions of a `Word` node: quote removal, escapes, ANSI-C strings. */
function wordTokens(word: ShNode): WordTok[] {
  const toks: WordTok[] = [];
  const quoted = (s: string) => {
    for (const ch of s) toks.push({ ch, meta: false });
  };
  for (const part of (word.Parts as ShNode[] | null) ?? []) {
    const type = syntax.NodeType(part);
    switch (type) {
      case 'Lit': {
        const raw = String(part.Value);
        for (let i = 0; i < raw.length; i++) {
          const c = raw[i]!;
          if (c === '\\') {
            const n = raw[++i];
            if (n !== undefined && n !== '\n') toks.push({ ch: n, meta: false });
            continue;
          }
          toks.push({ ch: c, meta: true });
        }
        break;
      }
      case 'SglQuoted':
        quoted(part.Dollar ? ansiC(String(part.Value)) : String(part.Value));
        break;
      case 'DblQuoted':
        for (const inner of (part.Parts as ShNode[] | null) ?? []) {
          if (syntax.NodeType(inner) === 'Lit') quoted(doubleQuotedLiteral(String(inner.Value)));
          else toks.push({ dyn: true, unquoted: false });
        }
        break;
      default:
        // ParamExp, CmdSubst, ArithmExp, ProcSubst, ExtGlob …: unknown until run time.
        toks.push({ dyn: true, unquoted: type !== 'ProcSubst' });
    }
  }
  return toks;
}

const isMeta = (t: WordTok | undefined, ch: string): boolean => !!t && 'ch' in t && t.meta && t.ch === ch;

/**
 * Bash's brace expansion of one word (`pu{s,}h` → `push`, `puh`; `{1..3}`; nested; a `{…}` without a top-level comma
 * or a valid sequence stays literal). Throws RangeError past {@link BRACE_EXPANSION_MAX} words.
 */
function expandBraces(toks: WordTok[]): WordTok[][] {
  for (let i = 0; i < toks.length; i++) {
    if (!isMeta(toks[i], '{')) continue;
    let depth = 0;
    let close = -1;
    const commas: number[] = [];
    for (let j = i; j < toks.length; j++) {
      if (isMeta(toks[j], '{')) depth++;
      else if (isMeta(toks[j], '}')) {
        depth--;
        if (depth === 0) {
          close = j;
          break;
        }
      } else if (depth === 1 && isMeta(toks[j], ',')) commas.push(j);
    }
    if (close < 0) continue;
    let alts: WordTok[][] | null = null;
    if (commas.length) {
      alts = [];
      let from = i + 1;
      for (const c of [...commas, close]) {
        alts.push(toks.slice(from, c));
        from = c + 1;
      }
    } else {
      const body = toks.slice(i + 1, close);
      const text = body.every((t) => 'ch' in t) ? body.map((t) => (t as { ch: string }).ch).join('') : null;
      const seq = text === null ? null : braceSequence(text);
      if (seq) alts = seq.map((s) => [...s].map((ch) => ({ ch, meta: false })));
    }
    if (!alts) continue;
    const out: WordTok[][] = [];
    for (const alt of alts) {
      for (const w of expandBraces([...toks.slice(0, i), ...alt, ...toks.slice(close + 1)])) {
        out.push(w);
        if (out.length > BRACE_EXPANSION_MAX) throw new RangeError('brace expansion too large');
      }
    }
    return out;
  }
  return [toks];
}

/** `1..5`, `05..1..2`, `a..e`: the words of a sequence expression; null when `text` is not one. */
function braceSequence(text: string): string[] | null {
  const num = /^(-?\d+)\.\.(-?\d+)(?:\.\.(-?\d+))?$/.exec(text);
  const chr = /^([A-Za-z])\.\.([A-Za-z])(?:\.\.(-?\d+))?$/.exec(text);
  const m = num ?? chr;
  if (!m) return null;
  const from = num ? Number(m[1]) : m[1]!.charCodeAt(0);
  const to = num ? Number(m[2]) : m[2]!.charCodeAt(0);
  const step = Math.abs(Number(m[3] ?? 1)) || 1;
  if (Math.abs(to - from) / step > BRACE_EXPANSION_MAX) throw new RangeError('brace expansion too large');
  const width = num && /^-?0\d/.test(m[1]!) ? m[1]!.replace('-', '').length : 0;
  const out: string[] = [];
  for (let v = from; from <= to ? v <= to : v >= to; v += from <= to ? step : -step)
    out.push(
      num
        ? String(Math.abs(v))
            .padStart(width, '0')
            .replace(/^/, v < 0 ? '-' : '')
        : String.fromCharCode(v),
    );
  return out;
}

/** A {@link ShellWord} from the characters of one (brace-expanded) word: globs make it inexact, expansions unknown. */
function wordOf(toks: WordTok[], start: number, end: number): ShellWord {
  let value = '';
  let exact = true;
  let dynamic = false;
  let splittable = false;
  let re = '';
  let literal = '';
  for (let i = 0; i < toks.length; i++) {
    const t = toks[i]!;
    if (!('ch' in t)) {
      exact = false;
      dynamic = true;
      if (t.unquoted) splittable = true;
      re += ANY;
      continue;
    }
    const c = t.ch;
    if (t.meta && c === '*') {
      exact = false;
      re += ANY;
    } else if (t.meta && c === '?') {
      exact = false;
      re += '[\\s\\S]';
    } else if (t.meta && c === '[') {
      let close = -1;
      for (let j = i + 2; j < toks.length; j++)
        if (isMeta(toks[j], ']')) {
          close = j;
          break;
        }
      if (close < 0 || toks.slice(i + 1, close).some((x) => !('ch' in x))) re += escapeRe(c);
      else {
        exact = false;
        let body = toks
          .slice(i + 1, close)
          .map((x) => (x as { ch: string }).ch)
          .join('');
        const text = `[${body}]`;
        if (body.startsWith('!')) body = `^${body.slice(1)}`;
        re += `[${body.replace(/\\/g, '\\\\')}]`;
        value += text;
        literal += text;
        i = close;
        continue;
      }
    } else re += escapeRe(c);
    value += c;
    literal += c;
  }
  return {
    value: exact ? value : null,
    pattern: new RegExp(`^${re}$`),
    splittable,
    literal,
    expansion: exact ? 'none' : dynamic ? 'dynamic' : 'glob',
    start,
    end,
  };
}

/** A `Word` node as one {@link ShellWord}, braces kept literal (assignments and redirection targets are not brace-expanded). */
function convertWord(word: ShNode, _bytes: Buffer): ShellWord {
  return wordOf(
    wordTokens(word).map((t) =>
      'ch' in t && (t.ch === '{' || t.ch === '}' || t.ch === ',') ? { ...t, meta: false } : t,
    ),
    word.Pos().Offset(),
    word.End().Offset(),
  );
}

/**
 * A command's argument as the words bash passes after brace expansion (`git pu{s,}h` is `git push puh`): expanded
 * before matching, each word keeping the argument's offsets. A word past {@link BRACE_EXPANSION_MAX} is unknown.
 */
function convertArgWords(word: ShNode): ShellWord[] {
  const start = word.Pos().Offset();
  const end = word.End().Offset();
  const toks = wordTokens(word);
  try {
    const words = expandBraces(toks);
    // An empty result of an expansion is no word at all (`{git,} push` is `git push`).
    return (words.length > 1 ? words.filter((w) => w.length > 0) : words).map((w) => wordOf(w, start, end));
  } catch (err) {
    if (!(err instanceof RangeError)) throw err;
    return [
      { value: null, pattern: new RegExp(`^${ANY}$`), splittable: true, literal: '', expansion: 'dynamic', start, end },
    ];
  }
}

/** Inside double quotes a backslash escapes only `$`, `` ` ``, `"`, `\` and a newline (which it removes). */
function doubleQuotedLiteral(raw: string): string {
  let out = '';
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    const n = raw[i + 1];
    if (c === '\\' && n !== undefined && '$`"\\\n'.includes(n)) {
      if (n !== '\n') out += n;
      i++;
    } else out += c;
  }
  return out;
}

/** Decodes a `$'…'` string as bash does (`\n`, `\xHH`, `\NNN`, `\uHHHH`, `\cX`, …). */
export function ansiC(raw: string): string {
  let out = '';
  const simple: Record<string, string> = {
    a: '\x07',
    b: '\b',
    e: '\x1b',
    E: '\x1b',
    f: '\f',
    n: '\n',
    r: '\r',
    t: '\t',
    v: '\v',
    '\\': '\\',
    "'": "'",
    '"': '"',
    '?': '?',
  };
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (c !== '\\' || i + 1 >= raw.length) {
      out += c;
      continue;
    }
    const n = raw[++i]!;
    if (n in simple) {
      out += simple[n];
    } else if (n >= '0' && n <= '7') {
      let digits = n;
      while (digits.length < 3 && raw[i + 1] !== undefined && raw[i + 1]! >= '0' && raw[i + 1]! <= '7')
        digits += raw[++i];
      out += String.fromCharCode(parseInt(digits, 8) & 0xff);
    } else if (n === 'x' || n === 'u' || n === 'U') {
      const max = n === 'x' ? 2 : n === 'u' ? 4 : 8;
      let digits = '';
      while (digits.length < max && /[0-9A-Fa-f]/.test(raw[i + 1] ?? '')) digits += raw[++i];
      if (digits === '') out += `\\${n}`;
      else out += String.fromCodePoint(Math.min(parseInt(digits, 16), 0x10ffff));
    } else if (n === 'c' && i + 1 < raw.length) {
      out += String.fromCharCode(raw[++i]!.toUpperCase().charCodeAt(0) & 0x1f);
    } else {
      out += `\\${n}`;
    }
  }
  return out;
}

export { shellQuote } from './shellQuote';
