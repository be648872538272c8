import type { AgentEvent, ToolKind } from '../stream/events';
import { type AgentAdapter, type Invocation, type IterationSpec, type StreamMapper, mergeEnv } from './adapter';
import { claudeAdapter } from './claude';
import { limitRejected, limitResetOf } from './limitReset';
import { type SystemSettingsLayer, writeGuardSettings } from './guardSettingsFile';

/**
 * Qwen Code (`qwen --output-format stream-json --approval-mode yolo --prompt=<p>`), more-agents.md, as recorded from
 * 0.24.4 (test/fixtures/streams/qwen/recorded/). Its stream is Claude Code's shape (`system/init` with
 * `qwen_code_version`, `assistant` with content blocks and per-call `usage`, `user` tool results, `stream_event`,
 * `result` with the turn's summed `usage`), so the Claude mapper reads it, with two differences handled here:
 *
 * - Usage: `input_tokens` is the OpenAI-style prompt count, which **includes** `cache_read_input_tokens` (Claude's
 *   excludes it). Each usage block is rewritten to the uncached input before mapping, so a call's context is
 *   `input_tokens` once, never input plus cache, and the result's total (the sum of the calls: cumulative for the
 *   process, as the ledger reads it) is not counted twice.
 * - Tools: Qwen's names (`run_shell_command`, `write_file`, `edit`, `read_file`) → kinds.
 *
 * Failure: an API error ends the turn with `result` `is_error: true` and the error text; HTTP statuses are read from
 * it by the classifier. The session id is `session_id` (`--resume <id>`).
 */

/** Qwen Code's built-in tool names → kinds (0.24). */
export function qwenToolKind(name: string): ToolKind {
  switch (name) {
    case 'run_shell_command':
      return 'shell';
    case 'read_file':
    case 'read_many_files':
      return 'read';
    case 'write_file':
      return 'write';
    case 'edit':
    case 'replace':
    case 'notebook_edit':
      return 'edit';
    default:
      return 'other';
  }
}

/**
 * A usage block with `input_tokens` made the uncached part (`input_tokens − cache_read_input_tokens`, at least 0), as
 * Claude's usage reads; anything that is not a usage object is returned unchanged. Pure.
 */
export function qwenUsage(u: unknown): unknown {
  if (!u || typeof u !== 'object' || Array.isArray(u)) return u;
  const o = u as Record<string, unknown>;
  const input = o.input_tokens;
  const cached = o.cache_read_input_tokens;
  if (typeof input !== 'number' || typeof cached !== 'number') return u;
  return { ...o, input_tokens: Math.max(0, input - cached) };
}

/** True for a usage block that counts nothing (Qwen puts one on thought-only and API-error messages): no API call. */
const emptyUsage = (u: unknown): boolean => {
  const o = u as Record<string, unknown> | null;
  return !!o && typeof o === 'object' && !o.input_tokens && !o.output_tokens && !o.cache_read_input_tokens;
};

