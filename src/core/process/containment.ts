import { spawnSync } from 'node:child_process';
import { accessSync, constants as fsConstants, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { constants as osConstants, tmpdir } from 'node:os';
import path from 'node:path';

/**
 * Process containment (nothing an agent starts escapes its iteration): every agent iteration and every gate command
 * runs in its own PID namespace when the system allows it, so ending the iteration ends every process started under it,
 * including ones that left the process group and cleared their environment (`setsid env -i server &`), which the
 * environment marker sweep (processGroup.ts `endMarkedProcesses`) cannot find. Where no namespace can be made (not
 * Linux, no `unshare`, namespaces forbidden) or config `containment` is `"marker"`, the marker sweep is the only net.
 *
 * Shape of a contained command: `unshare [--user --map-current-user] --pid --fork --kill-child --mount-proc bash -c
 * INIT ralph-init <graceTicks> <reportFile> <file> <args…>`. `unshare` is the process-group leader we spawn (the pid
 * the callers track and kill as a group); bash becomes PID 1 of the namespace and runs the command in the foreground
 * in the same process group, so group signals reach it as before. PID 1 ignores signals it has no handler for, and
 * the handlers INIT installs do nothing: it outlives the command, reaps orphans, and when the command has exited it
 * lists what is left (`<reportFile>`: `<pid-in-namespace> <pgrp-in-namespace>` lines; pgrp 0 means the command's own
 * group), sends SIGTERM to all of it, waits up to the grace and exits with the command's status, at which point the
 * kernel SIGKILLs whatever is left in the namespace. SIGKILL of the group (our grace ran out, or this process exited)
 * kills PID 1 and so, again, everything in the namespace. The network is not touched (no network namespace): the
 * agent still reaches 127.0.0.1.
 *
 * Dying with the runner (the attack: outlive a SIGKILLed runner, then tamper): `--kill-child` ties the namespace to
 * `unshare`, not `unshare` to us; a runner killed with SIGKILL left `unshare` and the agent running (an orphan that
 * could claim items after the crash). So `unshare` is started through `setpriv --pdeathsig SIGKILL` (util-linux) when
 * that works here ({@link parentDeathPrefix}): the kernel SIGKILLs `unshare` when the runner's thread that spawned it
 * dies, and with it the namespace. Uncontained (marker mode) the agent itself gets the same prefix; what it started
 * outside its group then lives on until the next start ends it (crashRecovery.ts, from the agent file in the state
 * folder).
 *
 * Limits: a command killed by a signal is reported by the init as exit 128+n (a shell's convention), see
 * {@link containedExit}; `/proc` inside is the namespace's own (tools there see only the iteration's processes).
 */

/** Config `containment`: `"auto"` uses a PID namespace when available, `"marker"` forces the marker sweep. */
export type ContainmentMode = 'auto' | 'marker';

/** What is in use: a namespace with the `unshare` arguments, or the marker sweep with the reason. */
export type Containment =
  { kind: 'pid-namespace'; unshareArgs: readonly string[]; detail: string } | { kind: 'marker'; detail: string };

/** PID 1 of the namespace (bash): see the module comment. $1 grace in 50 ms ticks, $2 report file ('-': none). */
export const CONTAINMENT_INIT = [
  'trap : INT TERM HUP QUIT PIPE',
  'g=$1 r=$2; shift 2',
  '"$@"; s=$?',
  'l=',
  'for d in /proc/[0-9]*; do',
  '  p=${d#/proc/}; [ "$p" = 1 ] && continue',
  '  read -r st 2>/dev/null < "$d/stat" || continue',
  '  st=${st##*) }; set -- $st',
  '  [ "$1" = Z ] && continue',
  '  l="$l$p $3"$\'\\n\'',
  'done',
  '[ "$r" = - ] || printf "%s" "$l" > "$r" 2>/dev/null',
  'if [ -n "$l" ]; then',
  '  kill -TERM -1 2>/dev/null',
  '  i=0; while kill -0 -1 2>/dev/null && [ $i -lt $g ]; do sleep 0.05; i=$((i+1)); done',
  'fi',
  'exit $s',
].join('\n');

/** `$0` of the init (argv[3] of its command line: `bash -c INIT ralph-init …`): how a process sees it is contained. */
export const CONTAINMENT_INIT_NAME = 'ralph-init';

let mode: ContainmentMode = 'auto';
let probed: Containment | undefined;

/** Makes `m` this process's containment mode (config `containment`, applied by `loadConfig`). */
export function setContainmentMode(m: ContainmentMode | undefined): void {
  mode = m ?? 'auto';
}

/** The mode set by {@link setContainmentMode} (default `"auto"`). */
export function containmentMode(): ContainmentMode {
  return mode;
}

/** The `unshare` arguments tried, in order: as root a plain PID namespace, otherwise inside a user namespace too. */
export function unshareCandidates(isRoot: boolean): string[][] {
  const pid = ['--pid', '--fork', '--kill-child', '--mount-proc'];
  const user = ['--user', '--map-current-user', ...pid];
  return isRoot ? [pid, user] : [user];
}

/**
 * The containment `m` gives on this system. `"auto"` probes once per process (runs `unshare … bash -c 'exit 0'`,
 * at most 5 s per candidate) and caches the answer; `"marker"` never probes.
 */
export function resolveContainment(m: ContainmentMode = mode): Containment {
  if (m === 'marker') return { kind: 'marker', detail: 'environment marker sweep (config containment: "marker")' };
  return (probed ??= probe());
}

function probe(): Containment {
  if (process.platform !== 'linux')
    return { kind: 'marker', detail: `environment marker sweep (no PID namespaces on ${process.platform})` };
  let last = '';
  for (const args of unshareCandidates(process.getuid?.() === 0)) {
    const r = spawnSync('unshare', [...args, 'bash', '-c', 'exit 0'], {
      stdio: ['ignore', 'ignore', 'pipe'],
      timeout: 5000,
      encoding: 'utf8',
    });
    if (r.status === 0)
      return { kind: 'pid-namespace', unshareArgs: args, detail: `PID namespace (unshare ${args.join(' ')})` };
    last = r.error ? r.error.message : (r.stderr || `exit ${r.status ?? r.signal}`).trim().split('\n')[0]!;
  }
  return { kind: 'marker', detail: `environment marker sweep (no PID namespace: ${last})` };
}

/** Forgets the probes (tests). */
export function resetContainmentProbe(): void {
  probed = undefined;
  protectionProbed = undefined;
  deathPrefix = undefined;
}

let deathPrefix: readonly string[] | null | undefined;

/**
 * The command prefix that makes a child die with this process: `['setpriv', '--pdeathsig', 'SIGKILL']` when
 * `setpriv` (util-linux ≥ 2.33) runs here with that option, else `null` (not Linux, no setpriv: the child outlives a
 * runner killed with SIGKILL, and only the next start's sweep ends it). Probed once per process (at most 5 s).
 * Node spawns children from the main thread, whose end is the process's end, so the signal comes when the runner dies.
 */
export function parentDeathPrefix(): readonly string[] | null {
  if (deathPrefix !== undefined) return deathPrefix;
  if (process.platform !== 'linux') return (deathPrefix = null);
  const prefix = ['setpriv', '--pdeathsig', 'SIGKILL'];
  const r = spawnSync(prefix[0]!, [...prefix.slice(1), 'true'], { stdio: 'ignore', timeout: 5000 });
  return (deathPrefix = r.status === 0 ? prefix : null);
}

/** `file args` started through `prefix` ({@link parentDeathPrefix}); unchanged for a null prefix. Pure. */
export function withPrefix(
  prefix: readonly string[] | null,
  file: string,
  args: readonly string[],
): { file: string; args: string[] } {
  return prefix && prefix.length
    ? { file: prefix[0]!, args: [...prefix.slice(1), file, ...args] }
    : { file, args: [...args] };
}

/** Whether `file` can be executed as a command (a path, or a name found on `PATH`); false when it cannot be. */
export function commandExists(file: string, pathVar: string | undefined): boolean {
  const can = (f: string) => {
    try {
      accessSync(f, fsConstants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
  if (file.includes('/')) return can(file);
  return (pathVar ?? '').split(path.delimiter).some((d) => d && can(path.join(d, file)));
}

/** A command wrapped for a namespace: run `file args` instead; read leftovers from `reportFile` after it exits. */
export interface ContainedCommand {
  file: string;
  args: string[];
  reportFile: string | null;
}

/**
 * Wraps `file args` in the namespace of `c` (see the module comment). `graceMs` is how long leftovers get between
 * SIGTERM and the namespace's end; `report` asks for a leftovers file (named after `token`, in the temp folder);
 * `deathPrefix` ({@link parentDeathPrefix}) starts `unshare` through it, so the namespace dies with this process.
 */
export function containedCommand(
  c: Extract<Containment, { kind: 'pid-namespace' }>,
  file: string,
  args: readonly string[],
  o: { graceMs: number; token: string; report: boolean; deathPrefix?: readonly string[] | null },
): ContainedCommand {
  const reportFile = o.report ? path.join(tmpdir(), `ralph-leftovers-${o.token}`) : null;
  const ticks = String(Math.max(1, Math.ceil(o.graceMs / 50)));
  return {
    ...withPrefix(o.deathPrefix ?? null, 'unshare', [
      ...c.unshareArgs,
      'bash',
      '-c',
      CONTAINMENT_INIT,
      CONTAINMENT_INIT_NAME,
      ticks,
      reportFile ?? '-',
      file,
      ...args,
    ]),
    reportFile,
  };
}

/** A process the contained command left running: its pid and process group as seen inside the namespace. */
export interface Leftover {
  pid: number;
  /** 0 when it stayed in the command's own process group. */
  pgrp: number;
}

/** Reads and removes a leftovers report (see {@link CONTAINMENT_INIT}); none when absent. Pure parse: {@link parseLeftovers}. */
export function takeLeftovers(reportFile: string | null): Leftover[] {
  if (!reportFile) return [];
  let text = '';
  try {
    text = readFileSync(reportFile, 'utf8');
  } catch {
    return [];
  }
  rmSync(reportFile, { force: true });
  return parseLeftovers(text);
}

/** `<pid> <pgrp>` lines to leftovers; other lines are skipped. */
export function parseLeftovers(text: string): Leftover[] {
  const out: Leftover[] = [];
  for (const line of text.split('\n')) {
    const m = /^(\d+) (-?\d+)$/.exec(line.trim());
    if (m) out.push({ pid: Number(m[1]), pgrp: Number(m[2]) });
  }
  return out;
}

/**
 * A contained command's exit as the caller would have seen it uncontained: the init exits 128+n when the command
 * died of signal n, so such a status is reported as that signal (the shell's convention; a command that really
 * exits with 129–192 is misread the same way a shell misreads it).
 */
export function containedExit(
  exitCode: number | null,
  signal: string | null,
): { exitCode: number | null; signal: string | null } {
  if (signal || exitCode === null || exitCode <= 128 || exitCode > 128 + 64) return { exitCode, signal };
  const name = Object.entries(osConstants.signals).find(([, n]) => n === exitCode - 128)?.[0];
  return name ? { exitCode: null, signal: name } : { exitCode, signal };
}

// ---------------------------------------------------------------------------------------------------------------
// Protected paths read-only in the kernel

/**
 * How an agent iteration's protected paths (process/protectedPaths.ts) are kept: `read-only-mounts` when the kernel
 * lets us make a mount namespace in which they are bound read-only and the agent cannot undo it; `not-enforced` with
 * the reason otherwise (not Linux, no user namespaces, containment `"marker"`): the guard's analyzer is then all
 * that keeps them, and the run and `ralph doctor` say so.
 *
 * Shape: `unshare OUTER bash -c PROTECTED_INIT ralph-init <ticks> <report> <plan> <inner> <file> <args…>`. OUTER is
 * the PID namespace of the module comment (its `--mount-proc` makes a mount namespace); for a user other than root
 * inside a user namespace where it is root (`--map-root-user`), so that PID 1 may mount. PID 1 carries out the plan
 * (read-only binds, then the writable exceptions bound back read-write), re-enters the working folder through the new
 * mounts, and runs the command through `unshare INNER` (a nested user namespace mapping the caller's own uid and
 * gid): the agent holds no capability over the mount namespace, so it cannot unmount or remount a bind, and a mount
 * namespace it makes for itself gets them locked (the kernel's rule for less privileged namespaces). Every ancestor
 * folder of a protected path is bound onto itself first: a mount point cannot be renamed, so `mv ~/.local/state x`
 * cannot swap a forged folder in.
 */
export type Protection =
  | { kind: 'read-only-mounts'; outerArgs: readonly string[]; innerArgs: readonly string[]; detail: string }
  | { kind: 'not-enforced'; detail: string };

/** The `unshare` arguments of a protected iteration for a user (`uid`, `gid`; root is 0). Pure. */
export function protectionArgs(uid: number, gid: number): { outer: string[]; inner: string[] } {
  const pid = ['--pid', '--fork', '--kill-child', '--mount-proc'];
  return uid === 0
    ? { outer: pid, inner: ['--user', '--map-user=0', '--map-group=0'] }
    : { outer: ['--user', '--map-root-user', ...pid], inner: ['--user', `--map-user=${uid}`, `--map-group=${gid}`] };
}

/**
 * PID 1 of a protected iteration: $3 the mount plan ({@link mountPlan} lines), $4 the inner `unshare` arguments, $5
 * the plan as a mount table ({@link mountTable}: a file, or `-`); then as {@link CONTAINMENT_INIT}. With a table, one
 * `mount -a` carries out the plan (a `mount` process per line cost about 15 ms of CPU each, most of it reading the
 * mount table again: 0.2 s and 0.6–1 s of wall time for a plan of 15 lines on a loaded machine, against 0.04 s and
 * 0.1 s); `mount -a` skips an entry whose path is already a mount point, so every read-only path the kernel still
 * lets us write is then bound read-only on its own, and checked again (and the writable exceptions bound again after
 * it). Without a table, each line is its own `mount`.
 * A step that fails ends it before the command runs (exit 125, the path and mount's message on stderr): never an
 * agent under protection that did not happen.
 */
export const PROTECTED_INIT = [
  'trap : INT TERM HUP QUIT PIPE',
  'g=$1 r=$2 m=$3 n=$4 f=$5 x=; shift 5',
  'if [ "$f" != - ]; then',
  '  e=$(mount -a -T "$f" 2>&1) || { printf "ralph: cannot protect the paths of this iteration: %s\\n" "$e" >&2; exit 125; }',
  'fi',
  'while IFS= read -r l; do',
  '  p=${l#*:}',
  '  case $l in',
  '    self:*) [ "$f" = - ] || continue; e=$(mount --rbind "$p" "$p" 2>&1) ;;',
  '    ro:*)',
  '      [ "$f" != - ] && [ ! -w "$p" ] && continue',
  '      x=1; e=$(mount --bind -o ro "$p" "$p" 2>&1) && { [ "$f" = - ] || [ ! -w "$p" ] || { e="still writable"; false; }; } ;;',
  // A read-only path bound again here hides the exceptions the table bound inside it: they are bound again too.
  '    rw:*) [ "$f" = - ] || [ -n "$x" ] || continue',
  '      e=$({ mount --bind "$p" "$p" && mount -o remount,bind,rw "$p"; } 2>&1) ;;',
  '    *) continue ;;',
  '  esac || { printf "ralph: cannot protect %s in this iteration: %s\\n" "$p" "$e" >&2; exit 125; }',
  'done <<RALPH_PLAN',
  '$m',
  'RALPH_PLAN',
  // The working folder was entered before the mounts: entered again, relative paths resolve through them.
  'cd "$PWD" || exit 125',
  'unshare $n "$@"; s=$?',
  ...CONTAINMENT_INIT.split('\n').slice(3),
].join('\n');

/**
 * The mount table (fstab(5) lines, for `mount -a -T`) that carries out `plan` ({@link mountPlan} lines) in order:
 * `self:` a recursive bind of the path onto itself, `ro:` a read-only bind, `rw:` a bind and then its remount
 * read-write. A path's blanks, control characters and backslashes are written as octal escapes, as fstab(5) reads
 * them. Pure.
 */
export function mountTable(plan: readonly string[]): string {
  const field = (p: string) =>
    p.replace(/[\\\x00-\x20\x7f]/g, (c) => `\\${c.charCodeAt(0).toString(8).padStart(3, '0')}`);
  const rows: string[] = [];
  for (const line of plan) {
    const colon = line.indexOf(':');
    const kind = line.slice(0, colon);
    const p = field(line.slice(colon + 1));
    if (kind === 'self') rows.push(`${p} ${p} none rbind 0 0`);
    else if (kind === 'ro') rows.push(`${p} ${p} none bind,ro 0 0`);
    else if (kind === 'rw') rows.push(`${p} ${p} none bind 0 0`, `${p} ${p} none remount,bind,rw 0 0`);
  }
  return rows.map((r) => `${r}\n`).join('');
}

/**
 * The mount plan for `layout` (PID 1 runs it in order): `self:` every ancestor folder of a read-only path, outermost
 * first (a mount point cannot be renamed); `ro:` each read-only path; `rw:` each writable exception inside one.
 * Paths that do not exist (`exists` null) are left out. Throws for a path holding a newline (it cannot be passed).
 */
export function mountPlan(
  layout: { readOnly: readonly { path: string }[]; writable: readonly { path: string }[] },
  exists: (p: string) => boolean,
): string[] {
  const ro = layout.readOnly.map((r) => path.resolve(r.path)).filter(exists);
  const ancestors = new Set<string>();
  for (const p of ro)
    for (let d = path.dirname(p); d !== path.dirname(d); d = path.dirname(d)) if (!ro.includes(d)) ancestors.add(d);
  const depth = (p: string) => p.split(path.sep).length;
  const lines = [
    ...[...ancestors].sort((a, b) => depth(a) - depth(b) || a.localeCompare(b)).map((d) => `self:${d}`),
    ...ro.map((p) => `ro:${p}`),
    ...layout.writable
      .map((w) => path.resolve(w.path))
      .filter(exists)
      .map((p) => `rw:${p}`),
  ];
  const bad = lines.find((l) => l.includes('\n'));
  if (bad) throw new Error(`a protected path holds a newline: ${JSON.stringify(bad.slice(bad.indexOf(':') + 1))}`);
  return lines;
}

let protectionProbed: Protection | undefined;

/**
 * Whether protected paths can be kept read-only here (see {@link Protection}). Probed once per process: a
 * protected command on a temporary folder must fail to write into it (at most 5 s). `"marker"` never probes.
 */
export function resolveProtection(m: ContainmentMode = mode): Protection {
  if (m === 'marker')
    return { kind: 'not-enforced', detail: 'not enforced here (config containment: "marker": no namespaces)' };
  return (protectionProbed ??= probeProtection());
}

function probeProtection(): Protection {
  if (process.platform !== 'linux')
    return { kind: 'not-enforced', detail: `not enforced here (no mount namespaces on ${process.platform})` };
  const { outer, inner } = protectionArgs(process.getuid?.() ?? -1, process.getgid?.() ?? -1);
  const dir = mkdtempSync(path.join(tmpdir(), 'ralph-protect-probe-'));
  try {
    writeFileSync(path.join(dir, 'f'), '');
    const cmd = protectedCommand(
      { kind: 'read-only-mounts', outerArgs: outer, innerArgs: inner, detail: '' },
      'bash',
      ['-c', ': 2>/dev/null > "$1/f" && exit 3; exit 0', 'probe', dir],
      mountPlan({ readOnly: [{ path: dir }], writable: [] }, () => true),
      { graceMs: 100, token: 'probe', report: false },
    );
    const r = spawnSync(cmd.file, cmd.args, { stdio: ['ignore', 'ignore', 'pipe'], timeout: 5000, encoding: 'utf8' });
    if (r.status === 0)
      return {
        kind: 'read-only-mounts',
        outerArgs: outer,
        innerArgs: inner,
        detail: `read-only in the kernel (a mount namespace: unshare ${outer.join(' ')}, then ${inner.join(' ')})`,
      };
    const why =
      r.status === 3
        ? 'a read-only bind mount could still be written'
        : r.error
          ? r.error.message
          : (r.stderr || `exit ${r.status ?? r.signal}`).trim().split('\n')[0]!;
    return { kind: 'not-enforced', detail: `not enforced here (no mount namespace for protected paths: ${why})` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Runs now the probes a contained start of mode `m` makes on first use ({@link resolveContainment},
 * {@link parentDeathPrefix}, {@link resolveProtection}): three child processes that block this thread for 0.1–0.2 s
 * together. A long-lived process that starts agents later (`ralph worker`) calls it before it takes work, so its first
 * agent does not wait for them. Returns the containment in use.
 */
export function probeContainment(m: ContainmentMode = mode): Containment {
  const c = resolveContainment(m);
  parentDeathPrefix();
  if (c.kind === 'pid-namespace') resolveProtection(m);
  return c;
}

/** Forgets the protection probe (tests). */
export function resetProtectionProbe(): void {
  protectionProbed = undefined;
}

/**
 * Wraps `file args` in a protected iteration's namespaces: the PID namespace of {@link containedCommand} with the
 * mount `plan` ({@link mountPlan}) carried out by PID 1 before the command starts in its nested user namespace.
 */
export function protectedCommand(
  p: Extract<Protection, { kind: 'read-only-mounts' }>,
  file: string,
  args: readonly string[],
  plan: readonly string[],
  o: {
    graceMs: number;
    token: string;
    report: boolean;
    deathPrefix?: readonly string[] | null;
    /** The plan's {@link mountTable} in a file no agent can write (PID 1 mounts it in one `mount -a`); else one by one. */
    tableFile?: string | null;
  },
): ContainedCommand {
  const reportFile = o.report ? path.join(tmpdir(), `ralph-leftovers-${o.token}`) : null;
  const ticks = String(Math.max(1, Math.ceil(o.graceMs / 50)));
  return {
    ...withPrefix(o.deathPrefix ?? null, 'unshare', [
      ...p.outerArgs,
      'bash',
      '-c',
      PROTECTED_INIT,
      CONTAINMENT_INIT_NAME,
      ticks,
      reportFile ?? '-',
      plan.join('\n'),
      p.innerArgs.join(' '),
      o.tableFile ?? '-',
      file,
      ...args,
    ]),
    reportFile,
  };
}
