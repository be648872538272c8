import * as path from 'node:path';
import { analyseCommand, DANGEROUS_GIT_KEY, type Analysis, type Invocation } from './commandAnalysis';
import {
  applyRewriteRule,
  GATE_LABELS,
  GATE_TIERS,
  normalizeCommand,
  type CommandPolicy,
  type GateTier,
} from './commandPolicy';
import { parseShell, shellQuote, ShellSyntaxError, writesTarget, type ShellWord } from './shellSyntax';
import { ralphDir } from '../model/ralphPaths';
import { AGENT_WRITABLE_RALPH_FILES } from '../process/protectedPaths';

/**
 * The command guard's decision (seed-systems.md §3.9 with the bypasses of §3.9's bash guard closed):
 * one PreToolUse call in, allow / deny / rewrite out. Pure: the policy, the gate state and the clock come in
 * through {@link GuardContext}; what must be recorded afterwards (a write, a gate start) comes out as effects.
 *
 * Bash order: parse (fail closed) → what cannot be seen (computed names and scripts, shells reading a pipe) →
 * hard denies (`.ralph/` and the gate state protected, blanket `git add`, downloads piped into a shell) →
 * `[deny]` → `[protect]` → `[rewrite]` (then decided again) → `[wrap]` (each matching segment routed through the
 * gate runner; the rest of a chain kept) → gate-without-write for every gate the command runs (§3.15-1).
 */

/** Files under `.ralph/` the agent may write (§3.9): the one list of what is protected is process/protectedPaths.ts. */
export { AGENT_WRITABLE_RALPH_FILES };

/** What the guard knows of the gate state (all times epoch ms). */
export interface GateStateSnapshot {
  /** Last allowed edit outside `.ralph/`, 0 when none. */
  lastWriteMs: number;
  /** Start of the last gate per label, 0 when none. */
  lastGateMs: Partial<Record<string, number>>;
  /** mtime of `.ralph/gates/<label>-latest.exit`, 0 when absent. */
  latestExitMs: Partial<Record<string, number>>;
  /** Labels whose lock a live runner holds (a call then joins it). */
  runningLabels: string[];
}

/** Everything a decision depends on. */
export interface GuardContext {
  /** Workspace root, absolute. */
  workspace: string;
  /** The external gate-state folder (`$XDG_STATE_HOME/ralph/<sha256>`), absolute. */
  stateDir: string;
  /** The user's home, for `~`. */
  home: string;
  /** The command policy, or null when the workspace has none (hard denies still apply). */
  policy: CommandPolicy | null;
  /**
   * How a wrapped command calls the gate runner: absolute node and `dist/cli.js`; `electron` when `node` is an
   * Electron binary (VS Code desktop's extension host), which then needs `ELECTRON_RUN_AS_NODE=1`.
   */
  gateRunner: { node: string; cliPath: string; electron?: boolean };
  /** Reads a script file a command runs (see `GateRunnerShape.readScript`); paths are resolved against the cwd. */
  readScript?: (absPath: string) => string | null | undefined;
  /** The real file name of a program (see `GateRunnerShape.resolveProgram`). */
  resolveProgram?: (nameOrPath: string, cwd: string) => string | undefined;
  /**
   * The real path of an absolute path: symlinks of its longest existing prefix resolved, the rest kept
   * (`r/command-policy` with `r -> .ralph` → `<ws>/.ralph/command-policy`). Without it paths are taken as written.
   */
  realPath?: (absPath: string) => string;
  state: GateStateSnapshot;
  /** Now, epoch ms. */
  now: number;
}

/** A PreToolUse call, validated. */
export interface GuardInput {
  tool_name: string;
  tool_input: Record<string, unknown>;
  cwd?: string;
}

/** What to record once the decision is acted on. */
export type GuardEffect = { kind: 'write' } | { kind: 'gate'; label: string };

export type GuardDecision =
  | { kind: 'allow'; effects: GuardEffect[] }
  /** `subject`: the command or path denied, for the activity line. */
  | { kind: 'deny'; reason: string; subject: string }
  /** Allow with `updatedInput`: every field of the original input kept, only `command` changed. */
  | { kind: 'rewrite'; reason: string; subject: string; updatedInput: Record<string, unknown>; effects: GuardEffect[] };

/** Decides one PreToolUse call. Never throws for bad input: an unknown shape is a deny. */
export function decideGuard(input: GuardInput, ctx: GuardContext): GuardDecision {
  const tool = input.tool_name;
  const cwd = typeof input.cwd === 'string' && path.isAbsolute(input.cwd) ? input.cwd : ctx.workspace;
  if (tool === 'Bash') {
    const command = input.tool_input.command;
    if (typeof command !== 'string') return deny('Bash call without a command string', '?');
    return decideBash(command, input.tool_input, cwd, ctx);
  }
  if (tool === 'Write' || tool === 'Edit' || tool === 'MultiEdit' || tool === 'NotebookEdit') {
    const file = input.tool_input.file_path ?? input.tool_input.notebook_path;
    if (typeof file !== 'string' || file === '') return deny(`${tool} call without a file path`, '?');
    return decideWrite(file, cwd, ctx);
  }
  return { kind: 'allow', effects: [] };
}

function deny(reason: string, subject: string): GuardDecision {
  return { kind: 'deny', reason, subject };
}

// ---------------------------------------------------------------------------------------------------------------
// Write / Edit / MultiEdit

function decideWrite(file: string, cwd: string, ctx: GuardContext): GuardDecision {
  const written = path.resolve(cwd, file.startsWith('~/') ? path.join(ctx.home, file.slice(2)) : file);
  const abs = inZoneTerms(ctx.realPath?.(written) ?? written, ctx);
  const ralph = ralphDir(ctx.workspace);
  if (isWithin(abs, ctx.stateDir)) return deny("the gate state is the guard's; it is not written by the agent", file);
  if (isWithin(abs, ralph)) {
    const rel = path.relative(ralph, abs);
    if ((AGENT_WRITABLE_RALPH_FILES as readonly string[]).includes(rel)) return { kind: 'allow', effects: [] };
    return deny(
      `.ralph/${rel} is managed by the loop; the agent may write only ${AGENT_WRITABLE_RALPH_FILES.map((f) => `.ralph/${f}`).join(', ')}. To change the policy, write the proposal to .ralph/policy-proposal and stop`,
      file,
    );
  }
  return { kind: 'allow', effects: [{ kind: 'write' }] };
}

/**
 * A real path put back in the workspace's own terms: when the workspace itself sits under a symlink (macOS /tmp), a
 * resolved path inside the workspace's real folder is mapped back to the workspace path.
 */
function inZoneTerms(real: string, ctx: GuardContext): string {
  const wsReal = ctx.realPath?.(ctx.workspace) ?? ctx.workspace;
  if (wsReal !== ctx.workspace && isWithin(real, wsReal)) return path.join(ctx.workspace, path.relative(wsReal, real));
  const stReal = ctx.realPath?.(ctx.stateDir) ?? ctx.stateDir;
  if (stReal !== ctx.stateDir && isWithin(real, stReal)) return path.join(ctx.stateDir, path.relative(stReal, real));
  return real;
}

