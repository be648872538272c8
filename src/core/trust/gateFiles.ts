import * as path from 'node:path';
import { parseShell, ShellSyntaxError, type ShellCall, type ShellWord } from '../gates/shellSyntax';

/**
 * Which workspace files a gate command runs: trusting the command `bash
 * scripts/check.sh` means little if the agent may rewrite `scripts/check.sh` to `exit 0`. The trusted content
 * therefore also covers the files the trusted commands (config `gates`, the policy's `[gates]`, `notify`) run; this
 * module finds them. Pure: the command is parsed with the project's real bash parser (`parseShell`, mvdan/sh), no
 * file is read (`gateFileContent.ts` reads and hashes them).
 *
 * What is covered (each simple command anywhere in the script: lists, pipelines, `$(…)`, `if` bodies …):
 * - a program given by path (`./test.sh`, `scripts/x`, an absolute path inside the workspace): that file;
 * - a script given to an interpreter: `bash|sh|zsh|dash|ksh|fish <file>`, `node|tsx|ts-node|bun|deno run <file>`,
 *   `python|python3|python2|ruby|perl|php <file>`: the file (options before it are skipped; `bash -c '<text>'` is
 *   parsed in turn; `node --run <name>` is a package.json script; `python -m module`, `node -e …`, `node --test`
 *   name no file: not covered);
 * - `source <file>` / `. <file>`: the file;
 * - `npm test|t|start|run|run-script <name>`, `yarn [run] <name>`, `pnpm [run] <name>`, `bun run <name>`: the
 *   `scripts.<name>`, `scripts.pre<name>` and `scripts.post<name>` entries of `package.json` (the script texts,
 *   which are in turn searched for files; not the rest of the file, so adding a dependency changes nothing);
 *   `--prefix <dir>` / `-C <dir>` / `--cwd <dir>` pick another folder's package.json;
 * - `make|gmake [-C dir] [-f file] …`: the makefile GNU make reads (`-f file`, else the first of `GNUmakefile`,
 *   `makefile`, `Makefile` in the folder); `just …`: `justfile` / `Justfile` / `.justfile`;
 * - wrappers are looked through: `env [NAME=v…]`, `command`, `exec`, `time`, `nice`, `nohup`, `timeout <d>`,
 *   `xvfb-run`; `cd <dir>` with a literal dir moves the folder later paths are resolved in.
 *
 * Not covered (reported in {@link GateFileRefs.uncovered}, shown by `ralph trust --show` and `ralph doctor`): programs
 * found on PATH or outside the workspace (`cargo test`, `pytest`, `/usr/bin/x`) and everything they read (test files,
 * `node_modules/`, files a script imports or includes, makefile `include`s), words computed at run time (`$X`,
 * globs), and commands that do not parse. Shell builtins (`true`, `echo`, `exit`, `test` …) run no file.
 */

/** One workspace file (or part of one) a gate command runs. Paths are workspace-relative with `/`. */
export type GateFileRef =
  /** A file run or read whole: a script, an executable, a makefile. */
  | { kind: 'file'; path: string; via: string }
  /** `scripts.<name>` (and pre/post) of the package.json at `manifest`; `dir` is its folder ('' for the root). */
  | { kind: 'packageScript'; manifest: string; dir: string; script: string; via: string }
  /** The makefile GNU make (or just) would read in `dir`: the first of `candidates` that exists. */
  | { kind: 'firstOf'; dir: string; candidates: string[]; via: string };

/** The files a command runs, and what it runs that is not covered (one readable note each). */
export interface GateFileRefs {
  refs: GateFileRef[];
  uncovered: string[];
}