/** The HTTP status of Qwen's API error text (`[API Error: 401 Incorrect API key provided]`), or null. */
export function qwenErrorStatus(text: string): number | null {
  const m = /\[API Error:\s*(?:.*?\b)?([45]\d\d)\b/.exec(text);
  return m ? Number(m[1]) : null;
}

const API_ERROR_TEXT = /^\[API Error:/;

/**
 * The line in Claude's terms: usage blocks with the uncached input (an empty one removed, so it is no call whose
 * context is 0), an API error Qwen writes as an assistant message marked as the CLI's own (`<synthetic>`, never the
 * agent's claim), and an error result's `error.message` as its `errors` and HTTP status.
 */
function normalised(line: Record<string, unknown>): Record<string, unknown> {
  if (line.type === 'assistant' && line.message && typeof line.message === 'object') {
    const m = { ...(line.message as Record<string, unknown>) };
    if ('usage' in m) {
      if (emptyUsage(m.usage)) delete m.usage;
      else m.usage = qwenUsage(m.usage);
    }
    const blocks = Array.isArray(m.content) ? (m.content as { type?: unknown; text?: unknown }[]) : [];
    if (blocks.length === 1 && blocks[0]?.type === 'text' && API_ERROR_TEXT.test(String(blocks[0].text)))
      m.model = '<synthetic>';
    return { ...line, message: m };
  }
  if (line.type === 'result') {
    const out: Record<string, unknown> = { ...line };
    if ('usage' in line) out.usage = qwenUsage(line.usage);
    const err = line.error as { message?: unknown } | undefined;
    if (err && typeof err.message === 'string') {
      if (!Array.isArray(line.errors)) out.errors = [err.message];
      if (typeof line.api_error_status !== 'number') out.api_error_status = qwenErrorStatus(err.message);
    }
    return out;
  }
  return line;
}

class QwenMapper implements StreamMapper {
  private readonly inner = claudeAdapter.createMapper();

  map(line: Record<string, unknown>): AgentEvent[] {
    const events = this.inner.map(normalised(line));
    // A quota error ("Quota exhausted: … will reset at <time>", which Qwen Code does not retry) names its reset.
    const err = line.type === 'result' && line.is_error === true ? (line.error as { message?: unknown }) : undefined;
    if (err && typeof err.message === 'string')
      events.unshift(
        ...limitRejected(limitResetOf({ text: err.message, status: qwenErrorStatus(err.message), now: Date.now() })),
      );
    for (const e of events) {
      if (e.type === 'toolUse') e.kind = qwenToolKind(e.name);
      else if (e.type === 'toolResult' && e.name) e.kind = qwenToolKind(e.name);
      else if (e.type === 'init' && typeof line.qwen_code_version === 'string') e.agentVersion = line.qwen_code_version;
    }
    return events;
  }
}

/**
 * Where Qwen Code 0.24 reads the run's guard: its system settings file (`QWEN_CODE_SYSTEM_SETTINGS_PATH`, the highest
 * settings layer), a `PreToolUse` hook (Claude's input and answer; its bundled docs, features/hooks.md) on its shell
 * and file-writing tools with the timeout in seconds; `disableAllHooks: false` keeps hooks on.
 */
export const QWEN_GUARD_LAYER: SystemSettingsLayer = {
  agent: 'qwen',
  settingsVar: 'QWEN_CODE_SYSTEM_SETTINGS_PATH',
  defaultsVar: 'QWEN_CODE_SYSTEM_DEFAULTS_PATH',
  defaultPath: (platform) =>
    platform === 'darwin'
      ? '/Library/Application Support/QwenCode/settings.json'
      : platform === 'win32'
        ? 'C:\\ProgramData\\qwen-code\\settings.json'
        : '/etc/qwen-code/settings.json',
  event: 'PreToolUse',
  matcher: '^(run_shell_command|write_file|edit|replace)$',
  timeoutUnit: 's',
  enableHooks: { disableAllHooks: false },
};

function qwenInvocation(spec: IterationSpec): Invocation {
  // `--approval-mode yolo`: headless, a tool call that needs approval is refused; the run needs every call approved.
  const args = ['--output-format', 'stream-json', '--approval-mode', 'yolo'];
  if (spec.model) args.push('--model', spec.model);
  if (spec.resume) args.push('--resume', spec.resume);
  args.push(...(spec.extraArgs ?? []));
  // `--prompt=<p>`: a positional prompt after `--` is ignored by 0.24, and the `=` form keeps a prompt that starts
  // with "-" from being read as an option.
  args.push(`--prompt=${spec.prompt}`);
  return { file: spec.binary || 'qwen', args, env: mergeEnv(spec), cwd: spec.cwd };
}

function qwenRecognise(line: Record<string, unknown>): 0 | 1 | 2 {
  if ('qwen_code_version' in line) return 2;
  return claudeAdapter.recognise(line) ? 1 : 0;
}

/** The Qwen Code adapter. */
export const qwenAdapter: AgentAdapter = {
  name: 'qwen',
  defaultBinary: 'qwen',
  configKey: 'qwenPath',
  guardHook: true,
  prepareGuard: async (g) => ({ env: await writeGuardSettings(QWEN_GUARD_LAYER, g.settings, g.env, g.dir) }),
  estimatesContext: false,
  invocation: qwenInvocation,
  createMapper: () => new QwenMapper(),
  recognise: qwenRecognise,
};