/** True when `p` is `dir` or inside it. */
function isWithin(p: string, dir: string): boolean {
  const rel = path.relative(dir, p);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

// ---------------------------------------------------------------------------------------------------------------
// Bash

function decideBash(
  command: string,
  toolInput: Record<string, unknown>,
  cwd: string,
  ctx: GuardContext,
  rewritten = false,
): GuardDecision {
  const subject = command;
  let analysis: Analysis;
  try {
    const read = ctx.readScript;
    const resolveProgram = ctx.resolveProgram;
    analysis = analyseCommand(command, {
      cliPath: ctx.gateRunner.cliPath,
      readScript: read ? (f) => read(path.resolve(cwd, expandHome(f, ctx.home))) : undefined,
      resolveProgram: resolveProgram ? (p) => resolveProgram(p, cwd) : undefined,
    });
  } catch (err) {
    return deny(`the guard could not analyse the command: ${(err as Error).message}`, subject);
  }
  if (analysis.problems.length) return deny(analysis.problems[0]!.reason, subject);

  const hard = hardDeny(analysis, cwd, ctx);
  if (hard) return deny(hard, subject);

  const policy = ctx.policy;
  if (policy?.deny.length && analysis.denyOnly.length)
    return deny(
      `${analysis.denyOnly[0]!.reason} (the policy denies commands, and this could run any of them)`,
      subject,
    );
  if (policy?.protect.length) {
    // `exec >file` sends the rest of the shell's output (this call's and, the Bash tool's shell being kept, the
    // next calls') into a file: [protect] commands then run redirected.
    const exec = analysis.invocations.find(
      (inv) =>
        inv.name === 'exec' &&
        inv.argv.length === 1 &&
        inv.call.redirects.some(
          (r) =>
            (r.fd === null || r.fd === '1' || r.fd === '2') &&
            (writesTarget(r) || r.op === '>&') &&
            !(r.target?.value && /^(\/dev\/(null|stdout|stderr)|[12])$/.test(r.target.value)),
        ),
    );
    if (exec)
      return deny(
        `exec with a redirection sends every later command's output to a file, and ${policy.protect[0]!.prefix} may run only bare (.ralph/command-policy line ${policy.protect[0]!.line}, [protect])`,
        subject,
      );
  }
  for (const { name, code } of analysis.inlineCode) {
    // Inline code that can start a program could start a denied one under any spelling ("gi"+"t push"): with a
    // [deny] list, code reaching a process-spawning API is denied; code that cannot spawn (printing words) is data.
    const spawn = policy?.deny.length ? spawnApi(name, code) : null;
    if (spawn)
      return deny(
        `${name} code that can run programs (${spawn}): the guard cannot check which; run the command itself`,
        subject,
      );
    if (name !== 'sed' && mentionsZone(code, ctx))
      return deny(`${name} code that names .ralph/ or the gate state: those files are managed by the loop`, subject);
  }
  const tierPins = tierPinForms(policy);
  for (const inv of analysis.invocations) {
    const forms = commandForms(inv.argv);
    for (const rule of policy?.deny ?? []) {
      if (prefixMatches(forms, canonicalPrefix(rule.prefix)))
        return deny(
          `${rule.reason || 'denied by the command policy'} (.ralph/command-policy line ${rule.line}: ${rule.prefix})`,
          subject,
        );
    }
    for (const rule of policy?.protect ?? []) {
      if (prefixMatches(forms, canonicalPrefix(rule.prefix)) === 'sure') {
        // The call itself and every call it is nested in (`bash -c 'npm run format' | head`).
        const piped = [inv.call, ...inv.hosts].some(
          (call) =>
            call.pipedOut ||
            call.captured ||
            call.stdin.kind === 'pipe' ||
            call.redirects.some(
              (r) => writesTarget(r) && !(r.target?.value && /^\/dev\/(null|stdout|stderr)$/.test(r.target.value)),
            ),
        );
        if (piped) {
          return deny(
            `${rule.prefix} may run only bare: no pipe, redirection or capture in $(…) (.ralph/command-policy line ${rule.line}, [protect])`,
            subject,
          );
        }
      }
    }
  }

  // [rewrite]: on segments of the original text only; a match inside a nested script is denied (run it directly).
  if (!rewritten && policy?.rewrite.length) {
    const splices: Splice[] = [];
    const reasons: string[] = [];
    for (const inv of analysis.invocations) {
      const seg = segmentText(command, inv);
      const text = seg?.text ?? inv.argv.map((w) => w.value ?? w.literal).join(' ');
      for (const rule of policy.rewrite) {
        const replaced = applyRewriteRule(rule, text);
        if (replaced === undefined || replaced === text) continue;
        if (!seg)
          return deny(
            `${text} must be written as ${replaced} (${rule.reason || `.ralph/command-policy line ${rule.line}`}); run it directly, not inside ${inv.via.at(-1) ?? 'another command'}`,
            subject,
          );
        splices.push({ start: seg.start, end: seg.end, text: replaced });
        reasons.push(rule.reason || `.ralph/command-policy line ${rule.line}`);
        break;
      }
    }
    if (splices.length) {
      const next = applySplices(command, splices);
      const again = decideBash(next, toolInput, cwd, ctx, true);
      if (again.kind === 'deny') return deny(`${again.reason} (after rewriting to: ${next})`, subject);
      const reason = `rewritten: ${reasons.join('; ')}${again.kind === 'rewrite' ? `; ${again.reason}` : ''}`;
      const finalInput = again.kind === 'rewrite' ? again.updatedInput : { ...toolInput, command: next };
      return { kind: 'rewrite', reason, subject, updatedInput: finalInput, effects: again.effects };
    }
  }

  // [wrap] (and the [gates] pins): route matching segments through the gate runner.
  const wrapRows = wrapRules(policy);
  const splices: Splice[] = [];
  const gateLabels: string[] = [];
  const insideGate = new Set<Invocation>();
  for (const inv of analysis.invocations) {
    if (inv.gate) {
      // A direct gate call: the tier label-lock (§3.9 step 6), then gate-without-write below.
      const pinnedTiers = tierPins.filter((p) => p.command === normalizeCommand(inv.gate!.command)).map((p) => p.tier);
      if (pinnedTiers.length && !(pinnedTiers as string[]).includes(inv.gate.label)) {
        return deny(
          `\`${inv.gate.command}\` is the pinned ${pinnedTiers.join('/')} gate: run it under that label, not ${inv.gate.label}`,
          subject,
        );
      }
      if (!(GATE_LABELS as readonly string[]).includes(inv.gate.label))
        return deny(`unknown gate label ${inv.gate.label} (expected ${GATE_LABELS.join(', ')})`, subject);
      gateLabels.push(inv.gate.label);
    }
  }
  for (const inv of analysis.invocations) if (inv.via.some((v) => v.startsWith('gate '))) insideGate.add(inv);
  const chainPins = tierPins.filter((p) => p.single === null);
  const wholeChain = chainPins.find((p) => p.command === normalizeCommand(command));
  if (wholeChain && !analysis.invocations.some((i) => i.gate)) {
    splices.push({
      start: 0,
      end: Buffer.byteLength(command),
      text: gateCommand(ctx, wholeChain.tier, command, toolInput),
    });
    gateLabels.push(wholeChain.tier);
  } else {
    for (const inv of analysis.invocations) {
      if (inv.gate || insideGate.has(inv)) continue;
      const forms = commandForms(inv.argv);
      let matched: { label: string; what: string; pin?: string } | null = null;
      let maybe: string | null = null;
      for (const row of wrapRows) {
        const m = prefixMatches(row.pin ? forms.filter((f) => f.length === row.prefix.length) : forms, row.prefix);
        if (m === 'sure') {
          matched = { label: row.label, what: row.what, pin: row.pin };
          break;
        }
        if (m === 'maybe') maybe ??= row.what;
      }
      if (!matched) {
        // A pin with more words (`npm test -- --watch=false`) runs the gate's suite outside the gate runner.
        const longer = wrapRows.find(
          (row) =>
            row.pin &&
            prefixMatches(
              forms.filter((f) => f.length > row.prefix.length),
              row.prefix,
            ),
        );
        if (longer)
          return deny(
            `\`${longer.pin}\` is the pinned ${longer.label} gate: run it exactly as pinned (it goes through the gate runner), or run a narrower suite through ralph gate unit -- '…'`,
            subject,
          );
        if (maybe)
          return deny(
            `this may run \`${maybe}\`, which the policy routes through the gate runner: spell the command out`,
            subject,
          );
        continue;
      }
      const seg = segmentText(command, inv);
      if (!seg)
        return deny(
          `\`${matched.what}\` runs through the gate runner (label ${matched.label}): run it directly, not inside ${inv.via.at(-1) ?? 'another command'}`,
          subject,
        );
      splices.push({
        start: seg.start,
        end: seg.end,
        text: gateCommand(ctx, matched.label, matched.pin ?? seg.text, toolInput),
      });
      gateLabels.push(matched.label);
    }
  }

  // Gate-without-write (§3.9 step 6, for every gate the command runs: §3.15-1), with ms timestamps (§3.15-8).
  const effects: GuardEffect[] = [];
  // An edit made by this very command counts (sed -i, patch, git apply …); a plain output redirection does not
  // (else `npm test > out.txt` would always re-run), as the seed counts only Write / Edit.
  const writes = analysis.invocations.some(isWriteInvocation);
  if (writes) effects.push({ kind: 'write' });
  for (const label of [...new Set(gateLabels)]) {
    const s = ctx.state;
    const last = s.lastGateMs[label] ?? 0;
    const exitAt = s.latestExitMs[label] ?? 0;
    if (!writes && !s.runningLabels.includes(label) && last > 0 && exitAt >= last && last >= s.lastWriteMs) {
      return deny(
        `gate ${label} already ran at ${new Date(last).toISOString()} and nothing was edited since: change the code before running it again (its result: .ralph/gates/${label}-latest.log)`,
        subject,
      );
    }
    effects.push({ kind: 'gate', label });
  }

  if (!splices.length) return { kind: 'allow', effects };
  const next = applySplices(command, splices);
  return {
    kind: 'rewrite',
    reason: `routed through the gate runner (${[...new Set(gateLabels)].join(', ')})`,
    subject,
    updatedInput: { ...toolInput, command: next },
    effects,
  };
}

interface Splice {
  /** Byte offsets in the original command. */
  start: number;
  end: number;
  text: string;
}

function applySplices(command: string, splices: Splice[]): string {
  const bytes = Buffer.from(command);
  let out = '';
  let at = 0;
  for (const s of [...splices].sort((a, b) => a.start - b.start)) {
    if (s.start < at) continue;
    out += bytes.subarray(at, s.start).toString() + s.text;
    at = s.end;
  }
  return out + bytes.subarray(at).toString();
}

/** The invocation's words as they stand in the original text (byte range), or null when nested. */
function segmentText(command: string, inv: Invocation): { start: number; end: number; text: string } | null {
  if (inv.nested || inv.argv.length === 0) return null;
  const start = inv.argv[0]!.start;
  const last = inv.argv.at(-1)!;
  // xargs' supplied arguments are not in the text.
  const end = last.end > last.start ? last.end : (inv.argv.at(-2)?.end ?? start);
  // A redirection inside the range (`npm >x test`) would be carried into the gate: refuse.
  if (inv.call.redirects.some((r) => r.target && r.target.start > start && r.target.start < end)) return null;
  const text = Buffer.from(command).subarray(start, end).toString();
  return { start, end, text };
}

/** `<node> <cli.js> -C <workspace> gate <label> --wait-ms N -- '<segment>'`: how a wrapped segment calls the gate runner. */
function gateCommand(ctx: GuardContext, label: string, segment: string, toolInput: Record<string, unknown>): string {
  // The waiter gives up before the Bash tool's own timeout (default 2 min) so the agent sees STILL RUNNING.
  const toolTimeout = typeof toolInput.timeout === 'number' && toolInput.timeout > 0 ? toolInput.timeout : 120_000;
  const waitMs = Math.max(5_000, toolTimeout - 10_000);
  // -C: the gate runs from the workspace root (artifacts in its .ralph/gates/) wherever the agent's shell is.
  return `${ctx.gateRunner.electron ? 'ELECTRON_RUN_AS_NODE=1 ' : ''}${shellQuote(ctx.gateRunner.node)} ${shellQuote(ctx.gateRunner.cliPath)} -C ${shellQuote(ctx.workspace)} gate ${label} --wait-ms ${waitMs} -- ${shellQuote(segment)}`;
}

// ---------------------------------------------------------------------------------------------------------------
// Canonical forms and prefix matching

/** Global options of tools whose sub-command follows them (`git -C dir push` is `git push`). */
const GLOBAL_OPTIONS: Record<string, { withArg: string[]; flags?: string[] }> = {
  git: {
    withArg: ['-C', '-c', '--git-dir', '--work-tree', '--namespace', '--super-prefix', '--config-env', '--exec-path'],
    flags: [],
  },
  pnpm: { withArg: ['-C', '--dir', '--filter', '-F', '--reporter', '--loglevel', '--workspace-dir'] },
  npm: { withArg: ['--prefix', '-w', '--workspace', '--loglevel', '--userconfig', '-C'] },
  yarn: { withArg: ['--cwd'] },
};
/** Sub-command spellings that mean the same (`npm run-script x` = `npm run x`, `npm t` = `npm test`). */
const SUBCOMMAND_ALIASES: Record<string, Record<string, string>> = {
  npm: {
    'run-script': 'run',
    rum: 'run',
    urn: 'run',
    t: 'test',
    tst: 'test',
    x: 'exec',
    i: 'install',
    add: 'install',
    rb: 'rebuild',
  },
  pnpm: { i: 'install', t: 'test', tst: 'test', rm: 'remove' },
  git: { stage: 'add' },
  yarn: {},
};
/**
 * npm's commands (npm 10 `cmd-list`): npm also accepts any unambiguous abbreviation of one (`npm pub` = `npm
 * publish`), resolved here against these and the aliases.
 */
const NPM_COMMANDS = [
  'access',
  'adduser',
  'audit',
  'bugs',
  'cache',
  'ci',
  'completion',
  'config',
  'dedupe',
  'deprecate',
  'diff',
  'dist-tag',
  'docs',
  'doctor',
  'edit',
  'exec',
  'explain',
  'explore',
  'find-dupes',
  'fund',
  'get',
  'help',
  'help-search',
  'hook',
  'init',
  'install',
  'install-ci-test',
  'install-test',
  'link',
  'll',
  'login',
  'logout',
  'ls',
  'org',
  'outdated',
  'owner',
  'pack',
  'ping',
  'pkg',
  'prefix',
  'profile',
  'prune',
  'publish',
  'query',
  'rebuild',
  'repo',
  'restart',
  'root',
  'run-script',
  'sbom',
  'search',
  'set',
  'shrinkwrap',
  'star',
  'stars',
  'start',
  'stop',
  'team',
  'test',
  'token',
  'undeprecate',
  'uninstall',
  'unpublish',
  'unstar',
  'update',
  'version',
  'view',
  'whoami',
];
const NPM_ALIASES: Record<string, string> = {
  run: 'run-script',
  author: 'owner',
  home: 'docs',
  issues: 'bugs',
  info: 'view',
  show: 'view',
  find: 'search',
  unlink: 'uninstall',
  remove: 'uninstall',
  rm: 'uninstall',
  r: 'uninstall',
  un: 'uninstall',
  list: 'ls',
  ln: 'link',
  create: 'init',
  it: 'install-test',
  cit: 'install-ci-test',
  up: 'update',
  upgrade: 'update',
  c: 'config',
  s: 'search',
  se: 'search',
  ddp: 'dedupe',
  v: 'view',
  'clean-install': 'ci',
  ic: 'ci',
  why: 'explain',
  la: 'll',
};

/** An npm sub-command as npm resolves it: alias, exact command, or unique abbreviation; unchanged otherwise. */
function npmCommand(sub: string): string {
  if (SUBCOMMAND_ALIASES.npm![sub]) return SUBCOMMAND_ALIASES.npm![sub]!;
  if (NPM_COMMANDS.includes(sub) || sub in NPM_ALIASES) return sub;
  const hits = [
    ...new Set(
      [...NPM_COMMANDS, ...Object.keys(NPM_ALIASES)].filter((c) => c.startsWith(sub)).map((c) => NPM_ALIASES[c] ?? c),
    ),
  ];
  const one = hits.length === 1 ? hits[0]! : sub;
  return one === 'run-script' ? 'run' : one;
}
/** npm's boolean long options (they take no value), for the `--opt value` spelling above. */
const NPM_FLAGS = new Set([
  '--global',
  '--yes',
  '--no',
  '--silent',
  '--quiet',
  '--verbose',
  '--force',
  '--dry-run',
  '--json',
  '--parseable',
  '--long',
  '--offline',
  '--prefer-offline',
  '--prefer-online',
  '--ignore-scripts',
  '--if-present',
  '--workspaces',
  '--include-workspace-root',
  '--save',
  '--save-dev',
  '--save-exact',
  '--no-save',
  '--legacy-peer-deps',
  '--foreground-scripts',
  '--no-audit',
  '--no-fund',
  '--color',
  '--no-color',
  '--progress',
  '--no-progress',
  '--production',
  '--all',
  '--recursive',
]);
/** Runners whose next word is the program (`npx mocha` runs `mocha`). */
const RUNNERS: Record<string, string[]> = {
  npx: [],
  bunx: [],
  pnpx: [],
  'pnpm dlx': [],
  'pnpm exec': [],
  'npm exec': [],
  'yarn exec': [],
  'yarn dlx': [],
};

/** One spelling of a command: words, where `null` is a computed word (its pattern kept). */
type Form = (string | ShellWord)[];

/**
 * The spellings a command is matched under: its canonical form (global options dropped, `pnpm run X` → `pnpm X`,
 * aliases resolved) and, for package runners, the bare program (`npx vitest`, `pnpm exec vitest`, `pnpm vitest`,
 * `yarn vitest` → `vitest`).
 */
export function commandForms(argv: ShellWord[]): Form[] {
  const name = path.posix.basename(argv[0]!.value ?? '');
  let words: Form = [name, ...argv.slice(1).map((w) => (w.value !== null ? w.value : w))];
  const extra: Form[] = [];
  const g = GLOBAL_OPTIONS[name];
  if (g) {
    let i = 1;
    while (i < words.length) {
      const w = words[i];
      if (typeof w !== 'string' || !w.startsWith('-') || w === '--') break;
      const opt = w.includes('=') ? w.slice(0, w.indexOf('=')) : w;
      i += g.withArg.includes(opt) && !w.includes('=') ? 2 : 1;
    }
    // npm takes unknown `--opt value` pairs too (`npm --registry X publish`): the spelling with each unknown long
    // option taking the next word is matched as well.
    if (name === 'npm') {
      let j = 1;
      while (j < words.length) {
        const w = words[j];
        if (typeof w !== 'string' || !w.startsWith('-') || w === '--') break;
        j += w.startsWith('--') && !w.includes('=') && !NPM_FLAGS.has(w) ? 2 : g.withArg.includes(w) ? 2 : 1;
      }
      if (j !== i && j < words.length) {
        const alt: Form = [name, ...words.slice(j)];
        if (typeof alt[1] === 'string') alt[1] = npmCommand(alt[1]);
        if (
          name === 'npm' &&
          alt[1] === 'run' &&
          typeof alt[2] === 'string' &&
          ['test', 'start', 'stop', 'restart'].includes(alt[2])
        )
          alt.splice(1, 1);
        extra.push(alt);
      }
    }
    words = [name, ...words.slice(i)];
    const sub = words[1];
    if (typeof sub === 'string') {
      const alias = name === 'npm' ? npmCommand(sub) : SUBCOMMAND_ALIASES[name]?.[sub];
      if (alias) words[1] = alias;
    }
    // `pnpm run X` / `yarn run X` → `pnpm X`; `npm run test|start|stop|restart` → `npm test` …
    if ((name === 'pnpm' || name === 'yarn') && words[1] === 'run') words.splice(1, 1);
    if (
      name === 'npm' &&
      words[1] === 'run' &&
      typeof words[2] === 'string' &&
      ['test', 'start', 'stop', 'restart'].includes(words[2])
    )
      words.splice(1, 1);
  }
  const forms: Form[] = [words, ...extra];
  // Package runners and node_modules/.bin: the bare program is a second spelling.
  for (const runner of Object.keys(RUNNERS)) {
    const parts = runner.split(' ');
    if (parts.every((p, k) => words[k] === p)) {
      let i = parts.length;
      while (i < words.length && typeof words[i] === 'string' && (words[i] as string).startsWith('-'))
        i += words[i] === '-p' || words[i] === '--package' ? 2 : 1;
      if (words[i] === '--') i++;
      const prog = words[i];
      if (i < words.length)
        forms.push([typeof prog === 'string' ? path.posix.basename(prog) : prog!, ...words.slice(i + 1)]);
    }
  }
  // `node node_modules/.bin/mocha …` runs mocha.
  if (
    (name === 'node' || name === 'nodejs') &&
    typeof words[1] === 'string' &&
    /(^|\/)node_modules\/\.bin\/[^/]+$/.test(words[1])
  )
    forms.push([path.posix.basename(words[1]), ...words.slice(2)]);
  if (
    (name === 'pnpm' || name === 'yarn' || name === 'bun') &&
    words.length > 1 &&
    typeof words[1] === 'string' &&
    !words[1].startsWith('-')
  )
    forms.push(words.slice(1));
  return forms;
}

const prefixCache = new Map<string, string[]>();

/** A policy prefix in canonical form (`pnpm run lint` → `pnpm lint`, `npx mocha` → `mocha`). Cached per text. */
export function canonicalPrefix(prefix: string): string[] {
  let c = prefixCache.get(prefix);
  if (!c) {
    if (prefixCache.size > 1000) prefixCache.clear();
    c = canonicalPrefixUncached(prefix);
    prefixCache.set(prefix, c);
  }
  return c;
}

function canonicalPrefixUncached(prefix: string): string[] {
  let parsed;
  try {
    parsed = parseShell(prefix);
  } catch (err) {
    if (err instanceof ShellSyntaxError) return prefix.trim().split(/\s+/);
    throw err;
  }
  const call = parsed.calls[0];
  if (!call || parsed.calls.length !== 1 || call.words.some((w) => w.value === null)) return prefix.trim().split(/\s+/);
  const forms = commandForms(call.words);
  const best =
    forms.length > 1 && Object.keys(RUNNERS).some((r) => r.split(' ').every((p, k) => forms[0]![k] === p))
      ? forms[1]!
      : forms[0]!;
  return best.map((w) => (typeof w === 'string' ? w : w.literal));
}

/**
 * Does a command start with `prefix` (word by word)? `sure`: every word equal; `maybe`: a computed word could
 * equal (or, unquoted, split into) the rest; `no` otherwise.
 */
export function prefixMatches(forms: Form[], prefix: string[]): 'sure' | 'maybe' | false {
  let best: 'sure' | 'maybe' | false = false;
  for (const form of forms) {
    let result: 'sure' | 'maybe' | false = 'sure';
    for (let k = 0; k < prefix.length; k++) {
      const w = form[k];
      if (w === undefined) {
        result = false;
        break;
      }
      if (typeof w === 'string') {
        if (w !== prefix[k]) {
          result = false;
          break;
        }
        continue;
      }
      if (w.splittable) {
        result = 'maybe';
        break;
      }
      if (!w.pattern.test(prefix[k]!)) {
        result = false;
        break;
      }
      result = 'maybe';
    }
    if (result === 'sure') return 'sure';
    if (result === 'maybe') best = 'maybe';
  }
  return best;
}

interface WrapRow {
  prefix: string[];
  label: string;
  what: string;
  /**
   * A `[gates]` pin: matches only the whole command (any spelling of it), and the gate runs the pin's own text, so
   * the runner's tier label-lock (STALE TIER PIN) accepts it. `npm test -- --grep x` is not the pin.
   */
  pin?: string;
}

/** `[wrap]` rows plus the single-command `[gates]` pins (§3.9 step 5), pins first. */
const wrapCache = new WeakMap<CommandPolicy, WrapRow[]>();

function wrapRules(policy: CommandPolicy | null): WrapRow[] {
  if (!policy) return [];
  const cached = wrapCache.get(policy);
  if (cached) return cached;
  const rows: WrapRow[] = [];
  wrapCache.set(policy, rows);
  for (const pin of tierPinForms(policy))
    if (pin.single) rows.push({ prefix: pin.single, label: pin.tier, what: pin.command, pin: pin.command });
  for (const w of policy.wrap) rows.push({ prefix: canonicalPrefix(w.prefix), label: w.label, what: w.prefix });
  return rows;
}

interface TierPin {
  tier: GateTier;
  /** Normalised command. */
  command: string;
  /** The pin as one simple command's canonical words, or null for a chain (`a && b`). */
  single: string[] | null;
}

const pinCache = new WeakMap<CommandPolicy, TierPin[]>();

function tierPinForms(policy: CommandPolicy | null): TierPin[] {
  if (!policy) return [];
  const cached = pinCache.get(policy);
  if (cached) return cached;
  const out: TierPin[] = [];
  pinCache.set(policy, out);
  for (const tier of GATE_TIERS) {
    const row = policy.gates[tier];
    if (!row) continue;
    let single: string[] | null = null;
    try {
      const parsed = parseShell(row.command);
      const c = parsed.calls[0];
      const oneSimple =
        parsed.calls.length === 1 &&
        c &&
        c.words.every((w) => w.value !== null) &&
        c.redirects.length === 0 &&
        !c.pipedOut &&
        c.stdin.kind === 'inherited' &&
        Buffer.byteLength(row.command.trim()) === c.end - c.start;
      if (oneSimple) single = canonicalPrefix(row.command);
    } catch {
      single = null;
    }
    out.push({ tier, command: normalizeCommand(row.command), single });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Hard denies

const DESTRUCTIVE = new Set(['rm', 'rmdir', 'unlink', 'shred', 'srm', 'truncate', 'mv']);
const WRITERS = new Set([
  'cp',
  'ln',
  'install',
  'rsync',
  'tee',
  'touch',
  'chmod',
  'chown',
  'chgrp',
  'chattr',
  'setfacl',
  'mkfifo',
  'mknod',
  'dd',
  'sed',
  'perl',
  'ruby',
  'patch',
  'tar',
  'unzip',
  'git',
]);
const INLINE_CODE = new Set([
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
  'awk',
  'gawk',
  'mawk',
]);

/** A path argument a command would change. */
interface Target {
  word: ShellWord;
  /** Deleting or moving (an ancestor of `.ralph/` counts), not just writing. */
  destructive: boolean;
  /** Base folder for a relative path (`git -C dir`), default the cwd. */
  base?: string;
}

const GIT_EDITS = new Set([
  'apply',
  'am',
  'checkout',
  'restore',
  'reset',
  'merge',
  'pull',
  'rebase',
  'cherry-pick',
  'revert',
  'stash',
  'switch',
  'mv',
  'rm',
]);

function isWriteInvocation(inv: Invocation): boolean {
  if (inv.name === 'git') {
    const sub = commandForms(inv.argv)[0]![1];
    return typeof sub === 'string' && GIT_EDITS.has(sub);
  }
  return (
    DESTRUCTIVE.has(inv.name) ||
    (WRITERS.has(inv.name) &&
      inv.name !== 'git' &&
      (inv.name !== 'sed' && inv.name !== 'perl' && inv.name !== 'ruby'
        ? true
        : inv.argv.some(
            (w) => w.value?.startsWith('-i') || w.value === '--in-place' || /^-[a-z]*i/.test(w.value ?? ''),
          )))
  );
}

function nonOptions(words: ShellWord[], withArg: string[] = []): ShellWord[] {
  const out: ShellWord[] = [];
  let ended = false;
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    if (!ended && w.value === '--') {
      ended = true;
      continue;
    }
    if (!ended && w.value !== null && w.value.startsWith('-') && w.value !== '-') {
      if (withArg.includes(w.value)) i++;
      continue;
    }
    out.push(w);
  }
  return out;
}

/** The paths an invocation would delete, move or write. */
function targetsOf(inv: Invocation): Target[] {
  const args = inv.argv.slice(1);
  const v = (w: ShellWord | undefined) => w?.value ?? null;
  switch (inv.name) {
    case 'rm':
    case 'rmdir':
    case 'unlink':
    case 'shred':
    case 'srm':
      return nonOptions(args).map((word) => ({ word, destructive: true }));
    case 'truncate':
      return nonOptions(args, ['-s', '-r', '--size', '--reference']).map((word) => ({ word, destructive: true }));
    case 'mv':
      return nonOptions(args, ['-S', '--suffix'])
        .map((word) => ({ word, destructive: true }))
        .concat(optionValues(args, ['-t', '--target-directory']).map((word) => ({ word, destructive: true })));
    case 'cp':
    case 'ln':
    case 'install':
    case 'rsync': {
      const files = nonOptions(args, [
        '-t',
        '--target-directory',
        '-S',
        '--suffix',
        '-m',
        '--mode',
        '-o',
        '-g',
        '-e',
        '--rsh',
        '--exclude',
        '--include',
        '--filter',
        '-f',
      ]);
      const dest = optionValues(args, ['-t', '--target-directory']);
      const destructive =
        inv.name === 'rsync' && args.some((w) => v(w)?.startsWith('--delete') || v(w) === '--remove-source-files');
      const out: Target[] = [...dest, ...(dest.length ? [] : files.slice(-1))].map((word) => ({ word, destructive }));
      if (args.some((w) => v(w) === '--remove-source-files'))
        out.push(...files.slice(0, -1).map((word) => ({ word, destructive: true })));
      return out;
    }
    case 'tee':
    case 'touch':
    case 'chmod':
    case 'chown':
    case 'chgrp':
    case 'chattr':
    case 'setfacl':
    case 'mkfifo':
    case 'mknod':
    case 'patch':
      return nonOptions(args, ['-r', '--reference', '-d', '-m', '-i', '-o', '-t']).map((word) => ({
        word,
        destructive: false,
      }));
    case 'dd':
      return args
        .filter((w) => (w.value === null ? w.literal.startsWith('of=') : w.value.startsWith('of=')))
        .map((w) => ({
          word: { ...w, value: w.value?.slice(3) ?? null, literal: w.literal.replace(/^of=/, '') },
          destructive: false,
        }));
    case 'sed':
    case 'gsed':
    case 'perl':
    case 'ruby': {
      const out: Target[] = [];
      if (inv.name === 'sed' || inv.name === 'gsed') {
        // `w FILE`, `W FILE` and the `w FILE` flag of `s///` write FILE.
        const explicit = optionValues(args, ['-e', '--expression']);
        const scripts = explicit.length ? explicit : nonOptions(args, ['-f', '--file', '-l']).slice(0, 1);
        for (const sw of scripts) {
          if (sw.value === null) continue;
          const writes: string[] = [];
          sedExecutes(sw.value, writes);
          for (const f of writes)
            out.push({
              word: { ...sw, value: f, literal: f, pattern: new RegExp(`^${escapeRe(f)}$`) },
              destructive: false,
            });
        }
      }
      if (!args.some((w) => /^-[a-zA-Z]*i/.test(w.value ?? '') || w.value?.startsWith('--in-place'))) return out;
      return out.concat(
        nonOptions(args, ['-e', '-f', '--expression', '--file']).map((word) => ({ word, destructive: false })),
      );
    }
    // Compressors replace FILE by FILE.gz (the original is deleted) unless told to keep it or write to stdout.
    case 'gzip':
    case 'gunzip':
    case 'xz':
    case 'unxz':
    case 'lzma':
    case 'bzip2':
    case 'bunzip2':
    case 'zstd':
    case 'lz4':
    case 'lzip':
    case 'pigz':
    case 'compress':
    case 'brotli': {
      const keeps = args.some(
        (w) =>
          ['--stdout', '--to-stdout', '--keep', '--test', '--list'].includes(w.value ?? '') ||
          /^-[a-zA-Z0-9]*[cktl]/.test(w.value ?? ''),
      );
      return keeps
        ? []
        : nonOptions(args, ['-S', '--suffix', '-T', '--threads', '-o']).map((word) => ({ word, destructive: true }));
    }
    case 'sort':
    case 'shuf':
    case 'iconv':
      return optionValues(args, ['-o', '--output']).map((word) => ({ word, destructive: false }));
    case 'uniq':
      // uniq [INPUT [OUTPUT]]: the second file is written.
      return nonOptions(args, ['-f', '-s', '-w', '--skip-fields', '--skip-chars', '--check-chars', '-D'])
        .slice(1, 2)
        .map((word) => ({ word, destructive: false }));
    case 'script':
      // script [FILE]: the typescript; -O/-B/-I/-T log files.
      return [
        ...nonOptions(args, ['-c', '--command', '-E', '--echo', '-m', '--logging-format']).slice(0, 1),
        ...optionValues(args, ['-O', '--log-out', '-B', '--log-io', '-I', '--log-in', '-T', '--log-timing', '-t']),
      ].map((word) => ({ word, destructive: false }));
    case 'zip': {
      const files = nonOptions(args, ['-b', '-n', '-t', '-tt', '-x', '-i', '-P', '-O', '--out']);
      const move = args.some((w) => w.value === '--move' || /^-[a-zA-Z]*m/.test(w.value ?? ''));
      // The archive is written; with -m the files put into it are deleted.
      return files.flatMap((word, k): Target[] => (k === 0 || move ? [{ word, destructive: k > 0 }] : []));
    }
    case 'fallocate':
    case 'sponge':
    case 'dos2unix':
    case 'unix2dos':
    case 'mac2unix':
      return nonOptions(args, ['-o', '-l', '--offset', '--length', '-n', '--newfile']).map((word) => ({
        word,
        destructive: false,
      }));
    case 'curl':
      return optionValues(args, ['-o', '--output']).map((word) => ({ word, destructive: false }));
    case 'wget':
      return optionValues(args, ['-O', '--output-document', '-o', '--output-file']).map((word) => ({
        word,
        destructive: false,
      }));
    case 'tar': {
      const extract = args.some(
        (w) => /^-?[a-zA-Z]*x/.test(w.value ?? '') || w.value === '--extract' || w.value === '--get',
      );
      const out = extract
        ? optionValues(args, ['-C', '--directory']).map((word) => ({ word, destructive: false }))
        : [];
      // --remove-files deletes what it archives; -f names the archive it writes.
      if (args.some((w) => w.value === '--remove-files'))
        out.push(
          ...nonOptions(args, ['-f', '--file', '-C', '--directory']).map((word) => ({ word, destructive: true })),
        );
      if (!extract) out.push(...optionValues(args, ['-f', '--file']).map((word) => ({ word, destructive: false })));
      return out;
    }
    case 'unzip':
      return optionValues(args, ['-d']).map((word) => ({ word, destructive: false }));
    case 'find': {
      const starts: ShellWord[] = [];
      for (const w of args) {
        if (w.value !== null && (w.value.startsWith('-') || w.value === '(' || w.value === '!')) break;
        starts.push(w);
      }
      const dot: ShellWord = {
        value: '.',
        pattern: /^\.$/,
        splittable: false,
        literal: '.',
        expansion: 'none',
        start: 0,
        end: 0,
      };
      const out: Target[] = [];
      if (args.some((w) => w.value === '-delete'))
        out.push(...(starts.length ? starts : [dot]).map((word) => ({ word, destructive: true })));
      out.push(
        ...optionValues(args, ['-fprint', '-fprint0', '-fprintf', '-fls']).map((word) => ({
          word,
          destructive: false,
        })),
      );
      return out;
    }
    case 'git':
      return gitTargets(args);
    case 'vim':
    case 'vi':
    case 'nvim':
    case 'ex':
    case 'ed':
    case 'view':
    case 'gvim':
    case 'vimdiff':
    case 'emacs':
    case 'nano':
    case 'pico':
    case 'micro':
    case 'joe':
    case 'kak':
    case 'hx':
      // An editor may write every file it opens (`vim -es -c '%d' -c wq FILE`).
      return nonOptions(args, ['-c', '--cmd', '-S', '-s', '-u', '-i', '-T', '-w', '-W', '--eval', '-l', '--load'])
        .filter((w) => !(w.value ?? '').startsWith('+'))
        .map((word) => ({ word, destructive: false }));
  }
  return [];
}

/** Values of `-t X` / `--opt=X` / `--opt X` options. */
function optionValues(words: ShellWord[], names: string[]): ShellWord[] {
  const out: ShellWord[] = [];
  for (let i = 0; i < words.length; i++) {
    const v = words[i]!.value;
    if (v === null) continue;
    if (names.includes(v) && words[i + 1]) out.push(words[++i]!);
    else {
      const long = names.find((n) => n.startsWith('--') && v.startsWith(`${n}=`));
      if (long) out.push({ ...words[i]!, value: v.slice(long.length + 1) });
    }
  }
  return out;
}

/** The folder of `git -C DIR` (the last one), undefined when none, null when computed. */
function gitDirOption(argv: ShellWord[]): string | null | undefined {
  let base: string | null | undefined;
  for (let i = 1; i < argv.length; i++) {
    const v = argv[i]!.value;
    if (v === null || !v.startsWith('-')) break;
    if (v === '-C') base = argv[i + 1]?.value ?? null;
    if (
      ['-C', '-c', '--git-dir', '--work-tree', '--namespace', '--exec-path', '--config-env', '--super-prefix'].includes(
        v,
      )
    )
      i++;
  }
  return base;
}

/** `git rm|mv|clean|stash -u`: what they would delete (relative to `git -C`). */
function gitTargets(args: ShellWord[]): Target[] {
  let i = 0;
  let base: string | undefined;
  while (i < args.length && args[i]!.value?.startsWith('-')) {
    const v = args[i]!.value!;
    if (v === '-C') base = args[i + 1]?.value ?? '\0computed';
    i += ['-C', '-c', '--git-dir', '--work-tree', '--namespace', '--exec-path', '--config-env'].includes(v) ? 2 : 1;
  }
  const sub = args[i]?.value;
  const rest = args.slice(i + 1);
  const dot: ShellWord = {
    value: '.',
    pattern: /^\.$/,
    splittable: false,
    literal: '.',
    expansion: 'none',
    start: 0,
    end: 0,
  };
  const paths = nonOptions(rest, ['-e', '--exclude', '-m', '--message', '-F']);
  const withBase = (t: Target): Target => (base ? { ...t, base } : t);
  switch (sub) {
    case 'rm':
    case 'mv':
      return paths.map((word) => withBase({ word, destructive: true }));
    case 'checkout':
    case 'restore': {
      // Overwrites the named paths with committed content; `.` (or a folder above .ralph/) takes .ralph/ with it.
      const dd = rest.findIndex((w) => w.value === '--');
      const named =
        sub === 'checkout' && dd >= 0
          ? rest.slice(dd + 1)
          : nonOptions(rest, ['-b', '-B', '--orphan', '-s', '--source', '--conflict', '--pathspec-from-file']);
      return named.map((word) => withBase({ word, destructive: true }));
    }
    case 'clean': {
      const flags = rest
        .filter((w) => w.value?.startsWith('-'))
        .map((w) => w.value!)
        .join(' ');
      if (!/-[a-zA-Z]*[dxX]/.test(flags)) return paths.map((word) => withBase({ word, destructive: true }));
      return (paths.length ? paths : [dot]).map((word) => withBase({ word, destructive: true }));
    }
    case 'stash': {
      const all = rest.some(
        (w) =>
          ['-a', '--all', '-u', '--include-untracked'].includes(w.value ?? '') || /^-[a-zA-Z]*[au]/.test(w.value ?? ''),
      );
      return all ? [withBase({ word: dot, destructive: true })] : [];
    }
  }
  return [];
}

/** The hard denies: `.ralph/` and the gate state, blanket `git add`, unsafe git config; null when none applies. */
function hardDeny(analysis: Analysis, cwd: string, ctx: GuardContext): string | null {
  const ralph = ralphDir(ctx.workspace);
  const zones = [ralph, ctx.stateDir];
  const bases = cdBases(cwd, analysis.cdTargets, ctx.home);

  const check = (word: ShellWord, destructive: boolean, what: string, base?: string): string | null => {
    if (word.value !== null) {
      if (/^\/dev\/(null|stdout|stderr|tty|fd\/\d+)$/.test(word.value)) return null;
      const candidates = base
        ? base === '\0computed'
          ? null
          : [path.resolve(cwd, expandHome(base, ctx.home))]
        : bases;
      if (!path.isAbsolute(expandHome(word.value, ctx.home)) && (candidates === null || analysis.cdComputed)) {
        if (mentionsZone(word.value, ctx))
          return `${what} ${word.value}: .ralph/ and the gate state are managed by the loop`;
        if (destructive)
          return `${what} ${word.value} after a computed cd: the guard cannot tell whether it is inside .ralph/`;
        return null;
      }
      for (const b of candidates ?? [cwd]) {
        const written = path.resolve(b, expandHome(word.value, ctx.home));
        // Through an existing symlink (`r -> .ralph`): the real path of its longest existing prefix.
        const abs = inZoneTerms(ctx.realPath?.(written) ?? written, ctx);
        for (const z of zones) {
          if (isWithin(abs, z))
            return `${what} ${word.value}: ${z === ralph ? '.ralph/' : 'the gate state'} is managed by the loop`;
          if (destructive && isWithin(z, abs))
            return `${what} ${word.value} would take ${z === ralph ? '.ralph/' : 'the gate state'} with it`;
        }
      }
      return null;
    }
    if (mentionsZone(word.literal, ctx))
      return `${what} ${word.literal}: .ralph/ and the gate state are managed by the loop`;
    if (word.expansion === 'glob')
      return globTouches(word.literal, destructive, bases, zones, ctx)
        ? `${what} ${word.literal}: the pattern may match .ralph/ or the gate state`
        : null;
    return `${what} a computed path (${word.literal || 'an expansion'}…): write the path out literally`;
  };

  // The Bash tool keeps its shell between calls: a `cd` into .ralph/ would make the next call's paths relative to it.
  for (const t of analysis.cdTargets) {
    for (const b of bases) {
      const abs = path.resolve(b, expandHome(t, ctx.home));
      if (zones.some((z) => isWithin(abs, z)))
        return `cd ${t}: stay out of .ralph/ and the gate state (read files there by their paths)`;
    }
  }
  for (const inv of analysis.invocations) {
    // A link (symbolic or hard) or symlinking copy whose source is in a zone: writes through it would land there.
    if (
      inv.name === 'ln' ||
      (inv.name === 'cp' && inv.argv.some((w) => /^-[a-zA-Z]*[sl]|^--(symbolic-link|link)$/.test(w.value ?? '')))
    ) {
      const files = nonOptions(inv.argv.slice(1), ['-t', '--target-directory', '-S', '--suffix']);
      for (const w of files.slice(0, -1).concat(files.length === 1 ? files : [])) {
        const src = w.value ?? w.literal;
        const hit =
          mentionsZone(src, ctx) ||
          bases.some((b) => {
            const abs = path.resolve(b, expandHome(src, ctx.home));
            const real = inZoneTerms(ctx.realPath?.(abs) ?? abs, ctx);
            return zones.some((z) => isWithin(abs, z) || isWithin(real, z) || isWithin(z, abs));
          });
        if (hit)
          return `${inv.name} ${src}: a link to .ralph/ or the gate state would let writes through it reach files the loop manages`;
      }
    }
    for (const t of targetsOf(inv)) {
      const r = check(t.word, t.destructive, t.destructive ? `${inv.name} of` : `${inv.name} writes`, t.base);
      if (r) return r;
    }
    if (INLINE_CODE.has(inv.name) && inv.argv.slice(1).some((w) => mentionsZone(w.value ?? w.literal, ctx)))
      return `${inv.name} code that names .ralph/ or the gate state: those files are managed by the loop`;
    if (inv.name === 'git') {
      const forms = commandForms(inv.argv);
      const f = forms[0]!;
      if (f[1] === 'add') {
        const gitBase = gitDirOption(inv.argv);
        const addBases =
          gitBase === null ? null : gitBase ? bases.map((b) => path.resolve(b, expandHome(gitBase, ctx.home))) : bases;
        for (const w of f.slice(2)) {
          if (typeof w !== 'string') return 'git add of a computed pathspec: name the files';
          // git takes unambiguous abbreviations of long options (`--al`, `--a` = `--all`).
          const longAbbrev =
            w.startsWith('--') &&
            w.length > 2 &&
            !w.includes('=') &&
            ('--all'.startsWith(w) || ('--no-ignore-removal'.startsWith(w) && w.length >= 6));
          if (
            ['-A', '--all', '--no-ignore-removal', ':/', ':', ':(top)', '*', '.', './'].includes(w) ||
            /^-[a-zA-Z]*A/.test(w) ||
            longAbbrev
          )
            return `blanket git add (${w}): add the files you changed by name`;
          if (w.startsWith('-')) continue;
          if (addBases === null) return 'git add after git -C of a computed folder: name the files from the workspace';
          // The workspace itself or a folder above it (`git -C src add ..`).
          if (addBases.some((b) => isWithin(ctx.workspace, path.resolve(b, w))))
            return `blanket git add (${w}): add the files you changed by name`;
        }
      }
      if (f[1] === 'config') {
        const key = f.slice(2).find((w) => typeof w !== 'string' || !w.startsWith('-'));
        const k = typeof key === 'string' ? key.toLowerCase() : null;
        if (k === null || DANGEROUS_GIT_KEY.test(k))
          return `git config ${k ?? '(computed key)'}: configuration that runs commands is the operator's to set`;
      }
      for (let k = 1; k < inv.argv.length; k++) {
        const w = inv.argv[k]!;
        const attached = w.value?.startsWith('--config-env=') ? { ...w, value: w.value.slice(13) } : undefined;
        if (w.value === '-c' || w.value === '--config-env' || attached) {
          const kv = attached ?? inv.argv[k + 1];
          const text = kv?.value ?? kv?.literal ?? '';
          const key = text.split('=')[0]!.toLowerCase();
          // An `ext::` remote (as a url or an insteadOf) runs its command.
          if (kv?.value === null || DANGEROUS_GIT_KEY.test(key) || text.includes('ext::'))
            return `git -c ${key}: configuration that runs commands is not allowed on the command line`;
          if (!attached) k++;
          continue;
        }
        if (
          w.value !== null &&
          ['-C', '--git-dir', '--work-tree', '--namespace', '--exec-path', '--super-prefix'].includes(w.value)
        ) {
          k++;
          continue;
        }
        if (w.value !== null && !w.value.startsWith('-')) break;
      }
    }
  }
  for (const { redirect } of analysis.redirects) {
    if (!writesTarget(redirect) || !redirect.target) continue;
    const r = check(redirect.target, false, `redirect (${redirect.op}) into`);
    if (r) return r;
  }
  return null;
}

/** Process-spawning (or code-evaluating) APIs, per language of inline code (docs/guard.md). */
const SPAWN_APIS: { langs: RegExp; re: RegExp }[] = [
  // Python: os.system/popen/exec*/spawn* (also imported bare), subprocess, pty, and the dynamic ways to reach them
  // (`re.compile(…)` is not `compile(…)`).
  {
    langs: /^python/,
    re: /\b(system|popen|exec[lv]\w*|spawn[lv]\w*|posix_spawn\w*|fork\w*|startfile|subprocess|pty|commands|multiprocessing|create_subprocess_\w+|__import__|importlib|__builtins__|builtins|ctypes|cffi|code|runpy)\b|(?<![.\w])(eval|exec|compile|getattr|globals|vars|breakpoint)\s*\(/,
  },
  // JavaScript (node, deno, bun): child_process, and the dynamic ways to reach it (a computed require or import,
  // eval, Function, vm, globals by computed name); `/re/.exec(s)` is not a process.
  {
    langs: /^(node|nodejs|deno|bun)$/,
    re: /\b(child_process|getBuiltinModule|process\s*\.\s*(binding|dlopen|_linkedBinding|mainModule)|module\s*\.\s*(require|constructor)|createRequire|worker_threads|vm|Deno\s*\.\s*(run|Command)|Bun\s*\.\s*(spawn\w*|\$))\b|(?<![.\w])(eval|Function|import)\s*\(|\brequire\s*\(\s*(?!(?<q>['"])[\w@/.:-]+\k<q>\s*\))|\b(globalThis|global|process|module|require)\s*\[|\$`/,
  },
  // Perl, Ruby, PHP, Lua, R, AppleScript.
  {
    langs: /^(perl|ruby|php|lua|Rscript|osascript)$/,
    re: /\b(system|exec|spawn|fork|popen|IO\s*\.\s*popen|Open3|Kernel|PTY|qx|shell_exec|passthru|proc_open|pcntl_exec|eval|send|public_send|instance_eval|class_eval|os\s*\.\s*execute|io\s*\.\s*popen|system2|shell|do shell script|dlopen|syscall)\b|`|%x|\bopen\w*\s*\(?[^;]*\|/,
  },
  // awk: system(), print/printf into a command (`| "sh"`, `|&`), a command read with `cmd | getline`.
  { langs: /awk$/, re: /\bsystem\s*\(|\|\s*&|(^|[^|])\|(?!\|)\s*[^|\s]/ },
];

/**
 * The process-spawning API inline code reaches (`os.system`, `child_process`, awk `system()`, sed's `e`), or
 * null when it reaches none. Code is matched as text, fail closed: a name in a string counts too.
 */
export function spawnApi(lang: string, code: string): string | null {
  if (lang === 'sed') return sedExecutes(code);
  for (const { langs, re } of SPAWN_APIS) {
    if (!langs.test(lang)) continue;
    const m = re.exec(code);
    if (m) return m[0].trim();
  }
  return null;
}

/** GNU sed commands that run a shell: `e [command]` and the `e` flag of `s///`; null when the script has none. */
function sedExecutes(script: string, writes?: string[]): string | null {
  let i = 0;
  const n = script.length;
  const skipDelimited = (delim: string) => {
    while (i < n && script[i] !== delim) {
      if (script[i] === '\\') i++;
      if (script[i] === '\n' && delim !== '\n') return;
      i++;
    }
    i++;
  };
  while (i < n) {
    const c = script[i]!;
    if (/[\s;{}!]/.test(c)) {
      i++;
      continue;
    }
    // Addresses: numbers, $, /re/, \cREc, ranges, steps.
    if (/[0-9$,~+]/.test(c)) {
      i++;
      continue;
    }
    if (c === '/') {
      i++;
      skipDelimited('/');
      while (i < n && /[IM]/.test(script[i]!)) i++;
      continue;
    }
    if (c === '\\') {
      const d = script[i + 1] ?? '';
      i += 2;
      skipDelimited(d);
      continue;
    }
    if (
      c === '#' ||
      c === ':' ||
      c === 'b' ||
      c === 't' ||
      c === 'T' ||
      c === 'a' ||
      c === 'i' ||
      c === 'c' ||
      c === 'r' ||
      c === 'R' ||
      c === 'w' ||
      c === 'W'
    ) {
      // Comments, labels, branches, text and file names run to the end of the line (labels/branches also to `;`).
      const from = i + 1;
      while (i < n && script[i] !== '\n' && !(/[:btT]/.test(c) && script[i] === ';')) i++;
      if (c === 'w' || c === 'W') writes?.push(script.slice(from, i).trim());
      continue;
    }
    if (c === 'e') return 'sed e command';
    if (c === 's' || c === 'y') {
      const d = script[i + 1] ?? '';
      i += 2;
      skipDelimited(d);
      skipDelimited(d);
      if (c === 's') {
        const flags = /^[0-9gpiImMe]*/.exec(script.slice(i))![0];
        if (flags.includes('e')) return 'the e flag of sed s///';
        i += flags.length;
        // w FILE flag: the rest of the line is a file name.
        if (script[i] === 'w') {
          const from = i + 1;
          while (i < n && script[i] !== '\n') i++;
          writes?.push(script.slice(from, i).trim());
        }
      }
      continue;
    }
    i++;
  }
  return null;
}

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

function expandHome(p: string, home: string): string {
  return p === '~' ? home : p.startsWith('~/') ? path.join(home, p.slice(2)) : p;
}

/** Text that names `.ralph` or the gate-state folder. */
function mentionsZone(text: string, ctx: GuardContext): boolean {
  return (
    /(^|[^A-Za-z0-9_-])\.ralph($|[^A-Za-z0-9_-])/.test(text) ||
    text.includes(path.basename(ctx.stateDir)) ||
    /(^|\/)\.local\/state\/ralph($|\/)/.test(text) ||
    /(^|\/)state\/ralph($|\/)/.test(text)
  );
}

/** Folders relative paths may be resolved against: the cwd, then each literal `cd` target (chained). */
function cdBases(cwd: string, targets: string[], home: string): string[] {
  const bases = [cwd];
  for (const t of targets) {
    const next = bases.map((b) => path.resolve(b, expandHome(t, home)));
    for (const n of next) if (!bases.includes(n)) bases.push(n);
  }
  return bases;
}

/**
 * Could a glob (`.r*`, `dist/*.js`) match a protected folder, or (destructive) one of its ancestors? Globs only in
 * the last path segment are resolved exactly (bash: `*` and `?` do not match a leading dot); others fail closed.
 */
function globTouches(
  pattern: string,
  destructive: boolean,
  bases: string[],
  zones: string[],
  ctx: GuardContext,
): boolean {
  const slash = pattern.lastIndexOf('/');
  const dir = slash >= 0 ? pattern.slice(0, slash) || '/' : '.';
  const last = pattern.slice(slash + 1);
  if (/[*?[{]/.test(dir)) return true;
  const re = globSegmentRegex(last);
  for (const b of bases) {
    const absDir = path.resolve(b, expandHome(dir, ctx.home));
    for (const z of zones) {
      if (isWithin(absDir, z)) return true;
      if (!isWithin(z, absDir)) continue;
      // The segment right below absDir on the way to the zone.
      const step = path.relative(absDir, z).split(path.sep)[0]!;
      const isZoneItself = path.join(absDir, step) === z;
      if (re.test(step) && (destructive || isZoneItself)) return true;
    }
  }
  return false;
}

function globSegmentRegex(seg: string): RegExp {
  let re = '';
  for (let i = 0; i < seg.length; i++) {
    const c = seg[i]!;
    const atStart = i === 0;
    if (c === '*') re += atStart ? '(?!\\.)[^/]*' : '[^/]*';
    else if (c === '?') re += atStart ? '(?!\\.)[^/]' : '[^/]';
    else if (c === '[') {
      const close = seg.indexOf(']', i + 2);
      if (close < 0) re += '\\[';
      else {
        let body = seg.slice(i + 1, close);
        if (body.startsWith('!')) body = `^${body.slice(1)}`;
        re += `[${body.replace(/\\/g, '\\\\')}]`;
        i = close;
      }
    } else if (c === '{') re += '[^/]*';
    else if (c === '}' || c === ',') re += '[^/]*';
    else re += c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}