/** Shell builtins and keywords that run no file. */
const BUILTINS = new Set([
  'true',
  'false',
  ':',
  'echo',
  'printf',
  'exit',
  'return',
  'test',
  '[',
  '[[',
  'set',
  'unset',
  'export',
  'shift',
  'read',
  'local',
  'declare',
  'typeset',
  'readonly',
  'trap',
  'wait',
  'cd',
  'pushd',
  'popd',
  'pwd',
  'alias',
  'unalias',
  'let',
  'eval',
  'break',
  'continue',
  'umask',
  'ulimit',
  'shopt',
  'type',
  'hash',
  'jobs',
  'kill',
  'sleep',
  'mkdir',
  'rm',
  'cp',
  'mv',
  'cat',
  'ls',
  'touch',
  'chmod',
  'tee',
  'grep',
  'sed',
  'awk',
  'head',
  'tail',
  'wc',
  'sort',
  'uniq',
  'tr',
  'cut',
  'xargs',
]);
const SHELLS = new Set(['bash', 'sh', 'zsh', 'dash', 'ksh', 'fish']);
const SCRIPT_RUNNERS = new Set([
  'node',
  'nodejs',
  'tsx',
  'ts-node',
  'python',
  'python3',
  'python2',
  'ruby',
  'perl',
  'php',
]);
/** Options of the interpreters that take the next word as their value (so it is not the script). */
const OPTION_VALUES = new Set([
  '-r',
  '--require',
  '--import',
  '--loader',
  '--experimental-loader',
  '-W',
  '-X',
  '-I',
  '-o',
  '-O',
  '--project',
  '-P',
  '--conditions',
  '-C',
]);
/** Options after which the interpreter runs no file (code inline, a module, the REPL). */
const NO_FILE = new Set([
  '-e',
  '--eval',
  '--test',
  '-p',
  '--print',
  '-m',
  '-c',
  '-E',
  '--version',
  '-v',
  '-V',
  '--help',
  '-h',
]);
const WRAPPERS = new Set(['command', 'exec', 'time', 'nice', 'nohup', 'xvfb-run', 'stdbuf', 'builtin']);
const MAKEFILES = ['GNUmakefile', 'makefile', 'Makefile'];
const JUSTFILES = ['justfile', 'Justfile', '.justfile'];
/** One collection's state: the workspace's absolute path (posix; null = every absolute path is outside), nesting, output. */
interface Scan {
  root: string | null;
  depth: number;
  out: GateFileRefs;
}

/** How deep `bash -c '…'` and package.json scripts are followed. */
export const MAX_GATE_DEPTH = 4;

/**
 * The workspace files `command` runs, searched as bash would run it in `cwd` (workspace-relative, '' = the root).
 * Pure. `root` is the workspace's absolute path (so `/ws/scripts/x` counts as inside); `depth` counts nested
 * `bash -c` texts (the reader follows package.json scripts with `depth + 1`).
 */
export function gateFileRefs(
  command: string,
  opts: { cwd?: string; root?: string | null; depth?: number } = {},
): GateFileRefs {
  const cwd = opts.cwd ?? '';
  const depth = opts.depth ?? 0;
  const root = opts.root ? opts.root.split(path.sep).join('/').replace(/\/+$/, '') : null;
  const out: GateFileRefs = { refs: [], uncovered: [] };
  if (depth > MAX_GATE_DEPTH) {
    out.uncovered.push(`${short(command)}: nested too deep (more than ${MAX_GATE_DEPTH} levels)`);
    return out;
  }
  let calls: ShellCall[];
  try {
    calls = parseShell(command).calls;
  } catch (err) {
    if (!(err instanceof ShellSyntaxError)) throw err;
    out.uncovered.push(`${short(command)}: does not parse (${err.message})`);
    return out;
  }
  let dir = cwd;
  for (const call of calls) {
    const moved = callRefs(call.words, dir, { root, depth, out });
    if (moved !== undefined) dir = moved;
  }
  return dedupe(out);
}

