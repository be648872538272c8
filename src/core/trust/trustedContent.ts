import { createHash } from 'node:crypto';
import type { CommandPolicy } from '../gates/commandPolicy';
import { REDACTED, redactArg } from './redact';

/**
 * Workspace configuration that names programs to run, and its canonical form (the rule follows direnv's `direnv allow` and mise's `mise trust`: repository-local configuration that
 * can execute code is used only once the user trusts that exact content).
 *
 * The content is a list of entries, one per trusted value found in the workspace's files, in the order of
 * {@link TRUSTED_FIELDS}. An absent key or an empty section gives no entry, so a workspace whose files name no
 * program has empty content: there is nothing to trust (the common case stays friction-free).
 */

/**
 * Where a trusted value lives: a field of `.ralph/config.json` or `.ralph/command-policy`, or a `workspace file` a
 * trusted command runs (a script, package.json's scripts, a makefile: gateFiles.ts), whose key is its path.
 */
export type TrustedFile = '.ralph/config.json' | '.ralph/command-policy' | 'workspace file';

/** One field of the workspace's files that names programs (or their arguments) to run. */
export interface TrustedField {
  file: Exclude<TrustedFile, 'workspace file'>;
  /** A top-level key of `.ralph/config.json`, or a section of `.ralph/command-policy` (`gates` for `[gates]`). */
  key: string;
  /** Why it is trusted: what it runs, or which guarantee a change of it weakens. */
  runs: string;
}

/**
 * The trusted fields: adding a field that names programs, or one whose change weakens a safety guarantee, is one
 * line here. Fields not listed (model, caps, timing, readLimits …) change freely: they change how long or how much,
 * never whether a claim is checked or a process is contained. `notify` is listed by key before its schema exists (another change adds it): whatever the file holds
 * under that key is trusted content.
 */
export const TRUSTED_FIELDS: readonly TrustedField[] = [
  {
    file: '.ralph/config.json',
    key: 'claudePath',
    runs: 'the Claude Code CLI the loop starts (and `ralph doctor` asks for --version)',
  },
  {
    file: '.ralph/config.json',
    key: 'cursorAgentPath',
    runs: 'the cursor-agent CLI the loop starts (and `ralph doctor` asks for --version)',
  },
  {
    file: '.ralph/config.json',
    key: 'codexPath',
    runs: 'the Codex CLI the loop starts (and `ralph doctor` asks for --version)',
  },
  {
    file: '.ralph/config.json',
    key: 'geminiPath',
    runs: 'the Gemini CLI the loop starts (and `ralph doctor` asks for --version)',
  },
  {
    file: '.ralph/config.json',
    key: 'opencodePath',
    runs: 'the opencode CLI the loop starts (and `ralph doctor` asks for --version)',
  },
  {
    file: '.ralph/config.json',
    key: 'qwenPath',
    runs: 'the Qwen Code CLI the loop starts (and `ralph doctor` asks for --version)',
  },
  {
    file: '.ralph/config.json',
    key: 'copilotPath',
    runs: 'the Copilot CLI the loop starts (and `ralph doctor` asks for --version)',
  },
  {
    file: '.ralph/config.json',
    key: 'guard',
    runs: 'whether a run starts with command-policy rows its agent cannot enforce ("best-effort" lets it)',
  },
  { file: '.ralph/config.json', key: 'agentArgs', runs: 'extra arguments of every agent invocation' },
  { file: '.ralph/config.json', key: 'gates', runs: 'the gate commands (bash -c) that decide whether an item is done' },
  { file: '.ralph/config.json', key: 'notify', runs: 'the notification command' },
  {
    file: '.ralph/config.json',
    key: 'containment',
    runs: 'whether agents and gates run in their own PID namespace ("marker" lets a `setsid env -i` process outlive its iteration)',
  },
  {
    file: '.ralph/command-policy',
    key: 'gates',
    runs: 'the gate commands (bash -c) that decide whether an item is done',
  },
  {
    file: '.ralph/command-policy',
    key: 'rewrite',
    runs: "the replacement commands the guard substitutes for the agent's",
  },
  { file: '.ralph/command-policy', key: 'wrap', runs: "the agent commands the gate runner runs under a gate's label" },
];

/** One trusted value found in the workspace: `value` is plain JSON (strings for policy rows). */
export interface TrustedEntry {
  file: TrustedFile;
  key: string;
  value: unknown;
}

/** What the workspace's files hold; either may be absent (no such file). */
export interface TrustInputs {
  /** `.ralph/config.json` as parsed JSON (the file's own values, before defaults, settings or flags). */
  config?: unknown;
  /** `.ralph/command-policy` as parsed (rows with errors are not in it: the run refuses such a file anyway). */
  policy?: Pick<CommandPolicy, 'gates' | 'rewrite' | 'wrap'> | undefined;
}

/**
 * The trusted content of a workspace: one entry per {@link TRUSTED_FIELDS} row that has a value. Pure.
 * Policy rows are kept as written (`basic | npm test`, `<ERE> | <replacement>`, `<prefix> | <label>`), in file
 * order; a `[rewrite]` row's reason is not part of it (it names no program).
 */
