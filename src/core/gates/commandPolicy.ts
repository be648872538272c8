import { readTextIfExists } from '../store/atomicWrite';
import { FileProblemError, type FileProblem } from '../store/parseError';
import { ralphFile } from '../model/ralphPaths';

/**
 * `.ralph/command-policy`: the operator's plain-text policy for gates and for the agent's shell commands
 * (seed-systems.md §3.9; corpus `ralph-wiggum-plugin/command-policy.template`).
 *
 * Grammar, as lockstride's ralph-guard.sh / ralph-common.sh read it:
 * - per line: a trailing CR and trailing whitespace are stripped; empty lines and `#` lines are skipped
 *   (we also skip `#` after leading whitespace: such a row could never match a command);
 * - a line that is exactly `[gates]`, `[rewrite]`, `[deny]`, `[wrap]` or `[protect]` starts that section; any
 *   other `[…]` line ends the current section (rows until the next known header are ignored);
 * - rows are split on `|` and each field trimmed; the **last** field takes the rest of the line, `|` included
 *   (bash `${line#*|}`), so `basic | pnpm a | tee x` pins the command `pnpm a | tee x`.
 *
 * Where the seed skips a malformed row silently, this parser also skips it but reports a {@link PolicyProblem}
 * positioned at file:line:column: rows of `[gates]` and unusable `[rewrite]` patterns are errors (the run
 * refuses to start: a pin the operator meant must not vanish), the rest are warnings (the row is ignored, as in
 * the seed).
 */

/** The three gate tiers (§3.9 `[gates]`): `basic` after each task, `full` after `[risky]` ones and at the end, `final` post-completion. */
export const GATE_TIERS = ['basic', 'full', 'final'] as const;
export type GateTier = (typeof GATE_TIERS)[number];

/** Labels a `[wrap]` row may name (§3.9): the tiers plus the kinds. Anything else → the row is ignored. */
export const GATE_LABELS = ['basic', 'full', 'final', 'unit', 'integration', 'e2e', 'lint', 'format'] as const;
export type GateLabel = (typeof GATE_LABELS)[number];

/** The sections of the file, in the order the guard applies them (§3.9). */
export const POLICY_SECTIONS = ['gates', 'rewrite', 'deny', 'wrap', 'protect'] as const;
export type PolicySection = (typeof POLICY_SECTIONS)[number];

/** Where a row came from: 1-based line of the policy file. */
interface Located {
  line: number;
}

/** `[gates]` row `basic|full|final | <command>`. */
export interface GateRow extends Located {
  tier: GateTier;
  /** The command as written (trimmed), run with `bash -c` from the workspace root. */
  command: string;
}

/** `[rewrite]` row `<ERE> | <replacement with \1…, &> | <reason>`: the first matching rule rewrites (sed -E `s|re|rep|`). */
export interface RewriteRule extends Located {
  /** The pattern as written (POSIX ERE). */
  pattern: string;
  /** The pattern compiled for JavaScript (POSIX bracket classes such as `[[:space:]]` translated). */
  regex: RegExp;
  /** sed replacement text: `\1`…`\9` groups, `&` the whole match, `\&` and `\\` literals. */
  replacement: string;
  reason: string;
}

/** `[deny]` row `<prefix> | <reason>`: a canonical command equal to the prefix or starting with prefix + space is denied. */
export interface DenyRule extends Located {
  prefix: string;
  /** Empty when the row gave none (the guard then uses its default message). */
  reason: string;
}

/** `[wrap]` row `<prefix> | <label>`: a matching command is run through the gate runner under `label`. */
export interface WrapRule extends Located {
  prefix: string;
  label: GateLabel;
}

/** `[protect]` row `<prefix>`: a bare run is allowed; `|`, `>` or `>>` in the raw command is denied. */
export interface ProtectRule extends Located {
  prefix: string;
}

/** A parsed command policy. Rows keep file order; `gates` has at most one command per tier (the last row wins, as in the seed). */
export interface CommandPolicy {
  /** Absolute (or as given) path of the file parsed. */
  file: string;
  /** The pinned command per tier; a tier without a row is absent. */
  gates: Partial<Record<GateTier, GateRow>>;
  rewrite: RewriteRule[];
  deny: DenyRule[];
  wrap: WrapRule[];
  protect: ProtectRule[];
  /** Which known section headers occur in the file (a present but empty `[gates]` still counts). */
  sectionsPresent: PolicySection[];
}

/** A problem with one row: `error` makes {@link loadCommandPolicy} throw; `warning` means the row was ignored. */
export interface PolicyProblem extends FileProblem {
  severity: 'error' | 'warning';
}

export interface PolicyParseResult {
  policy: CommandPolicy;
  /** In file order. */
  problems: PolicyProblem[];
}