/** Adds the refs of one simple command; returns the new folder after a literal `cd`. */
function callRefs(words: readonly ShellWord[], dir: string, scan: Scan): string | undefined {
  const { out, depth } = scan;
  let i = 0;
  // Wrappers: env [-i] [NAME=v…], command, exec, time, nice [-n N], nohup, timeout [opts] <duration>.
  for (;;) {
    const w = words[i]?.value;
    if (w === undefined || w === null) break;
    if (w === 'env') {
      i++;
      while (
        words[i]?.value !== undefined &&
        words[i]!.value !== null &&
        (words[i]!.value!.startsWith('-') || /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[i]!.value!))
      )
        i++;
      continue;
    }
    if (w === 'timeout') {
      i++;
      while (words[i]?.value?.startsWith('-')) i++;
      i++; // the duration
      continue;
    }
    if (WRAPPERS.has(w)) {
      i++;
      while (words[i]?.value?.startsWith('-')) i += words[i]!.value === '-n' ? 2 : 1;
      continue;
    }
    break;
  }
  const first = words[i];
  if (!first) return undefined;
  const prog = first.value;
  if (prog === null) {
    out.uncovered.push(`${first.literal || 'a computed program'}: the program is computed at run time`);
    return undefined;
  }
  const args = words.slice(i + 1);
  const name = prog.includes('/') ? path.posix.basename(prog) : prog;

  if (prog === 'cd') {
    const d = args[0]?.value;
    if (d === undefined || d === null || d === '-' || d.startsWith('~')) return d === undefined ? '' : dir;
    const to = inside(scan.root, dir, d);
    return to ?? dir;
  }
  if (prog === 'source' || prog === '.') {
    addFile(args[0], dir, `${prog} ${args[0]?.value ?? '…'}`, scan);
    return undefined;
  }
  if (prog.includes('/')) {
    // A program by path: inside the workspace it is a covered file (bash /abs/ws/x, ./x, scripts/x).
    const rel = inside(scan.root, dir, prog);
    if (rel === null) out.uncovered.push(`${prog}: outside the workspace`);
    else out.refs.push({ kind: 'file', path: rel, via: prog });
    if (!SHELLS.has(name) && !SCRIPT_RUNNERS.has(name)) return undefined;
  }
  if (BUILTINS.has(name)) return undefined;
  if (SHELLS.has(name)) {
    const c = args.findIndex((a) => a.value !== null && /^-[a-z]*c[a-z]*$/.test(a.value));
    if (c >= 0) {
      const text = args[c + 1];
      if (!text) return undefined;
      if (text.value === null) out.uncovered.push(`${name} -c ${text.literal}: the script is computed at run time`);
      else mergeInto(out, gateFileRefs(text.value, { cwd: dir, root: scan.root, depth: depth + 1 }));
      return undefined;
    }
    const script = args.find((a) => !(a.value ?? '').startsWith('-') || a.value === null);
    if (script) addFile(script, dir, `${name} ${script.value ?? script.literal}`, scan);
    else out.uncovered.push(`${name}: reads its script from standard input`);
    return undefined;
  }
  if (SCRIPT_RUNNERS.has(name)) {
    scriptArg(name, args, dir, scan);
    return undefined;
  }
  if (name === 'deno' || name === 'bun') {
    const sub = args[0]?.value;
    if (name === 'bun') rcRefs(name, dir, scan);
    if (name === 'deno' && sub === 'run') scriptArg(name, args.slice(1), dir, scan);
    else if (name === 'bun' && sub === 'run') packageOrFile(name, args.slice(1), dir, scan);
    else if (name === 'bun' && sub && /\.[cm]?[jt]sx?$/.test(sub)) addFile(args[0], dir, `bun ${sub}`, scan);
    else out.uncovered.push(`${name}${sub ? ` ${sub}` : ''}: not covered (not a script run)`);
    return undefined;
  }
  if (name === 'npm' || name === 'yarn' || name === 'pnpm') {
    npmRefs(name, args, dir, scan);
    return undefined;
  }
  if (name === 'npx') {
    rcRefs(name, npmDir(args, dir, scan), scan);
    out.uncovered.push('npx: the package it runs is not covered');
    return undefined;
  }
  if (name === 'make' || name === 'gmake' || name === 'just') {
    let d = dir;
    let file: string | null = null;
    for (let k = 0; k < args.length; k++) {
      const a = args[k]!.value;
      if (a === null) continue;
      if ((a === '-C' || a === '--directory') && args[k + 1]?.value) {
        d = inside(scan.root, d, args[++k]!.value!) ?? d;
        continue;
      }
      if ((a === '-f' || a === '--file' || a === '--makefile' || a === '--justfile') && args[k + 1]) {
        file = args[++k]!.value;
        if (file === null) out.uncovered.push(`${name} -f: the file is computed at run time`);
        continue;
      }
      const m = /^(?:-C|--directory=)(.+)$/.exec(a);
      if (m) d = inside(scan.root, d, m[1]!) ?? d;
      const f = /^(?:-f|--file=|--makefile=|--justfile=)(.+)$/.exec(a);
      if (f) file = f[1]!;
    }
    if (file) addFile({ value: file } as ShellWord, d, `${name} -f ${file}`, scan);
    else
      out.refs.push({
        kind: 'firstOf',
        dir: d,
        candidates: (name === 'just' ? JUSTFILES : MAKEFILES).map((c) => join(d, c)),
        via: `${name}${args.length ? ' ' + args.map((a) => a.value ?? a.literal).join(' ') : ''}`,
      });
    return undefined;
  }
  out.uncovered.push(`${name}: a program outside the workspace (its own files are not covered)`);
  return undefined;
}

