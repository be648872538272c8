import * as path from 'node:path';
import {
  parseShell,
  shellQuote,
  ShellSyntaxError,
  type ShellCall,
  type ShellRedirect,
  type ShellWord,
} from './shellSyntax';

/**
 * From parsed shell to the programs it would run: every simple command, then what it hands its
 * arguments to. Wrappers (`env`, `command`, `exec`, `nohup`, `timeout`, `nice`, `sudo`, `xargs`, `time`, `find
 * -exec`, …) are unwrapped; shells given a script (`bash -c '…'`, `eval`, `trap`, a here-document or here-string
 * fed to a shell, `watch`, `flock -c`, `su -c`, `ralph gate … -- …`) have that script parsed and analysed in
 * turn. What cannot be known before running (a computed command name or script, a shell reading commands from a
 * pipe) is a {@link Problem}: the guard denies it (fail closed).
 */

/** A program the command would run, with its arguments. */
export interface Invocation {
  /** Resolved name: the basename of the first word, quotes and escapes removed (`/usr/bin/git`, `\git` → `git`). */
  name: string;
  /** The words from the program's name on. */
  argv: ShellWord[];
  /** The simple command it came from (its redirections and standard input). */
  call: ShellCall;
  /** Wrappers and script hosts it was found in, outermost first (`bash -c`, `timeout`, …). */
  via: string[];
  /** True when the words are not in the original text (inside a `bash -c` string, `eval`, a here-document …). */
  nested: boolean;
  /** The simple commands it is nested in (`bash -c '…' | head` for the calls of the script), outermost first. */
  hosts: ShellCall[];
  /** When the invocation is a gate-runner call: its label and the gated command text. */
  gate?: { label: string; command: string };
}

/** Something the guard cannot see through; the command is denied with this reason. */
export interface Problem {
  reason: string;
}

/** All programs of a command, the redirections anywhere in it, and the directories it may `cd` into. */
export interface Analysis {
  invocations: Invocation[];
  redirects: { redirect: ShellRedirect; nested: boolean }[];
  /** Literal `cd`/`pushd` targets (as written) and whether a computed one occurs. */
  cdTargets: string[];
  cdComputed: boolean;
  problems: Problem[];
  /**
   * What could run any program the guard cannot name (an interactive shell reading its startup files, an awk program
   * from a pipe, prompt expansion of a variable): denied when the policy has `[deny]` rows, like spawning inline code.
   */
  denyOnly: Problem[];
  /** Code given inline to interpreters (`python -c CODE`, `node -e CODE`, a here-document fed to them). */
  inlineCode: { name: string; code: string }[];
  /** `alias NAME=VALUE` definitions seen so far (a later `NAME …` is expanded, as with `shopt -s expand_aliases`). */
  aliases: Map<string, string>;
  /** Calls being expanded (internal: becomes each invocation's `hosts`). */
  hostStack: ShellCall[];
}

/** How a gate-runner call looks, so a wrapped command is recognised when it comes back (absolute cli path). */
export interface GateRunnerShape {
  /** Absolute path of `dist/cli.js` (its basename `cli.js` with `gate` after it also counts). */
  cliPath: string;
  /**
   * Reads a script file the command runs (`bash x.sh`, `source x.sh`, `./x.sh`), resolved against the cwd:
   * its text; `null` when it is not a shell script or cannot be read (binary, too large); `undefined` when it
   * does not exist. Without a reader, script files are not looked into.
   */
  readScript?: (file: string) => string | null | undefined;
  /** The real file name of a program (PATH lookup, symlinks resolved): `g` → `git`; undefined when unknown. */
  resolveProgram?: (nameOrPath: string) => string | undefined;
}

const SHELLS = new Set([
  'bash',
  'sh',
  'dash',
  'zsh',
  'ksh',
  'mksh',
  'ash',
  'rbash',
  'yash',
  'posh',
  'fish',
  'tcsh',
  'csh',
]);
const INTERPRETERS = new Set([
  'python',
  'python2',
  'python3',
  'node',
  'nodejs',
  'perl',
  'ruby',
  'php',
  'deno',
  'bun',
  'lua',
  'Rscript',
  'osascript',
]);
/** Programs that download: piping them into a shell or interpreter is denied (a hard deny: no policy row allows it). */
export const DOWNLOADERS = new Set([
  'curl',
  'wget',
  'fetch',
  'aria2c',
  'http',
  'https',
  'xh',
  'lynx',
  'links',
  'nc',
  'ncat',
  'socat',
]);
const MAX_DEPTH = 8;

/** The value of an exact word, else `null`. */
const val = (w: ShellWord | undefined): string | null => (w ? w.value : null);

/** Analyses `text` (throws {@link ShellSyntaxError} when it does not parse). */
export function analyseCommand(text: string, shape: GateRunnerShape): Analysis {
  const out: Analysis = {
    invocations: [],
    redirects: [],
    cdTargets: [],
    cdComputed: false,
    problems: [],
    denyOnly: [],
    inlineCode: [],
    aliases: new Map(),
    hostStack: [],
  };
  analyseScript(text, false, [], 0, out, shape);
  return out;
}

function analyseScript(
  text: string,
  nested: boolean,
  via: string[],
  depth: number,
  out: Analysis,
  shape: GateRunnerShape,
): void {
  if (depth > MAX_DEPTH) {
    out.problems.push({ reason: `commands nested more than ${MAX_DEPTH} levels deep` });
    return;
  }
  let parsed;
  try {
    parsed = parseShell(text);
  } catch (err) {
    if (err instanceof ShellSyntaxError) {
      out.problems.push({
        reason: `cannot parse${nested ? ` the script given to ${via.at(-1) ?? 'a shell'}` : ''}: ${err.message}`,
      });
      return;
    }
    throw err;
  }
  for (const r of parsed.redirects) out.redirects.push({ redirect: r, nested });
  // Prompt expansion runs the command substitutions in a variable's value, whoever set it.
  if (/\$\{[^}]*@P\}/.test(text))
    out.denyOnly.push({
      reason: 'prompt expansion (${…@P}) runs the command substitutions in a variable: write the command out',
    });
  for (const call of parsed.calls) {
    // A value kept in a variable is code later: arithmetic and array subscripts (`$((x))`, `[[ $x -eq 1 ]]`,
    // `declare -i`), prompt expansion (`${x@P}`, PS4 under `set -x`) run the `$(…)` in it.
    for (const v of call.assignValues)
      if (v.value !== null) evaluatedText(v.value, 'a value evaluated later', out, via, depth, shape);
    if (call.words.length === 0) continue;
    expand(call.words, call, nested, via, depth, out, shape);
  }
}

/** Shell text for words the guard re-parses (`eval a b` → `a b`; exact words only). */
function joinExact(words: ShellWord[], what: string, out: Analysis): string | null {
  const vals: string[] = [];
  for (const w of words) {
    if (w.value === null) {
      out.problems.push({
        reason: `${what} is computed at run time (${w.literal || 'an expansion'}…): write it out literally`,
      });
      return null;
    }
    vals.push(w.value);
  }
  return vals.join(' ');
}

/**
 * Text that bash may evaluate later (a variable's value, a variable name with a subscript, an arithmetic
 * expression): every command substitution in it (`$(…)`, backticks, `<(…)`, `>(…)`) is analysed as a script, as if
 * it stood in the command. Quotes inside are not special (fail closed); an unbalanced one is a problem.
 */