/** Path of the command policy of a workspace folder. */
export function commandPolicyPath(folder: string): string {
  return ralphFile(folder, 'commandPolicy');
}

const SECTION_HEADER = /^\[(gates|rewrite|deny|wrap|protect)\]$/;
const ANY_HEADER = /^\[.*\]$/;

/** One field of a row with its 1-based column in the (CR-stripped) line. */
interface Field {
  text: string;
  column: number;
}

/**
 * Splits a row on `|` into at most `max` trimmed fields; the last field takes the rest of the line.
 * Columns are 1-based and point at the first non-blank character of the field (or just past the `|`).
 */
function splitFields(line: string, max: number): Field[] {
  const fields: Field[] = [];
  let start = 0;
  while (fields.length < max - 1) {
    const bar = line.indexOf('|', start);
    if (bar < 0) break;
    fields.push(field(line, start, bar));
    start = bar + 1;
  }
  fields.push(field(line, start, line.length));
  return fields;
}

function field(line: string, from: number, to: number): Field {
  const raw = line.slice(from, to);
  const lead = raw.length - raw.trimStart().length;
  return { text: raw.trim(), column: from + lead + 1 };
}

function isGateTier(s: string): s is GateTier {
  return (GATE_TIERS as readonly string[]).includes(s);
}

function isGateLabel(s: string): s is GateLabel {
  return (GATE_LABELS as readonly string[]).includes(s);
}

/**
 * Parses the text of a command policy. Pure; never throws: malformed rows are skipped and reported.
 * `file` only names the file in problems and in the result.
 */
export function parseCommandPolicy(text: string, file: string): PolicyParseResult {
  const policy: CommandPolicy = { file, gates: {}, rewrite: [], deny: [], wrap: [], protect: [], sectionsPresent: [] };
  const problems: PolicyProblem[] = [];
  const report = (severity: PolicyProblem['severity'], line: number, column: number, message: string) =>
    problems.push({ file, line, column, message, severity });
  let section: PolicySection | null = null;
  let outsideReported = false;
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const lineNo = i + 1;
    const line = lines[i]!.replace(/\r$/, '').replace(/\s+$/, '');
    if (line === '' || line.trimStart().startsWith('#')) continue;
    const header = SECTION_HEADER.exec(line);
    if (header) {
      section = header[1] as PolicySection;
      if (!policy.sectionsPresent.includes(section)) policy.sectionsPresent.push(section);
      continue;
    }
    if (ANY_HEADER.test(line)) {
      section = null;
      report(
        'warning',
        lineNo,
        1,
        `unknown section ${line}: rows up to the next known section are ignored (known: ${POLICY_SECTIONS.map((s) => `[${s}]`).join(', ')})`,
      );
      continue;
    }
    if (section === null) {
      if (!outsideReported) report('warning', lineNo, 1, 'row outside any known section is ignored');
      outsideReported = true;
      continue;
    }
    switch (section) {
      case 'gates': {
        if (!line.includes('|')) {
          report('error', lineNo, 1, 'a [gates] row is `basic|full|final | <command>`: no `|` found');
          break;
        }
        const [tier, command] = splitFields(line, 2) as [Field, Field];
        if (!isGateTier(tier.text)) {
          report('error', lineNo, tier.column, `unknown gate tier "${tier.text}" (expected basic, full or final)`);
          break;
        }
        if (command.text === '') {
          report('error', lineNo, command.column, `the ${tier.text} gate has no command`);
          break;
        }
        const earlier = policy.gates[tier.text];
        if (earlier)
          report('warning', lineNo, tier.column, `${tier.text} gate pinned again (line ${earlier.line} is overridden)`);
        policy.gates[tier.text] = { tier: tier.text, command: command.text, line: lineNo };
        break;
      }
      case 'rewrite': {
        const [pattern, replacement, reason] = splitFields(line, 3);
        if (!pattern || pattern.text === '') {
          report('warning', lineNo, 1, 'a [rewrite] row needs a pattern: row ignored');
          break;
        }
        if (replacement === undefined) {
          report(
            'error',
            lineNo,
            pattern.column + pattern.text.length,
            'a [rewrite] row is `<regex> | <replacement> | <reason>`: no replacement',
          );
          break;
        }
        const compiled = compileEre(pattern.text);
        if (typeof compiled === 'string') {
          report('error', lineNo, pattern.column, `invalid regular expression: ${compiled}`);
          break;
        }
        policy.rewrite.push({
          pattern: pattern.text,
          regex: compiled,
          replacement: replacement.text,
          reason: reason?.text ?? '',
          line: lineNo,
        });
        break;
      }
      case 'deny': {
        const [prefix, reason] = splitFields(line, 2) as [Field, Field | undefined];
        if (prefix.text === '') {
          report('warning', lineNo, prefix.column, 'a [deny] row needs a command prefix: row ignored');
          break;
        }
        policy.deny.push({ prefix: prefix.text, reason: reason?.text ?? '', line: lineNo });
        break;
      }
      case 'wrap': {
        const [prefix, label] = splitFields(line, 2) as [Field, Field | undefined];
        if (prefix.text === '') {
          report('warning', lineNo, prefix.column, 'a [wrap] row needs a command prefix: row ignored');
          break;
        }
        if (!label || !isGateLabel(label.text)) {
          const where = label ? label.column : line.length + 1;
          report(
            'warning',
            lineNo,
            where,
            `a [wrap] row needs a label (${GATE_LABELS.join(', ')}); ${label ? `"${label.text}" is not one` : 'none given'}: row ignored`,
          );
          break;
        }
        policy.wrap.push({ prefix: prefix.text, label: label.text, line: lineNo });
        break;
      }
      case 'protect': {
        policy.protect.push({ prefix: line.trim(), line: lineNo });
        break;
      }
    }
  }
  return { policy, problems };
}