/** The script argument of an interpreter (first word that is not an option or an option's value). */
function scriptArg(name: string, args: readonly ShellWord[], dir: string, scan: Scan): void {
  const { out } = scan;
  for (let k = 0; k < args.length; k++) {
    const a = args[k]!;
    if (a.value === null) {
      out.uncovered.push(`${name} ${a.literal}: the script is computed at run time`);
      return;
    }
    if (a.value === '--run' && (name === 'node' || name === 'nodejs')) {
      packageOrFile(name, args.slice(k + 1), dir, scan, false);
      return;
    }
    if (NO_FILE.has(a.value)) {
      out.uncovered.push(`${name} ${a.value}: runs no file (inline code or a module)`);
      return;
    }
    if (OPTION_VALUES.has(a.value)) {
      k++;
      continue;
    }
    if (a.value.startsWith('-')) continue;
    addFile(a, dir, `${name} ${a.value}`, scan);
    return;
  }
  out.uncovered.push(`${name}: no script (reads standard input or a REPL)`);
}

/** `npm test`, `npm run x`, `yarn x`, `pnpm run x`: package.json scripts. */
function npmRefs(name: string, args: readonly ShellWord[], dir: string, scan: Scan): void {
  const { out } = scan;
  let d = dir;
  const rest: ShellWord[] = [];
  for (let k = 0; k < args.length; k++) {
    const a = args[k]!.value;
    if (a === '--') break;
    if ((a === '--prefix' || a === '-C' || a === '--cwd' || a === '--dir') && args[k + 1]?.value) {
      d = inside(scan.root, d, args[++k]!.value!) ?? d;
      continue;
    }
    const m = a === null ? null : /^--(?:prefix|cwd|dir)=(.+)$/.exec(a);
    if (m) {
      d = inside(scan.root, d, m[1]!) ?? d;
      continue;
    }
    if (a !== null && a.startsWith('-')) continue;
    rest.push(args[k]!);
  }
  rcRefs(name, d, scan);
  const sub = rest[0]?.value;
  if (sub === undefined) {
    out.uncovered.push(`${name}: no script named`);
    return;
  }
  if (sub === null) {
    out.uncovered.push(`${name} ${rest[0]!.literal}: the script is computed at run time`);
    return;
  }
  const aliases: Record<string, string> = {
    t: 'test',
    tst: 'test',
    test: 'test',
    start: 'start',
    stop: 'stop',
    restart: 'restart',
  };
  if (sub === 'run' || sub === 'run-script' || sub === 'rum' || sub === 'urn') {
    packageOrFile(name, rest.slice(1), d, scan, false);
    return;
  }
  if (aliases[sub]) {
    pushScript(name, d, aliases[sub]!, out);
    return;
  }
  if (
    name !== 'npm' &&
    ![
      'install',
      'i',
      'add',
      'exec',
      'dlx',
      'x',
      'why',
      'list',
      'ls',
      'ci',
      'remove',
      'up',
      'upgrade',
      'update',
    ].includes(sub)
  ) {
    // `yarn lint` / `pnpm lint` run the script of that name.
    pushScript(name, d, sub, out);
    return;
  }
  out.uncovered.push(`${name} ${sub}: not a package.json script (not covered)`);
}

/**
 * The configuration files a package manager reads that change what a script entry runs (the attack:
 * `.npmrc` `script-shell=/bin/true` turns a covered `scripts.test` into a success; also `node-options`, `shell`,
 * yarn 1 `yarn-path`, yarn 2+ `yarnPath` / plugins, pnpm's settings in `pnpm-workspace.yaml` and its
 * `.pnpmfile.cjs` hooks, bun's `bunfig.toml` `preload` / `[run] shell`). Sources: docs.npmjs.com "npmrc" (project
 * file next to package.json), "config" (`script-shell`, `node-options`); yarnpkg.com ".yarnrc" / ".yarnrc.yml";
 * pnpm.io "settings" / ".pnpmfile.cjs"; bun.sh "bunfig.toml". The user's own files (`~/.npmrc` …) are outside the
 * workspace: not trusted content, but fingerprinted for the run ({@link USER_PACKAGE_MANAGER_RC}).
 */