function evaluatedText(
  text: string,
  what: string,
  out: Analysis,
  via: string[],
  depth: number,
  shape: GateRunnerShape,
): void {
  if (!/\$\(|`|[<>]\(/.test(text)) return;
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '\\') {
      i += 2;
      continue;
    }
    if (c === '`') {
      let j = i + 1;
      while (j < text.length && text[j] !== '`') j += text[j] === '\\' ? 2 : 1;
      if (j >= text.length) {
        out.problems.push({ reason: `an unbalanced backtick in ${what}` });
        return;
      }
      analyseScript(text.slice(i + 1, j), true, [...via, what], depth + 1, out, shape);
      i = j + 1;
      continue;
    }
    if ((c === '$' || c === '<' || c === '>') && text[i + 1] === '(') {
      let d = 0;
      let j = i + 1;
      for (; j < text.length; j++) {
        if (text[j] === '\\') j++;
        else if (text[j] === '(') d++;
        else if (text[j] === ')' && --d === 0) break;
      }
      if (j >= text.length) {
        out.problems.push({ reason: `an unbalanced $( in ${what}` });
        return;
      }
      // `$((…))` is arithmetic: its inner text is looked into the same way.
      const inner = text.slice(i + 2, j);
      if (text[i + 2] === '(' && inner.endsWith(')')) evaluatedText(inner.slice(1, -1), what, out, via, depth, shape);
      else analyseScript(inner, true, [...via, what], depth + 1, out, shape);
      i = j + 1;
      continue;
    }
    i++;
  }
}

/**
 * The script of a `-c SCRIPT` option anywhere after the program (`-c`, a short cluster ending in `c` such as `-qc`,
 * `--command SCRIPT`, `--command=SCRIPT`); undefined when there is none.
 */
function commandOption(argv: ShellWord[]): ShellWord | undefined {
  for (let k = 1; k < argv.length; k++) {
    const v = argv[k]!.value;
    if (v === null) continue;
    if (v === '--') return undefined;
    if (v.startsWith('--command=')) return { ...argv[k]!, value: v.slice('--command='.length) };
    if (v === '--command' || /^-[A-Za-z]*c$/.test(v)) return argv[k + 1] ?? { ...argv[k]!, value: '' };
  }
  return undefined;
}

/** Paths through which a program reads its own standard input as a file. */
const STDIN_FILES = /^(-|\/dev\/stdin|\/dev\/fd\/0|\/proc\/self\/fd\/0|\/dev\/tty)$/;

/** Takes option words off the front of `words`: `withArg` options consume the next word (or `=value`/attached). */
function skipOptions(
  words: ShellWord[],
  i: number,
  withArg: Set<string>,
  opts: { stopAtFirstNonOption?: boolean; attachedShort?: boolean } = {},
): number {
  while (i < words.length) {
    const v = words[i]!.value;
    if (v === null) return i;
    if (v === '--') return i + 1;
    if (!v.startsWith('-') || v === '-') return i;
    if (v.startsWith('--')) {
      const name = v.includes('=') ? v.slice(0, v.indexOf('=')) : v;
      i += withArg.has(name) && !v.includes('=') ? 2 : 1;
      continue;
    }
    // Short cluster: -abc; an option with an argument takes the rest of the cluster or the next word.
    let consumed = 1;
    for (let k = 1; k < v.length; k++) {
      if (withArg.has(`-${v[k]}`)) {
        if (k === v.length - 1) consumed = 2;
        break;
      }
    }
    i += consumed;
    void opts;
  }
  return i;
}

/**
 * The replace string of xargs' options (the words before the command), or undefined without one: `-I R`, `-IR`,
 * `-i[R]` and `--replace[=R]` (both default to `{}`), also inside a short-option cluster (`-0I R`). An option whose
 * value is not known (an expansion) gives the empty string, which every argument contains.
 */
function xargsReplaceString(options: ShellWord[]): string | undefined {
  let r: string | undefined;
  const withArg = new Set(['L', 'n', 'P', 's', 'd', 'E', 'a']);
  for (let k = 0; k < options.length; k++) {
    const v = options[k]!.value;
    if (v === null) continue;
    if (v === '--replace') r = '{}';
    else if (v.startsWith('--replace=')) r = v.slice('--replace='.length);
    else if (v.startsWith('-') && !v.startsWith('--')) {
      for (let c = 1; c < v.length; c++) {
        const ch = v[c]!;
        if (ch === 'I') {
          r = c < v.length - 1 ? v.slice(c + 1) : (options[k + 1]?.value ?? '');
          if (c === v.length - 1) k++;
          break;
        }
        if (ch === 'i') {
          r = c < v.length - 1 ? v.slice(c + 1) : '{}';
          break;
        }
        if (withArg.has(ch)) {
          if (c === v.length - 1) k++;
          break;
        }
      }
    }
  }
  return r;
}

function expand(
  argv: ShellWord[],
  call: ShellCall,
  nested: boolean,
  via: string[],
  depth: number,
  out: Analysis,
  shape: GateRunnerShape,
): void {
  out.hostStack.push(call);
  try {
    expandIn(argv, call, nested, via, depth, out, shape);
  } finally {
    out.hostStack.pop();
  }
}

