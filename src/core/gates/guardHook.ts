import { readFileSync, realpathSync, statSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { appendFile, mkdir, stat, writeFile } from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { z } from 'zod';
import { formatActivityLines } from '../control/activityText';
import { loadCommandPolicy, type CommandPolicy } from './commandPolicy';
import { decideGuard, type GuardDecision } from './guardDecision';
import { applyGuardEffects, guardStateDir, readGateState } from './guardState';
import { ralphFile } from '../model/ralphPaths';
import { checkWorkspaceTrust } from '../trust/workspaceTrust';
import { trustOverride } from '../trust/trustDecision';
import { policyForTrust, policyNeedsTrust, untrustedPolicyNote } from './policyTrust';

/**
 * The guard as a PreToolUse hook (agent-streams.md §3): the JSON on stdin → the decision → the agent's answer (Claude
 * Code's, which Codex and Qwen Code read too, or Gemini CLI's `BeforeTool` one).
 * Used by the engine's guard server and by the in-process hook (`ralph guard`, `dist/guard.js`). Any internal error
 * is an exit 2 with the reason on stderr, which blocks the call: the guard never fails open.
 */

/** What the hook process prints and exits with. */
export interface HookAnswer {
  stdout: string;
  stderr: string;
  exitCode: number;
}

/** A decision that blocked or changed a call, as the engine records it (event `guard`). */
export interface GuardRecord {
  decision: 'deny' | 'rewrite';
  tool: string;
  /** The command or path. */
  subject: string;
  reason: string;
  /** The command it became (rewrite). */
  command?: string;
  /** The activity-log text without the time stamp (`GUARD DENY … → …`). */
  text: string;
}

/** Activity labels (seed-systems.md §3.9). */
export const GUARD_DENY = 'GUARD DENY';
export const GUARD_REWRITE = 'GUARD REWRITE';

const PreToolUseInput = z
  .object({
    tool_name: z.string().min(1),
    tool_input: z.record(z.string(), z.unknown()),
    cwd: z.string().optional(),
    hook_event_name: z.string().optional(),
  })
  .passthrough();

/** Options of {@link handleHook}. */
export interface HookOptions {
  /** Workspace root; default `RALPH_WORKSPACE`, then `CLAUDE_PROJECT_DIR`, then the input's `cwd`. */
  workspace?: string;
  env?: NodeJS.ProcessEnv;
  /** Absolute node and `dist/cli.js` for wrapped commands. */
  gateRunner: { node: string; cliPath: string; electron?: boolean };
  /** Loads the policy (the server passes a cached loader); default {@link loadCommandPolicy}. */
  loadPolicy?: (workspace: string) => Promise<CommandPolicy | null>;
  /** Write the `GUARD DENY` / `GUARD REWRITE` line to `.ralph/activity.log` (the engine's recorder does it during a run). */
  writeActivity: boolean;
  /**
   * Whether the policy's content was trusted by the caller: the engine's guard server passes `true` (`ralph run`
   * refused untrusted content before starting). Otherwise (`ralph guard`, `dist/guard-hook.js`) the hook checks the
   * workspace's trust itself and ignores an untrusted policy's `[gates]`/`[rewrite]`/`[wrap]` rows (policyTrust.ts).
   */
  policyTrusted?: boolean;
  now?: () => number;
}

/** 200 characters, then `…` (§3.9). */
function cut(s: string): string {
  const one = s.replace(/\s*\n\s*/g, ' ⏎ ');
  return one.length > 200 ? `${one.slice(0, 200)}…` : one;
}

/** The activity text of a decision that blocked or changed a call; undefined for a plain allow. */
export function guardRecord(tool: string, d: GuardDecision): GuardRecord | undefined {
  if (d.kind === 'deny')
    return {
      decision: 'deny',
      tool,
      subject: d.subject,
      reason: d.reason,
      text: `${GUARD_DENY} ${cut(d.subject)} → ${cut(d.reason)}`,
    };
  if (d.kind === 'rewrite') {
    const command = String(d.updatedInput.command ?? '');
    return {
      decision: 'rewrite',
      tool,
      subject: d.subject,
      reason: d.reason,
      command,
      text: `${GUARD_REWRITE} ${cut(d.subject)} → ${cut(command)}`,
    };
  }
  return undefined;
}

/**
 * The tool names of the CLIs whose hooks ralph hands the guard to, in Claude Code's terms (the analyzer's): Gemini
 * CLI's and Qwen Code's shell tool `run_shell_command` (input `command`), their `write_file` and `replace` / `edit`
 * (input `file_path`). Their inputs carry the same keys Claude's tools do, so only the name changes.
 */
const TOOL_ALIASES: Readonly<Record<string, string>> = {
  run_shell_command: 'Bash',
  write_file: 'Write',
  replace: 'Edit',
  edit: 'Edit',
};

/** The tool name the analyzer knows for a hook call's `tool_name` (Claude's own names unchanged). */
export function guardToolName(name: string): string {
  return TOOL_ALIASES[name] ?? name;
}

/**
 * The hook dialect of a call: Gemini CLI's `BeforeTool` (answers `decision` / `reason` and
 * `hookSpecificOutput.tool_input`, its hooks reference) or Claude Code's `PreToolUse` (also Codex's and Qwen Code's).
 */
export type HookDialect = 'PreToolUse' | 'BeforeTool';

/**
 * The hook's answer for a decision, in the caller's dialect. PreToolUse (agent-streams.md §3.3): deny JSON, allow +
 * updatedInput, or nothing. BeforeTool: `decision: deny` with the reason (sent to the model as the tool's error), or
 * `hookSpecificOutput.tool_input` (merged over the model's arguments) for a rewrite.
 */
export function hookAnswer(d: GuardDecision, dialect: HookDialect = 'PreToolUse'): HookAnswer {
  if (dialect === 'BeforeTool') {
    const out =
      d.kind === 'allow'
        ? { decision: 'allow' }
        : d.kind === 'deny'
          ? { decision: 'deny', reason: `Ralph guard: ${d.reason}`.slice(0, 9_000) }
          : {
              decision: 'allow',
              reason: `Ralph guard: ${d.reason}`.slice(0, 9_000),
              hookSpecificOutput: { hookEventName: 'BeforeTool', tool_input: d.updatedInput },
            };
    return { stdout: `${JSON.stringify(out)}\n`, stderr: '', exitCode: 0 };
  }
  if (d.kind === 'allow') return { stdout: '', stderr: '', exitCode: 0 };
  if (d.kind === 'deny') {
    const out = {
      hookSpecificOutput: {
        hookEventName: 'PreToolUse',
        permissionDecision: 'deny',
        permissionDecisionReason: `Ralph guard: ${d.reason}`.slice(0, 9_000),
      },
    };
    return { stdout: `${JSON.stringify(out)}\n`, stderr: '', exitCode: 0 };
  }
  const out = {
    hookSpecificOutput: {
      hookEventName: 'PreToolUse',
      permissionDecision: 'allow',
      permissionDecisionReason: `Ralph guard: ${d.reason}`.slice(0, 9_000),
      updatedInput: d.updatedInput,
    },
  };
  return { stdout: `${JSON.stringify(out)}\n`, stderr: '', exitCode: 0 };
}

/** An internal error: exit 2 blocks the call and hands the reason to the agent. */
export function failClosed(reason: string): HookAnswer {
  return { stdout: '', stderr: `Ralph guard: ${reason} (the call is blocked)\n`, exitCode: 2 };
}

/** Loads the policy of `workspace` (null without one); a policy with an error row throws (file:line). */
export async function loadPolicyForGuard(workspace: string): Promise<CommandPolicy | null> {
  return (await loadCommandPolicy(workspace))?.policy ?? null;
}

/** Handles one hook call end to end; never throws. `onRecord` receives denials and rewrites. */
export async function handleHook(
  raw: string,
  o: HookOptions,
  onRecord?: (r: GuardRecord) => void,
): Promise<HookAnswer> {
  try {
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch {
      return failClosed('the hook input is not JSON');
    }
    const parsed = PreToolUseInput.safeParse(json);
    if (!parsed.success)
      return failClosed(
        `the hook input is not a PreToolUse call: ${parsed.error.issues[0]?.path.join('.')} ${parsed.error.issues[0]?.message}`,
      );
    const input = { ...parsed.data, tool_name: guardToolName(parsed.data.tool_name) };
    const dialect: HookDialect = parsed.data.hook_event_name === 'BeforeTool' ? 'BeforeTool' : 'PreToolUse';
    const env = o.env ?? process.env;
    const workspace = path.resolve(
      o.workspace ?? env.RALPH_WORKSPACE ?? env.CLAUDE_PROJECT_DIR ?? input.cwd ?? process.cwd(),
    );
    const loaded = await (o.loadPolicy ?? loadPolicyForGuard)(workspace);
    const stateDir = guardStateDir(workspace, env);
    let policy = loaded;
    let note = '';
    if (loaded && !o.policyTrusted && policyNeedsTrust(loaded)) {
      const view = policyForTrust(
        loaded,
        (await checkWorkspaceTrust(workspace, trustOverride(false, env), env)).allowed,
      );
      policy = view.policy;
      if (view.ignored.length) note = untrustedPolicyNote(view.ignored);
    }
    const now = (o.now ?? Date.now)();
    const decision = decideGuard(input, {
      workspace,
      stateDir,
      home: env.HOME || os.homedir(),
      policy,
      gateRunner: o.gateRunner,
      readScript,
      resolveProgram: (p, cwd) => resolveProgram(p, cwd, env.PATH ?? ''),
      realPath: realPrefix,
      state: readGateState(workspace, stateDir),
      now,
    });
    if (decision.kind !== 'deny') applyGuardEffects(stateDir, decision.effects, now);
    const record = guardRecord(input.tool_name, decision);
    if (note && o.writeActivity) await noteOnce(workspace, stateDir, note);
    if (record) {
      onRecord?.(record);
      if (o.writeActivity) await appendActivityLine(workspace, record.text);
    }
    const answer = hookAnswer(decision, dialect);
    return note ? { ...answer, stderr: `${answer.stderr}${note}\n` } : answer;
  } catch (err) {
    return failClosed((err as Error).message);
  }
}

/**
 * Writes `note` to `.ralph/activity.log` once per distinct note (a marker file named by its hash in the guard's state
 * folder), so a hook run per tool call does not repeat it on every call. stderr carries it on every call.
 */
async function noteOnce(workspace: string, stateDir: string, note: string): Promise<void> {
  const marker = path.join(stateDir, `noted-${createHash('sha256').update(note).digest('hex').slice(0, 16)}`);
  try {
    await mkdir(stateDir, { recursive: true });
    await writeFile(marker, '', { flag: 'wx' });
  } catch {
    return;
  }
  await appendActivityLine(workspace, `WARNING: ${note}`);
}

/** Largest script file the guard reads to look for denied commands, bytes. */
export const SCRIPT_READ_MAX_BYTES = 256 * 1024;

/** A script file's text; null when not a readable text file up to {@link SCRIPT_READ_MAX_BYTES}; undefined when absent. */
export function readScript(file: string): string | null | undefined {
  try {
    const st = statSync(file);
    if (!st.isFile() || st.size > SCRIPT_READ_MAX_BYTES) return null;
    const buf = readFileSync(file);
    return buf.includes(0) ? null : buf.toString('utf8');
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? undefined : null;
  }
}

/**
 * The real path of an absolute path: the longest prefix that exists has its symlinks resolved, the rest is kept
 * (`<ws>/r/command-policy` with `r -> .ralph` → `<ws>/.ralph/command-policy`). At most 64 levels are climbed.
 */
export function realPrefix(abs: string): string {
  let head = path.resolve(abs);
  const tail: string[] = [];
  for (let k = 0; k < 64; k++) {
    try {
      return path.join(realpathSync(head), ...tail);
    } catch {
      const up = path.dirname(head);
      if (up === head) break;
      tail.unshift(path.basename(head));
      head = up;
    }
  }
  return abs;
}

/** The real file name of a program: a path resolved against `cwd`, or a name looked up on `PATH`; symlinks followed. */
export function resolveProgram(nameOrPath: string, cwd: string, pathEnv: string): string | undefined {
  const candidates = nameOrPath.includes('/')
    ? [path.resolve(cwd, nameOrPath)]
    : pathEnv
        .split(':')
        .filter(Boolean)
        .map((d) => path.join(path.resolve(cwd, d), nameOrPath));
  for (const c of candidates) {
    try {
      if (!statSync(c).isFile()) continue;
      return path.basename(realpathSync(c));
    } catch {
      // not here
    }
  }
  return undefined;
}

/** Appends one stamped line to `.ralph/activity.log` (whole-line append, as the other writers do). */
async function appendActivityLine(workspace: string, text: string): Promise<void> {
  const file = ralphFile(workspace, 'activityLog');
  await mkdir(path.dirname(file), { recursive: true });
  await stat(path.dirname(file));
  await appendFile(file, formatActivityLines(text, new Date()), 'utf8');
}