export const PACKAGE_MANAGER_RC: Readonly<Record<string, readonly string[]>> = {
  npm: ['.npmrc'],
  npx: ['.npmrc'],
  yarn: ['.npmrc', '.yarnrc', '.yarnrc.yml'],
  pnpm: ['.npmrc', 'pnpm-workspace.yaml', '.pnpmfile.cjs'],
  bun: ['.npmrc', 'bunfig.toml'],
};

/** The `via` of a package manager's rc-file refs: `npm (its configuration)`. */
export const RC_VIA = ' (its configuration)';

/**
 * The user-level configuration files of each package manager that change what a script entry runs, outside the
 * workspace (`script-shell=/bin/true` in `~/.npmrc` turns a covered `scripts.test` into a
 * success). Not trusted content (they are the user's own, shared by every workspace): the engine fingerprints them
 * when a run starts and handles a change during the run like a change of a gate file (core/trust/gateFileContent.ts
 * `snapshotGateFiles`). `~` is the home folder, `$XDG_CONFIG_HOME` defaults to `~/.config`, `$NAME` an environment
 * variable (skipped when unset). Sources: docs.npmjs.com "npmrc" (per-user `$HOME/.npmrc`, `userconfig` /
 * `NPM_CONFIG_USERCONFIG`, `globalconfig` / `NPM_CONFIG_GLOBALCONFIG`); classic.yarnpkg.com ".yarnrc" (`~/.yarnrc`,
 * yarn 1 also reads `.npmrc`); yarnpkg.com "yarnrc" (the home folder's `.yarnrc.yml`); pnpm.io "npmrc" / "settings"
 * (`$XDG_CONFIG_HOME/pnpm/rc`, and `~/.npmrc`); bun.sh "bunfig.toml" (global `$HOME/.bunfig.toml` or
 * `$XDG_CONFIG_HOME/.bunfig.toml`; bun reads `.npmrc` too).
 */
export const USER_PACKAGE_MANAGER_RC: Readonly<Record<string, readonly string[]>> = {
  npm: [
    '~/.npmrc',
    '$NPM_CONFIG_USERCONFIG',
    '$npm_config_userconfig',
    '$NPM_CONFIG_GLOBALCONFIG',
    '$npm_config_globalconfig',
  ],
  npx: [
    '~/.npmrc',
    '$NPM_CONFIG_USERCONFIG',
    '$npm_config_userconfig',
    '$NPM_CONFIG_GLOBALCONFIG',
    '$npm_config_globalconfig',
  ],
  yarn: ['~/.npmrc', '$NPM_CONFIG_USERCONFIG', '$npm_config_userconfig', '~/.yarnrc', '~/.yarnrc.yml'],
  pnpm: ['~/.npmrc', '$NPM_CONFIG_USERCONFIG', '$npm_config_userconfig', '$XDG_CONFIG_HOME/pnpm/rc'],
  bun: [
    '~/.npmrc',
    '$NPM_CONFIG_USERCONFIG',
    '$npm_config_userconfig',
    '~/.bunfig.toml',
    '$XDG_CONFIG_HOME/.bunfig.toml',
  ],
};

/**
 * The absolute paths of the user-level rc files ({@link USER_PACKAGE_MANAGER_RC}) of the package managers `managers`
 * (`npm`, `yarn` …; others have none), each once, in list order. Pure: `env` gives the variables, `home` the home
 * folder. A relative `$NPM_CONFIG_USERCONFIG` is resolved against `cwd` (where the gate runs: the workspace).
 */
export function userRcFiles(
  managers: Iterable<string>,
  env: Readonly<Record<string, string | undefined>>,
  home: string,
  cwd: string,
): string[] {
  const xdg =
    env.XDG_CONFIG_HOME && path.isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : path.join(home, '.config');
  const out = new Set<string>();
  for (const m of managers) {
    for (const spec of USER_PACKAGE_MANAGER_RC[m] ?? []) {
      let p: string | undefined;
      if (spec.startsWith('~/')) p = path.join(home, spec.slice(2));
      else if (spec.startsWith('$XDG_CONFIG_HOME/')) p = path.join(xdg, spec.slice('$XDG_CONFIG_HOME/'.length));
      else if (spec.startsWith('$')) p = env[spec.slice(1)] || undefined;
      if (p !== undefined) out.add(path.resolve(cwd, p));
    }
  }
  return [...out];
}