function expandIn(
  argv: ShellWord[],
  call: ShellCall,
  nested: boolean,
  via: string[],
  depth: number,
  out: Analysis,
  shape: GateRunnerShape,
): void {
  if (depth > MAX_DEPTH) {
    out.problems.push({ reason: `commands nested more than ${MAX_DEPTH} levels deep` });
    return;
  }
  if (argv.length === 0) return;
  const first = argv[0]!;
  if (first.value === null) {
    out.problems.push({
      reason: `the command name is computed at run time (${first.literal || 'an expansion'}…): write the command out literally`,
    });
    return;
  }
  const name = path.posix.basename(first.value);
  if (name === '') {
    out.problems.push({ reason: 'an empty command name' });
    return;
  }
  const hosts = [...new Set(out.hostStack)];
  const inv: Invocation = { name, argv, call, via, nested, hosts };
  out.invocations.push(inv);
  // Variables through which programs run a command (GIT_PAGER='git push' git log): their value is a command.
  envCommands(
    call.assignments.map((x) => ({ name: x.name, value: x.value })),
    out,
    via,
    depth,
    shape,
  );
  // An alias defined earlier in the command (bash expands it with `shopt -s expand_aliases`): its text is run.
  const aliasText = first.value === name ? out.aliases.get(name) : undefined;
  if (aliasText !== undefined && !via.some((v) => v === `alias ${name}`)) {
    const restText = joinExact(argv.slice(1), `the arguments of alias ${name}`, out);
    if (restText !== null)
      analyseScript(
        `${aliasText} ${argv
          .slice(1)
          .map((w) => shellQuote(w.value ?? ''))
          .join(' ')}`,
        true,
        [...via, `alias ${name}`],
        depth + 1,
        out,
        shape,
      );
  }
  // A program known under another name (`~/bin/g` → git, a symlink): checked under its real name as well.
  const real = shape.resolveProgram?.(first.value);
  if (real && real !== name && depth < MAX_DEPTH) {
    expand(
      [{ ...first, value: real, literal: real }, ...argv.slice(1)],
      call,
      true,
      [...via, `${name} (= ${real})`],
      depth + 1,
      out,
      shape,
    );
  }
  // git's dashed helpers (`/usr/lib/git-core/git-push`) are its sub-commands: checked as `git push`.
  const dashed = /^git-([a-z][a-z0-9-]*)$/.exec(name);
  if (dashed && depth < MAX_DEPTH) {
    expand(
      [
        { ...first, value: 'git', literal: 'git' },
        { ...first, value: dashed[1]!, literal: dashed[1]! },
        ...argv.slice(1),
      ],
      call,
      true,
      [...via, name],
      depth + 1,
      out,
      shape,
    );
  }
  const rest = (i: number, how: string) => expand(argv.slice(i), call, nested, [...via, how], depth + 1, out, shape);
  const script = (words: ShellWord[], how: string) => {
    const text = joinExact(words, `the script given to ${how}`, out);
    if (text !== null) analyseScript(text, true, [...via, how], depth + 1, out, shape);
  };
  const a = (i: number) => val(argv[i]);

  switch (name) {
    case 'cd':
    case 'pushd': {
      const target = argv.slice(1).find((w) => w.value === null || !w.value.startsWith('-'));
      if (!target) out.cdTargets.push('~');
      else if (target.value === null) out.cdComputed = true;
      else out.cdTargets.push(target.value);
      return;
    }
    case 'env': {
      let i = 1;
      const splitStrings: ShellWord[] = [];
      while (i < argv.length) {
        const v = a(i);
        if (v === null) break;
        if (v === '--') {
          i++;
          break;
        }
        if (v === '-S' || v === '--split-string') {
          if (argv[i + 1]) splitStrings.push(argv[i + 1]!);
          i += 2;
          continue;
        }
        if (v.startsWith('--split-string=') || (v.startsWith('-S') && v.length > 2)) {
          const w = argv[i]!;
          const s = v.startsWith('-S') ? v.slice(2) : v.slice(v.indexOf('=') + 1);
          splitStrings.push({ ...w, value: s });
          i++;
          continue;
        }
        if (['-u', '-C', '--unset', '--chdir'].includes(v)) {
          i += 2;
          continue;
        }
        if (v.startsWith('-')) {
          i++;
          continue;
        }
        break;
      }
      const envStart = i;
      while (i < argv.length && a(i) !== null && /^[A-Za-z_][A-Za-z0-9_]*=/.test(a(i)!)) i++;
      envCommands(
        argv.slice(envStart, i).map((w) => ({
          name: w.value!.slice(0, w.value!.indexOf('=')),
          value: { ...w, value: w.value!.slice(w.value!.indexOf('=') + 1) },
        })),
        out,
        via,
        depth,
        shape,
      );
      if (splitStrings.length) {
        script(
          [
            ...splitStrings,
            ...argv.slice(i).map((w) => ({ ...w, value: w.value === null ? null : shellQuote(w.value) })),
          ],
          'env -S',
        );
        return;
      }
      if (i < argv.length) rest(i, 'env');
      return;
    }
    case 'command': {
      let i = 1;
      let runs = true;
      while (i < argv.length && a(i)?.startsWith('-')) {
        if (a(i) === '--') {
          i++;
          break;
        }
        if (/[vV]/.test(a(i)!)) runs = false;
        i++;
      }
      if (runs) rest(i, 'command');
      return;
    }
    case 'builtin':
      rest(1, 'builtin');
      return;
    case 'exec':
      rest(skipOptions(argv, 1, new Set(['-a'])), 'exec');
      return;
    case 'nohup':
    case 'setsid':
    case 'unbuffer':
    case 'chronic':
    case 'catchsegv':
    case 'doas':
    case 'caffeinate':
    case 'tsp':
      rest(skipOptions(argv, 1, new Set(['-u', '-C'])), name);
      return;
    case 'pkexec':
      rest(skipOptions(argv, 1, new Set(['--user', '-u'])), 'pkexec');
      return;
    case 'sg': {
      // sg [-] [-c] group [-c] 'command' (the command is a shell string); without one it starts a shell on stdin.
      let i = 1;
      while (a(i) === '-' || a(i) === '-c') i++;
      i++; // the group
      if (a(i) === '-c') i++;
      if (i < argv.length) script(argv.slice(i), 'sg');
      else shellFromStdin(inv, out, via, depth, shape);
      return;
    }
    case 'stdbuf':
      rest(skipOptions(argv, 1, new Set(['-i', '-o', '-e', '--input', '--output', '--error'])), 'stdbuf');
      return;
    case 'nice': {
      let i = 1;
      while (i < argv.length && a(i)?.startsWith('-')) {
        const v = a(i)!;
        if (v === '--') {
          i++;
          break;
        }
        i += v === '-n' || v === '--adjustment' ? 2 : 1;
      }
      rest(i, 'nice');
      return;
    }
    case 'ionice':
      rest(skipOptions(argv, 1, new Set(['-c', '-n', '-p', '-P', '-u', '--class', '--classdata'])), 'ionice');
      return;
    case 'taskset': {
      let i = skipOptions(argv, 1, new Set());
      i++; // the mask / cpu list
      rest(i, 'taskset');
      return;
    }
    case 'timeout': {
      let i = skipOptions(argv, 1, new Set(['-s', '-k', '--signal', '--kill-after']));
      i++; // the duration
      rest(i, 'timeout');
      return;
    }
    case 'sudo': {
      const withArg = new Set([
        '-u',
        '-g',
        '-p',
        '-C',
        '-D',
        '-r',
        '-t',
        '-U',
        '-T',
        '-h',
        '--user',
        '--group',
        '--prompt',
        '--close-from',
        '--chdir',
        '--role',
        '--type',
        '--other-user',
        '--command-timeout',
        '--host',
      ]);
      const i = skipOptions(argv, 1, withArg);
      if (i < argv.length) rest(i, 'sudo');
      else if (argv.slice(1).some((w) => w.value !== null && /^-[a-zA-Z]*[si]/.test(w.value)))
        shellFromStdin(inv, out, via, depth, shape);
      return;
    }
    case 'xargs': {
      const withArg = new Set([
        '-I',
        '-L',
        '-n',
        '-P',
        '-s',
        '-d',
        '-E',
        '-a',
        '--arg-file',
        '--delimiter',
        '--max-args',
        '--max-procs',
        '--replace',
        '--max-lines',
        '--max-chars',
        '--eof',
        '--process-slot-var',
      ]);
      const i = skipOptions(argv, 1, withArg);
      const supplied: ShellWord = {
        value: null,
        pattern: /^[\s\S]*$/,
        splittable: true,
        literal: '',
        expansion: 'dynamic',
        start: call.end,
        end: call.end,
      };
      // With -I R / -i / --replace, the input goes where R is (every argument holding R is computed: `xargs -I{} sh -c
      // '{}'` runs its input) and is not appended; without, it is appended.
      const r = xargsReplaceString(argv.slice(1, i));
      const args =
        r === undefined
          ? [...argv.slice(i), supplied]
          : argv
              .slice(i)
              .map((w) => (w.value === null || w.value.includes(r) ? { ...supplied, start: w.start, end: w.end } : w));
      if (i < argv.length) expand(args, call, nested, [...via, 'xargs'], depth + 1, out, shape);
      return;
    }
    case 'time': {
      const i = skipOptions(argv, 1, new Set(['-f', '-o', '--format', '--output']));
      rest(i, 'time');
      return;
    }
    case 'watch': {
      const i = skipOptions(argv, 1, new Set(['-n', '-q', '--interval', '--equexit']));
      if (argv.slice(1, i).some((w) => w.value === '-x' || w.value === '--exec')) rest(i, 'watch -x');
      else script(argv.slice(i), 'watch');
      return;
    }
    case 'flock': {
      const c = commandOption(argv);
      if (c) {
        script([c], 'flock -c');
        return;
      }
      let i = skipOptions(argv, 1, new Set(['-w', '-E', '--timeout', '--conflict-exit-code']));
      i++; // the lock file
      rest(i, 'flock');
      return;
    }
    case 'su':
    case 'runuser':
    case 'script': {
      const c = commandOption(argv);
      if (c) script([c], `${name} -c`);
      else if (
        name === 'runuser' &&
        argv.slice(1).some((w) => w.value === '-u' || w.value === '--user' || w.value?.startsWith('--user='))
      ) {
        const i = skipOptions(
          argv,
          1,
          new Set([
            '-u',
            '--user',
            '-g',
            '--group',
            '-G',
            '--supp-group',
            '-s',
            '--shell',
            '-w',
            '--whitelist-environment',
          ]),
        );
        if (i < argv.length) rest(i, 'runuser -u');
      } else if (name !== 'script' && argv.slice(1).every((w) => w.value !== null))
        shellFromStdin(inv, out, via, depth, shape);
      return;
    }
    case 'parallel': {
      const sep = argv.findIndex((w) => w.value === ':::' || w.value === '::::');
      const i = skipOptions(argv, 1, new Set(['-j', '-S', '--jobs', '--sshlogin']));
      const cmd = argv.slice(i, sep < 0 ? undefined : sep);
      if (cmd.length) script(cmd, 'parallel');
      else shellFromStdin(inv, out, via, depth, shape);
      return;
    }
    case 'find':
      expandFind(argv, call, nested, via, depth, out, shape);
      return;
    case 'eval':
      script(argv.slice(1), 'eval');
      return;
    case 'let':
    case 'unset':
    case 'read':
    case 'getopts':
    case 'wait':
    case 'printf':
    case 'mapfile':
    case 'readarray':
    case 'compgen':
    case 'complete':
    case 'test':
    case '[': {
      // Names with a subscript (`printf -v 'a[$(…)]'`, `read 'a[$(…)]'`, `test -v`) and `let` expressions are
      // evaluated as arithmetic: their command substitutions run.
      for (let k = 1; k < argv.length; k++) {
        const v = argv[k]!.value;
        if (v === null) continue;
        if (name !== 'printf' || argv[k - 1]?.value === '-v')
          evaluatedText(v, `the arguments of ${name}`, out, via, depth, shape);
        // mapfile -C CALLBACK, compgen/complete -C COMMAND: run as commands.
        if ((name === 'mapfile' || name === 'readarray' || name === 'compgen' || name === 'complete') && v === '-C')
          script(argv.slice(k + 1, k + 2), `${name} -C`);
        else if ((name === 'mapfile' || name === 'readarray') && /^-C./.test(v))
          script([{ ...argv[k]!, value: v.slice(2) }], `${name} -C`);
      }
      return;
    }
    case 'bind':
      if (argv.some((w) => w.value === null || /^-[a-zA-Z]*x/.test(w.value)))
        out.denyOnly.push({ reason: 'bind -x runs a command on a key: run the command itself' });
      return;
    case 'trap': {
      const i = skipOptions(argv, 1, new Set());
      if (i < argv.length && !argv.slice(1, i).some((w) => w.value === '-p' || w.value === '-l'))
        script([argv[i]!], 'trap');
      return;
    }
    case 'alias':
      for (const w of argv.slice(1)) {
        if (w.value === null) {
          out.problems.push({ reason: 'an alias with a computed value' });
          continue;
        }
        const eq = w.value.indexOf('=');
        if (eq > 0) {
          out.aliases.set(w.value.slice(0, eq), w.value.slice(eq + 1));
          analyseScript(w.value.slice(eq + 1), true, [...via, 'alias'], depth + 1, out, shape);
        }
      }
      return;
    case 'export':
    case 'declare':
    case 'typeset':
    case 'readonly':
    case 'local':
      envCommands(
        argv
          .slice(1)
          .filter((w) => w.value !== null && /^[A-Za-z_][A-Za-z0-9_]*=/.test(w.value))
          .map((w) => ({
            name: w.value!.slice(0, w.value!.indexOf('=')),
            value: { ...w, value: w.value!.slice(w.value!.indexOf('=') + 1) },
          })),
        out,
        via,
        depth,
        shape,
      );
      return;
    case 'strace':
    case 'ltrace':
      rest(
        skipOptions(
          argv,
          1,
          new Set([
            '-e',
            '-o',
            '-p',
            '-u',
            '-s',
            '-E',
            '-a',
            '-b',
            '-I',
            '-O',
            '-P',
            '-S',
            '-X',
            '-U',
            '--output',
            '--user',
            '--env',
            '--string-limit',
          ]),
        ),
        name,
      );
      return;
    case 'ssh-agent':
      rest(skipOptions(argv, 1, new Set(['-a', '-E', '-t', '-P', '-O'])), name);
      return;
    case 'chrt': {
      if (argv.slice(1).some((w) => w.value === '-p' || w.value === '--pid')) return;
      let i = skipOptions(
        argv,
        1,
        new Set(['-T', '-P', '-D', '--sched-runtime', '--sched-period', '--sched-deadline']),
      );
      i++; // the priority
      rest(i, 'chrt');
      return;
    }
    case 'tmux':
      // tmux sub-commands take shell commands as arguments (new-session, run-shell, if-shell, send-keys …): every
      // argument that is not an option is checked as a script (fail closed).
      for (const w of argv.slice(1)) {
        if (w.value === null)
          out.problems.push({ reason: `tmux with a computed argument (${w.literal || 'an expansion'}…)` });
        else if (!w.value.startsWith('-') && w.value !== ';')
          analyseScript(w.value, true, [...via, 'tmux'], depth + 1, out, shape);
      }
      return;
    case 'screen': {
      if (argv.slice(1).some((w) => w.value === '-X' || w.value === '-x' || w.value === '-r' || w.value === '-R')) {
        for (const w of argv.slice(1))
          if (w.value !== null && !w.value.startsWith('-'))
            analyseScript(w.value, true, [...via, 'screen'], depth + 1, out, shape);
        return;
      }
      rest(skipOptions(argv, 1, new Set(['-S', '-c', '-e', '-h', '-p', '-T', '-t', '-s', '-Logfile'])), 'screen');
      return;
    }
    case 'vim':
    case 'vi':
    case 'nvim':
    case 'ex':
    case 'view':
    case 'gvim':
    case 'vimdiff':
      exCommands(argv, name, out, via, depth, shape);
      return;
    case 'gdb': {
      const argsAt = argv.findIndex((w) => w.value === '--args');
      for (let k = 1; k < argv.length; k++) {
        const v = argv[k]!.value;
        const cmd =
          v === '-ex' || v === '-iex' || v === '--eval-command' || v === '--init-eval-command'
            ? argv[k + 1]?.value
            : v?.startsWith('--eval-command=')
              ? v.slice('--eval-command='.length)
              : undefined;
        if (cmd === undefined) continue;
        if (cmd === null) out.problems.push({ reason: 'gdb with a computed command' });
        else gdbCommand(cmd, out, via, depth, shape);
      }
      if (argsAt > 0) rest(argsAt + 1, 'gdb --args');
      return;
    }
    case 'make':
    case 'gmake':
      makeCall(inv, out, via, depth, shape);
      return;
    case 'npm': {
      // npm exec -c / --call SCRIPT (npx -c): the script runs in a shell.
      if (argv.some((w) => w.value === 'exec' || w.value === 'x')) {
        for (let k = 1; k < argv.length; k++) {
          const v = argv[k]!.value;
          if (v === '-c' || v === '--call') script(argv.slice(k + 1, k + 2), 'npm exec --call');
          else if (v?.startsWith('--call='))
            script([{ ...argv[k]!, value: v.slice('--call='.length) }], 'npm exec --call');
        }
      }
      break;
    }
    case 'git':
      gitRuns(argv, out, via, depth, shape, script, rest);
      break;
    case 'source':
    case '.':
      if (argv[1] && argv[1].value === null)
        out.problems.push({ reason: `${name} of a computed file (${argv[1].literal || 'an expansion'}…)` });
      else if (argv[1]?.value && STDIN_FILES.test(argv[1].value)) shellFromStdin(inv, out, via, depth, shape);
      else if (argv[1]?.value) scriptFile(argv[1].value, inv, out, via, depth, shape);
      return;
    case 'chroot': {
      const i = skipOptions(argv, 1, new Set(['--userspec', '--groups']));
      if (i + 1 < argv.length) rest(i + 1, 'chroot');
      else shellFromStdin(inv, out, via, depth, shape);
      return;
    }
    case 'unshare':
    case 'nsenter':
    case 'systemd-run':
    case 'firejail':
    case 'proot':
    case 'fakeroot':
    case 'dbus-run-session':
    case 'xvfb-run':
    case 'with-lock':
    case 'retry':
      rest(
        skipOptions(
          argv,
          1,
          new Set(['-t', '-u', '-p', '--unit', '--property', '-E', '--setenv', '--target', '-n', '--server-num', '-s']),
        ),
        name,
      );
      return;
    case 'ssh': {
      // ssh [opts] host [command…]: the command runs in a shell (on a host that may be this one).
      const i = skipOptions(
        argv,
        1,
        new Set([
          '-b',
          '-c',
          '-D',
          '-E',
          '-e',
          '-F',
          '-I',
          '-i',
          '-J',
          '-L',
          '-l',
          '-m',
          '-O',
          '-o',
          '-p',
          '-Q',
          '-R',
          '-S',
          '-W',
          '-w',
        ]),
      );
      if (i + 1 < argv.length) script(argv.slice(i + 1), 'ssh');
      return;
    }
    case 'at':
    case 'batch':
      shellFromStdin(inv, out, via, depth, shape);
      return;
    case 'hash':
      if (argv.some((w) => w.value === null || /^-[a-zA-Z]*p/.test(w.value)))
        out.problems.push({ reason: 'hash -p maps a command name to another program' });
      return;
    case 'enable':
      if (argv.some((w) => w.value === null || /^-[a-zA-Z]*f/.test(w.value)))
        out.problems.push({ reason: 'enable -f loads a builtin from a file' });
      return;
    case 'busybox':
    case 'toybox':
      rest(1, name);
      return;
    case 'ralph': {
      const g = afterCliOptions(argv, 1);
      if (a(g) === 'gate') gateCall(inv, g + 1, out, via, depth, shape);
      return;
    }
    case 'node':
    case 'nodejs': {
      const s1 = skipOptions(
        argv,
        1,
        new Set([
          '-r',
          '--require',
          '--import',
          '--loader',
          '--experimental-loader',
          '--inspect-port',
          '--title',
          '--conditions',
          '-C',
        ]),
      );
      const script1 = a(s1);
      const g = afterCliOptions(argv, s1 + 1);
      if (
        script1 !== null &&
        a(g) === 'gate' &&
        (script1 === shape.cliPath || path.posix.basename(script1) === 'cli.js')
      ) {
        gateCall(inv, g + 1, out, via, depth, shape);
        return;
      }
      break;
    }
    case 'npx':
    case 'bunx':
    case 'pnpx': {
      const cIdx = argv.findIndex((w, k) => k > 0 && (w.value === '-c' || w.value === '--call'));
      if (cIdx > 0) script(argv.slice(cIdx + 1, cIdx + 2), `${name} -c`);
      break;
    }
  }
  // The gate runner under any spelling (`npx ralph gate …`, `pnpm ralph gate …`, `node_modules/.bin/ralph gate …`):
  // `ralph` or `cli.js` among the words, then `gate`, then the command after `--`, which the runner runs.
  if (!inv.gate) runnerGateCall(inv, out, via, depth, shape);
  if (first.value.includes('/') && !SHELLS.has(name) && !INTERPRETERS.has(name))
    scriptFile(first.value, inv, out, via, depth, shape, true);
  if (SHELLS.has(name)) expandShell(inv, out, via, depth, shape);
  else if (AWKS.has(name)) {
    const i = skipOptions(
      argv,
      1,
      new Set([
        '-F',
        '-v',
        '-f',
        '-i',
        '-l',
        '-e',
        '--source',
        '--file',
        '--assign',
        '--field-separator',
        '--include',
        '--load',
      ]),
    );
    for (let k = 1; k < i; k++) {
      if (['-e', '--source'].includes(argv[k]!.value ?? '') && argv[k + 1])
        out.inlineCode.push({ name, code: argv[k + 1]!.value ?? argv[k + 1]!.literal });
      const v = argv[k]!.value;
      const file =
        v === '-f' || v === '--file'
          ? argv[k + 1]
          : v?.startsWith('--file=')
            ? { ...argv[k]!, value: v.slice('--file='.length) }
            : v !== null && /^-f./.test(v)
              ? { ...argv[k]!, value: v.slice(2) }
              : undefined;
      if (file) awkProgramFile(name, file, call, out, shape);
    }
    if (!argv.slice(1, i).some((w) => ['-f', '--file', '-e', '--source'].includes(w.value ?? '')) && argv[i])
      out.inlineCode.push({ name, code: argv[i]!.value ?? argv[i]!.literal });
  } else if (name === 'sed' || name === 'gsed') {
    const i = skipOptions(argv, 1, new Set(['-e', '-f', '--expression', '--file', '-l', '--line-length']));
    const scripts: ShellWord[] = [];
    for (let k = 1; k < i; k++) {
      const v = argv[k]!.value;
      if ((v === '-e' || v === '--expression') && argv[k + 1]) scripts.push(argv[k + 1]!);
      else if (v?.startsWith('--expression=')) scripts.push({ ...argv[k]!, value: v.slice('--expression='.length) });
    }
    if (
      !argv
        .slice(1, i)
        .some(
          (w) => ['-e', '--expression', '-f', '--file'].includes(w.value ?? '') || w.value?.startsWith('--expression='),
        )
    )
      if (argv[i]) scripts.push(argv[i]!);
    for (const w of scripts) out.inlineCode.push({ name: 'sed', code: w.value ?? w.literal });
  } else if (INTERPRETERS.has(name)) {
    if (call.stdin.kind === 'heredoc' && call.stdin.body.value !== null)
      out.inlineCode.push({ name, code: call.stdin.body.value });
    for (let k = 1; k < argv.length; k++) {
      const v = argv[k]!.value;
      if (v !== null && /^(-[a-zA-Z]*[ceEpr]|--eval|--print|--command)$/.test(v) && argv[k + 1])
        out.inlineCode.push({ name, code: argv[k + 1]!.value ?? argv[k + 1]!.literal });
    }
    const hasProgram = argv
      .slice(1)
      .some((w) => w.value === null || !w.value.startsWith('-') || /^-[a-zA-Z]*[ceEpr]$|^--(eval|print)/.test(w.value));
    if (!hasProgram && call.stdin.kind === 'pipe' && call.stdin.upstream.some((c) => isDownloader(c))) {
      out.problems.push({ reason: `a download is piped into ${name}` });
    }
  }
}