export function trustedContent(inputs: TrustInputs): TrustedEntry[] {
  const out: TrustedEntry[] = [];
  const config =
    inputs.config !== null && typeof inputs.config === 'object' && !Array.isArray(inputs.config)
      ? (inputs.config as Record<string, unknown>)
      : {};
  for (const f of TRUSTED_FIELDS) {
    if (f.file === '.ralph/config.json') {
      const v = config[f.key];
      if (v !== undefined) out.push({ file: f.file, key: f.key, value: v });
      continue;
    }
    const rows = policyRows(inputs.policy, f.key);
    if (rows.length) out.push({ file: f.file, key: f.key, value: rows });
  }
  return out;
}

function policyRows(policy: TrustInputs['policy'], section: string): string[] {
  if (!policy) return [];
  switch (section) {
    case 'gates':
      return Object.values(policy.gates)
        .filter((r) => r !== undefined)
        .sort((a, b) => a.line - b.line)
        .map((r) => `${r.tier} | ${r.command}`);
    case 'rewrite':
      return policy.rewrite.map((r) => `${r.pattern} | ${r.replacement}`);
    case 'wrap':
      return policy.wrap.map((r) => `${r.prefix} | ${r.label}`);
    default:
      return [];
  }
}

/** JSON with object keys sorted at every depth: equal values give equal text whatever the file's key order. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    return `{${Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** `sha256:<hex>` of the canonical content; the empty content has a hash too but never needs one recorded. */
export function contentHash(content: readonly TrustedEntry[]): string {
  return `sha256:${createHash('sha256')
    .update(canonicalJson(content.map((e) => [e.file, e.key, e.value])))
    .digest('hex')}`;
}

/**
 * The content as lines a person reads and diffs, one per value: `.ralph/config.json gates.basic = "npm test"`,
 * `.ralph/command-policy [gates] basic | npm test`, `workspace file scripts/check.sh sha256:…`. Objects are flattened by key (sorted), arrays of the config by
 * index (`agentArgs[1] = "…"`), policy sections one line per row. `agentArgs` values are never shown (fingerprintArg).
 */
export function contentLines(content: readonly TrustedEntry[]): string[] {
  const lines: string[] = [];
  for (const e of content) {
    if (e.file === 'workspace file') {
      lines.push(`${e.file} ${e.key} ${String(e.value)}`);
      continue;
    }
    if (e.file === '.ralph/command-policy') {
      for (const row of e.value as string[]) lines.push(`${e.file} [${e.key}] ${row}`);
      continue;
    }
    const show = e.key === 'agentArgs' ? fingerprintArg : (v: unknown) => JSON.stringify(v) ?? 'null';
    flatten(e.key, e.value, show, (k, v) => lines.push(`${e.file} ${k} = ${v}`));
  }
  return lines;
}

function flatten(
  prefix: string,
  value: unknown,
  show: (v: unknown) => string,
  emit: (key: string, text: string) => void,
): void {
  if (Array.isArray(value)) {
    if (!value.length) emit(prefix, '[]');
    value.forEach((v, i) => flatten(`${prefix}[${i}]`, v, show, emit));
  } else if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    if (!keys.length) emit(prefix, '{}');
    for (const k of keys) flatten(`${prefix}.${k}`, (value as Record<string, unknown>)[k], show, emit);
  } else {
    emit(prefix, show(value));
  }
}

/**
 * An `agentArgs` value as shown: option names as written, values (possibly secrets) redacted with the first 8 hex
 * digits of their sha256, so a change still shows in a diff without the value being printed or stored.
 */
function fingerprintArg(v: unknown): string {
  if (typeof v !== 'string') return JSON.stringify(v) ?? 'null';
  const shown = redactArg(v);
  if (!shown.includes(REDACTED)) return JSON.stringify(shown);
  return JSON.stringify(
    shown.replace(REDACTED, `«redacted sha256:${createHash('sha256').update(v).digest('hex').slice(0, 8)}»`),
  );
}

/**
 * A readable diff of two contents' lines: `- ` lines the trusted content had and the current one lacks, `+ ` lines
 * that are new, in the order they appear (removed first, then added). Empty when the lines are equal as multisets.
 */
export function diffLines(before: readonly string[], after: readonly string[]): string[] {
  const remaining = new Map<string, number>();
  for (const l of after) remaining.set(l, (remaining.get(l) ?? 0) + 1);
  const removed: string[] = [];
  for (const l of before) {
    const n = remaining.get(l) ?? 0;
    if (n > 0) remaining.set(l, n - 1);
    else removed.push(`- ${l}`);
  }
  const left = new Map<string, number>();
  for (const l of before) left.set(l, (left.get(l) ?? 0) + 1);
  const added: string[] = [];
  for (const l of after) {
    const n = left.get(l) ?? 0;
    if (n > 0) left.set(l, n - 1);
    else added.push(`+ ${l}`);
  }
  return [...removed, ...added];
}