/**
 * Adds the rc files of package manager `name` in `dir` and in every folder above it up to the workspace root (npm
 * and yarn look for the project root upward; covering each folder, absent files as `missing`, means creating one
 * later is a change too).
 */
function rcRefs(name: string, dir: string, scan: Scan): void {
  const files = PACKAGE_MANAGER_RC[name] ?? [];
  let d = dir;
  for (;;) {
    for (const f of files) scan.out.refs.push({ kind: 'file', path: join(d, f), via: `${name}${RC_VIA}` });
    if (!d) return;
    const up = path.posix.dirname(d);
    d = up === '.' ? '' : up;
  }
}

/** The folder `npx --prefix <dir>` runs in (else `dir`). */
function npmDir(args: readonly ShellWord[], dir: string, scan: Scan): string {
  let d = dir;
  for (let k = 0; k < args.length; k++) {
    const a = args[k]!.value;
    if (a === '--prefix' && args[k + 1]?.value) d = inside(scan.root, d, args[++k]!.value!) ?? d;
    const m = a === null ? null : /^--prefix=(.+)$/.exec(a);
    if (m) d = inside(scan.root, d, m[1]!) ?? d;
    if (a !== null && !a.startsWith('-')) break;
  }
  return d;
}

function packageOrFile(name: string, args: readonly ShellWord[], dir: string, scan: Scan, fileToo = true): void {
  const { out } = scan;
  const s = args.find((a) => a.value === null || !a.value.startsWith('-'));
  if (!s) {
    out.uncovered.push(`${name} run: no script named`);
    return;
  }
  if (s.value === null) {
    out.uncovered.push(`${name} run ${s.literal}: the script is computed at run time`);
    return;
  }
  if (fileToo && (s.value.includes('/') || /\.[cm]?[jt]sx?$/.test(s.value))) {
    addFile(s, dir, `${name} run ${s.value}`, scan);
    return;
  }
  pushScript(name, dir, s.value, out);
}

function pushScript(name: string, dir: string, script: string, out: GateFileRefs): void {
  out.refs.push({ kind: 'packageScript', manifest: join(dir, 'package.json'), dir, script, via: `${name} ${script}` });
}

function addFile(word: ShellWord | undefined, dir: string, via: string, scan: Scan): void {
  const { out } = scan;
  if (!word) return;
  if (word.value === null) {
    out.uncovered.push(`${via}: the file is computed at run time`);
    return;
  }
  const rel = inside(scan.root, dir, word.value);
  if (rel === null) out.uncovered.push(`${word.value}: outside the workspace`);
  else out.refs.push({ kind: 'file', path: rel, via });
}

/**
 * `p` resolved against the workspace-relative `dir`, as a workspace-relative posix path, or null when it leaves the
 * workspace (`../x`, `/usr/bin/x`, `~/x`). An absolute path is inside only under `root` (the workspace's absolute path).
 */
function inside(root: string | null, dir: string, p: string): string | null {
  if (p.startsWith('~')) return null;
  let rel: string;
  if (path.posix.isAbsolute(p)) {
    if (!root) return null;
    rel = path.posix.relative(root, path.posix.normalize(p));
  } else {
    rel = path.posix.normalize(path.posix.join(dir || '.', p));
  }
  if (rel === '' || rel === '.') return '';
  if (rel === '..' || rel.startsWith('../') || path.posix.isAbsolute(rel)) return null;
  return rel;
}

function join(dir: string, name: string): string {
  return dir ? `${dir}/${name}` : name;
}

function short(text: string): string {
  const one = text.replace(/\s+/g, ' ').trim();
  return one.length > 60 ? `${one.slice(0, 57)}…` : one;
}

function mergeInto(out: GateFileRefs, more: GateFileRefs): void {
  out.refs.push(...more.refs);
  out.uncovered.push(...more.uncovered);
}

function dedupe(r: GateFileRefs): GateFileRefs {
  const seen = new Set<string>();
  const refs = r.refs.filter((x) => {
    const k =
      x.kind === 'file'
        ? `f:${x.path}`
        : x.kind === 'packageScript'
          ? `p:${x.manifest}:${x.script}`
          : `m:${x.candidates.join(',')}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
  return { refs, uncovered: [...new Set(r.uncovered)] };
}