/**
 * `awk -f FILE`: the program is inline code like `awk 'PROGRAM'`: a here-document or here-string fed to
 * `-f /dev/stdin` is read, an existing file is read through the script reader; a pipe, a computed name or a
 * file that does not exist yet cannot be seen (denied when the policy has `[deny]` rows).
 */
function awkProgramFile(name: string, file: ShellWord, call: ShellCall, out: Analysis, shape: GateRunnerShape): void {
  const f = file.value;
  if (f !== null && (STDIN_FILES.test(f) || f === '/dev/fd/0')) {
    if (call.stdin.kind === 'heredoc' && call.stdin.body.value !== null)
      out.inlineCode.push({ name, code: call.stdin.body.value });
    else out.denyOnly.push({ reason: `${name} reads its program from standard input: the guard cannot see it` });
    return;
  }
  const text = f === null || /^\/(dev|proc)\//.test(f) ? undefined : shape.readScript?.(f);
  if (typeof text === 'string') out.inlineCode.push({ name, code: text });
  else if (f === null || /^\/(dev|proc)\//.test(f) || (shape.readScript && text === undefined))
    out.denyOnly.push({ reason: `${name} -f ${f ?? file.literal}: a program the guard cannot read` });
}

function isDownloader(c: ShellCall): boolean {
  const v = c.words[0]?.value;
  return v !== null && v !== undefined && DOWNLOADERS.has(path.posix.basename(v));
}

/** Index of the first word from `i` after the CLI's global options (`-C dir`, `--cwd dir`, `--cwd=dir`). */
function afterCliOptions(argv: ShellWord[], i: number): number {
  while (i < argv.length) {
    const v = argv[i]!.value;
    if (v === '-C' || v === '--cwd') i += 2;
    else if (v !== null && v.startsWith('--cwd=')) i++;
    else break;
  }
  return i;
}

/** `ralph gate <label> [opts] -- <cmd…>` (words from `i`): the gated command is analysed as a script. */
function gateCall(
  inv: Invocation,
  i: number,
  out: Analysis,
  via: string[],
  depth: number,
  shape: GateRunnerShape,
): void {
  const words = inv.argv;
  const labelIdx = words.slice(i).findIndex((w) => w.value === null || !w.value.startsWith('-'));
  const dd = words.findIndex((w, k) => k >= i && w.value === '--');
  const label = labelIdx >= 0 ? words[i + labelIdx]!.value : null;
  const cmdWords = dd >= 0 ? words.slice(dd + 1) : labelIdx >= 0 ? words.slice(i + labelIdx + 1) : [];
  if (label === null) {
    out.problems.push({ reason: 'a gate call with a computed label' });
    return;
  }
  const text = cmdWords.length === 1 ? cmdWords[0]!.value : joinExact(cmdWords, 'the gated command', out);
  if (text === null || text === undefined) {
    if (cmdWords.length === 1) out.problems.push({ reason: 'the gated command is computed at run time' });
    return;
  }
  inv.gate = { label, command: text };
  analyseScript(text, true, [...via, `gate ${label}`], depth + 1, out, shape);
}

/**
 * A script file run by a shell or `source` (or directly, `./x.sh`): one that does not exist yet (written by this
 * very command) is denied; an existing one is analysed for denied commands.
 */
function scriptFile(
  file: string,
  inv: Invocation,
  out: Analysis,
  via: string[],
  depth: number,
  shape: GateRunnerShape,
  direct = false,
): void {
  if (!shape.readScript) return;
  // After `cd dir`, a relative script is looked up there too.
  const candidates =
    file.startsWith('/') || file.startsWith('~')
      ? [file]
      : [file, ...out.cdTargets.filter((t) => !t.startsWith('-')).map((t) => path.posix.join(t, file))];
  let text: string | null | undefined;
  for (const c of candidates) {
    text = shape.readScript(c);
    if (text !== undefined) break;
  }
  if (text === undefined) {
    if (!direct || file.startsWith('./') || !file.startsWith('/'))
      out.problems.push({
        reason: `${direct ? 'runs' : `${inv.name} runs`} ${file}, which does not exist before the command runs: write the script first (Write), then run it`,
      });
    return;
  }
  if (text === null) return;
  // Run directly, only a shell script is looked into (a node or python script is not shell).
  if (direct && !/^#!\s*\S*\/(env\s+)?(ba|da|z|k|mk|a)?sh\b/.test(text)) return;
  const before = out.problems.length;
  analyseScript(text, true, [...via, `script ${file}`], depth + 1, out, shape);
  // Inside a project script, computed names and the like are normal: only named denials count there.
  out.problems.splice(before);
}

/** `bash [opts] -c SCRIPT`, `bash file`, or `bash` reading commands from its standard input. */
function expandShell(inv: Invocation, out: Analysis, via: string[], depth: number, shape: GateRunnerShape): void {
  const w = inv.argv;
  let i = 1;
  let commandMode = false;
  let stdinMode = false;
  // busybox sh / toybox sh leave the applet name as argv[0]: already shifted by the caller.
  while (i < w.length) {
    const v = w[i]!.value;
    if (v === null) break;
    if (v === '--' || v === '-') {
      i++;
      break;
    }
    if (v.startsWith('--')) {
      // A startup file (written a moment before) runs before the script, unseen.
      if (['--rcfile', '--init-file', '--login', '--interactive'].includes(v.split('=')[0]!))
        out.denyOnly.push({ reason: `${inv.name} ${v} runs a startup file the guard does not read` });
      i += ['--rcfile', '--init-file'].includes(v) ? 2 : 1;
      continue;
    }
    if (/^[-+][A-Za-z]+$/.test(v)) {
      const letters = v.slice(1);
      if (letters.includes('c')) commandMode = true;
      if (letters.includes('s')) stdinMode = true;
      // Interactive and login shells read ~/.bashrc, ~/.profile, $ENV: files the agent can write.
      if (v.startsWith('-') && /[il]/.test(letters))
        out.denyOnly.push({
          reason: `${inv.name} -${letters} (an interactive or login shell) runs startup files the guard does not read`,
        });
      // -o / -O take an argument
      i += /[oO]$/.test(letters) ? 2 : 1;
      continue;
    }
    break;
  }
  if (commandMode) {
    const scriptWord = w[i];
    if (!scriptWord) {
      out.problems.push({ reason: `${inv.name} -c without a script` });
      return;
    }
    if (scriptWord.value === null) {
      out.problems.push({
        reason: `the script given to ${inv.name} -c is computed at run time (${scriptWord.literal || 'an expansion'}…): write it out literally`,
      });
      return;
    }
    analyseScript(scriptWord.value, true, [...via, `${inv.name} -c`], depth + 1, out, shape);
    return;
  }
  if (!stdinMode && i < w.length) {
    const file = w[i]!.value;
    if (file === null)
      out.problems.push({ reason: `${inv.name} runs a computed script file (${w[i]!.literal || 'an expansion'}…)` });
    else if (STDIN_FILES.test(file)) shellFromStdin(inv, out, via, depth, shape);
    else scriptFile(file, inv, out, via, depth, shape);
    return;
  }
  shellFromStdin(inv, out, via, depth, shape);
}

/** A shell (or `sudo -s`, `su`, `parallel`) that reads commands from its standard input. */
function shellFromStdin(inv: Invocation, out: Analysis, via: string[], depth: number, shape: GateRunnerShape): void {
  const stdin = inv.call.stdin;
  if (stdin.kind === 'pipe') {
    const download = stdin.upstream.some(isDownloader);
    out.problems.push({
      reason: download
        ? `a download is piped into a shell (${inv.name})`
        : `${inv.name} reads commands from a pipe: the guard cannot see them; run the commands directly`,
    });
  } else if (stdin.kind === 'heredoc') {
    if (stdin.body.value === null)
      out.problems.push({
        reason: `the here-document fed to ${inv.name} expands at run time: quote its delimiter (<<'EOF') or run the commands directly`,
      });
    else analyseScript(stdin.body.value, true, [...via, `${inv.name} <<`], depth + 1, out, shape);
  } else if (stdin.kind === 'file' && stdin.target.value === null) {
    out.problems.push({ reason: `${inv.name} reads commands from a computed file` });
  }
}

/** `find PATHS… EXPR`: `-exec`/`-execdir`/`-ok`/`-okdir` run programs; `{}` stands for each path found. */
function expandFind(
  argv: ShellWord[],
  call: ShellCall,
  nested: boolean,
  via: string[],
  depth: number,
  out: Analysis,
  shape: GateRunnerShape,
): void {
  for (let i = 1; i < argv.length; i++) {
    const v = argv[i]!.value;
    if (v === '-exec' || v === '-execdir' || v === '-ok' || v === '-okdir') {
      let j = i + 1;
      while (j < argv.length && argv[j]!.value !== ';' && argv[j]!.value !== '+') j++;
      const inner = argv
        .slice(i + 1, j)
        .map((w) =>
          w.value === '{}'
            ? { ...w, value: null, pattern: /^[\s\S]*$/, literal: '{}', expansion: 'dynamic' as const }
            : w,
        );
      expand(inner, call, nested, [...via, `find ${v}`], depth + 1, out, shape);
      i = j;
    }
  }
}

const AWKS = new Set(['awk', 'gawk', 'mawk', 'nawk']);

/** Git configuration keys whose value is run as a command (or re-points one). */
export const DANGEROUS_GIT_KEY =
  /^(alias|include|includeif|pager)\.|^protocol\.(.+\.)?allow$|^submodule\..+\.update$|(command|cmd|pager|editor|hookspath|askpass|program|sshcommand|fsmonitor|textconv|clean|smudge|process|gitproxy|exec|external|helper|hook|receivepack|uploadpack|driver|tunnel|templatedir|filter)$/;

/**
 * Environment variables whose value a program runs as a shell command (git, ssh, less, man, bash): the value is
 * checked as a script, like the `git -c` keys they stand for (`GIT_PAGER='git push' git log`).
 */
const COMMAND_VARS = new Set([
  'GIT_SSH_COMMAND',
  'GIT_SSH',
  'GIT_PAGER',
  'PAGER',
  'MANPAGER',
  'GIT_EDITOR',
  'EDITOR',
  'VISUAL',
  'GIT_SEQUENCE_EDITOR',
  'GIT_EXTERNAL_DIFF',
  'GIT_ASKPASS',
  'SSH_ASKPASS',
  'GIT_PROXY_COMMAND',
  'LESSOPEN',
  'LESSCLOSE',
  'PROMPT_COMMAND',
  'BROWSER',
]);
/** Variables that point a program at configuration or code the guard does not read: denied unless `/dev/null`. */
const CODE_FILE_VARS = new Set([
  'GIT_CONFIG_GLOBAL',
  'GIT_CONFIG_SYSTEM',
  'GIT_CONFIG',
  'GIT_EXEC_PATH',
  'GIT_TEMPLATE_DIR',
  'GIT_CONFIG_PARAMETERS',
  'BASH_ENV',
  'ENV',
  'LD_PRELOAD',
  'LD_AUDIT',
]);

/** Checks `NAME=value` settings (prefix assignments, `env`, `export`) that make a program run a command. */
function envCommands(
  assigns: { name: string; value: ShellWord | null }[],
  out: Analysis,
  via: string[],
  depth: number,
  shape: GateRunnerShape,
): void {
  for (const { name, value } of assigns) {
    if (COMMAND_VARS.has(name)) {
      if (value === null) continue;
      if (value.value === null)
        out.problems.push({
          reason: `${name} (a command git or another program runs) is computed at run time: write it out literally`,
        });
      else if (value.value.trim()) analyseScript(value.value, true, [...via, `${name}=`], depth + 1, out, shape);
    } else if (/^GIT_CONFIG_KEY_\d+$/.test(name)) {
      const k = value?.value?.toLowerCase() ?? null;
      if (k === null || DANGEROUS_GIT_KEY.test(k))
        out.problems.push({
          reason: `${name}=${k ?? '(computed)'}: configuration that runs commands is not allowed from the environment (as with git -c)`,
        });
    } else if (
      name === 'NODE_OPTIONS' &&
      (value?.value === null ||
        /(^|\s)(-r|--require|--import|--loader|--experimental-loader)\b/.test(value?.value ?? ''))
    ) {
      out.problems.push({ reason: 'NODE_OPTIONS that loads code into every node process: not allowed from the agent' });
    } else if (CODE_FILE_VARS.has(name) && value?.value !== '/dev/null' && value?.value !== '') {
      out.problems.push({
        reason: `${name} points a program at configuration or code the guard cannot check: not allowed from the agent`,
      });
    }
  }
}

/** vim / ex commands given on the command line (`-c CMD`, `+CMD`, `--cmd CMD`): `!…` runs a shell command. */
function exCommands(
  argv: ShellWord[],
  name: string,
  out: Analysis,
  via: string[],
  depth: number,
  shape: GateRunnerShape,
): void {
  const cmds: (string | null)[] = [];
  for (let k = 1; k < argv.length; k++) {
    const v = argv[k]!.value;
    if (v === '-c' || v === '--cmd') cmds.push(argv[++k]?.value ?? null);
    else if (v !== null && v.startsWith('+') && v.length > 1) cmds.push(v.slice(1));
    else if (v === '-s' || v === '-S' || v === '-u' || v === '-w' || v === '-W') {
      out.problems.push({ reason: `${name} ${v} runs commands from a file the guard does not read` });
      k++;
    }
  }
  for (const c of cmds) {
    if (c === null) {
      out.problems.push({ reason: `${name} with a computed command` });
      continue;
    }
    for (const part of [c]) {
      if (
        /\b(system|systemlist|jobstart|termopen|term|terminal|exe|execute|py|python|python3|py3|pyx|perl|ruby|lua|luado|pydo|py3do|rubydo|perldo|so|source|runtime|libcall|libcallnr|call)\b/.test(
          part,
        )
      ) {
        out.problems.push({ reason: `${name} command that may run programs (${part}): run the program directly` });
        continue;
      }
      const bang = /(^|[^A-Za-z])!(.*)$/s.exec(part.replace(/^[:\s]+/, ''));
      if (bang) analyseScript(bang[2]!, true, [...via, `${name} !`], depth + 1, out, shape);
    }
  }
}

/** A gdb command (`-ex CMD`): `shell X` / `!X` run X in a shell; python/guile/pipe run code the guard cannot read. */
function gdbCommand(cmd: string, out: Analysis, via: string[], depth: number, shape: GateRunnerShape): void {
  const c = cmd.trim();
  const sh = /^(?:shell\b|!)\s*([\s\S]*)$/.exec(c);
  if (sh) analyseScript(sh[1]!, true, [...via, 'gdb shell'], depth + 1, out, shape);
  else if (/^(python|py|pi|python-interactive|guile|gu|pipe|source)\b|^\|/.test(c)) {
    out.problems.push({ reason: `gdb command that runs code the guard cannot read (${c})` });
  }
}

/** `make -f - <<<…` / `make --eval=…`: a makefile given inline; its recipes run in a shell. */
function makeCall(inv: Invocation, out: Analysis, via: string[], depth: number, shape: GateRunnerShape): void {
  const argv = inv.argv;
  const texts: string[] = [];
  for (let k = 1; k < argv.length; k++) {
    const v = argv[k]!.value;
    let file: ShellWord | undefined;
    if (v === '-f' || v === '--file' || v === '--makefile') file = argv[++k];
    else if (v?.startsWith('--file=') || v?.startsWith('--makefile='))
      file = { ...argv[k]!, value: v.slice(v.indexOf('=') + 1) };
    else if (v?.startsWith('-f') && v.length > 2) file = { ...argv[k]!, value: v.slice(2) };
    else if (v === '-E' || v === '--eval') {
      const t = argv[++k];
      if (t?.value == null) out.problems.push({ reason: 'make --eval with a computed makefile' });
      else texts.push(t.value);
    } else if (v?.startsWith('--eval=')) texts.push(v.slice('--eval='.length));
    if (file === undefined) continue;
    if (file.value === null) out.problems.push({ reason: 'make -f of a computed file' });
    else if (STDIN_FILES.test(file.value)) {
      const stdin = inv.call.stdin;
      if (stdin.kind === 'heredoc' && stdin.body.value !== null) texts.push(stdin.body.value);
      else if (stdin.kind !== 'inherited' || file.value !== '/dev/tty')
        out.problems.push({ reason: 'make reads a makefile the guard cannot see (standard input)' });
    }
  }
  for (const t of texts) {
    if (/\$[({]shell\b/.test(t)) out.problems.push({ reason: 'an inline makefile with $(shell …)' });
    for (const line of t.split('\n')) {
      if (!line.startsWith('\t') && !/^[^:=#]*:(?!=)[^;]*;/.test(line)) continue;
      const recipe = line.startsWith('\t') ? line.slice(1) : line.slice(line.indexOf(';') + 1);
      analyseScript(recipe.replace(/^[\s@+-]+/, ''), true, [...via, 'make recipe'], depth + 1, out, shape);
    }
  }
}

/** Git sub-commands that run a command: `rebase --exec`, `bisect run`, `submodule foreach`, `filter-branch --*-filter`, `difftool -x`. */
function gitRuns(
  argv: ShellWord[],
  out: Analysis,
  via: string[],
  depth: number,
  shape: GateRunnerShape,
  script: (words: ShellWord[], how: string) => void,
  rest: (i: number, how: string) => void,
): void {
  let i = 1;
  while (i < argv.length && argv[i]!.value?.startsWith('-')) {
    const v = argv[i]!.value!;
    i += [
      '-C',
      '-c',
      '--git-dir',
      '--work-tree',
      '--namespace',
      '--exec-path',
      '--config-env',
      '--super-prefix',
    ].includes(v)
      ? 2
      : 1;
  }
  const sub = argv[i]?.value;
  const after = (k: number) => argv.slice(k + 1);
  for (let k = i + 1; k < argv.length; k++) {
    const v = argv[k]!.value;
    if (v === null) continue;
    // The program git runs on the other side of a transport (run by a shell): `--upload-pack`, `--receive-pack`,
    // `--exec` (archive, push, send-pack, fetch-pack), `clone -u` / `ls-remote -u`.
    const transport = /^--(upload-pack|receive-pack|exec)(=|$)/.exec(v);
    if (transport && sub !== 'rebase') {
      script(
        transport[2] ? [{ ...argv[k]!, value: v.slice(v.indexOf('=') + 1) }] : after(k).slice(0, 1),
        `git ${sub} ${transport[0]}`,
      );
      continue;
    }
    if ((sub === 'clone' || sub === 'ls-remote') && v === '-u') {
      script(after(k).slice(0, 1), `git ${sub} -u`);
      continue;
    }
    // `ext::CMD ARGS` remotes run CMD (no shell; `% ` is a space, `%%` a percent sign).
    if (v.startsWith('ext::')) {
      extCommand(v.slice(5), out, via, depth, shape);
      continue;
    }
    if (sub === 'rebase' && (v === '--exec' || v === '-x')) script(after(k).slice(0, 1), 'git rebase --exec');
    else if (sub === 'rebase' && v.startsWith('--exec='))
      script([{ ...argv[k]!, value: v.slice(7) }], 'git rebase --exec');
    else if (sub === 'rebase' && /^-x./.test(v)) script([{ ...argv[k]!, value: v.slice(2) }], 'git rebase --exec');
    else if (sub === 'filter-branch' && /^--[a-z-]+-filter$/.test(v))
      script(after(k).slice(0, 1), `git filter-branch ${v}`);
    else if ((sub === 'difftool' || sub === 'mergetool') && (v === '-x' || v === '--extcmd'))
      script(after(k).slice(0, 1), `git ${sub} --extcmd`);
    else if ((sub === 'difftool' || sub === 'mergetool') && v.startsWith('--extcmd='))
      script([{ ...argv[k]!, value: v.slice(9) }], `git ${sub} --extcmd`);
  }
  if (sub === 'bisect' && argv[i + 1]?.value === 'run') rest(i + 2, 'git bisect run');
  if (sub === 'submodule') {
    const f = argv.findIndex((w, k) => k > i && w.value === 'foreach');
    if (f > 0) {
      let j = f + 1;
      while (j < argv.length && argv[j]!.value?.startsWith('-')) j++;
      if (j < argv.length) script(argv.slice(j), 'git submodule foreach');
    }
  }
}

/** The command of a git `ext::` URL, analysed as the program and arguments git would start. */
function extCommand(spec: string, out: Analysis, via: string[], depth: number, shape: GateRunnerShape): void {
  const words: string[] = [''];
  for (let k = 0; k < spec.length; k++) {
    const c = spec[k]!;
    if (c === '%' && k + 1 < spec.length) {
      const n = spec[++k]!;
      words[words.length - 1] += n === ' ' || n === '%' ? n : 'git-upload-pack';
    } else if (c === ' ') words.push('');
    else words[words.length - 1] += c;
  }
  analyseScript(words.filter(Boolean).map(shellQuote).join(' '), true, [...via, 'git ext::'], depth + 1, out, shape);
}

/**
 * The gate runner under any spelling: a word `ralph` (or `cli.js`) followed, after the CLI's global options, by
 * `gate` (`npx ralph gate …`, `pnpm exec ralph -C x gate …`): the runner runs the command after `--`, so it is
 * analysed like `ralph gate`.
 */
function runnerGateCall(inv: Invocation, out: Analysis, via: string[], depth: number, shape: GateRunnerShape): void {
  const argv = inv.argv;
  for (let r = 1; r < argv.length; r++) {
    const v = argv[r]!.value;
    if (v === null || v === '--') return;
    const base = path.posix.basename(v);
    if (base !== 'ralph' && base !== 'cli.js' && !/^ralph@/.test(v) && !/\/ralph(@|$)/.test(v)) continue;
    const g = afterCliOptions(argv, r + 1);
    if (argv[g]?.value === 'gate') {
      gateCall(inv, g + 1, out, via, depth, shape);
      return;
    }
  }
}