/** Reading of a workspace's policy: the policy plus its warnings (errors have already been thrown). */
export interface LoadedCommandPolicy {
  policy: CommandPolicy;
  warnings: PolicyProblem[];
}

/**
 * Reads and parses `.ralph/command-policy` of `folder`. Returns `undefined` when the file does not exist.
 * Throws {@link FileProblemError} (file:line:column) for the first `error` problem, or when the file cannot be
 * read; warnings are returned for the caller to show.
 */
export async function loadCommandPolicy(folder: string): Promise<LoadedCommandPolicy | undefined> {
  const file = commandPolicyPath(folder);
  let text: string | undefined;
  try {
    text = await readTextIfExists(file);
  } catch (err) {
    throw new FileProblemError({ file, line: 0, column: 0, message: `cannot read: ${(err as Error).message}` });
  }
  if (text === undefined) return undefined;
  const { policy, problems } = parseCommandPolicy(text, file);
  const error = problems.find((p) => p.severity === 'error');
  if (error)
    throw new FileProblemError({ file: error.file, line: error.line, column: error.column, message: error.message });
  return { policy, warnings: problems };
}

/** POSIX bracket classes → JavaScript class bodies, for patterns written for `grep -E` / `sed -E`. */
const POSIX_CLASSES: Record<string, string> = {
  alpha: 'A-Za-z',
  digit: '0-9',
  alnum: 'A-Za-z0-9',
  upper: 'A-Z',
  lower: 'a-z',
  space: ' \\t\\n\\r\\f\\v',
  blank: ' \\t',
  punct: '!-\\/:-@\\[-`{-~',
  xdigit: '0-9A-Fa-f',
  word: 'A-Za-z0-9_',
  cntrl: '\\x00-\\x1f\\x7f',
  print: ' -~',
  graph: '!-~',
};

/** Compiles a POSIX ERE for JavaScript; returns the error message instead of throwing. */
export function compileEre(pattern: string): RegExp | string {
  let unknown: string | undefined;
  const js = pattern.replace(/\[:([a-z]+):\]/g, (_m, name: string) => {
    const body = POSIX_CLASSES[name];
    if (body === undefined) unknown ??= name;
    return body ?? '';
  });
  if (unknown !== undefined) return `unknown character class [:${unknown}:]`;
  try {
    return new RegExp(js);
  } catch (err) {
    return (err as Error).message;
  }
}

/**
 * Applies one `[rewrite]` rule as `sed -E "s|pattern|replacement|"` would: the first match is replaced; `\1`…`\9`
 * insert groups (empty when unmatched), `&` the whole match, `\&` / `\\` / `\n` are a literal `&`, `\`, newline.
 * Returns `undefined` when the pattern does not match.
 */
export function applyRewriteRule(
  rule: Pick<RewriteRule, 'regex' | 'replacement'>,
  command: string,
): string | undefined {
  const m = rule.regex.exec(command);
  if (!m) return undefined;
  let out = '';
  const rep = rule.replacement;
  for (let i = 0; i < rep.length; i++) {
    const c = rep[i]!;
    if (c === '\\' && i + 1 < rep.length) {
      const n = rep[++i]!;
      if (n >= '0' && n <= '9') out += m[Number(n)] ?? '';
      else if (n === 'n') out += '\n';
      else out += n;
    } else if (c === '&') {
      out += m[0];
    } else {
      out += c;
    }
  }
  return command.slice(0, m.index) + out + command.slice(m.index + m[0].length);
}

/**
 * A command with runs of whitespace collapsed to one space and the ends trimmed: the form written to
 * `<label>-latest.cmd` and compared with a pinned `[gates]` command (§3.6.1, §3.10).
 */
export function normalizeCommand(command: string): string {
  return command.replace(/\s+/g, ' ').trim();
}
